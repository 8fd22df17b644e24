//! The native half of the `trimlab` Python package: thin bindings that take and return JSON
//! text (the Python half turns it into dicts and DataFrames), release the GIL while the
//! simulator runs, and raise `trimlab.TrimlabError` with trimlab's own message.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use std::sync::Arc;
use trimlab_jobs::sweep::{grid_from_json, run_point, Row, ScenarioRunner, Shard, SweepOptions, Table};
use trimlab_jobs::trace_options::TraceOptions;

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

/// An anyhow error with its whole chain of causes, as the CLI prints it.
fn chain(e: trimlab_jobs::Error) -> PyErr {
    err(format!("{e:#}"))
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
            py.allow_threads(|| trimlab_jobs::run::run_text(&text, &origin, seed, &set)).map_err(chain)?;
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
    guard(|| to_json(&trimlab_jobs::presets::presets()))
}

/// Runs a sweep on `jobs` local threads (in `out` with journal and resume when given); returns
/// the table as `{"columns": [...], "data": [[...]]}` text. `progress(done, total)` is called
/// (with the GIL) as each point's row comes in; if it raises, the sweep still finishes (its rows
/// are journalled) and the first exception is raised after it.
#[pyfunction]
#[pyo3(signature = (base, origin, grid, seeds, jobs, out=None, shard=None, progress=None))]
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
    progress: Option<PyObject>,
) -> PyResult<String> {
    guard(|| {
        let grid = grid_from_json(&base, &origin, &grid, seeds).map_err(chain)?;
        let shard = match shard {
            Some(text) => text.parse::<Shard>().map_err(err)?,
            None => Shard::WHOLE,
        };
        let options = SweepOptions { jobs, shard };
        let mut raised: Option<PyErr> = None;
        let mut report = |_: &Row, done: usize, total: usize| {
            if let (Some(callback), None) = (&progress, &raised) {
                raised = Python::with_gil(|py| callback.call1(py, (done, total)).err());
            }
        };
        let table = py
            .allow_threads(|| match out {
                Some(dir) => trimlab_jobs::sweep::run_in_dir(
                    &grid,
                    &ScenarioRunner,
                    options,
                    dir.as_ref(),
                    &mut report,
                )
                .map(|o| o.table),
                None => trimlab_jobs::sweep::run_in_memory(&grid, &ScenarioRunner, options, &mut report),
            })
            .map_err(err)?;
        match raised {
            Some(e) => Err(e),
            None => to_json(&table),
        }
    })
}

/// Expands and checks a grid for another executor (Ray): `{"base_text", "origin", "keys",
/// "points": [...]}` as text. Each point runs with `run_points`; `table` assembles the rows.
#[pyfunction]
fn plan(base: String, origin: String, grid: String, seeds: Vec<u64>) -> PyResult<String> {
    guard(|| {
        let grid = grid_from_json(&base, &origin, &grid, seeds).map_err(chain)?;
        let plan = trimlab_jobs::sweep::plan(&grid).map_err(chain)?;
        to_json(&serde_json::json!({
            "base_text": plan.base_text, "origin": plan.origin, "keys": plan.keys, "points": plan.points,
        }))
    })
}

