//! `device = "calibrated:NAME"`: a device preset measured on a host by `swaplab calibrate`,
//! resolved here, inside the one parser, for `[[swap]] device` and `machine.file_device` alike.
//!
//! The preset file is `NAME.toml` in `$SWAPLAB_DEVICES` (default
//! `~/.config/swaplab/devices`), or the path itself when NAME ends in `.toml`. Its `[device]`
//! table overlays the `sata-ssd` preset field by field (a file written by an older swaplab
//! lacks newer fields; those keep the base preset's value); its `[costs]` table sets the
//! workload's CPU costs that the workload does not set itself (the fault costs measured on
//! that host); its `[compressor]` table (the compressor phase, python/swaplab/host/
//! compressor_cost.py) sets the per-page figures of `[zswap]` and `[zram]` where their
//! compressor is the one measured and the workload does not set them. `[provenance]` and
//! `[measured]` are the calibration's record and are not read.
//! The resolved configuration embeds every resolved figure, so a result stays reproducible
//! without the preset file.

use std::path::PathBuf;

pub const PREFIX: &str = "calibrated:";
/// The built-in preset a calibrated device's fields overlay.
pub const BASE_PRESET: &str = "sata-ssd";
/// A preset file is a few KiB; refuse anything far larger (a wrong path).
const MAX_PRESET_BYTES: u64 = 1 << 20;

/// The name after `calibrated:`, if `device` names a calibrated preset.
pub fn name_of(device: &str) -> Option<&str> {
    device.strip_prefix(PREFIX)
}

fn preset_path(name: &str) -> Result<PathBuf, String> {
    if name.is_empty() {
        return Err("\"calibrated:\" needs a preset name, e.g. \"calibrated:host\"".into());
    }
    if name.ends_with(".toml") {
        return Ok(PathBuf::from(name));
    }
    if name.contains('/') || name.contains('\0') {
        return Err(format!("calibrated preset name {name:?}: a name has no '/' (give a path ending in .toml instead)"));
    }
    let dir = match std::env::var_os("SWAPLAB_DEVICES") {
        Some(d) => PathBuf::from(d),
        None => {
            let home = std::env::var_os("HOME").ok_or("HOME is not set: cannot find ~/.config/swaplab/devices (set SWAPLAB_DEVICES)")?;
            PathBuf::from(home).join(".config/swaplab/devices")
        }
    };
    Ok(dir.join(format!("{name}.toml")))
}

/// The tables of a preset file the parser reads.
pub struct Preset {
    pub device: toml::Table,
    pub costs: toml::Table,
    /// `[compressor]`, if the calibration measured one.
    pub compressor: Option<toml::Table>,
}

/// The `[device]`, `[costs]` and `[compressor]` tables of preset NAME.
pub fn load(name: &str) -> Result<Preset, String> {
    let path = preset_path(name)?;
    let shown = path.display();
    let meta = std::fs::metadata(&path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            format!("calibrated preset {name:?}: no file {shown} (run `swaplab calibrate --name {name}` first)")
        } else {
            format!("calibrated preset {name:?}: {shown}: {e}")
        }
    })?;
    if !meta.is_file() || meta.len() > MAX_PRESET_BYTES {
        return Err(format!("calibrated preset {name:?}: {shown} is not a preset file (a regular file of at most 1 MiB)"));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| format!("calibrated preset {name:?}: {shown}: {e}"))?;
    let mut doc: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| format!("calibrated preset {name:?}: {shown} is not valid TOML: {}", e.message().trim()))?;
    let mut table = |key: &str| -> Result<toml::Table, String> {
        match doc.remove(key) {
            Some(toml::Value::Table(t)) => Ok(t),
            None if key == "costs" || key == "compressor" => Ok(toml::Table::new()),
            _ => Err(format!("calibrated preset {name:?}: {shown} has no [{key}] table (rewrite it with `swaplab calibrate`)")),
        }
    };
    let (device, costs, compressor) = (table("device")?, table("costs")?, table("compressor")?);
    Ok(Preset { device, costs, compressor: Some(compressor).filter(|t| !t.is_empty()) })
}
