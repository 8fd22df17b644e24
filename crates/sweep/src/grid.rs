//! The grid: a base configuration, the swept keys (dotted config paths) with their lists of
//! values, and the seeds; read from a grid TOML file or built from parts (the Python API).
//!
//! ```toml
//! base = "../quick.toml"          # a config file, relative to this file; or an inline [base] table
//! seeds = [1, 2, 3]               # default: the base's `seed`, else [1]
//! [grid]
//! "device.spare_factor" = [0.07, 0.10, 0.20]
//! "trim.engine" = ["immediate", "none"]
//! ```
//!
//! Axes are kept sorted by key, whatever order they were written in, so the expansion order
//! (plan.rs) depends only on the grid's content.

use crate::SweepError;
use std::collections::BTreeMap;
use std::path::Path;
use toml::{Spanned, Table, Value};

/// One swept key and the values it takes, in the order given.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    /// A dotted config path, as `--set` takes it: `device.spare_factor`.
    pub key: String,
    pub values: Vec<Value>,
    /// Where the key was written (1-based line of the grid file), for messages.
    pub line: Option<usize>,
}

/// A whole sweep before expansion.
#[derive(Clone, Debug, PartialEq)]
pub struct Grid {
    /// The configuration every point starts from.
    pub base: Table,
    /// Names the grid in messages (a file path, or `python` for the API).
    pub origin: String,
    /// Sorted by key.
    pub axes: Vec<Axis>,
    pub seeds: Vec<u64>,
}

/// The grid file as written; `[grid]` keeps spans of its top-level keys for messages.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct GridFile {
    base: Option<Value>,
    seeds: Option<Vec<u64>>,
    grid: Option<BTreeMap<String, Spanned<Value>>>,
}

impl Grid {
    /// Reads a grid file; `base = "path"` is resolved against the grid file's folder.
    pub fn load(path: &Path) -> Result<Grid, SweepError> {
        let text = read(path)?;
        let origin = path.display().to_string();
        let dir = path.parent().unwrap_or(Path::new("."));
        Grid::parse(&text, &origin, |base| {
            let base_path = dir.join(base);
            let text = read(&base_path)
                .map_err(|e| SweepError::Grid(format!("{origin}: base = \"{base}\": {e}")))?;
            Ok((text, base_path.display().to_string()))
        })
    }

    /// Parses grid-file text; `read_base` turns a `base = "path"` into (text, origin).
    pub fn parse(
        text: &str,
        origin: &str,
        read_base: impl FnOnce(&str) -> Result<(String, String), SweepError>,
    ) -> Result<Grid, SweepError> {
        let file: GridFile = toml::from_str(text)
            .map_err(|e| SweepError::Grid(format!("{origin}: {}", e.to_string().trim_end())))?;
        let base = match file.base {
            None => Table::new(),
            Some(Value::Table(t)) => t,
            Some(Value::String(path)) => {
                let (base_text, base_origin) = read_base(&path)?;
                toml::from_str::<Table>(&base_text).map_err(|e| {
                    SweepError::Grid(format!(
                        "{base_origin} (the base of {origin}): {}",
                        e.to_string().trim_end()
                    ))
                })?
            }
            Some(other) => {
                return Err(SweepError::Grid(format!(
                    "{origin}: base = {other} (accepted: a path to a config file, or a [base] table)"
                )))
            }
        };
        let mut axes = Vec::new();
        for (key, spanned) in file.grid.unwrap_or_default() {
            let line = line_of(text, spanned.span().start);
            flatten_axes(&key, spanned.into_inner(), line, origin, &mut axes)?;
        }
        let seeds = file.seeds.unwrap_or_else(|| default_seeds(&base));
        Grid::new(base, origin, axes, seeds)
    }

