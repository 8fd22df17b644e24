//! The native half of the `trimlab` Python package: thin bindings that take and return JSON
//! text (the Python half turns it into dicts and DataFrames), release the GIL while the
//! simulator runs, and raise `trimlab.TrimlabError` with trimlab's own message.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use trimlab_sweep::{
    plan::Plan, runner::run_point, sweep::check_grid, Axis, Grid, Row, ScenarioRunner, Shard, SweepOptions,
    Table,
};

create_exception!(
    _trimlab,
    TrimlabError,
    PyException,
    "A configuration, trace, grid or run that trimlab refused."
);

fn err(message: impl std::fmt::Display) -> PyErr {
    TrimlabError::new_err(message.to_string())
}

/// Runs `f` with a panic inside trimlab (a bug) turned into `TrimlabError`, so Python callers
/// catch one exception type for every failure (issue 26: pyo3 raised PanicException, a
/// BaseException that `except Exception` misses).
fn guard<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("(no message)");
        Err(err(format!("trimlab panicked (a bug; please report it with this input): {message}")))
    })
}

fn to_json(value: &impl serde::Serialize) -> PyResult<String> {
    serde_json::to_string(value).map_err(err)
}

/// Runs one configuration (TOML text) with `--set` overrides; returns metrics.json as text.
#[pyfunction]
#[pyo3(signature = (text, origin, seed=None, set=Vec::new()))]
fn run(
    py: Python<'_>,
    text: String,
    origin: String,
    seed: Option<u64>,
    set: Vec<String>,
) -> PyResult<String> {
    guard(|| {
        let metrics =
            py.allow_threads(|| trimlab_scenario::run_text(&text, &origin, seed, &set)).map_err(err)?;
        to_json(&metrics)
    })
}

/// A config given as JSON (a Python dict) as TOML text.
#[pyfunction]
fn toml_text(json: &str) -> PyResult<String> {
    guard(|| {
        let value: serde_json::Value = serde_json::from_str(json).map_err(|e| err(format!("config: {e}")))?;
        let table: toml::Table = serde_json::from_value(value)
            .map_err(|e| err(format!("config: not a TOML table ({e}); None is not a value")))?;
        toml::to_string(&table).map_err(err)
    })
}

/// Every device preset, resolved, as a JSON list.
#[pyfunction]
fn presets() -> PyResult<String> {
    guard(|| to_json(&trimlab_scenario::presets()))
}

/// A grid from the Python API: base TOML text, `{key: [values]}` as JSON, seeds.
fn grid_of(base: &str, origin: &str, grid_json: &str, seeds: Vec<u64>) -> PyResult<Grid> {
    let base: toml::Table =
        toml::from_str(base).map_err(|e| err(format!("{origin}: {}", e.to_string().trim_end())))?;
    let map: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(grid_json).map_err(|e| err(format!("grid: {e}")))?;
    let mut axes = Vec::new();
    for (key, values) in map {
        let serde_json::Value::Array(values) = values else {
            return Err(err(format!(
                "grid key `{key}` = {values} is not a list of values (write [{values}])"
            )));
        };
        let values = values
            .into_iter()
            .map(|v| match v {
                serde_json::Value::Null => Err(err(format!("grid key `{key}`: None is not a config value"))),
                v => serde_json::from_value::<toml::Value>(v.clone())
                    .map_err(|e| err(format!("grid key `{key}`: {v} is not a config value ({e})"))),
            })
            .collect::<PyResult<Vec<_>>>()?;
        axes.push(Axis { key, values, line: None });
    }
    Grid::new(base, origin, axes, seeds).map_err(err)
}

/// Runs a sweep on `jobs` local threads (in `out` with journal and resume when given); returns
/// the table as `{"columns": [...], "data": [[...]]}` text.
#[pyfunction]
#[pyo3(signature = (base, origin, grid, seeds, jobs, out=None, shard=None))]
#[allow(clippy::too_many_arguments)]
fn sweep(
    py: Python<'_>,
    base: String,
    origin: String,
    grid: String,
    seeds: Vec<u64>,
    jobs: usize,
    out: Option<String>,
    shard: Option<String>,
) -> PyResult<String> {
    guard(|| {
        let grid = grid_of(&base, &origin, &grid, seeds)?;
        let shard = match shard {
            Some(text) => text.parse::<Shard>().map_err(err)?,
            None => Shard::WHOLE,
        };
        let options = SweepOptions { jobs, shard };
        let table = py
            .allow_threads(|| match out {
                Some(dir) => {
                    trimlab_sweep::run_in_dir(&grid, &ScenarioRunner, options, dir.as_ref(), |_, _, _| {})
                        .map(|o| o.table)
                }
                None => trimlab_sweep::run_in_memory(&grid, &ScenarioRunner, options, |_, _, _| {}),
            })
            .map_err(err)?;
        to_json(&table)
    })
}

/// Expands and checks a grid for another executor (Ray): `{"base_text", "origin", "keys",
/// "points": [...]}` as text. Each point runs with `run_points`; `table` assembles the rows.
#[pyfunction]
fn plan(base: String, origin: String, grid: String, seeds: Vec<u64>) -> PyResult<String> {
    guard(|| {
        let grid = grid_of(&base, &origin, &grid, seeds)?;
        let plan = Plan::new(&grid);
        check_grid(&grid, &plan, &ScenarioRunner).map_err(err)?;
        to_json(&serde_json::json!({
            "base_text": plan.base_text, "origin": plan.origin, "keys": plan.keys, "points": plan.points,
        }))
    })
}

