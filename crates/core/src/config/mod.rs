//! The workload language: one TOML file describes a machine, its kernel knobs, its swap
//! devices and the programs that run on it. The same file drives the simulator and the host
//! runner, so it says *what the programs do* (mappings, access patterns, compute between
//! touches), never how the simulator models it.
//!
//! Parsing is strict: unknown keys, wrong types and impossible values are errors that name the
//! file, the line and key, and what was expected ([`ConfigError`]).

pub mod calibrated;
mod devices;
mod error;
pub mod footprint;
mod hpl;
pub mod fork;
pub mod pagecache;
mod parse;
mod profile;
mod requests;
mod resolve;
mod schema;
mod shared_file;
pub mod stores;
mod tasks;
pub mod trace;
pub mod units;
mod watermarks;

pub use devices::{device_with_overrides, DeviceError};
pub use error::ConfigError;
pub use parse::{apply_overrides, load, locate};
pub use profile::*;
pub use resolve::{memcg_path_depth, Resolved, ResolvedSwap};
pub use schema::*;
pub use tasks::*;
pub use units::{Duration, Size, PAGE_SIZE};
pub use watermarks::{default_min_free_kbytes, watermark_basis_pages, watermarks, zone_watermarks, Watermarks, STRUCT_PAGE_BYTES_2_6_32};

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = r#"
[machine]
ram = "256MiB"

[[swap]]
device = "sata-ssd"
size = "256MiB"

[[task]]
name = "t"
[[task.mapping]]
name = "buf"
kind = "anon"
size = "300MiB"
[[task.phase]]
mapping = "buf"
pattern = "sequential"
"#;

    #[test]
    fn base_config_loads_with_defaults() {
        let r = load(BASE, "base.toml", &[]).unwrap();
        assert_eq!(r.config.kernel.page_cluster, 3);
        assert_eq!(r.swap_devices[0].priority, -1);
        assert_eq!(r.profile, Profile::V6);
    }

    #[test]
    fn unknown_key_names_file_and_line() {
        let text = BASE.replace("ram = \"256MiB\"", "ram = \"256MiB\"\nramm = 3");
        let e = load(&text, "w.toml", &[]).unwrap_err();
        assert_eq!(e.file, "w.toml");
        assert_eq!(e.line, Some(4));
        assert!(e.message.contains("unknown field `ramm`"), "{e}");
    }

    #[test]
    fn wrong_type_is_reported_with_expectation() {
        let text = BASE.replace("ram = \"256MiB\"", "ram = \"256MiB\"\ncpus = \"two\"");
        let e = load(&text, "w.toml", &[]).unwrap_err();
        assert!(e.to_string().contains("w.toml:4"), "{e}");
    }

    #[test]
    fn zero_page_mapping_is_rejected_at_its_line() {
        let text = BASE.replace("size = \"300MiB\"", "size = 0");
        let e = load(&text, "w.toml", &[]).unwrap_err();
        assert_eq!(e.key, "task.0.mapping.0.size");
        assert_eq!(e.line, Some(14));
    }

    #[test]
    fn ram_below_the_reserve_is_rejected() {
        let e = load(&BASE.replace("256MiB\"\n\n[[swap]]", "40MiB\"\n\n[[swap]]"), "w.toml", &[]).unwrap_err();
        assert_eq!(e.key, "machine.ram");
    }

    #[test]
    fn unknown_policy_is_rejected() {
        let e = load(BASE, "w.toml", &["kernel.readahead=\"smart\"".into()]).unwrap_err();
        assert_eq!(e.key, "kernel.readahead");
        assert!(e.message.contains("adaptive"));
    }

    #[test]
    fn negative_size_is_rejected() {
        let e = load(&BASE.replace("\"300MiB\"", "-5"), "w.toml", &[]).unwrap_err();
        assert!(e.message.contains("negative"), "{e}");
    }

    #[test]
    fn overrides_reach_nested_tables_and_arrays() {
        let r = load(
            BASE,
            "w.toml",
            &["kernel.page_cluster=0".into(), "task.0.phase.0.pattern=random".into(), "swap.0.params.parallelism=1".into()],
        )
        .unwrap();
        assert_eq!(r.config.kernel.page_cluster, 0);
        assert_eq!(r.config.tasks[0].phases[0].pattern, PatternKind::Random);
        assert_eq!(r.swap_devices[0].params.parallelism, 1);
        let e = load(BASE, "w.toml", &["task.3.name=x".into()]).unwrap_err();
        assert!(e.message.contains("out of range"));
    }

    #[test]
    fn watermarks_match_the_kernel_example() {
        // §3.2: 16 GiB, one zone: min 4096, gap 4194, low 8290, high 12484.
        let managed = 16u64 << 18;
        let wm = watermarks(managed, 16384, 10, Profile::V6);
        assert_eq!(wm, Watermarks { min: 4096, low: 8290, high: 12484 });
        assert_eq!(default_min_free_kbytes(managed), 16384);
    }
}
