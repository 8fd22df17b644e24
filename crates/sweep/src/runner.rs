//! The one thing a sweep needs from the simulator: run a config with `--set` assignments and a
//! seed, returning metrics.json's content; and parse one without running it.

use crate::plan::Point;
use crate::row::Row;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Turns configurations into metrics. Shared by the worker threads, hence `Sync`.
pub trait Runner: Sync {
    /// Parses and checks `base` with `set` applied, without simulating. A sweep calls it once
    /// per grid value before starting, so a key that no value makes valid (an unknown key) stops
    /// the sweep at once instead of failing every row.
    fn check(&self, base: &str, origin: &str, set: &[String]) -> Result<(), String>;

    /// Runs `base` with `set` applied and `seed`; returns the content of metrics.json.
    fn run(&self, base: &str, origin: &str, seed: u64, set: &[String]) -> Result<serde_json::Value, String>;
}

/// The real runner: trimlab-scenario, the same code path as `trimlab run`.
pub struct ScenarioRunner;

impl Runner for ScenarioRunner {
    fn check(&self, base: &str, origin: &str, set: &[String]) -> Result<(), String> {
        let config = trimlab_scenario::RunConfig::parse_with(base, origin, set).map_err(|e| e.to_string())?;
        config.resolve().map(|_| ()).map_err(|e| e.to_string())
    }

    fn run(&self, base: &str, origin: &str, seed: u64, set: &[String]) -> Result<serde_json::Value, String> {
        trimlab_scenario::run_text(base, origin, Some(seed), set).map_err(|e| e.to_string())
    }
}

/// Runs one point. A config the runner refuses, or a panic inside it (a bug in trimlab), gives
/// a failed row carrying the message; the sweep goes on.
pub fn run_point(runner: &dyn Runner, base: &str, origin: &str, point: &Point) -> Row {
    let origin = format!("{origin} (run {})", point.run);
    let result = catch_unwind(AssertUnwindSafe(|| runner.run(base, &origin, point.seed, &point.set)));
    let result = match result {
        Ok(result) => result,
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("(no message)");
            Err(format!("trimlab panicked (a bug; please report it with this config and seed): {message}"))
        }
    };
    Row::new(point, result)
}
