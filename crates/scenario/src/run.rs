//! The one run loop: build the stack the config names (a bare SSD, or a file system on the
//! SSD or the thin volume), run the resolved phases in order, each round of each phase through
//! its kind's one entry, and collect metrics.json's content. Rounds (`repeat`) are the loop's:
//! a kind runs one round and knows nothing of the others. No files, clocks or terminals:
//! callers write and print.

use crate::between_rounds::{Between, RoundFiles};
use crate::config::{Resolved, RunConfig};
use crate::host::HostPlan;
use crate::phase::{Outcome, PhaseKind, PhaseRun, Report};
use crate::stack::{file_entry, mkfs_hash_seed, BlockStack, Device, FileStack, Stack, Streams};
use crate::steady_state::Rounds;
use crate::workload_latency::WorkloadLatency;
use crate::ScenarioError;
use serde_json::{json, Map, Value};
use trimlab_device::{DeviceReport, LatencyReport, Metered, Recording, Ssd, ThinVolume, Traffic};
use trimlab_fs::FileSystem;
use trimlab_sim::{SeedTree, SimTime};
use trimlab_workload::cluster_host::ClusterRun;
use trimlab_workload::file::FileState;
use trimlab_workload::Progress;

/// What one run produced.
pub struct RunResult {
    pub seed: u64,
    pub config_hash: String,
    /// The content of metrics.json.
    pub metrics: serde_json::Value,
    /// The measured phase's device report (also inside `metrics`; default for a thin volume).
    pub report: DeviceReport,
    /// What an SSD run leaves besides its totals (`None` for a thin-volume run).
    pub series: Option<Series>,
    /// 004's cluster host (`os-install`, `iozone`): its phases and the FTL's measures when
    /// measurement began, typed (metrics' `cluster_host` holds the same).
    pub cluster_host: Option<ClusterRun>,
    /// With [`Resolved::phase_latencies`]: each `workload` phase round's latencies on a bare SSD.
    pub phase_latencies: Vec<PhaseLatency>,
    /// The workload's phases' device latencies (metrics.json's `workload_latency`): the
    /// headline's. `None` without phases on an SSD (a bare `[workload]`, a thin volume).
    pub workload_latency: Option<WorkloadLatency>,
}

/// What one round of a `workload` phase (or the implicit block workload's measured part)
/// sent and how long its commands took: fio's per-group report.
pub struct PhaseLatency {
    /// The phase's index in the run.
    pub phase: usize,
    pub traffic: Traffic,
    pub elapsed_ns: u64,
    /// Of the commands submitted in the round, per kind.
    pub histograms: trimlab_device::LatencyHistograms,
}

/// Where a round the run keeps the latencies of starts.
enum LatencyMark {
    Round(Box<trimlab_device::LatencyHistograms>, Traffic, SimTime),
    /// The implicit block workload: its measurement starts after its precondition.
    Measured,
}

fn latency_mark(resolved: &Resolved, stack: &Stack, kind: PhaseKind) -> Option<LatencyMark> {
    let Stack::Block(b) = stack else { return None };
    match kind {
        _ if !resolved.phase_latencies => None,
        PhaseKind::Workload => {
            Some(LatencyMark::Round(Box::new(b.ssd.latency_histograms()), stack.traffic(), b.now))
        }
        PhaseKind::BlockWorkload => Some(LatencyMark::Measured),
        _ => None,
    }
}

/// What the round since `mark` added (nothing restarts the measurement inside a workload round).
fn latency_since(mark: LatencyMark, stack: &Stack, phase: usize) -> Option<PhaseLatency> {
    let Stack::Block(b) = stack else { return None };
    let mut histograms = b.ssd.latency_histograms();
    let (traffic, elapsed_ns) = match mark {
        LatencyMark::Round(before, traffic0, start) => {
            for (h, earlier) in histograms.iter_mut().zip(before.iter()) {
                h.subtract(earlier).expect("latencies only grow within a workload round");
            }
            (stack.traffic().since(&traffic0), b.now.since(start))
        }
        LatencyMark::Measured => (stack.traffic(), b.ssd.report(b.now).sim_time_ns),
    };
    Some(PhaseLatency { phase, traffic, elapsed_ns, histograms })
}