/// Runs points (JSON list of plan points) one after the other; returns their rows as JSON.
#[pyfunction]
fn run_points(py: Python<'_>, base_text: String, origin: String, points: String) -> PyResult<String> {
    guard(|| {
        let points: Vec<trimlab_jobs::sweep::Point> =
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

/// Replays a block trace on a device config (TOML text); returns the metrics.json of
/// `trimlab replay` as text. The knobs are the CLI's flags, parsed by the same code.
#[pyfunction]
#[pyo3(signature = (trace, device, origin, format=None, trims="as-recorded", lba="check", speed=1.0, closed_loop=None, skip_bad=false, blk_action="D", fio_time_unit="us"))]
#[allow(clippy::too_many_arguments)]
fn replay(
    py: Python<'_>,
    trace: String,
    device: String,
    origin: String,
    format: Option<String>,
    trims: &str,
    lba: &str,
    speed: f64,
    closed_loop: Option<u32>,
    skip_bad: bool,
    blk_action: &str,
    fio_time_unit: &str,
) -> PyResult<String> {
    guard(|| {
        let config = trimlab_jobs::parse_config(&device, &origin, &[]).map_err(chain)?;
        let options = TraceOptions {
            format,
            blk_action: blk_action.into(),
            fio_time_unit: fio_time_unit.into(),
            skip_bad,
            lba: lba.into(),
            speed,
            closed_loop,
            trims: trims.into(),
        };
        let file = std::fs::File::open(&trace).map_err(|e| err(format!("cannot read {trace}: {e}")))?;
        let input = trimlab_jobs::replay::TraceInput {
            reader: Box::new(std::io::BufReader::with_capacity(1 << 20, file)),
            name: trace.clone(),
        };
        let metrics = py
            .allow_threads(|| {
                trimlab_jobs::replay::replay(&config, input, &options, None).map(|r| r.metrics(&trace))
            })
            .map_err(chain)?;
        to_json(&metrics)
    })
}

/// Runs one experiment of `trimlab reproduce`; returns its report (tables, verdicts) as JSON.
#[pyfunction]
#[pyo3(signature = (name, scale=1.0, seed=1))]
fn reproduce(py: Python<'_>, name: String, scale: f64, seed: u64) -> PyResult<String> {
    guard(|| {
        let experiment =
            trimlab_jobs::reproduce::select(std::slice::from_ref(&name), scale).map_err(chain)?[0];
        let report = py
            .allow_threads(|| trimlab_jobs::reproduce::run(experiment, seed, scale, Arc::new(Silent)))
            .map_err(chain)?;
        to_json(&report)
    })
}

/// `trimlab advise` on what the caller brought (`kind`: "trace", "config", "fio", "strace",
/// "filebench"; `subject`: the trace's or strace's path, else the file's text); returns the
/// report (tables, params, notes) and its warnings as JSON. The same entry as the CLI's.
#[pyfunction]
#[pyo3(signature = (kind, subject, origin, device=None, set=Vec::new(), root=None, fstrim_periods=Vec::new(), mapping_units=Vec::new(), life=None, format=None))]
#[allow(clippy::too_many_arguments)]
fn advise(
    py: Python<'_>,
    kind: &str,
    subject: String,
    origin: String,
    device: Option<(String, String)>,
    set: Vec<String>,
    root: Option<String>,
    fstrim_periods: Vec<String>,
    mapping_units: Vec<String>,
    life: Option<(f64, u32, f64)>,
    format: Option<String>,
) -> PyResult<String> {
    use trimlab_jobs::advise_request::{advise, Brought, Request};
    guard(|| {
        let options = TraceOptions { format, ..TraceOptions::default() };
        let open = || -> trimlab_jobs::Result<trimlab_jobs::replay::TraceInput> {
            let file = std::fs::File::open(&subject)
                .map_err(|e| trimlab_jobs::Error::msg(format!("cannot read {subject}: {e}")))?;
            Ok(trimlab_jobs::replay::TraceInput {
                reader: Box::new(std::io::BufReader::with_capacity(1 << 20, file)),
                name: subject.clone(),
            })
        };
        let root = root.unwrap_or_default();
        let brought = match kind {
            "trace" => Brought::Trace { name: &subject, open: &open, options },
            "config" => Brought::Config { text: &subject, origin: &origin },
            "fio" => Brought::Fio { text: &subject, origin: &origin },
            "strace" => Brought::Strace { path: &subject, root: &root },
            "filebench" => Brought::Filebench { text: &subject, origin: &origin },
            other => {
                return Err(err(format!(
                    "advise: kind {other:?} is not one of trace, config, fio, strace, filebench"
                )))
            }
        };
        let life = life.map(|(utilization, rounds, churn)| trimlab_jobs::advise::life::Life {
            utilization,
            rounds,
            churn,
        });
        let request = Request {
            brought,
            device: device.as_ref().map(|(t, o)| (t.as_str(), o.as_str())),
            set: &set,
            fstrim_periods: &fstrim_periods,
            mapping_units: &mapping_units,
            life,
        };
        let advice = py.allow_threads(|| advise(&request, &Silent)).map_err(chain)?;
        to_json(&serde_json::json!({ "report": advice.report, "warnings": advice.warnings }))
    })
}

/// No progress display: Python shows none yet.
struct Silent;

impl trimlab_jobs::reproduce::Progress for Silent {
    fn start(&self, _label: &str) -> Box<dyn trimlab_jobs::reproduce::PhaseProgress + '_> {
        Box::new(Silent)
    }
}

impl trimlab_jobs::reproduce::PhaseProgress for Silent {
    fn set(&self, _permille: u64) {}
    fn finish(&self) {}
}

/// Names and one-line descriptions of the experiments `reproduce` takes.
#[pyfunction]
fn experiments() -> Vec<(String, String)> {
    trimlab_jobs::reproduce::EXPERIMENTS.iter().map(|e| (e.name.to_string(), e.about.to_string())).collect()
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
        wrap_pyfunction!(advise, m)?,
    ] {
        m.add_function(f)?;
    }
    Ok(())
}