/// Runs points (JSON list of plan points) one after the other; returns their rows as JSON.
#[pyfunction]
fn run_points(py: Python<'_>, base_text: String, origin: String, points: String) -> PyResult<String> {
    guard(|| {
        let points: Vec<trimlab_sweep::Point> =
            serde_json::from_str(&points).map_err(|e| err(format!("points: {e}")))?;
        let rows: Vec<Row> = py.allow_threads(|| {
            points.iter().map(|p| run_point(&ScenarioRunner, &base_text, &origin, p)).collect()
        });
        to_json(&rows)
    })
}

/// The table of rows gathered from anywhere (JSON list of rows), as `sweep` returns it.
#[pyfunction]
fn table(keys: Vec<String>, rows: String) -> PyResult<String> {
    guard(|| {
        let rows: Vec<Row> = serde_json::from_str(&rows).map_err(|e| err(format!("rows: {e}")))?;
        to_json(&Table::from_rows(&keys, &rows))
    })
}

/// Replays a block trace on a device config (TOML text); returns metrics as JSON text.
#[pyfunction]
#[pyo3(signature = (trace, device, origin, format=None, trims="as-recorded", fstrim_period_ns=None, lba="check", speed=1.0, closed_loop=None, skip_bad=false))]
#[allow(clippy::too_many_arguments)]
fn replay(
    py: Python<'_>,
    trace: String,
    device: String,
    origin: String,
    format: Option<String>,
    trims: &str,
    fstrim_period_ns: Option<u64>,
    lba: &str,
    speed: f64,
    closed_loop: Option<u32>,
    skip_bad: bool,
) -> PyResult<String> {
    guard(|| {
        use trimlab_trace::{
            LbaMode, Pacing, ReaderOptions, ReplayOptions, TraceFormat, TraceReader, TrimHandling,
        };
        let config = trimlab_scenario::RunConfig::parse(&device, &origin).map_err(err)?;
        let resolved = config.resolve().map_err(err)?;
        let format = format.map(|f| TraceFormat::parse(&f)).transpose().map_err(err)?;
        let trims = match (trims, fstrim_period_ns) {
            ("as-recorded", None) => TrimHandling::AsRecorded,
            ("drop", None) => TrimHandling::Drop,
            ("fstrim", Some(ns)) if ns > 0 => TrimHandling::Periodic { period_ns: ns },
            (other, period) => {
                return Err(err(format!(
                    "trims={other:?}, fstrim_period_ns={period:?} (accepted: \"as-recorded\", \"drop\", or \"fstrim\" with fstrim_period_ns > 0)"
                )))
            }
        };
        let lba = match lba {
            "check" => LbaMode::Check,
            "remap" => LbaMode::Remap,
            other => return Err(err(format!("lba={other:?} (accepted: \"check\", \"remap\")"))),
        };
        let pacing = match closed_loop {
            Some(0) => return Err(err("closed_loop=0 (must be at least 1)")),
            Some(queue_depth) => Pacing::ClosedLoop { queue_depth },
            None if speed > 0.0 && speed.is_finite() => Pacing::OpenLoop { speed },
            None => return Err(err(format!("speed={speed} (must be a positive number)"))),
        };
        let file = std::fs::File::open(&trace).map_err(|e| err(format!("{trace}: {e}")))?;
        let options = ReaderOptions { format, skip_bad, ..ReaderOptions::default() };
        let metrics = py
            .allow_threads(|| -> Result<serde_json::Value, String> {
                let mut reader = TraceReader::new(std::io::BufReader::new(file), &trace, options)
                    .map_err(|e| e.to_string())?;
                let mut ssd = trimlab_device::Ssd::new(resolved.device.clone());
                let outcome =
                    trimlab_trace::replay(&mut ssd, reader.by_ref(), ReplayOptions { pacing, lba, trims })
                        .map_err(|e| e.to_string())?;
                Ok(serde_json::json!({
                    "trace": trace, "format": reader.format(), "skipped_bad_lines": reader.skipped_bad(),
                    "trims": trims, "device": resolved.device, "replay": outcome.stats, "report": outcome.report,
                }))
            })
            .map_err(err)?;
        to_json(&metrics)
    })
}

/// Runs one experiment of `trimlab reproduce`; returns its report (tables, verdicts) as JSON.
#[pyfunction]
#[pyo3(signature = (name, scale=1.0, seed=1))]
fn reproduce(py: Python<'_>, name: String, scale: f64, seed: u64) -> PyResult<String> {
    guard(|| {
        trimlab_experiments::check_scale(scale).map_err(err)?;
        let experiment =
            trimlab_experiments::select(std::slice::from_ref(&name)).map_err(|e| err(format!("{e:#}")))?[0];
        let options = trimlab_experiments::Options::new(seed, scale);
        let report = py.allow_threads(|| (experiment.run)(&options)).map_err(|e| err(format!("{e:#}")))?;
        to_json(&report)
    })
}

/// Names and one-line descriptions of the experiments `reproduce` takes.
#[pyfunction]
fn experiments() -> Vec<(String, String)> {
    trimlab_experiments::EXPERIMENTS.iter().map(|e| (e.name.to_string(), e.about.to_string())).collect()
}

#[pymodule]
fn _trimlab(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("TrimlabError", m.py().get_type::<TrimlabError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    for f in [
        wrap_pyfunction!(run, m)?,
        wrap_pyfunction!(presets, m)?,
        wrap_pyfunction!(toml_text, m)?,
        wrap_pyfunction!(sweep, m)?,
        wrap_pyfunction!(plan, m)?,
        wrap_pyfunction!(run_points, m)?,
        wrap_pyfunction!(table, m)?,
        wrap_pyfunction!(replay, m)?,
        wrap_pyfunction!(reproduce, m)?,
        wrap_pyfunction!(experiments, m)?,
    ] {
        m.add_function(f)?;
    }
    Ok(())
}
