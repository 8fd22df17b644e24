//! Running a configured stack: build the device from the config, drive it with the workload,
//! and collect metrics.json's content. No files, clocks or terminals: callers write and print.

use crate::config::RunConfig;
use crate::flatten::config_hash;
use crate::ScenarioError;
use trimlab_device::{DeviceReport, Ssd};
use trimlab_sim::SeedTree;
use trimlab_workload::Progress;

/// What one run produced.
pub struct RunResult {
    pub seed: u64,
    pub config_hash: String,
    /// The content of metrics.json.
    pub metrics: serde_json::Value,
    /// The measured phase's device report (also inside `metrics`).
    pub report: DeviceReport,
}

/// Runs `config`; `seed` overrides the config's (default 1).
pub fn run(
    config: &RunConfig,
    seed: Option<u64>,
    progress: &mut dyn Progress,
) -> Result<RunResult, ScenarioError> {
    let resolved = config.resolve()?;
    let seed = seed.or(config.seed).unwrap_or(1);
    let config_json = serde_json::json!({ "device": resolved.device, "workload": resolved.workload });
    let hash = config_hash(&config_json);
    let mut ssd = Ssd::new(resolved.device.clone());
    let outcome =
        trimlab_workload::run_workload(&mut ssd, &resolved.workload, &SeedTree::new(seed), progress)
            .map_err(|e| {
                ScenarioError::Run(format!("the workload sent a command the device refused: {e}"))
            })?;
    let metrics = serde_json::json!({
        "trimlab_version": env!("CARGO_PKG_VERSION"),
        "seed": seed,
        "config_hash": hash,
        "config": config_json,
        "precondition_end_ns": outcome.precondition_end.ns(),
        "ops": outcome.measured.ops,
        "report": outcome.report,
    });
    Ok(RunResult { seed, config_hash: hash, metrics, report: outcome.report })
}
