//! From text to a resolved configuration: TOML parsing, `--set` overrides, calibrated costs,
//! and errors that point at the line the user wrote.

use super::*;

/// Parse a workload file's text, apply `--set key=value` overrides, validate.
///
/// Errors name lines of the file as written (never of the text rewritten by the overrides),
/// or the `--set` that introduced the offending value. A model that would not fit in this
/// machine's memory is refused here, before anything is allocated (footprint.rs).
pub fn load(text: &str, file: &str, overrides: &[String]) -> Result<Resolved, ConfigError> {
    let rewritten = apply_overrides(text, file, overrides)?;
    let mut cfg: Config = toml::from_str(&rewritten).map_err(|e| toml_error(text, &rewritten, file, &e, overrides))?;
    let located = |key: &str, message: String| locate_error(text, file, overrides, key, message);
    trace::lay_out(&mut cfg, file, &located)?;
    apply_calibrated_costs(&mut cfg, &rewritten, &located)?;
    let had_content = cfg.content.is_some();
    let mut content = cfg.content.take().unwrap_or_default();
    stores::resolve(&cfg.zswap, &mut cfg.frontswap, &cfg.zram, &mut content, file, &located)?;
    // Embedded in results only where it matters, so runs without a store or a compressing
    // device keep their config.
    let keep = had_content || stores::store_name(&cfg.zswap, &cfg.frontswap) != "none";
    cfg.content = Some(content);
    let mut resolved = resolve::resolve(cfg, &located)?;
    if !keep && !resolved.swap_devices.iter().any(|s| s.params.compressed) {
        resolved.config.content = None;
    }
    if resolved.swap_devices.iter().any(|s| s.params.compressed) && resolved.config.zram.is_none() {
        resolved.config.zram = Some(stores::ZramSpec::default());
    }
    footprint::check(&resolved, footprint::available_bytes()).map_err(|(key, message)| located(key, message))?;
    Ok(resolved)
}

/// Longest piece of a user's text echoed in a message (a line may be megabytes long).
const SNIPPET_CHARS: usize = 80;

fn cut(s: &str) -> String {
    match s.char_indices().nth(SNIPPET_CHARS) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

/// The override that set `key` (or a table above it), if any.
fn override_of<'a>(overrides: &'a [String], key: &str) -> Option<&'a String> {
    overrides.iter().rev().find(|o| {
        let k = o.split('=').next().unwrap_or("").trim();
        !k.is_empty() && (key == k || key.starts_with(&format!("{k}.")))
    })
}

fn locate_error(original: &str, file: &str, overrides: &[String], key: &str, message: String) -> ConfigError {
    if let Some(ov) = override_of(overrides, key) {
        let message = format!("{message} (set by --set {})", cut(ov));
        return ConfigError { file: file.to_string(), line: None, key: key.to_string(), message };
    }
    ConfigError { file: file.to_string(), line: locate(original, key), key: key.to_string(), message }
}

fn toml_error(original: &str, rewritten: &str, file: &str, e: &toml::de::Error, overrides: &[String]) -> ConfigError {
    let line = e.span().map(|s| line_of(rewritten, s.start.min(rewritten.len())));
    let snippet = line.and_then(|l| rewritten.lines().nth(l - 1)).map(str::trim).filter(|s| !s.is_empty());
    let mut message = syntax_message(rewritten, e.message(), e.span());
    if let Some(s) = snippet {
        message = format!("{message} (in `{}`)", cut(s));
    }
    if overrides.is_empty() {
        return ConfigError { file: file.to_string(), line, key: String::new(), message };
    }
    // the same line in the file as written; none when an override wrote it
    let line = snippet.and_then(|s| original.lines().position(|l| l.trim() == s)).map(|i| i + 1);
    if line.is_none() {
        message.push_str(" [in a value set by --set]");
    }
    ConfigError { file: file.to_string(), line, key: String::new(), message }
}

