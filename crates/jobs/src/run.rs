//! `run`: one configuration (and optionally a fio job file as its workload) to metrics.json,
//! the series and the device report.

use anyhow::Result;
use trimlab_device::DeviceReport;
pub use trimlab_scenario::script_error;
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
    if let Some(fio) = fio {
        // Without a config, start from an unconditioned drive as fio would find a new one.
        let mut base = config.workload.clone();
        if !config_given {
            base.precondition = trimlab_workload::Precondition::None;
        }
        let job = trimlab_workload::parse_fio_job(fio.text, fio.origin, &base)?;
        notes.extend(job.ignored.iter().map(|i| format!("{i} ignored (no effect on a simulated drive)")));
        config.workload = job.workload;
    }
    // --log-interval wins over [output] interval; the run samples what the config says.
    config.output.interval = config.output.interval_ns(log_interval)?.map(trimlab_sim::DurationNs);
    // What the capacity fit chose and whether GC is left too little spare: said before the run.
    if let Ok(resolved) = config.resolve() {
        if !resolved.device.geometry_note.is_empty() {
            notes.push(resolved.device.geometry_note.clone());
        }
        notes.extend(resolved.device.spare_warning());
    }
    let result = trimlab_scenario::run_recorded(&config, seed, progress, record)?;
    if config.output.interval.is_some() && result.series.is_none() {
        notes.push(
            "no timeseries.csv: a thin volume has no time series yet (an SSD has one, with or without a file system)"
                .into(),
        );
    }
    Ok(Ran { result, notes })
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

/// "n/a" when no host page was written: a WAF of 0 would read as a perfect drive.
pub fn waf_text(report: &DeviceReport) -> String {
    if report.host.pages_written == 0 {
        "n/a (no host writes)".into()
    } else {
        format!("{:.3}", report.waf)
    }
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
