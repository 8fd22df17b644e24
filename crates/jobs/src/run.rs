//! `run`: one configuration (and optionally a fio job file as its workload) to metrics.json,
//! the series and the device report.

use anyhow::Result;
use trimlab_device::DeviceReport;
pub use trimlab_scenario::{script_error, waf_text};
use trimlab_scenario::{RunConfig, RunResult};
pub use trimlab_workload::runner::Progress as RunProgress;

/// A fio job file given beside (or instead of) a config: its text and the name errors give it.
pub struct FioJob<'a> {
    pub text: &'a str,
    pub origin: &'a str,
}

/// Makes a Filebench model file (`run --filebench FILE.f`) the run's workload: its text and
/// the name errors give it. Without a config (`config_given` false) the drive gets the
/// default ext4 file system the model needs.
pub fn with_filebench(config: &mut RunConfig, text: String, origin: &str, config_given: bool) {
    config.workload = trimlab_workload::WorkloadConfig {
        kind: trimlab_workload::WorkloadKind::Filebench,
        operations: Some(text),
        filebench: Some(origin.to_string()),
        stream: config.workload.stream.clone(),
        ..Default::default()
    };
    if !config_given || config.host.fs.is_none() {
        config.host.fs = Some(trimlab_scenario::host::FsKind::Ext4);
    }
}

/// A run's result and what the adapter should tell the user before and after it.
pub struct Ran {
    pub result: RunResult,
    /// Notes worth a line on stderr: ignored fio options, the capacity fit, a spare warning,
    /// a requested time series that this stack does not keep.
    pub notes: Vec<String>,
}

/// Runs `config` (with `fio`'s job as the workload when given; `config_given` false means the
/// config is the built-in defaults). `seed` overrides the config's; `log_interval` overrides
/// `[output] interval`; `record` receives every command the file system sends (`run --record`).
pub fn run(
    mut config: RunConfig,
    config_given: bool,
    fio: Option<FioJob>,
    seed: Option<u64>,
    log_interval: Option<&str>,
    progress: &mut dyn RunProgress,
    record: Option<Box<dyn std::io::Write + Send>>,
) -> Result<Ran> {
    let mut notes = Vec::new();
    let from_fio = fio.is_some();
    // The device first (a fio job sizes itself by its capacity), the rest once the workload
    // is complete: each part of the config is resolved once.
    let device = config.resolve_device();
    if let Some(fio) = fio {
        let capacity = device.as_ref().ok().map(|d| d.ssd.logical_bytes());
        apply_fio(&mut config, config_given, &fio, capacity, &mut notes)?;
    }
    // --log-interval wins over [output] interval; the run samples what the config says.
    config.output.interval = config.output.interval_ns(log_interval)?.map(trimlab_sim::DurationNs);
    let resolved = config.resolve_on(device?)?;
    // What the capacity fit chose and whether GC is left too little spare: said before the run.
    if !resolved.device.geometry_note.is_empty() {
        notes.push(resolved.device.geometry_note.clone());
    }
    notes.extend(resolved.device.spare_warning());
    let result = trimlab_scenario::run_resolved(&resolved, seed, progress, record)?;
    if from_fio {
        notes.extend(waf_below_one(&result.report, resolved.device.write_buffer_pages as u64));
    }
    if config.output.interval.is_some() && result.series.is_none() {
        notes.push(
            "no timeseries.csv: a thin volume has no time series yet (an SSD has one, with or without a file system)"
                .into(),
        );
    }
    Ok(Ran { result, notes })
}