/// A calibrated device preset's `[costs]` (calibrated.rs) for every cost the workload does
/// not set itself; the first calibrated device (swap devices in order, then the file device)
/// provides them.
fn apply_calibrated_costs(cfg: &mut Config, rewritten: &str, at: &dyn Fn(&str, String) -> ConfigError) -> Result<(), ConfigError> {
    let devices = cfg.swap.iter().enumerate().map(|(i, s)| (format!("swap.{i}.device"), s.device.clone()));
    let mut devices = devices.chain(std::iter::once(("machine.file_device".to_string(), cfg.machine.file_device.clone())));
    let Some((key, name)) = devices.find_map(|(k, d)| calibrated::name_of(&d).map(|n| (k, n.to_string()))) else {
        return Ok(());
    };
    let preset = calibrated::load(&name).map_err(|e| at(&key, e))?;
    if let Some(compressor) = &preset.compressor {
        apply_calibrated_compressor(cfg, compressor).map_err(|e| at(&key, format!("calibrated preset {name:?}: [compressor]: {e}")))?;
    }
    let costs = preset.costs;
    let user = rewritten
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("costs"))
        .and_then(|v| if let toml::Value::Table(t) = v { Some(t) } else { None })
        .unwrap_or_default();
    let mut table = toml::Table::try_from(&cfg.costs).expect("costs serialize");
    // Every cost, the optional ones included (an unset option serializes to nothing).
    let known = toml::Table::try_from(Costs { swapin_fault_cpu_ns: Some(0), ..Costs::default() }).expect("costs serialize");
    for (k, v) in costs {
        if !known.contains_key(&k) {
            return Err(at(&key, format!("calibrated preset {name:?}: unknown cost `{k}` in its [costs]")));
        }
        if !user.contains_key(&k) {
            table.insert(k, v);
        }
    }
    cfg.costs = toml::Value::Table(table)
        .try_into()
        .map_err(|e: toml::de::Error| at(&key, format!("calibrated preset {name:?}: [costs]: {}", e.message().trim())))?;
    Ok(())
}

/// A preset's measured compressor figures for the `[zswap]` and `[zram]` sections that use
/// that compressor and do not set the figure themselves.
fn apply_calibrated_compressor(cfg: &mut Config, t: &toml::Table) -> Result<(), String> {
    let name = t.get("compressor").and_then(|v| v.as_str()).ok_or("no `compressor` name")?;
    let figure = |key: &str| -> Result<u64, String> {
        match t.get(key).and_then(|v| v.as_integer()) {
            Some(n) if n > 0 => Ok(n as u64),
            _ => Err(format!("`{key}` must be a positive integer")),
        }
    };
    let (c, d, bytes) = (figure("compress_ns")?, figure("decompress_ns")?, figure("full_cost_bytes")?);
    let sections = [cfg.zswap.as_mut().map(|z| (&z.compressor, &mut z.compress_ns, &mut z.decompress_ns, &mut z.full_cost_bytes)),
        cfg.zram.as_mut().map(|z| (&z.compressor, &mut z.compress_ns, &mut z.decompress_ns, &mut z.full_cost_bytes))];
    for (compressor, compress_ns, decompress_ns, full_cost_bytes) in sections.into_iter().flatten() {
        if compressor == name {
            compress_ns.get_or_insert(c);
            decompress_ns.get_or_insert(d);
            full_cost_bytes.get_or_insert(bytes.min(u32::MAX as u64) as u32);
        }
    }
    Ok(())
}

/// One-line description of a parse error; the TOML parser leaves some messages empty (e.g. a
/// key with no value at the end of the file), so fall back to naming the column.
fn syntax_message(text: &str, message: &str, span: Option<std::ops::Range<usize>>) -> String {
    let m = message.trim().replace('\n', " ");
    if !m.is_empty() {
        return m;
    }
    let col = span.map(|s| {
        let start = s.start.min(text.len());
        start - text[..start].rfind('\n').map_or(0, |i| i + 1) + 1
    });
    match col {
        Some(c) => format!("invalid TOML syntax at column {c} (a value or closing bracket is missing)"),
        None => "invalid TOML syntax".to_string(),
    }
}

