//! fio's own results of a `run --fio`: each group of jobs that ran at once (a phase of the
//! run) as fio reports it with `group_reporting` — IOPS, bandwidth and latency per direction
//! from simulated time — in fio 3.33's normal, terse (v3), JSON and JSON+ layouts (fio's
//! stat.c: show_thread_status_normal, show_thread_status_terse_all,
//! show_thread_status_json). What the model has no counterpart for (CPU, IO depth
//! distributions, bandwidth samples) is printed as fio prints an empty one; docs/config.md
//! ("fio's output") lists those fields.

mod json;
mod normal;
mod number;
mod terse;

use trimlab_device::{CommandKind, LatencyHistogram};
use trimlab_scenario::fio::{FioFile, ReportOptions};
use trimlab_scenario::phase::{Phase, PhaseKind};
use trimlab_scenario::PhaseLatency;

pub use json::json;
pub use normal::normal;
pub use terse::terse;

/// The fio version whose output layout is followed (fio's `fio_version_string`).
pub const FIO_VERSION: &str = "fio-3.33";

/// `--output-format`: fio's names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    Normal,
    Terse,
    Json,
    JsonPlus,
}

impl OutputFormat {
    pub fn parse(text: &str) -> Result<OutputFormat, String> {
        match text {
            "normal" => Ok(OutputFormat::Normal),
            "terse" => Ok(OutputFormat::Terse),
            "json" => Ok(OutputFormat::Json),
            "json+" => Ok(OutputFormat::JsonPlus),
            _ => Err(format!(
                "--output-format {text:?}: expected normal, terse, json or json+ (fio's formats)"
            )),
        }
    }

    /// The report in this format.
    pub fn render(self, report: &FioReport) -> String {
        match self {
            OutputFormat::Normal => normal(report),
            OutputFormat::Terse => terse(report),
            OutputFormat::Json => json(report, false),
            OutputFormat::JsonPlus => json(report, true),
        }
    }
}

/// A whole job file's results.
pub struct FioReport {
    pub global_options: Vec<(String, String)>,
    pub groups: Vec<GroupReport>,
}

/// One group of jobs that ran at once, its jobs' figures summed (fio's group_reporting).
pub struct GroupReport {
    /// The first job's name (fio names a reported group after it).
    pub name: String,
    pub groupid: usize,
    /// Jobs, counting clones.
    pub jobs: usize,
    pub options: Vec<(String, String)>,
    pub report: ReportOptions,
    /// Read, write and TRIM, in fio's order.
    pub dirs: [Direction; 3],
    /// FLUSHes (fio's fsync / `sync` direction).
    pub sync: Direction,
    /// Simulated time the group ran, in ms (fio's runtime; at least 1 when it did I/O).
    pub runtime_ms: u64,
}

/// One direction's commands: bytes, count and the latency of each (submission to completion;
/// the model has no submission cost, so fio's slat is empty and lat equals clat).
pub struct Direction {
    pub io_bytes: u64,
    pub total_ios: u64,
    pub latency: LatencyHistogram,
}

impl Direction {
    fn bw_bytes(&self, runtime_ms: u64) -> u64 {
        if runtime_ms == 0 {
            return 0;
        }
        (1000u128 * u128::from(self.io_bytes) / u128::from(runtime_ms)) as u64
    }
}

/// The run's phase that each group of `file` ran as: the implicit block workload for a file of
/// one job, else the `workload` phase named after the group (its ramp phase is named
/// "... ramp" and skipped, fio leaving ramp I/O out of its figures).
fn group_phases(file: &FioFile, phases: &[Phase]) -> Vec<Option<usize>> {
    let mut next = 0;
    let mut found = Vec::new();
    for group in &file.groups {
        let label = group.names.join("+");
        let at = phases.iter().enumerate().skip(next).position(|(_, p)| {
            p.section.kind == PhaseKind::BlockWorkload
                || p.section.kind == PhaseKind::Workload && p.section.name.as_deref() == Some(label.as_str())
        });
        let at = at.map(|offset| next + offset);
        next = at.map_or(next, |i| i + 1);
        found.push(at);
    }
    found
}

impl FioReport {
    /// The report of `file`'s run: `phases` as the run resolved them, `latencies` as it kept
    /// them (a phase that ran in rounds, fio's steady state, adds up its rounds).
    pub fn new(file: &FioFile, phases: &[Phase], latencies: &[PhaseLatency]) -> FioReport {
        let mut groups = Vec::new();
        for (groupid, (group, phase)) in file.groups.iter().zip(group_phases(file, phases)).enumerate() {
            let rounds: Vec<&PhaseLatency> = latencies.iter().filter(|l| Some(l.phase) == phase).collect();
            let direction = |kind: CommandKind| {
                let mut latency = trimlab_device::metrics::latency_histogram();
                for r in &rounds {
                    latency
                        .add(&r.histograms[kind as usize])
                        .expect("histograms of one run share their bounds");
                }
                let io_bytes = rounds.iter().map(|r| r.traffic.bytes_of(kind)).sum();
                Direction { io_bytes, total_ios: latency.len(), latency }
            };
            let elapsed_ns: u64 = rounds.iter().map(|r| r.elapsed_ns).sum();
            let dirs =
                [direction(CommandKind::Read), direction(CommandKind::Write), direction(CommandKind::Trim)];
            let did_io = dirs.iter().any(|d| d.total_ios > 0);
            groups.push(GroupReport {
                name: group.names.first().cloned().unwrap_or_default(),
                groupid,
                jobs: group.jobs,
                options: group.options.clone(),
                report: group.report.clone(),
                dirs,
                sync: direction(CommandKind::Flush),
                runtime_ms: (elapsed_ns / 1_000_000).max(u64::from(did_io)),
            });
        }
        FioReport { global_options: file.global_options.clone(), groups }
    }
}

/// fio's names of the directions (io_ddir_name).
const DIRECTION_NAMES: [&str; 3] = ["read", "write", "trim"];

#[cfg(test)]
mod tests;