/// An SSD run's latency histograms (latency_histogram.csv) and, when `[output] interval` is
/// set, its time series (timeseries.csv).
pub struct Series {
    pub histogram_csv: String,
    pub timeseries: Option<Vec<trimlab_device::timeseries::Row>>,
}

impl Series {
    /// Closes the series at `end` and takes what `ssd` collected.
    pub fn finish(ssd: &mut Ssd, end: SimTime) -> Series {
        ssd.finish_timeseries(end);
        Series {
            histogram_csv: ssd.latency_histogram_csv(),
            timeseries: ssd.timeseries_enabled().then(|| ssd.timeseries().to_vec()),
        }
    }
}

/// Runs `config`; `seed` overrides the config's (default 1).
pub fn run(
    config: &RunConfig,
    seed: Option<u64>,
    progress: &mut dyn Progress,
) -> Result<RunResult, ScenarioError> {
    run_recorded(config, seed, progress, None)
}

/// [`run`], writing every command that reaches the device to `record` (`run --record`: the
/// format of `serve --record`, with a `# phase` line where each phase starts): a file
/// system's commands, or a block workload's as they reach the SSD.
pub fn run_recorded(
    config: &RunConfig,
    seed: Option<u64>,
    progress: &mut dyn Progress,
    record: Option<Box<dyn std::io::Write + Send>>,
) -> Result<RunResult, ScenarioError> {
    run_resolved(&config.resolve()?, seed, progress, record)
}

/// [`run_recorded`] of a config already resolved (callers that read the resolution first,
/// such as `jobs::run` for its notes, resolve once).
pub fn run_resolved(
    resolved: &Resolved,
    seed: Option<u64>,
    progress: &mut dyn Progress,
    record: Option<Box<dyn std::io::Write + Send>>,
) -> Result<RunResult, ScenarioError> {
    let interval_ns = resolved.output.interval_ns(None)?;
    let seed = seed.or(resolved.seed).unwrap_or(1);
    let (config_json, hash) = identity(resolved);
    let seeds =
        resolved.seed_path.as_ref().map_or(SeedTree::new(seed), |path| SeedTree::new(seed).child(path));
    let mut metrics = json!({
        "trimlab_version": env!("CARGO_PKG_VERSION"),
        "seed": seed,
        "config_hash": hash,
        "config": config_json,
    });
    let mut reports = Vec::new();
    let mut stack = build(resolved, seeds, interval_ns, record, &mut reports)?;
    let ran = run_phases(resolved, &mut stack, &mut reports, progress)?;
    for (k, v) in ran.metrics {
        metrics[k] = v;
    }
    if !ran.steady.is_empty() {
        metrics["steady_state"] = Value::Array(ran.steady);
    }
    let (report, series, workload) = finish(stack, reports, ran.stopped, &mut metrics)?;
    metrics["report"] = json!(report);
    let phases = metrics["phases"].as_array().map_or(&[][..], Vec::as_slice);
    let workload_latency = workload.map(|latency| WorkloadLatency::new(phases, latency));
    if let Some(w) = &workload_latency {
        metrics["workload_latency"] = json!(w);
    }
    // The clock stops at u64::MAX instead of wrapping (SimTime::after); every cost and duration
    // a config gives is bounded so that no run should come near, but say so if one does.
    if report.sim_time_ns >= CLOCK_NS_MAX {
        return Err(ScenarioError::Run(format!(
            "the simulated clock ran past 2^62 ns (146 years; the run took {} ns): its costs or durations are too large for the model",
            report.sim_time_ns
        )));
    }
    Ok(RunResult {
        seed,
        config_hash: hash,
        metrics,
        report,
        series,
        cluster_host: ran.cluster_host,
        phase_latencies: ran.latencies,
        workload_latency,
    })
}

