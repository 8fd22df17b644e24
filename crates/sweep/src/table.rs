//! The sweep's table: one row per run, sorted by run, with a fixed column order, written as
//! results.csv and as results.json (pandas' "split" layout: `pd.read_json(path, orient="split")`).
//!
//! Columns: `run`, the swept keys (sorted), `seed`, `config_hash`, `status`, `error`, then the
//! union of every row's metric columns, sorted. A cell a row lacks (every metric of a failed run)
//! is empty in the CSV and null in the JSON. The table depends only on its set of rows, so the
//! rows of N shards, put together, give the table of the whole sweep.

use crate::row::Row;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Table {
    pub columns: Vec<String>,
    pub data: Vec<Vec<Value>>,
}

const FIXED_AFTER_KEYS: [&str; 4] = ["seed", "config_hash", "status", "error"];

impl Table {
    /// `keys` are the swept keys in axis order; rows may come in any order.
    pub fn from_rows(keys: &[String], rows: &[Row]) -> Table {
        let mut rows: Vec<&Row> = rows.iter().collect();
        rows.sort_by_key(|r| r.run);
        let metric_names: BTreeSet<&str> =
            rows.iter().flat_map(|r| r.metrics.iter().map(|(name, _)| name.as_str())).collect();
        let mut columns = vec!["run".to_string()];
        columns.extend(keys.iter().cloned());
        columns.extend(FIXED_AFTER_KEYS.iter().map(|c| c.to_string()));
        columns.extend(metric_names.iter().map(|c| metric_header(keys, c)));
        let data = rows
            .iter()
            .map(|row| {
                let values: BTreeMap<&str, &Value> =
                    row.values.iter().map(|(k, v)| (k.as_str(), v)).collect();
                let metrics: BTreeMap<&str, &Value> =
                    row.metrics.iter().map(|(k, v)| (k.as_str(), v)).collect();
                let mut cells = vec![Value::from(row.run)];
                cells.extend(
                    keys.iter().map(|k| values.get(k.as_str()).map_or(Value::Null, |v| (*v).clone())),
                );
                cells.push(Value::from(row.seed));
                cells.push(Value::from(row.config_hash.clone()));
                cells.push(Value::from(row.status.as_str()));
                cells.push(row.error.clone().map_or(Value::Null, Value::from));
                cells.extend(
                    metric_names.iter().map(|k| metrics.get(k).map_or(Value::Null, |v| (*v).clone())),
                );
                cells
            })
            .collect();
        Table { columns, data }
    }

    /// results.csv: a header, then one line per row; null is an empty cell, strings are bare
    /// (quoted only when they must be), lists and tables are JSON text.
    pub fn to_csv(&self) -> String {
        let mut writer =
            csv::WriterBuilder::new().terminator(csv::Terminator::Any(b'\n')).from_writer(Vec::new());
        writer.write_record(&self.columns).expect("writing to memory");
        for row in &self.data {
            writer.write_record(row.iter().map(csv_cell)).expect("writing to memory");
        }
        String::from_utf8(writer.into_inner().expect("writing to memory")).expect("cells are UTF-8")
    }

    /// results.json: `{"columns": [...], "data": [[...], ...]}`.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("a table serializes");
        text.push('\n');
        text
    }

    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }
}

/// A metric's column name: its own, or `metrics.<name>` when a swept key or a fixed column has
/// that name (metrics.json's `host.discard` is the policy's name, `fstrim` where the swept value
/// is `fstrim:10s`): one column per name, so pandas renames nothing (issue 43).
fn metric_header(keys: &[String], name: &str) -> String {
    if keys.iter().any(|k| k == name) || name == "run" || FIXED_AFTER_KEYS.contains(&name) {
        format!("metrics.{name}")
    } else {
        name.to_string()
    }
}

fn csv_cell(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