/// Makes `fio`'s jobs the run's workload: one job alone (no clones, no ramp) is `[workload]`
/// as before; otherwise each group of jobs that run at once (between stonewalls) is a
/// `[[phase]] kind = "workload"` whose streams are the jobs' clones, preceded by its ramp phase
/// and a `measure` when a job has `ramp_time`. A config's precondition comes first as a fill or
/// age phase; without a config the drive starts empty, as fio finds a new one.
fn apply_fio(
    config: &mut RunConfig,
    config_given: bool,
    fio: &FioJob,
    capacity: Option<u64>,
    notes: &mut Vec<String>,
) -> Result<()> {
    use trimlab_scenario::phase::{PhaseKind, PhaseSection};
    use trimlab_workload::Precondition;
    if !config.phases.is_empty() {
        anyhow::bail!("{}: --fio makes the run's phases from the job file; the config's [[phase]] list would be replaced (drop one or the other)", fio.origin);
    }
    let mut base = config.workload.clone();
    if !config_given {
        base.precondition = Precondition::None;
    }
    let file = trimlab_workload::fio::parse_fio_file(fio.text, fio.origin, &base, capacity)?;
    notes.extend(file.ignored.iter().map(|i| format!("{i} ignored (no effect on a simulated drive)")));
    notes.extend(file.notes.iter().map(|n| format!("{}: {n}", fio.origin)));
    if let [group] = file.groups.as_slice() {
        if let ([stream], []) = (group.streams.as_slice(), group.ramp.as_slice()) {
            config.workload =
                trimlab_workload::WorkloadConfig { precondition: base.precondition, ..stream.clone() };
            return Ok(());
        }
    }
    let named = |kind: PhaseKind, name: String| PhaseSection { name: Some(name), ..PhaseSection::new(kind) };
    match base.precondition {
        Precondition::None => {}
        Precondition::Fill => config.phases.push(named(PhaseKind::Fill, "precondition fill".into())),
        Precondition::Steady => config.phases.push(named(PhaseKind::Age, "precondition".into())),
    }
    if base.precondition != Precondition::None {
        config.phases.push(PhaseSection::new(PhaseKind::Measure));
    }
    for group in &file.groups {
        let streams = |jobs: &[trimlab_workload::WorkloadConfig]| trimlab_workload::WorkloadConfig {
            jobs: Some(jobs.to_vec()),
            ..trimlab_workload::WorkloadConfig::default()
        };
        let label = group.names.join("+");
        if !group.ramp.is_empty() {
            config.phases.push(PhaseSection {
                name: Some(format!("{label} ramp")),
                ..PhaseSection::workload(&streams(&group.ramp))
            });
            // fio leaves ramp I/O out of its figures: the device report starts after it.
            config.phases.push(named(PhaseKind::Measure, format!("{label} measure")));
        }
        config
            .phases
            .push(PhaseSection { name: Some(label), ..PhaseSection::workload(&streams(&group.streams)) });
    }
    Ok(())
}

/// Why a fio run's WAF can be below 1: host pages still in the device's write buffer (not yet
/// programmed; fio sends no flush at the end unless asked) and pages overwritten while
/// buffered, which never reach NAND. Both are real, so the figure stays and is explained.
fn waf_below_one(report: &DeviceReport, buffer_pages: u64) -> Option<String> {
    if report.host.pages_written == 0 || report.waf >= 1.0 {
        return None;
    }
    let host = report.host.pages_written;
    let coalesced = report.host.pages_coalesced_in_buffer;
    let programmed_host =
        report.nand_pages_programmed.saturating_sub(report.gc.pages_copied + report.nand_pages_padded);
    let buffered = host.saturating_sub(coalesced + programmed_host);
    Some(format!(
        "WAF {:.4} is below 1: of {host} host pages written, {coalesced} were overwritten while still in the device's write buffer (never programmed) and {buffered} were still buffered at the end (not yet programmed; fio sends no flush unless fsync= is set); a run much longer than the {}-page buffer brings WAF to its programmed figure",
        report.waf, buffer_pages
    ))
}

/// A run of TOML text with `--set` overrides, as the Python module calls it: metrics.json.
pub fn run_text(text: &str, origin: &str, seed: Option<u64>, set: &[String]) -> Result<serde_json::Value> {
    let config = crate::parse_config(text, origin, set)?;
    let metrics = run(config, true, None, seed, None, &mut (), None)?.result.metrics;
    if let Some(e) = script_error(&metrics) {
        anyhow::bail!("{e}");
    }
    Ok(metrics)
}

/// What `trimlab run` prints after a run: phases, then the totals (or the thin volume's).
pub fn summary(result: &RunResult) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(phases) = result.metrics["phases"].as_array() {
        for (i, p) in phases.iter().enumerate() {
            let d = &p["device"];
            lines.push(format!(
                "phase[{i}] {:<14} {:>10.3} ms  TRIM {} commands, {} bytes; writes {} bytes",
                p["name"].as_str().unwrap_or("?"),
                p["elapsed_ns"].as_u64().unwrap_or(0) as f64 / 1e6,
                d["trim_commands"],
                d["trim_bytes"],
                d["write_bytes"]
            ));
        }
    }
    if result.metrics.get("thin").is_some() {
        lines.push(format!(
            "thin volume: allocated {} bytes at the end",
            result.metrics["thin"]["allocated_bytes"]
        ));
        return lines;
    }
    let r = &result.report;
    lines.push(format!(
        "WAF {}  spare_factor_seen_by_gc {:.4}  host pages written {}  NAND programs {}  erases {}  GC victims {}  write p99 {} us  sim time {:.3} s",
        waf_text(r),
        r.spare_factor_seen_by_gc,
        r.host.pages_written,
        r.nand_pages_programmed,
        r.nand_blocks_erased,
        r.gc.victims,
        r.latency.write.p99_ns / 1000,
        r.sim_time_ns as f64 / 1e9
    ));
    lines
}