/// The resolved config as metrics.json's `config` (keys only a host, thin or phased run has
/// are added when set), and its hash over the canonical form (`canonical.rs`).
fn identity(resolved: &Resolved) -> (Value, String) {
    let mut config_json = json!({ "device": resolved.device, "workload": resolved.workload });
    if let Some(path) = &resolved.seed_path {
        config_json["seed_path"] = json!(path);
    }
    if let Some(host) = &resolved.host {
        config_json["host"] = json!(host);
    }
    if let Some(thin) = &resolved.thin {
        config_json["thin"] = json!(thin);
    }
    let written: Vec<_> = resolved.phases.iter().filter(|p| p.written).map(|p| &p.section).collect();
    if !written.is_empty() {
        config_json["phases"] = json!(written);
    }
    (config_json, crate::canonical::config_hash(resolved))
}

/// A new SSD for `resolved`, sampling its time series when `[output] interval` asks.
fn new_ssd(resolved: &Resolved, interval_ns: Option<u64>) -> Ssd {
    let mut ssd = Ssd::new(resolved.device.clone());
    if let Some(ns) = interval_ns {
        ssd.enable_timeseries(ns, SimTime::ZERO);
    }
    ssd
}

/// The stack `resolved` names: a bare SSD, or (with `[host]`) the SSD or the thin volume, its
/// recording if `run --record` asked for one, and mkfs on it (reported as the first phase).
fn build(
    resolved: &Resolved,
    seeds: SeedTree,
    interval_ns: Option<u64>,
    record: Option<Box<dyn std::io::Write + Send>>,
    reports: &mut Vec<Value>,
) -> Result<Stack, ScenarioError> {
    let start_recording =
        |out| Recording::start(out).map_err(|e| ScenarioError::Run(format!("--record: {e}")));
    let Some(plan) = &resolved.host else {
        let mut ssd = new_ssd(resolved, interval_ns);
        ssd.recording = record.map(start_recording).transpose()?;
        return Ok(Stack::Block(BlockStack {
            ssd,
            now: SimTime::ZERO,
            seeds,
            tag: 1,
            streams: Streams::new(),
            counters_restarted: false,
        }));
    };
    let (device, capacity) = match &resolved.thin {
        Some(t) => (Device::Thin(ThinVolume::new(t.clone()).map_err(ScenarioError::Run)?), t.capacity_bytes),
        None => (Device::Ssd(new_ssd(resolved, interval_ns)), resolved.device.logical_bytes()),
    };
    let mut metered = Metered::new(device);
    if let Some(out) = record {
        metered.recording = Some(start_recording(out)?);
        metered.mark_phase(SimTime::ZERO, "mkfs");
    }
    let HostPlan { fs: config, mkfs_discard, .. } = plan;
    let mut fs = FileSystem::mkfs(metered, config.clone(), SimTime::ZERO, *mkfs_discard)
        .map_err(|e| ScenarioError::Run(format!("mkfs: {e}")))?;
    let mut state = FileState::new(seeds);
    fs.set_hash_seed(mkfs_hash_seed(&mut state));
    reports.push(file_entry(&mut fs, "mkfs", "mkfs", SimTime::ZERO, Traffic::default()));
    Ok(Stack::File(FileStack::new(fs, state, config.clone(), capacity)))
}

/// What the phases left besides the stack.
struct Ran {
    metrics: Map<String, Value>,
    cluster_host: Option<ClusterRun>,
    /// The error a phase stopped the run at (a script's failing line).
    stopped: Option<String>,
    /// metrics.json's `steady_state`: one entry per phase that ran `until = "steady"`.
    steady: Vec<Value>,
    latencies: Vec<PhaseLatency>,
}

