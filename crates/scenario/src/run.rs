//! Running a configured stack: build the device from the config, drive it with the workload
//! (or the `[[phase]]` list), and collect metrics.json's content. No files, clocks or
//! terminals: callers write and print.

use crate::config::{Resolved, RunConfig};
use crate::flatten::config_hash;
use crate::phase::{PhaseKind, PhaseSection};
use crate::ScenarioError;
use serde_json::{json, Value};
use trimlab_device::metrics::HostCounters;
use trimlab_device::{CommandKind, DeviceReport, Ssd, Traffic, TrimSplitter};
use trimlab_sim::{ByteSize, SeedTree, SimTime};
use trimlab_workload::cluster_host::ClusterRun;
use trimlab_workload::{
    measured_drive, precondition_from, run_phase, Generator, Precondition, Progress, WorkloadConfig,
};

/// What one run produced.
pub struct RunResult {
    pub seed: u64,
    pub config_hash: String,
    /// The content of metrics.json.
    pub metrics: serde_json::Value,
    /// The measured phase's device report (also inside `metrics`; default for a thin volume).
    pub report: DeviceReport,
    /// What an SSD run leaves besides its totals (`None` for a file-system or thin-volume run).
    pub series: Option<Series>,
    /// 004's cluster host (`os-install`, `iozone`): its phases and the FTL's measures when
    /// measurement began, typed (metrics' `cluster_host` holds the same).
    pub cluster_host: Option<ClusterRun>,
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

/// A new SSD for `resolved`, sampling its time series when `[output] interval` asks.
pub(crate) fn new_ssd(resolved: &Resolved, interval_ns: Option<u64>) -> Ssd {
    let mut ssd = Ssd::new(resolved.device.clone());
    if let Some(ns) = interval_ns {
        ssd.enable_timeseries(ns, SimTime::ZERO);
    }
    ssd
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
/// format of `serve --record`, with a `# phase` line where each phase starts). File-system
/// runs only: a block workload's commands are the generator's own (its fio options say them).
pub fn run_recorded(
    config: &RunConfig,
    seed: Option<u64>,
    progress: &mut dyn Progress,
    record: Option<Box<dyn std::io::Write + Send>>,
) -> Result<RunResult, ScenarioError> {
    let resolved = config.resolve()?;
    if record.is_some() && resolved.host.is_none() {
        return Err(ScenarioError::Run(RECORD_NEEDS_FS.into()));
    }
    let interval_ns = config.output.interval_ns(None)?;
    let seed = seed.or(config.seed).unwrap_or(1);
    let (config_json, hash) = identity(config, &resolved);
    let seeds = config.seed_path.as_ref().map_or(SeedTree::new(seed), |path| SeedTree::new(seed).child(path));
    let mut metrics = json!({
        "trimlab_version": env!("CARGO_PKG_VERSION"),
        "seed": seed,
        "config_hash": hash,
        "config": config_json,
    });
    let series;
    let mut cluster_host = None;
    let report = if let Some(plan) = &resolved.host {
        let outcome = crate::host_run::run(&resolved, plan, seeds, interval_ns, progress, record)?;
        series = outcome.series;
        metrics["report"] = json!(outcome.report);
        for (k, v) in outcome.metrics {
            metrics[k] = v;
        }
        outcome.report
    } else if resolved.workload.kind.is_cluster_host() {
        let (report, run_series, run) = run_cluster_host(&resolved, interval_ns, &seeds)?;
        series = Some(run_series);
        metrics["report"] = json!(report);
        metrics["cluster_host"] = json!(run);
        cluster_host = Some(run);
        report
    } else if !resolved.phases.is_empty() {
        let (report, phases, phase_series, heap_bytes) =
            run_block_phases(&resolved, interval_ns, &seeds, progress)?;
        series = Some(phase_series);
        metrics["report"] = json!(report);
        metrics["phases"] = Value::Array(phases);
        // The model's own memory (maps, TRIM buffer and bitmap): 002's bitmap-size question.
        metrics["model_heap_bytes"] = json!(heap_bytes);
        report
    } else {
        let mut ssd = new_ssd(&resolved, interval_ns);
        let outcome = trimlab_workload::run_workload(&mut ssd, &resolved.workload, &seeds, progress)
            .map_err(|e| {
                ScenarioError::Run(format!("the workload sent a command the device refused: {e}"))
            })?;
        check(&ssd)?;
        metrics["precondition_end_ns"] = json!(outcome.precondition_end.ns());
        metrics["ops"] = json!(outcome.measured.ops);
        metrics["report"] = json!(outcome.report);
        series = Some(Series::finish(&mut ssd, outcome.measured.end));
        outcome.report
    };
    // The clock stops at u64::MAX instead of wrapping (SimTime::after); every cost and duration
    // a config gives is bounded so that no run should come near, but say so if one does.
    if report.sim_time_ns >= CLOCK_NS_MAX {
        return Err(ScenarioError::Run(format!(
            "the simulated clock ran past 2^62 ns (146 years; the run took {} ns): its costs or durations are too large for the model",
            report.sim_time_ns
        )));
    }
    Ok(RunResult { seed, config_hash: hash, metrics, report, series, cluster_host })
}

const RECORD_NEEDS_FS: &str = "--record records the commands a file system sends (host.fs = \"ext4\"); a block workload's commands are its generator's (for a live client use `trimlab serve --record`)";

/// The resolved config as metrics.json's `config`, and its hash. Keys only a host, thin or
/// phased run has are added when set: a block run's hash stays what it was.
fn identity(config: &RunConfig, resolved: &Resolved) -> (Value, String) {
    let mut config_json = json!({ "device": resolved.device, "workload": resolved.workload });
    if let Some(path) = &config.seed_path {
        config_json["seed_path"] = json!(path);
    }
    if let Some(host) = &resolved.host {
        config_json["host"] = json!(host);
    }
    if let Some(thin) = &resolved.thin {
        config_json["thin"] = json!(thin);
    }
    if !config.phases.is_empty() {
        config_json["phases"] = json!(config.phases);
    }
    let hash = config_hash(&config_json);
    (config_json, hash)
}

/// 004's cluster host (`os-install`, `iozone`) on a new SSD, checked at the end.
fn run_cluster_host(
    resolved: &Resolved,
    interval_ns: Option<u64>,
    seeds: &SeedTree,
) -> Result<(DeviceReport, Series, ClusterRun), ScenarioError> {
    let mut ssd = new_ssd(resolved, interval_ns);
    let run = trimlab_workload::cluster_host::run(&mut ssd, &resolved.workload, seeds)
        .map_err(|e| ScenarioError::Run(e.to_string()))?;
    check(&ssd)?;
    let report = ssd.report(run.end);
    let series = Series::finish(&mut ssd, run.end);
    Ok((report, series, run))
}

/// Simulated time a run may reach: a quarter of the u64 clock.
const CLOCK_NS_MAX: u64 = 1 << 62;

/// The model's full consistency check; a failure is a trimlab bug, reported as such.
fn check(ssd: &Ssd) -> Result<(), ScenarioError> {
    ssd.check()
        .map_err(|e| ScenarioError::Run(format!("the model's consistency check failed (a trimlab bug): {e}")))
}

/// The SSD's host counters as traffic (bytes from pages: the SSD counts pages).
fn traffic(c: &HostCounters, page_bytes: u64) -> Traffic {
    let mut t = Traffic::default();
    t.add(CommandKind::Read, c.read_commands, c.pages_read * page_bytes);
    t.add(CommandKind::Write, c.write_commands, c.pages_written * page_bytes);
    t.add(CommandKind::Trim, c.trim_commands, c.pages_trim_requested * page_bytes);
    t.add(CommandKind::Flush, c.flush_commands, 0);
    t
}

/// `[[phase]]` on a bare SSD (`host.fs = "none"`).
fn run_block_phases(
    resolved: &Resolved,
    interval_ns: Option<u64>,
    seeds: &SeedTree,
    progress: &mut dyn Progress,
) -> Result<(DeviceReport, Vec<Value>, Series, usize), ScenarioError> {
    let mut ssd = new_ssd(resolved, interval_ns);
    let page = ssd.page_bytes();
    let mut now = SimTime::ZERO;
    let mut tag = 1u64;
    let mut entries = Vec::new();
    let mut streams = Streams::new();
    for (i, (phase, workload)) in resolved.phases.iter().enumerate() {
        let start = now;
        progress.phase(&phase.label());
        let before = traffic(&ssd.report(now).host, page);
        now = block_phase(
            &mut ssd,
            i,
            phase,
            workload.as_ref(),
            &resolved.workload,
            seeds,
            &mut streams,
            now,
            &mut tag,
            progress,
        )
        .map_err(|e| ScenarioError::Run(format!("phase[{i}] ({}): {e}", phase.label())))?;
        let after = traffic(&ssd.report(now).host, page);
        // A `measure` phase restarts the SSD's counters: its own traffic is what came before.
        let delta = if phase.kind == PhaseKind::Measure { Traffic::default() } else { after.since(&before) };
        entries.push(json!({
            "name": phase.label(),
            "kind": phase.kind.name(),
            "start_ns": start.ns(),
            "end_ns": now.ns(),
            "elapsed_ns": now.since(start),
            "device": delta,
            // What a deferring TRIM engine still holds when the phase ends (0 for the others).
            "trim_pending_pages": ssd.engine().stats().deferred.pages_pending,
        }));
    }
    check(&ssd)?;
    let report = ssd.report(now);
    let heap_bytes = ssd.heap_bytes();
    Ok((report, entries, Series::finish(&mut ssd, now), heap_bytes))
}

/// The block workload phases' generators by stream name: phases naming one stream continue one
/// generator (its random draws and its sequential cursor), so repeating a phase repeats the
/// workload, not its addresses.
type Streams = std::collections::BTreeMap<String, (WorkloadConfig, usize, Generator)>;

// One phase's parts are its inputs; a struct would only rename them.
#[allow(clippy::too_many_arguments)]
fn block_phase(
    ssd: &mut Ssd,
    index: usize,
    phase: &PhaseSection,
    workload: Option<&WorkloadConfig>,
    base: &WorkloadConfig,
    seeds: &SeedTree,
    streams: &mut Streams,
    now: SimTime,
    tag: &mut u64,
    progress: &mut dyn Progress,
) -> Result<SimTime, String> {
    let refused = |e: trimlab_device::CommandError| format!("the device refused a command: {e}");
    match phase.kind {
        PhaseKind::Fill | PhaseKind::Age => {
            let w = WorkloadConfig {
                precondition: if phase.kind == PhaseKind::Fill {
                    Precondition::Fill
                } else {
                    Precondition::Steady
                },
                precondition_writes: phase.writes.unwrap_or(base.precondition_writes),
                ..base.clone()
            };
            let seeds = seeds.child(&format!("phase{index}"));
            precondition_from(ssd, &w, &seeds, now, tag, progress).map_err(refused)
        }
        PhaseKind::TrimBurst => {
            let (region_offset, region) = base.region(ssd.capacity_bytes());
            let skip = phase.offset.map_or(0, |b| b.0);
            if skip >= region {
                return Err(format!(
                    "offset = {} is past the workload region ({})",
                    ByteSize(skip),
                    ByteSize(region)
                ));
            }
            let offset = region_offset + skip;
            let bytes = phase.bytes.map_or(region, |b| b.0).min(region - skip);
            let page = ssd.page_bytes();
            let max = ssd.config().trim_max_bytes.max(page);
            let max = match phase.command_bytes {
                Some(b) if b.0 % page != 0 => {
                    return Err(format!("command_bytes = {b} is not a multiple of the {page}-byte page"))
                }
                Some(b) => b.0.min(max),
                None => max,
            };
            // A burst sends one range per command, each when the previous one completes.
            let mut end = now;
            TrimSplitter::new(max, 1)
                .split([(offset, bytes)], |command| {
                    end = ssd.submit(end, command, None)?.done;
                    Ok(())
                })
                .map_err(refused)?;
            Ok(end)
        }
        PhaseKind::Idle => {
            let end = now.after(phase.duration.map_or(0, |d| d.0));
            ssd.idle_until(end);
            Ok(end)
        }
        PhaseKind::Workload => {
            let w = workload.ok_or("a workload phase without its workload")?;
            let stream = phase.stream.clone().unwrap_or_else(|| format!("phase{index}"));
            let capacity = ssd.capacity_bytes();
            let (first_w, first, generator) = streams.entry(stream.clone()).or_insert_with(|| {
                let generator = Generator::new(
                    w,
                    capacity,
                    seeds.fork(&format!("{stream}.mix")),
                    seeds.fork(&format!("{stream}.address")),
                );
                (w.clone(), index, generator)
            });
            if first_w != w {
                return Err(format!(
                    "stream = {stream:?} continues phase[{first}]'s generator, but this phase's workload differs from that one's; name another stream"
                ));
            }
            let drive = measured_drive(w, capacity);
            Ok(run_phase(ssd, generator, now, drive, tag, progress).map_err(refused)?.end.max(now))
        }
        PhaseKind::Measure => {
            ssd.start_measurement(now);
            Ok(now)
        }
        other => Err(format!("{} needs host.fs = \"ext4\"", other.name())),
    }
}
