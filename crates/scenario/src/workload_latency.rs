//! The run's headline latencies: those of the workload's phases, not of the setup before them
//! (mkfs, aging, a precondition's fill), which the whole run's `report.latency` includes
//! (issue 43: `run --strace` headlined "write p99 32 ms", mkfs's 2 MiB writes).

use crate::stack::is_workload_kind;
use serde::Serialize;
use serde_json::Value;
use trimlab_device::LatencyReport;

/// metrics.json's `workload_latency`: the device latencies of the phases it names, each
/// command kind summarized from the sum of their histograms (exact, not an average of their
/// percentiles).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WorkloadLatency {
    /// Indices in metrics.json's `phases` of the phases covered: every phase with device
    /// latencies but the setup kinds (`stack::SETUP_KINDS`), from the last `measure` on.
    pub phases: Vec<usize>,
    #[serde(flatten)]
    pub latency: LatencyReport,
    /// The phases' names, each once, in order (the headline's words).
    #[serde(skip)]
    pub names: Vec<String>,
    /// Whether the whole run's figures (`report.latency`, from the last `measure` on) count
    /// phases these do not (a headline says which then).
    #[serde(skip)]
    pub excludes_phases: bool,
}

impl WorkloadLatency {
    /// The workload's latencies (`latency`, the device's sum) with the entries of metrics.json's
    /// `phases` they cover.
    pub fn new(phases: &[Value], latency: LatencyReport) -> WorkloadLatency {
        let kind = |e: &Value| e["kind"].as_str().unwrap_or("").to_string();
        let measured = phases.iter().rposition(|e| kind(e) == "measure").unwrap_or(0);
        let timed = |(i, e): &(usize, &Value)| *i >= measured && e.get("latency").is_some();
        let with_latency = phases.iter().enumerate().filter(timed).count();
        let covered: Vec<usize> = phases
            .iter()
            .enumerate()
            .filter(timed)
            .filter(|(_, e)| is_workload_kind(&kind(e)))
            .map(|(i, _)| i)
            .collect();
        let mut names: Vec<String> = Vec::new();
        for &i in &covered {
            let name = phases[i]["name"].as_str().unwrap_or("?").to_string();
            if !names.contains(&name) {
                names.push(name);
            }
        }
        // The whole run's report starts at the last `measure` too.
        let excludes_phases = covered.len() < with_latency;
        WorkloadLatency { phases: covered, latency, names, excludes_phases }
    }

    /// "program phases: mount, workload, umount" (at most four names, then how many more).
    pub fn phases_text(&self) -> String {
        const SHOWN: usize = 4;
        let mut text = self.names.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
        if self.names.len() > SHOWN {
            text.push_str(&format!(" +{} more", self.names.len() - SHOWN));
        }
        format!("program phases: {text}")
    }
}