/// Runs every round of every phase through its kind's entry, reporting each in `reports`.
fn run_phases(
    resolved: &Resolved,
    stack: &mut Stack,
    reports: &mut Vec<Value>,
    progress: &mut dyn Progress,
) -> Result<Ran, ScenarioError> {
    let mut ran = Ran {
        metrics: Map::new(),
        cluster_host: None,
        stopped: None,
        steady: Vec::new(),
        latencies: Vec::new(),
    };
    let count = resolved.phases.len() as u64;
    for (i, phase) in resolved.phases.iter().enumerate() {
        let label = phase.section.label();
        let at = |e: &str| ScenarioError::Run(format!("phase[{i}] ({label}): {e}"));
        let cap = phase.section.rounds();
        let rule = phase.section.steady_rule(i).map_err(|e| at(&e.to_string()))?;
        let mut rounds = Rounds::for_rule(rule, stack).map_err(|e| at(&e))?;
        let mut files = round_files(&phase.section, stack).map_err(|e| at(&e))?;
        for round in 0..cap {
            if let (Some(f), Stack::File(fs), true) = (&mut files, &mut *stack, round > 0) {
                let (fs, state) = fs.parts();
                f.before_round(round, fs, state).map_err(|e| at(&e))?;
            }
            let numbered = phase.section.repeat.is_some() || rounds.is_some();
            let mark = latency_mark(resolved, stack, phase.section.kind);
            let outcome = run_round(resolved, stack, (i, phase), (round, numbered), reports, progress)?;
            ran.latencies
                .extend(mark.filter(|_| outcome.stopped.is_none()).and_then(|m| latency_since(m, stack, i)));
            if let Some(e) = outcome.stopped {
                ran.stopped = Some(format!("phase[{i}] ({label}): {e}"));
                return Ok(ran);
            }
            ran.metrics.extend(outcome.metrics);
            ran.cluster_host = ran.cluster_host.or(outcome.cluster_host);
            if rounds.as_mut().is_some_and(|r| r.close(round, stack, (&label, cap), progress)) {
                break;
            }
        }
        if let Some(r) = &rounds {
            ran.steady.push(r.report(i, &label, cap));
        }
        if let Stack::File(_) = stack {
            progress.update(1000 * (i as u64 + 1) / count);
        }
    }
    Ok(ran)
}

/// What `between` does to a file workload's files between its rounds (`None`: nothing).
fn round_files(section: &crate::phase::PhaseSection, stack: &Stack) -> Result<Option<RoundFiles>, String> {
    match (&section.between, stack) {
        (Some(text), Stack::File(f)) => Ok(Some(RoundFiles::start(Between::parse(text)?, f.fs()))),
        _ => Ok(None),
    }
}

/// One round of phase `i` through its kind's entry, and (for a kind reported per round) its
/// entry in `reports`, numbered when the phase has rounds.
fn run_round(
    resolved: &Resolved,
    stack: &mut Stack,
    (i, phase): (usize, &crate::phase::Phase),
    (round, numbered): (u32, bool),
    reports: &mut Vec<Value>,
    progress: &mut dyn Progress,
) -> Result<Outcome, ScenarioError> {
    let spec = phase.section.kind.spec();
    let label = phase.section.label();
    let (start, traffic0) = (stack.now(), stack.traffic());
    if spec.report != Report::Parts {
        stack.mark_phase(start, &label);
    }
    if matches!(stack, Stack::Block(_)) && spec.report == Report::Entry {
        progress.phase(&label);
    }
    let mut run = PhaseRun {
        index: i,
        round,
        section: &phase.section,
        workload: phase.workload.as_ref(),
        base: &resolved.workload,
        progress: &mut *progress,
        parts: &mut *reports,
    };
    let mut outcome: Outcome = (spec.run)(stack, &mut run).map_err(|e| {
        // A kind that is the whole run reports its errors as the run's.
        ScenarioError::Run(if spec.report == Report::TopLevel {
            e
        } else {
            format!("phase[{i}] ({label}): {e}")
        })
    })?;
    if outcome.stopped.is_none() && spec.report == Report::Entry {
        let figures = std::mem::take(&mut outcome.figures);
        let mut e = round_entry(stack, phase, &label, (start, traffic0), figures, numbered.then_some(round));
        for (k, v) in std::mem::take(&mut outcome.entry) {
            e[k] = v;
        }
        reports.push(e);
    }
    Ok(outcome)
}

