//! One library entry per job. `trimlab`'s subcommands and the Python module are adapters over
//! this crate: they parse arguments (or convert Python values), call one function here, and
//! print (or convert back). So a job is orchestrated once, and the CLI and Python cannot give
//! different numbers for the same input: `python/tests/test_parity.py` checks it.
//!
//! | job | entry |
//! |---|---|
//! | `run` | [`run::run`] (a config, optionally a fio job as the workload) |
//! | `replay` | [`replay::replay`] (a block trace on a device config) |
//! | `advise` | [`advise_request::advise`] (whatever the user brought: a trace, a config, a fio job, an strace, a Filebench model), over [`advise::advise`] (a trace replayed once per discard choice) and [`advise::advise_file`] (a file workload run once per host TRIM policy) |
//! | `reproduce` | [`reproduce::select`], [`reproduce::emit_configs`] |
//! | `sweep` | [`sweep`] (grids from files, from JSON, local runs) |
//! | `presets` | [`presets::presets`], [`presets::describe`] |
//! | `serve` | [`serve::device_config`] (the device the NBD export models) |
//! | `--help` | [`catalog`] (every name a config accepts, from the registries) |
//!
//! Boundary: this crate reads no file and no clock. Traces come in as readers the adapter
//! opened; replays parse the trace on a reader thread (`trimlab_replay`), which cannot change
//! a result. What is logic rather than an entry lives below: `trimlab-replay`,
//! `trimlab-advise`, `trimlab-bench`.

pub mod advise_request;
pub mod aging_report;
pub mod catalog;
pub mod compare;
pub mod expected_claims;
pub mod filebench_summary;
pub mod fio_output;
pub mod presets;
pub mod replay;
pub mod reproduce;
pub mod run;
pub mod run_report;
pub mod serve;
pub mod steady_report;
pub mod sweep;
pub mod sweep_report;

pub use anyhow::{Error, Result};
/// `advise` (a trace replayed once per discard choice, a config's file workload run once per
/// host TRIM policy): its entries [`advise::advise`] and [`advise::advise_file`].
pub use trimlab_advise as advise;
/// `bench`: the simulator's speed on this machine ([`bench::run`], `run_limit`, `run_large`).
pub use trimlab_bench as bench;
pub use trimlab_device::verify;
pub use trimlab_replay::trace_options;
pub use trimlab_report as report;
pub use trimlab_scenario::{config_hash, flatten, input, RunConfig, Series};

/// The version every metrics.json names.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Reads a configuration from TOML text (`origin` names it in errors) and applies `--set`
/// overrides in order.
pub fn parse_config(text: &str, origin: &str, set: &[String]) -> Result<RunConfig> {
    Ok(RunConfig::parse_with(text, origin, set)?)
}

/// The built-in defaults with `set` applied (commands whose config is optional).
pub fn default_config(set: &[String]) -> Result<RunConfig> {
    parse_config("", "<defaults>", set)
}

/// `latency_histogram.csv` and, when the series was kept, `timeseries.csv`, as text.
pub fn series_csv(series: &Series) -> (String, Option<String>) {
    let rows = series.timeseries.as_deref().map(trimlab_device::timeseries::rows_to_csv);
    (series.histogram_csv.clone(), rows)
}
