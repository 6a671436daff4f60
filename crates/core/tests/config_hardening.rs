//! Regression tests of the parser's hardening (issue 14): each test is named after what it
//! guards.

use swaplab_core::config::{self, footprint};

const BASE: &str = include_str!("../../../tests/host/small.toml");

fn err(text: &str, overrides: &[&str]) -> config::ConfigError {
    let ovs: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    config::load(text, "w.toml", &ovs).expect_err("must be refused")
}

#[test]
fn a_model_larger_than_available_memory_is_refused_with_the_figure() {
    let r = config::load(&BASE.replace("ram = \"24GiB\"", "ram = \"64GiB\""), "w.toml", &[]).unwrap();
    let (need, key) = footprint::model_bytes(&r);
    assert_eq!(key, "machine.ram");
    let frames = (64u64 << 30) / 4096 * 28;
    assert!(need >= frames && need < frames + (128 << 20), "{need}");
    let e = footprint::check(&r, Some(256 << 20)).unwrap_err();
    assert_eq!(e.0, "machine.ram");
    assert!(e.1.contains("needs about 0.5 GiB") && e.1.contains("0.2 GiB available"), "{}", e.1);
    assert!(footprint::check(&r, Some(64 << 30)).is_ok());
    assert!(footprint::check(&r, None).is_ok(), "no /proc/meminfo: nothing refused");
    // the case: 4 TiB of RAM needs ~28 GiB of frames, refused where that is not available
    let big = config::load(&BASE.replace("ram = \"24GiB\"", "ram = \"4TiB\""), "w.toml", &[]);
    match footprint::available_bytes() {
        Some(avail) if avail < 28 << 30 => {
            let e = big.expect_err("4 TiB must be refused here");
            assert_eq!(e.key, "machine.ram");
            assert!(e.message.contains("needs about 28."), "{e}");
        }
        _ => assert!(big.is_ok()),
    }
}

#[test]
fn sim_time_limit_zero_is_refused() {
    let e = err(BASE, &["sim.time_limit=0"]);
    assert_eq!(e.key, "sim.time_limit");
    assert!(e.message.contains("positive"), "{e}");
    let e = err(BASE, &["task.0.time_limit=\"0s\""]);
    assert_eq!(e.key, "task.0.time_limit");
}

#[test]
fn swap_param_errors_name_the_param_not_the_device() {
    let e = err(BASE, &["swap.0.params.read_latency_ns=\"slow\""]);
    assert_eq!(e.key, "swap.0.params.read_latency_ns", "{e}");
    let e = err(BASE, &["swap.0.params.no_such_param=1"]);
    assert_eq!(e.key, "swap.0.params.no_such_param", "{e}");
    let e = err(BASE, &["swap.0.params.read_access=5"]);
    assert_eq!(e.key, "swap.0.params.read_access", "{e}");
    let e = err(BASE, &["swap.0.params.read_access={p=[0.5, 0.4], ns=[1, 2]}"]);
    assert!(e.message.contains("read_access") && e.message.contains("increase"), "{e}");
}

#[test]
fn infinite_ram_says_finite_not_negative() {
    let e = err(&BASE.replace("ram = \"24GiB\"", "ram = inf"), &[]);
    assert!(e.message.contains("finite") && !e.message.contains("negative"), "{e}");
}

#[test]
fn errors_after_set_name_lines_of_the_file_as_written() {
    // the override adds lines above the error; the line must be the file's own
    let text = BASE.replace("cycles = 2", "cycles = 2\nbogus = 1");
    let lines = text.lines().count();
    let e = err(&text, &["kernel.page_cluster=1", "machine.memcg_limit=\"100MiB\""]);
    let want = text.lines().position(|l| l.starts_with("bogus")).unwrap() + 1;
    assert_eq!(e.line, Some(want), "{e} (file has {lines} lines)");
    // an error in a value an override wrote names the override, not a line
    let e = err(BASE, &["kernel.page_cluster=99"]);
    assert_eq!(e.line, None);
    assert!(e.message.contains("--set kernel.page_cluster=99"), "{e}");
}

#[test]
fn a_megabyte_line_is_cut_in_the_error() {
    let text = format!("{BASE}\nx = \"{}", "y".repeat(1 << 20));
    let e = err(&text, &[]);
    assert!(e.to_string().len() < 500, "{} bytes", e.to_string().len());
}

#[test]
fn set_replacing_a_whole_table_is_refused() {
    let e = err(BASE, &["kernel={page_cluster=0}"]);
    assert!(e.message.contains("replacing it whole"), "{e}");
    let e = err(BASE, &["task=[]"]);
    assert!(e.message.contains("replacing it whole"), "{e}");
}

