//! One configuration, one stack: the TOML schema every command reads (`config`, with the
//! `[host]` / `[thin]` sections in `host` and `[[phase]]` in `phase`), `--set` overrides
//! (`overrides`), the built stack (`stack`: the device and the file system on it), the phase
//! kinds (`phases`, a registry), the one run loop that drives them to a run's metrics (`run`)
//! and the metrics as flat columns (`flatten`). The binary, the sweep runner and the Python module all come
//! through here, so a point of a sweep, a `trimlab run` and a reproduction point are one thing.

pub mod between_rounds;
pub mod canonical;
pub mod catalog;
pub mod config;
pub mod fio_job;
pub mod flatten;
pub mod host;
pub mod key_lines;
pub mod overrides;
pub mod phase;
pub mod phases;
pub mod run;
pub mod stack;
pub mod steady_state;
pub mod workload_latency;
pub mod workload_rounds;

pub use config::{OutputSection, Resolved, ResolvedDevice, RunConfig};
pub use flatten::{config_hash, flatten};
pub use overrides::apply_set;
pub use run::{run, run_recorded, run_resolved, PhaseLatency, RunResult, Series};
/// fio job files as read (`run --fio`'s report names their groups and options).
pub use trimlab_workload::fio;
/// Bounded reading of input files (the binary reads its files through it).
pub use trimlab_workload::input;
/// The progress hook a run reports to (a bar per phase on a terminal).
pub use trimlab_workload::Progress;
pub use workload_latency::WorkloadLatency;

/// Why a configuration could not be read, resolved or run.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// TOML syntax, an unknown key or a value of the wrong type (the text names where).
    #[error("{0}")]
    Parse(String),
    /// A `--set key.path=value` that cannot be applied.
    #[error("--set {assignment:?}: {why}")]
    Set { assignment: String, why: String },
    /// A value outside what the model accepts.
    #[error(transparent)]
    Config(#[from] trimlab_device::ConfigError),
    /// The stack refused a command of the workload (a bug in the workload or the model).
    #[error("{0}")]
    Run(String),
    /// A fio job file that cannot be the run's workload (`run --fio`).
    #[error(transparent)]
    Fio(#[from] trimlab_workload::FioError),
}

/// Runs one configuration (TOML text; `origin` names it in errors) with `--set`-style overrides
/// (`key.path=value`, applied before the text is checked) and returns the content of
/// metrics.json. `seed` overrides the config's `seed` (default 1).
pub fn run_text(
    text: &str,
    origin: &str,
    seed: Option<u64>,
    set: &[String],
) -> Result<serde_json::Value, ScenarioError> {
    let config = RunConfig::parse_with(text, origin, set)?;
    let metrics = run(&config, seed, &mut ())?.metrics;
    match script_error(&metrics) {
        Some(e) => Err(ScenarioError::Run(e.to_string())),
        None => Ok(metrics),
    }
}

/// The error a run's script stopped at (metrics.json's `error`): such a run ran only up to
/// that line, so callers that want a result treat it as an error.
pub fn script_error(metrics: &serde_json::Value) -> Option<&str> {
    metrics.get("error").and_then(|e| e.as_str())
}

/// A run's WAF as text: "n/a" when no host page was written, since a WAF of 0 would read as
/// a perfect drive.
pub fn waf_text(report: &trimlab_device::DeviceReport) -> String {
    if report.host.pages_written == 0 {
        "n/a (no host writes)".into()
    } else {
        format!("{:.3}", report.waf)
    }
}

/// Every device preset resolved with its defaults, as JSON objects (name, about, geometry,
/// timing, host interface).
pub fn presets() -> Vec<serde_json::Value> {
    use trimlab_device::{DeviceSection, FtlSection, SsdConfig, TrimSection};
    trimlab_device::config::preset_list()
        .iter()
        .map(|(name, about)| {
            let device = DeviceSection { preset: Some(name.to_string()), ..Default::default() };
            let resolved = SsdConfig::resolve(&device, &FtlSection::default(), &TrimSection::default())
                .map(|c| serde_json::to_value(&c).unwrap_or(serde_json::Value::Null))
                .unwrap_or_else(|e| serde_json::Value::String(e.to_string()));
            serde_json::json!({ "name": name, "about": about, "resolved": resolved })
        })
        .collect()
}
