//! Metrics as flat columns: `report.latency.write.p99_ns` -> value. metrics.csv, sweep tables
//! and the Python DataFrames all use these names, so a column means the same everywhere.

use serde_json::Value;

/// Every leaf of `value` as `(dotted.key, value)`, in the document's order; array items are
/// numbered (`phases.0.name`).
pub fn flatten(value: &Value) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    walk("", value, &mut out);
    out
}

fn walk(prefix: &str, value: &Value, out: &mut Vec<(String, Value)>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                walk(&key, v, out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                walk(&format!("{prefix}.{i}"), v, out);
            }
        }
        leaf => out.push((prefix.to_string(), leaf.clone())),
    }
}

/// FNV-1a of a JSON value's text (a sweep plan's hash). A run's config hash is
/// `canonical::config_hash`, over the resolved config's canonical form.
pub fn config_hash(value: &Value) -> String {
    fnv1a_hex(value.to_string().as_bytes())
}

/// FNV-1a (64 bits) of `bytes`, as 16 hex digits.
pub fn fnv1a_hex(bytes: &[u8]) -> String {
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    for &b in bytes {
        hash ^= b as u64;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016x}")
}
