//! Device presets with parameter overrides (built-in or `calibrated:NAME`).

use super::calibrated;
use crate::device::DeviceParams;

/// Why a device could not be resolved: its preset, or one of its parameter overrides (named,
/// so that the error points at `swap.N.params.NAME`, not at the device).
#[derive(Debug)]
pub enum DeviceError {
    Preset(String),
    Param(String, String),
}

/// A device preset (built-in, or `calibrated:NAME`) with a table of parameter overrides,
/// rejecting unknown parameter names.
pub fn device_with_overrides(preset: &str, overrides: &toml::Table) -> Result<DeviceParams, DeviceError> {
    let mut table;
    if let Some(name) = calibrated::name_of(preset) {
        let base = DeviceParams::preset(calibrated::BASE_PRESET).expect("a built-in preset");
        table = toml::Table::try_from(&base).expect("device params serialize");
        let device = calibrated::load(name).map_err(DeviceError::Preset)?.device;
        overlay(&mut table, &device).map_err(|(k, m)| DeviceError::Preset(format!("calibrated preset {name:?}: [device] {k}: {m}")))?;
    } else {
        let base = DeviceParams::preset(preset).ok_or_else(|| {
            DeviceError::Preset(format!(
                "unknown device preset {preset:?} (expected one of {}, or \"calibrated:NAME\")",
                DeviceParams::PRESETS.join(", ")
            ))
        })?;
        if overrides.is_empty() {
            return Ok(base);
        }
        table = toml::Table::try_from(&base).expect("device params serialize");
    }
    overlay(&mut table, overrides).map_err(|(k, m)| DeviceError::Param(k, m))?;
    let params: DeviceParams =
        toml::Value::Table(table).try_into().map_err(|e: toml::de::Error| DeviceError::Preset(e.message().trim().to_string()))?;
    params.validate().map_err(DeviceError::Preset)?;
    Ok(params)
}

/// Parameters a serialized preset may lack, with their TOML type: the driver's flag, depth and
/// CFQ's 2.6.32 low_latency, and the measured access-time tables (device/service.rs).
const OPTIONAL: [(&str, &str); 8] = [
    ("queue_nonrot", "boolean"),
    ("queue_depth", "integer"),
    ("cfq_low_latency", "boolean"),
    ("read_access", "table"),
    ("write_access", "table"),
    ("read_access_writing", "table"),
    ("read_access_sequential", "table"),
    ("read_access_sequential_writing", "table"),
];

/// The single per-request block-layer figure of preset files written before the block layer
/// had stages (device/blk.rs).
const LEGACY_BLOCK_LAYER: &str = "block_layer_cpu_ns";

/// A legacy total spread over the stages in the proportions the table has (its base preset's),
/// the remainder to the last stage, so that the stages sum to it exactly.
fn spread_block_layer(table: &mut toml::Table, v: &toml::Value) -> Result<(), String> {
    let total = v.as_integer().filter(|&t| t >= 0).ok_or_else(|| format!("expected a non-negative integer, got {v}"))?;
    let base: Vec<i64> = crate::device::blk::STAGE_PARAMS.iter().map(|k| table.get(*k).and_then(|x| x.as_integer()).unwrap_or(0)).collect();
    let sum: i64 = base.iter().sum();
    let mut left = total;
    for (i, k) in crate::device::blk::STAGE_PARAMS.iter().enumerate() {
        let share = if i + 1 == base.len() { left } else if sum == 0 { 0 } else { total * base[i] / sum };
        left -= share;
        table.insert(k.to_string(), toml::Value::Integer(share));
    }
    Ok(())
}

/// Set `fields` onto a device's parameter table, each checked alone so that an error names
/// its field: (field, what is wrong).
fn overlay(table: &mut toml::Table, fields: &toml::Table) -> Result<(), (String, String)> {
    for (k, v) in fields {
        if k == LEGACY_BLOCK_LAYER {
            spread_block_layer(table, v).map_err(|m| (k.clone(), m))?;
            continue;
        }
        if let Some(&(_, want)) = OPTIONAL.iter().find(|(name, _)| name == k) {
            // Optional (absent from a serialized preset that does not set it).
            if v.type_str() != want {
                return Err((k.clone(), format!("expected {want}, got {}", v.type_str())));
            }
            table.insert(k.clone(), v.clone());
            continue;
        }
        let Some(old) = table.get(k) else {
            let mut known: Vec<&str> = table.keys().map(|s| s.as_str()).collect();
            known.extend(OPTIONAL.iter().map(|(name, _)| *name).filter(|name| !table.contains_key(*name)));
            return Err((k.clone(), format!("unknown device parameter `{k}` (known: {})", known.join(", "))));
        };
        if std::mem::discriminant(old) != std::mem::discriminant(v) {
            return Err((k.clone(), format!("expected {}, got {}", old.type_str(), v.type_str())));
        }
        table.insert(k.clone(), v.clone());
    }
    Ok(())
}


#[cfg(test)]
mod tests {
    #[test]
    fn a_legacy_block_layer_total_is_spread_over_the_stages() {
        let mut o = toml::Table::new();
        o.insert("block_layer_cpu_ns".into(), toml::Value::Integer(3_001));
        let p = super::device_with_overrides("sata-ssd", &o).unwrap();
        assert_eq!(crate::device::blk::request_cost(&p).total(), 3_001);
        // sata-ssd's dispatch is 500 of its 2000: a quarter.
        assert_eq!(p.dispatch_ns, 750);
        o.insert("block_layer_cpu_ns".into(), toml::Value::Integer(-1));
        assert!(super::device_with_overrides("sata-ssd", &o).is_err());
    }
}
