//! Writing metrics files: JSON as is, CSV as flattened `key,value` rows.

use anyhow::{Context, Result};
use serde_json::Value;
use std::path::Path;

pub fn write_json(path: &Path, value: &Value) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// One row per leaf: `report.latency.write.p99_ns,12345`.
pub fn write_flat_csv(path: &Path, value: &Value) -> Result<()> {
    let mut rows = String::from("key,value\n");
    flatten("", value, &mut rows);
    std::fs::write(path, rows).with_context(|| format!("cannot write {}", path.display()))
}

fn flatten(prefix: &str, value: &Value, rows: &mut String) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                flatten(&key, v, rows);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                flatten(&format!("{prefix}.{i}"), v, rows);
            }
        }
        Value::String(s) => rows.push_str(&format!("{prefix},\"{}\"\n", s.replace('"', "\"\""))),
        other => rows.push_str(&format!("{prefix},{other}\n")),
    }
}

/// What a run leaves besides its totals: latency histograms and, when enabled, the time series.
pub struct Series {
    pub histogram_csv: String,
    pub timeseries: Option<Vec<trimlab_device::timeseries::Row>>,
}

impl Series {
    pub fn of(ssd: &trimlab_device::Ssd, timeseries: bool) -> Series {
        Series {
            histogram_csv: ssd.latency_histogram_csv(),
            timeseries: timeseries.then(|| ssd.timeseries().to_vec()),
        }
    }
}

/// `latency_histogram.csv` (always) and `timeseries.csv` (when the series was enabled).
pub fn write_series(out: &Path, series: &Series) -> Result<()> {
    let rows = series.timeseries.as_deref().map(trimlab_device::timeseries::rows_to_csv);
    write_series_csv(out, &series.histogram_csv, rows.as_deref())
}

/// The same from CSV text already rendered (`serve` gets it from the device thread).
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

/// FNV-1a of a canonical JSON rendering: the config hash every run prints.
pub fn config_hash(value: &Value) -> String {
    let text = value.to_string();
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    for b in text.bytes() {
        hash ^= b as u64;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flattens_nested_values() {
        let v = serde_json::json!({"a": {"b": 1, "c": "x,\"y\""}, "d": [true]});
        let mut rows = String::new();
        flatten("", &v, &mut rows);
        assert_eq!(rows, "a.b,1\na.c,\"x,\"\"y\"\"\"\nd.0,true\n");
    }
}
