//! Expanding a grid into runs, in one documented order, each with its config hash.
//!
//! Order: the cartesian product of the axes (sorted by key) with the last axis varying fastest,
//! then the seeds innermost, in the order listed. `run` is the 0-based position in that order;
//! it does not depend on the shard, the number of workers or what a resumed run skips.

use crate::grid::Grid;
use serde::{Deserialize, Serialize};
use trimlab_scenario::config_hash;

/// One run of a sweep: the swept values, as `--set` assignments on the base, and a seed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub run: usize,
    /// (key, value) for every axis, in axis order.
    pub values: Vec<(String, serde_json::Value)>,
    /// The same values as `key=value` assignments (the value as TOML), for the runner.
    pub set: Vec<String>,
    pub seed: u64,
    /// Identifies the point's input (base config and swept values, not the seed): a resumed
    /// sweep skips a run whose (config_hash, seed) is already in its journal.
    pub config_hash: String,
}

/// Every run of a grid, in order, with the base config as TOML text for the runner.
pub struct Plan {
    pub base_text: String,
    pub origin: String,
    pub keys: Vec<String>,
    pub points: Vec<Point>,
}

impl Plan {
    pub fn new(grid: &Grid) -> Plan {
        let base_text = toml::to_string(&grid.base).expect("a toml::Table always serializes");
        let base_json = serde_json::to_value(&grid.base).expect("a toml::Table always serializes to JSON");
        let keys: Vec<String> = grid.axes.iter().map(|a| a.key.clone()).collect();
        let mut points = Vec::with_capacity(grid.run_count());
        let mut digits = vec![0usize; grid.axes.len()];
        loop {
            let values: Vec<(String, serde_json::Value)> = grid
                .axes
                .iter()
                .zip(&digits)
                .map(|(axis, &i)| (axis.key.clone(), toml_to_json(&axis.values[i])))
                .collect();
            let set: Vec<String> = grid
                .axes
                .iter()
                .zip(&digits)
                .map(|(axis, &i)| format!("{}={}", axis.key, axis.values[i]))
                .collect();
            let hash = config_hash(&serde_json::json!({ "base": base_json, "set": values }));
            for &seed in &grid.seeds {
                let run = points.len();
                points.push(Point {
                    run,
                    values: values.clone(),
                    set: set.clone(),
                    seed,
                    config_hash: hash.clone(),
                });
            }
            // Mixed-radix increment, last axis fastest.
            let mut axis = grid.axes.len();
            loop {
                if axis == 0 {
                    return Plan { base_text, origin: grid.origin.clone(), keys, points };
                }
                axis -= 1;
                digits[axis] += 1;
                if digits[axis] < grid.axes[axis].values.len() {
                    break;
                }
                digits[axis] = 0;
            }
        }
    }
}

/// A TOML value as JSON (datetimes become their TOML text).
pub fn toml_to_json(value: &toml::Value) -> serde_json::Value {
    match value {
        toml::Value::Datetime(d) => serde_json::Value::String(d.to_string()),
        other => serde_json::to_value(other).expect("TOML values other than datetimes map to JSON"),
    }
}
