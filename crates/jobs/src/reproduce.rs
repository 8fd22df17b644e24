//! `reproduce`: the papers' experiments, selected by name, run at a scale and seed.

use anyhow::{Context, Result};
use std::sync::Arc;
pub use trimlab_experiments::bands::summary as verdict_summary;
use trimlab_experiments::Options;
pub use trimlab_experiments::{references, Experiment, PhaseProgress, Progress, EXPERIMENTS};
use trimlab_report::ExperimentReport;

/// The experiments `names` selects (every one when empty), after checking `scale`.
pub fn select(names: &[String], scale: f64) -> Result<Vec<&'static Experiment>> {
    trimlab_experiments::check_scale(scale)?;
    trimlab_experiments::select(names)
}

/// Runs one experiment; `progress` shows its worker pools.
pub fn run(
    experiment: &Experiment,
    seed: u64,
    scale: f64,
    progress: Arc<dyn Progress>,
) -> Result<ExperimentReport> {
    (experiment.run)(&Options { seed, scale, progress, point_log: None })
}

/// "experiment: claim" for every claim of `reports` that does not hold.
pub fn failed_claims(reports: &[ExperimentReport]) -> Vec<String> {
    reports
        .iter()
        .flat_map(|r| r.verdicts.iter().filter(|v| !v.holds).map(move |v| format!("{}: {}", r.name, v.claim)))
        .collect()
}

/// One experiment's points as config files: (file name, text with a header saying where it
/// came from).
pub struct EmittedConfigs {
    pub experiment: &'static str,
    pub files: Vec<(String, String)>,
}

/// Every point of the selected experiments as a config (every experiment's points are
/// configs: tests/experiments/point_configs.rs in trimlab-experiments runs them back).
pub fn emit_configs(names: &[String], seed: u64, scale: f64) -> Result<Vec<EmittedConfigs>> {
    let options = Options::new(seed, scale);
    let mut emitted = Vec::new();
    for experiment in select(names, scale)? {
        let points = experiment
            .config_files(&options)
            .with_context(|| format!("{}: rendering its point configs", experiment.name))?;
        let files = points
            .into_iter()
            .map(|(file, text)| {
                let header = format!(
                    "# trimlab reproduce {} --seed {seed} --scale {scale}: {file}\n",
                    experiment.name
                );
                (file, header + &text)
            })
            .collect();
        emitted.push(EmittedConfigs { experiment: experiment.name, files });
    }
    Ok(emitted)
}
