//! `cargo run --release --example bench [-- --quick]`: the figures of `swaplab bench`.
fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    println!("{}", serde_json::to_string_pretty(&swaplab_core::bench::run(quick)).unwrap());
}