/// A round's entry of metrics.json's `phases`: the stack's span and traffic since `since`,
/// a file workload's kind and figures, and the round when the phase has several.
fn round_entry(
    stack: &mut Stack,
    phase: &crate::phase::Phase,
    label: &str,
    since: (SimTime, Traffic),
    figures: crate::phase::Figures,
    round: Option<u32>,
) -> Value {
    let mut e = stack.entry(label, phase.section.kind.spec().kind.name(), since.0, since.1);
    if let Stack::File(_) = stack {
        if let Some(w) = &phase.workload {
            e["workload"] = json!(w.kind.name());
        }
        e["figures"] = Value::Object(figures.into_iter().map(|(k, v)| (k.to_string(), json!(v))).collect());
    }
    if let Some(r) = round {
        e["round"] = json!(r);
    }
    e
}

/// [`finish`] on a bare SSD.
fn finish_block(
    mut b: BlockStack,
    reports: Vec<Value>,
    metrics: &mut Value,
) -> Result<(DeviceReport, Option<Series>, Option<LatencyReport>), ScenarioError> {
    b.ssd.check().map_err(|e| {
        ScenarioError::Run(format!("the model's consistency check failed (a trimlab bug): {e}"))
    })?;
    if let Some(r) = b.ssd.recording.take() {
        r.finish().map_err(|e| ScenarioError::Run(format!("--record: {e}")))?;
    }
    let report = b.ssd.report(b.now);
    if !reports.is_empty() {
        metrics["phases"] = Value::Array(reports);
        // The model's own memory (maps, TRIM buffer and bitmap): 002's bitmap-size question.
        metrics["model_heap_bytes"] = json!(b.ssd.heap_bytes());
    }
    let workload = b.ssd.workload_latency();
    Ok((report, Some(Series::finish(&mut b.ssd, b.now)), workload))
}

/// Ends the run on its stack: the model's consistency check, the device report and series,
/// and what the stack adds to metrics.json (the phases; a file system's umount and totals, a
/// thin volume's allocation).
fn finish(
    stack: Stack,
    mut reports: Vec<Value>,
    stopped: Option<String>,
    metrics: &mut Value,
) -> Result<(DeviceReport, Option<Series>, Option<LatencyReport>), ScenarioError> {
    match stack {
        Stack::Block(b) => finish_block(b, reports, metrics),
        Stack::File(f) => {
            let mkfs_ns = f.mkfs_end.ns();
            let mut fs = f.into_fs();
            let end_of_phases = fs.now();
            let traffic0 = fs.device().traffic;
            fs.device_mut().mark_phase(end_of_phases, "umount");
            fs.umount();
            reports.push(file_entry(&mut fs, "umount", "umount", end_of_phases, traffic0));
            if let Some(r) = fs.device_mut().recording.take() {
                r.finish().map_err(|e| ScenarioError::Run(format!("--record: {e}")))?;
            }
            fs.check()
                .map_err(|e| ScenarioError::Run(format!("consistency check after the run failed: {e}")))?;
            let end = fs.now();
            let policy = fs.policy();
            metrics["host"] = json!({
                "fs": "ext4",
                "discard": policy.kind().label(),
                "mkfs_ns": mkfs_ns,
                "phases_end_ns": end_of_phases.ns(),
                "umount_end_ns": end.ns(),
                "utilization": fs.utilization(),
                "stats": fs.stats(),
                "policy": policy.stats(),
                "freed_unusable_mean_s": policy.stats().unusable_mean_s(),
                "calls": fs.call_latencies(),
                "device": fs.device().traffic,
            });
            if !fs.notes().is_empty() {
                metrics["host"]["notes"] = json!(fs.notes());
            }
            metrics["phases"] = Value::Array(reports);
            if let Some(e) = stopped {
                metrics["error"] = json!(e);
            }
            match &mut fs.device_mut().device {
                // mkfs, the phases and umount all reach the SSD; its series covers them from the
                // last `measure` phase (or mkfs), like its report.
                Device::Ssd(ssd) => {
                    let workload = ssd.workload_latency();
                    Ok((ssd.report(end), Some(Series::finish(ssd, end)), workload))
                }
                Device::Thin(t) => {
                    metrics["thin"] = json!({ "allocated_bytes": t.allocated_bytes(), "stats": t.stats() });
                    Ok((DeviceReport::default(), None, None))
                }
            }
        }
    }
}

/// Simulated time a run may reach: a quarter of the u64 clock.
const CLOCK_NS_MAX: u64 = 1 << 62;