fn preset_dir(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("swaplab-calibrated-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("lab.toml"),
        "[provenance]\nname = \"lab\"\n\n[device]\nsource = \"measured\"\nread_latency_ns = 12345\nparallelism = 3\n\n\
         [costs]\nminor_fault_ns = 777\nmajor_fault_cpu_ns = 4321\n",
    )
    .unwrap();
    dir
}

#[test]
fn calibrated_presets_resolve_in_the_parser_for_swap_and_file_device() {
    let dir = preset_dir("ok");
    std::env::set_var("SWAPLAB_DEVICES", &dir);
    // a comment mentioning calibrated: and a UTF-8 BOM are plain text to the one parser
    let text = format!("\u{feff}# see calibrated:lab\n{}", BASE.replace("device = \"sata-ssd\"", "device = \"calibrated:lab\""));
    let r = config::load(&text, "w.toml", &["costs.minor_fault_ns=900".into(), "machine.file_device=\"calibrated:lab\"".into()]).unwrap();
    assert_eq!(r.swap_devices[0].params.read_latency_ns, 12345);
    assert_eq!(r.swap_devices[0].params.parallelism, 3);
    assert_eq!(r.file_device_params.read_latency_ns, 12345);
    assert_eq!(r.config.costs.major_fault_cpu_ns, 4321, "the preset's costs apply");
    assert_eq!(r.config.costs.minor_fault_ns, 900, "but not over the workload's own");
    let e = err(BASE, &["swap.0.device=\"calibrated:missing\""]);
    assert_eq!(e.key, "swap.0.device");
    assert!(e.message.contains("swaplab calibrate --name missing"), "{e}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_calibrated_compressor_sets_the_figures_of_the_store_that_uses_it() {
    let dir = std::env::temp_dir().join(format!("swaplab-compressor-preset-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("lab.toml");
    std::fs::write(&path, "[device]\nsource = \"measured\"\n\n[compressor]\ncompressor = \"lzo\"\ncompress_ns = 1500\ndecompress_ns = 700\nfull_cost_bytes = 3000\n").unwrap();
    let device = format!("swap.0.device=\"calibrated:{}\"", path.display());
    let load = |extra: &[&str]| {
        let mut ov = vec![device.clone(), "zswap.enabled=true".to_string()];
        ov.extend(extra.iter().map(|s| s.to_string()));
        config::load(BASE, "w.toml", &ov).unwrap().config.zswap.unwrap()
    };
    let z = load(&[]);
    assert_eq!((z.compress_ns, z.decompress_ns, z.full_cost_bytes), (Some(1500), Some(700), Some(3000)), "lzo measured, lzo used");
    let z = load(&["zswap.compressor=\"lz4\""]);
    assert_eq!((z.compress_ns, z.decompress_ns, z.full_cost_bytes), (None, None, None), "another compressor keeps its source figures");
    let z = load(&["zswap.compress_ns=9"]);
    assert_eq!((z.compress_ns, z.decompress_ns), (Some(9), Some(700)), "the workload's own figure stays");
    std::fs::write(&path, "[device]\nsource = \"measured\"\n\n[compressor]\ncompressor = \"lzo\"\ncompress_ns = -1\n").unwrap();
    let e = err(BASE, &[&device, "zswap.enabled=true"]);
    assert!(e.message.contains("[compressor]") && e.message.contains("compress_ns"), "{e}");
    let _ = std::fs::remove_dir_all(dir);
}

/// CFQ was the default elevator of the 2.6.28 and 3.x kernels: a disk that would get
/// mq-deadline gets CFQ under those profiles (device/cfq.rs), unless the workload sets the
/// scheduler; NVMe's "none" stays.
#[test]
fn old_profiles_default_disks_to_cfq() {
    let load = |ov: &[&str]| {
        let ovs: Vec<String> = ov.iter().map(|s| s.to_string()).collect();
        config::load(BASE, "w.toml", &ovs).expect("valid")
    };
    let sched = |ov: &[&str]| load(ov).swap_devices[0].params.scheduler.clone();
    for dev in ["hdd", "sata-ssd"] {
        let d = format!("swap.0.device=\"{dev}\"");
        assert_eq!(sched(&[&d, "kernel.profile=\"2.6.28\""]), "cfq", "{dev}");
        assert_eq!(sched(&[&d, "kernel.profile=\"3.14\""]), "cfq", "{dev}");
        assert_eq!(sched(&[&d, "kernel.profile=\"4.14\""]), "deadline", "{dev}");
        assert_eq!(sched(&[&d, "kernel.profile=\"6.x\""]), "deadline", "{dev}");
        assert_eq!(sched(&[&d, "kernel.profile=\"2.6.28\"", "swap.0.params.scheduler=\"deadline\""]), "deadline", "set by the workload");
    }
    assert_eq!(sched(&["swap.0.device=\"nvme\"", "kernel.profile=\"3.14\""]), "none");
    assert_eq!(load(&["kernel.profile=\"3.14\""]).file_device_params.scheduler, "cfq");
}
