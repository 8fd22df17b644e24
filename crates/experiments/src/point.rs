//! One point of an experiment: its `RunConfig` run through the scenario entry, exactly as
//! `trimlab run` runs the file `--emit-configs` writes for it. Every experiment runs its points
//! here, so the [`PointLog`] sees all of them, and a test can check that the emitted configs
//! are the points run and give the same metrics.

use crate::Options;
use anyhow::Result;
use serde_json::Value;
use std::sync::Mutex;
use trimlab_scenario::{RunConfig, RunResult};

/// Every point an experiment ran: its config and its metrics.json content, in the order the
/// worker threads finished them (the order carries no meaning).
#[derive(Default)]
pub struct PointLog(Mutex<Vec<(RunConfig, Value)>>);

impl PointLog {
    fn push(&self, config: &RunConfig, metrics: &Value) {
        // A panicking point fails the experiment anyway; a poisoned log is still a list.
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push((config.clone(), metrics.clone()));
    }

    /// The points logged so far, leaving the log empty.
    pub fn take(&self) -> Vec<(RunConfig, Value)> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// Runs one point through `trimlab_scenario::run` (the config's own seed) and logs it when the
/// options carry a log.
pub fn run(o: &Options, config: &RunConfig) -> Result<RunResult> {
    let run = trimlab_scenario::run(config, None, &mut ())?;
    if let Some(log) = &o.point_log {
        log.push(config, &run.metrics);
    }
    Ok(run)
}

/// Runs one point and returns its metrics.json content.
pub fn metrics(o: &Options, config: &RunConfig) -> Result<Value> {
    Ok(run(o, config)?.metrics)
}