    /// Builds and checks a grid from parts (the Python API). Axes may come in any order.
    pub fn new(base: Table, origin: &str, mut axes: Vec<Axis>, seeds: Vec<u64>) -> Result<Grid, SweepError> {
        axes.sort_by(|a, b| a.key.cmp(&b.key));
        for axis in &axes {
            let at = match axis.line {
                Some(line) => format!("{origin}:{line}"),
                None => origin.to_string(),
            };
            if axis.key.is_empty() || axis.key.split('.').any(str::is_empty) {
                return Err(SweepError::Grid(format!(
                    "{at}: grid key `{}` is not a dotted config path (like device.spare_factor)",
                    axis.key
                )));
            }
            if axis.key == "seed" {
                return Err(SweepError::Grid(format!(
                    "{at}: `seed` cannot be a grid key; list the seeds in `seeds = [...]`"
                )));
            }
            if axis.values.is_empty() {
                return Err(SweepError::Grid(format!(
                    "{at}: grid key `{}` has an empty list of values (give at least one value)",
                    axis.key
                )));
            }
            for value in &axis.values {
                if let Some(bad) = non_finite(value) {
                    // As JSON (the config hash's input) NaN and both infinities are all null:
                    // three points with one config_hash, and a resumed sweep skipping two.
                    return Err(SweepError::Grid(format!(
                        "{at}: grid key `{}` = {bad} (a value must be a finite number: NaN and infinities are refused)",
                        axis.key
                    )));
                }
            }
        }
        for pair in axes.windows(2) {
            let (a, b) = (&pair[0].key, &pair[1].key);
            if a == b {
                return Err(SweepError::Grid(format!("{origin}: grid key `{a}` is given twice")));
            }
            if b.starts_with(&format!("{a}.")) {
                return Err(SweepError::Grid(format!(
                    "{origin}: grid keys `{a}` and `{b}` overlap (one is inside the other)"
                )));
            }
        }
        if seeds.is_empty() {
            return Err(SweepError::Grid(format!(
                "{origin}: seeds is an empty list (give at least one seed)"
            )));
        }
        // Counted before anything is allocated for the points: the product of 64 axes of two
        // values wrapped to 0 runs and spun; 10^8 points asked for 8.8 GB at once.
        let runs = axes
            .iter()
            .try_fold(seeds.len(), |runs, axis| runs.checked_mul(axis.values.len()))
            .filter(|&runs| runs <= RUNS_MAX);
        if runs.is_none() {
            let sizes: Vec<String> = axes.iter().map(|a| a.values.len().to_string()).collect();
            return Err(SweepError::Grid(format!(
                "{origin}: the grid has {} x {} seeds runs, more than the {RUNS_MAX} a sweep may have (split it into several grids or shards of fewer values)",
                if sizes.is_empty() { "1".to_string() } else { sizes.join(" x ") },
                seeds.len()
            )));
        }
        let mut sorted = seeds.clone();
        sorted.sort_unstable();
        if let Some(pair) = sorted.windows(2).find(|p| p[0] == p[1]) {
            return Err(SweepError::Grid(format!("{origin}: seed {} is listed twice in seeds", pair[0])));
        }
        Ok(Grid { base, origin: origin.to_string(), axes, seeds })
    }

    /// The number of runs: the product of the axes' lengths times the number of seeds.
    pub fn run_count(&self) -> usize {
        self.axes.iter().map(|a| a.values.len()).product::<usize>() * self.seeds.len()
    }
}

/// The most runs (points x seeds) one grid may expand to.
pub const RUNS_MAX: usize = 1_000_000;

/// The first NaN or infinite float inside `value`, as TOML text.
fn non_finite(value: &Value) -> Option<String> {
    match value {
        Value::Float(x) if !x.is_finite() => Some(value.to_string()),
        Value::Array(values) => values.iter().find_map(non_finite),
        Value::Table(table) => table.values().find_map(non_finite),
        _ => None,
    }
}

/// `[grid]` may nest tables (`[grid.device] spare_factor = [...]`): every list is an axis whose
/// key is the path down to it.
fn flatten_axes(
    key: &str,
    value: Value,
    line: usize,
    origin: &str,
    axes: &mut Vec<Axis>,
) -> Result<(), SweepError> {
    match value {
        Value::Array(values) => {
            axes.push(Axis { key: key.to_string(), values, line: Some(line) });
            Ok(())
        }
        Value::Table(table) => {
            for (k, v) in table {
                flatten_axes(&format!("{key}.{k}"), v, line, origin, axes)?;
            }
            Ok(())
        }
        other => Err(SweepError::Grid(format!(
            "{origin}:{line}: grid key `{key}` = {other} is not a list of values (write [{other}] to fix it at one value)"
        ))),
    }
}

fn default_seeds(base: &Table) -> Vec<u64> {
    match base.get("seed").and_then(Value::as_integer) {
        Some(seed) if seed >= 0 => vec![seed as u64],
        _ => vec![1],
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].bytes().filter(|&b| b == b'\n').count() + 1
}

fn read(path: &Path) -> Result<String, SweepError> {
    std::fs::read_to_string(path).map_err(|error| SweepError::Io { path: path.display().to_string(), error })
}