/// Find the line of a dotted key path (`task.0.mapping.1.size`) in the file, if present.
/// Stops at the deepest segment that exists, so a missing key points at its table.
pub fn locate(text: &str, path: &str) -> Option<usize> {
    use toml_edit::{Item, TableLike, Value};
    let doc = toml_edit::ImDocument::parse(text.to_string()).ok()?;
    let segs: Vec<&str> = path.split('.').collect();
    let mut table: &dyn TableLike = doc.as_table();
    let mut span = None;
    let mut i = 0;
    while i < segs.len() {
        let Some(item) = table.get(segs[i]) else { break };
        span = table.key(segs[i]).and_then(|k| k.span()).or_else(|| item.span()).or(span);
        match item {
            Item::ArrayOfTables(a) => {
                let Some(t) = segs.get(i + 1).and_then(|s| s.parse::<usize>().ok()).and_then(|n| a.get(n)) else { break };
                span = t.span().or(span);
                table = t;
                i += 2;
                continue;
            }
            Item::Table(t) => table = t,
            Item::Value(Value::InlineTable(t)) => table = t,
            _ => break,
        }
        i += 1;
    }
    span.map(|s| line_of(text, s.start))
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Apply `key=value` overrides (dotted paths, numeric segments index arrays of tables) to the
/// document text. Values are TOML literals; anything that does not parse as one is a string.
pub fn apply_overrides(text: &str, file: &str, overrides: &[String]) -> Result<String, ConfigError> {
    use toml_edit::{Item, TableLike};
    if overrides.is_empty() {
        return Ok(text.to_string());
    }
    let err = |key: &str, message: String| ConfigError { file: file.to_string(), line: None, key: key.to_string(), message };
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        let line = e.span().map(|s| line_of(text, s.start));
        let message = syntax_message(text, e.message(), e.span());
        ConfigError { file: file.to_string(), line, key: String::new(), message }
    })?;
    for ov in overrides {
        let (key, raw) = ov
            .split_once('=')
            .ok_or_else(|| err(ov, "an override must look like key=value (e.g. kernel.page_cluster=0)".into()))?;
        let (key, raw) = (key.trim(), raw.trim());
        let value: toml_edit::Value = raw.parse::<toml_edit::Value>().unwrap_or_else(|_| toml_edit::Value::from(raw));
        let segs: Vec<&str> = key.split('.').collect();
        if segs.iter().any(|s| s.is_empty() || s.parse::<usize>().is_ok()) && segs.len() == 1 || segs.iter().any(|s| s.is_empty()) {
            return Err(err(key, "expected a dotted key path such as kernel.page_cluster or task.0.phase.1.pattern".into()));
        }
        let mut table: &mut dyn TableLike = doc.as_table_mut();
        let mut i = 0;
        while i + 1 < segs.len() {
            let here = segs[..=i].join(".");
            if table.get(segs[i]).is_none() {
                table.insert(segs[i], Item::Table(toml_edit::Table::new()));
            }
            let item = table.get_mut(segs[i]).expect("present");
            match item {
                Item::ArrayOfTables(a) => {
                    let n = a.len();
                    let idx = segs[i + 1]
                        .parse::<usize>()
                        .map_err(|_| err(key, format!("`{here}` is a list: follow it with an index, e.g. {here}.0")))?;
                    if i + 2 >= segs.len() {
                        return Err(err(key, "cannot replace a whole table; set one of its keys".into()));
                    }
                    table = a
                        .get_mut(idx)
                        .ok_or_else(|| err(key, format!("index {idx} out of range: `{here}` has {n} entries")))?;
                    i += 2;
                }
                other => {
                    table = other.as_table_like_mut().ok_or_else(|| err(key, format!("`{here}` is not a table")))?;
                    i += 1;
                }
            }
        }
        if i >= segs.len() {
            return Err(err(key, "the key path ends in an index; name a key".into()));
        }
        if table.get(segs[i]).is_some_and(|old| old.is_table_like() || old.is_array_of_tables()) {
            return Err(err(
                key,
                format!("`{key}` is a table: replacing it whole would drop its other keys; set them one at a time, e.g. --set {key}.KEY=VALUE"),
            ));
        }
        table.insert(segs[i], Item::Value(value));
    }
    Ok(doc.to_string())
}

