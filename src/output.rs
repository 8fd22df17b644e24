//! Writing metrics files: JSON as is, CSV as flattened `key,value` rows.

use anyhow::{Context, Result};
use serde_json::Value;
use std::path::Path;

/// Creates (or truncates) `path` for writing, making its folder first as `--out` does
/// (`--record DIR/FILE`); the error names `flag` and the path.
pub fn create_file(flag: &str, path: &Path) -> Result<std::fs::File> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| {
            format!("{flag} {}: cannot create the folder {}", path.display(), dir.display())
        })?;
    }
    std::fs::File::create(path).with_context(|| format!("{flag} {}: cannot create", path.display()))
}

pub fn write_json(path: &Path, value: &Value) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// One row per leaf: `report.latency.write.p99_ns,12345`.
pub fn write_flat_csv(path: &Path, value: &Value) -> Result<()> {
    std::fs::write(path, flat_csv(value)).with_context(|| format!("cannot write {}", path.display()))
}

fn flat_csv(value: &Value) -> String {
    let mut rows = String::from("key,value\n");
    for (key, leaf) in trimlab_jobs::flatten(value) {
        match leaf {
            Value::String(s) => rows.push_str(&format!("{key},\"{}\"\n", s.replace('"', "\"\""))),
            other => rows.push_str(&format!("{key},{other}\n")),
        }
    }
    rows
}

/// `latency_histogram.csv` (always) and `timeseries.csv` (when the series was enabled).
pub fn write_series(out: &Path, series: &trimlab_jobs::Series) -> Result<()> {
    let (histogram, timeseries) = trimlab_jobs::series_csv(series);
    write_series_csv(out, &histogram, timeseries.as_deref())
}

/// The same from CSV text already rendered (`serve` gets it from the drive at finish).
pub fn write_series_csv(out: &Path, histogram_csv: &str, timeseries_csv: Option<&str>) -> Result<()> {
    let files = [("latency_histogram.csv", Some(histogram_csv)), ("timeseries.csv", timeseries_csv)];
    for (name, text) in files {
        if let Some(text) = text {
            let path = out.join(name);
            std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flattens_nested_values() {
        let v = serde_json::json!({"a": {"b": 1, "c": "x,\"y\""}, "d": [true]});
        assert_eq!(flat_csv(&v), "key,value\na.b,1\na.c,\"x,\"\"y\"\"\"\nd.0,true\n");
    }
}
