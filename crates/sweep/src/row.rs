//! One row of a sweep's table: the swept values, the seed, the config hash, whether the run
//! succeeded (or its error), and the run's metrics flattened to dotted column names.

use crate::plan::Point;
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Failed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Failed => "failed",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub run: usize,
    pub values: Vec<(String, Value)>,
    pub seed: u64,
    pub config_hash: String,
    pub status: Status,
    /// The runner's message when `status` is failed.
    pub error: Option<String>,
    /// (column, value), sorted by column; empty for a failed run.
    pub metrics: Vec<(String, Value)>,
}

impl Row {
    pub fn new(point: &Point, result: Result<Value, String>) -> Row {
        let (status, error, metrics) = match result {
            Ok(metrics) => (Status::Ok, None, metric_columns(&metrics)),
            Err(message) => (Status::Failed, Some(message), Vec::new()),
        };
        Row {
            run: point.run,
            values: point.values.clone(),
            seed: point.seed,
            config_hash: point.config_hash.clone(),
            status,
            error,
            metrics,
        }
    }
}

/// metrics.json flattened to `report.latency.write.p99_ns`-style columns, sorted. Left out: the
/// `config` echo (hundreds of columns; the swept values and the hash already identify the run)
/// and `seed` (a column of its own). `config_hash`, the resolved config's hash that `trimlab run`
/// prints, becomes `run_config_hash` so it does not clash with the point's hash.
pub fn metric_columns(metrics: &Value) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    match metrics {
        Value::Object(map) => {
            for (key, value) in map {
                match key.as_str() {
                    "config" | "seed" => {}
                    "config_hash" => out.push(("run_config_hash".to_string(), value.clone())),
                    _ => out.extend(
                        trimlab_scenario::flatten(value).into_iter().map(|(k, v)| (column_name(key, &k), v)),
                    ),
                }
            }
        }
        other => out.push(("metrics".to_string(), other.clone())),
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// `key.sub`; a top-level list (metrics.json's `phases`) flattens to `.0.name`, which must
/// not become `phases..0.name`.
fn column_name(key: &str, sub: &str) -> String {
    match sub.strip_prefix('.').unwrap_or(sub) {
        "" => key.to_string(),
        rest => format!("{key}.{rest}"),
    }
}
