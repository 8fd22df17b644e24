//! `run`: one configuration (and optionally a fio job file as its workload) to metrics.json,
//! the series and the device report.

use anyhow::Result;
use trimlab_device::DeviceReport;
pub use trimlab_scenario::fio_job::with_filebench;
pub use trimlab_scenario::Progress as RunProgress;
pub use trimlab_scenario::{script_error, waf_text};
use trimlab_scenario::{RunConfig, RunResult};

/// A fio job file given beside (or instead of) a config: its text and the name errors give it.
pub struct FioJob<'a> {
    pub text: &'a str,
    pub origin: &'a str,
}

/// A run's result and what the adapter should tell the user before and after it.
pub struct Ran {
    pub result: RunResult,
    /// Notes worth a line on stderr: ignored fio options, the capacity fit, a spare warning,
    /// a requested time series that this stack does not keep.
    pub notes: Vec<String>,
    /// A fio job file's results per group, as fio reports them (`run --fio`).
    pub fio: Option<crate::fio_output::FioReport>,
}

/// The `--set` lines an strace replay stands for (`run --strace`, `advise --strace`), before the user's
/// own so that those can still override them; without a config the file system is ext4.
pub fn strace_sets(path: &str, root: Option<&str>, config_given: bool, set: &[String]) -> Vec<String> {
    let mut sets = vec!["workload.kind=\"strace\"".to_string(), format!("workload.strace={path:?}")];
    if let Some(root) = root {
        sets.push(format!("workload.strace_root={root:?}"));
    }
    if !config_given {
        sets.push("host.fs=\"ext4\"".to_string());
    }
    sets.extend(set.iter().cloned());
    sets
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
    let mut notes = config.thin.deprecations();
    let from_fio = fio.is_some();
    // The device first (a fio job sizes itself by its capacity), the rest once the workload
    // is complete: each part of the config is resolved once.
    let device = config.resolve_device();
    let mut fio_file = None;
    if let Some(fio) = fio {
        let capacity = device.as_ref().ok().map(|d| d.ssd.logical_bytes());
        let base = config.workload.clone();
        notes.extend(trimlab_scenario::fio_job::apply_fio(
            &mut config,
            config_given,
            fio.text,
            fio.origin,
            capacity,
        )?);
        // Read again for its groups' names and report options (apply_fio accepted it).
        let file = trimlab_scenario::fio::parse_fio_file(fio.text, fio.origin, &base, capacity)?;
        notes.extend(jobs_summed(&file));
        fio_file = Some(file);
    }
    // --log-interval wins over [output] interval; the run samples what the config says.
    config.output.interval = config.output.interval_ns(log_interval)?.map(trimlab_sim::DurationNs);
    let mut resolved = config.resolve_on(device?)?;
    resolved.phase_latencies = from_fio;
    // What the capacity fit chose and whether GC is left too little spare: said before the run.
    if !resolved.device.source_note.is_empty() {
        notes.push(resolved.device.source_note.clone());
    }
    if !resolved.device.geometry_note.is_empty() {
        notes.push(resolved.device.geometry_note.clone());
    }
    notes.extend(resolved.device.spare_warning());
    let result = trimlab_scenario::run_resolved(&resolved, seed, progress, record)?;
    // The file system's own (a periodic fstrim that never ran, ...), also in metrics.json.
    let fs_notes = result.metrics["host"]["notes"].as_array().into_iter().flatten();
    notes.extend(fs_notes.filter_map(|n| n.as_str()).map(|n| format!("warning: {n}")));
    notes.extend(untimed_strace(&result.metrics));
    notes.extend(too_small(&result.report));
    if from_fio {
        notes.extend(waf_below_one(&result.report, resolved.device.write_buffer_pages as u64));
    }
    if config.output.interval.is_some() && result.series.is_none() {
        notes.push(
            "no timeseries.csv: a thin volume has no time series yet (an SSD has one, with or without a file system)"
                .into(),
        );
    }
    let fio =
        fio_file.map(|f| crate::fio_output::FioReport::new(&f, &resolved.phases, &result.phase_latencies));
    Ok(Ran { result, notes, fio })
}

/// fio without `group_reporting` prints a block per job (and a `jobs[]` entry per job); the
/// model keeps each group's commands together, not per job, so its report sums a group's jobs
/// as `group_reporting` does: said once, naming the groups (issue 43 item 1).
fn jobs_summed(file: &trimlab_scenario::fio::FioFile) -> Option<String> {
    let grouped = |options: &[(String, String)]| options.iter().any(|(k, _)| k == "group_reporting");
    if grouped(&file.global_options) {
        return None;
    }
    let several: Vec<String> = file
        .groups
        .iter()
        .filter(|g| g.jobs > 1 && !grouped(&g.options))
        .map(|g| format!("{} ({} jobs)", g.names.join("+"), g.jobs))
        .collect();
    (!several.is_empty()).then(|| {
        format!(
            "fio without group_reporting reports each job on its own; trimlab keeps a group's commands together and reports {} summed, as with group_reporting",
            several.join(", ")
        )
    })
}

/// A run that never filled the drive enough for GC to run cannot show what TRIM does: every
/// discard policy and engine gives the same WAF and wear there (issue 43: "numbers that mean
/// nothing are shown without a word").
fn too_small(report: &DeviceReport) -> Option<String> {
    let share = report.written_share_without_gc().filter(|&s| s < 1.0)?;
    Some(format!(
        "warning: the workload wrote {:.1} % of the drive's capacity and GC never ran, so TRIM cannot change WAF or wear in this run (every discard policy would read the same): repeat it to steady state (a [[phase]] with until = \"steady\"), age the file system or fill the drive first (an `age` or `fill` phase), or take a smaller device (device.logical_bytes); `trimlab advise` does the first two itself",
        share * 100.0
    ))
}

/// An strace recorded without -ttt has no times: its calls replay back to back, so the
/// program's pauses and every timer-driven TRIM (the discard worker, the commit interval,
/// fstrim) happen in a compressed span. Said, not refused: the operations are still right.
fn untimed_strace(metrics: &serde_json::Value) -> Option<String> {
    let phases = metrics["phases"].as_array()?;
    let untimed: u64 = phases.iter().filter_map(|p| p["figures"]["untimed_calls"].as_u64()).sum();
    (untimed > 0).then(|| format!(
        "warning: strace: {untimed} call lines have no timestamp (recorded without -ttt), so they replay back to back: the program's pauses and the TRIMs that timers send (discard worker, journal commit, fstrim) fall in a compressed span; record with `strace -f -ttt -o FILE`"
    ))
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

/// An strace phase's `unknown_calls` (name -> count) as one line: "149 unknown calls (not
/// replayed): 80 mmap, 40 brk, ..." by count, the first [`UNKNOWN_SHOWN`], then how many more
/// names and calls (issue 43: "149 unknown calls" named none).
pub fn unknown_calls_text(unknown: &serde_json::Value) -> Option<String> {
    let mut named: Vec<(&str, u64)> =
        unknown.as_object()?.iter().map(|(k, v)| (k.as_str(), v.as_u64().unwrap_or(0))).collect();
    if named.is_empty() {
        return None;
    }
    // By count, most first; names break ties (the object's order), so the line is stable.
    named.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let total: u64 = named.iter().map(|n| n.1).sum();
    let shown: Vec<String> = named.iter().take(UNKNOWN_SHOWN).map(|(k, n)| format!("{n} {k}")).collect();
    let mut line = format!("{total} unknown calls (not replayed): {}", shown.join(", "));
    if named.len() > UNKNOWN_SHOWN {
        let rest = &named[UNKNOWN_SHOWN..];
        line.push_str(&format!(
            " +{} more names ({} calls)",
            rest.len(),
            rest.iter().map(|n| n.1).sum::<u64>()
        ));
    }
    Some(line)
}

/// Names [`unknown_calls_text`] shows.
pub const UNKNOWN_SHOWN: usize = 10;

/// The summary's write p99: the workload's phases' when the run has setup phases (mkfs, aging,
/// a precondition's fill) that the whole run's figure counts, with that figure beside it.
fn write_p99_text(result: &RunResult) -> String {
    let whole = result.report.latency.write.p99_ns / 1000;
    match &result.workload_latency {
        Some(w) if w.excludes_phases && w.latency.write.count == 0 => {
            format!("write p99 ({}) none: no writes (whole run {whole} us)", w.phases_text())
        }
        Some(w) if w.excludes_phases => {
            format!(
                "write p99 ({}) {} us (whole run {whole} us)",
                w.phases_text(),
                w.latency.write.p99_ns / 1000
            )
        }
        _ => format!("write p99 {whole} us"),
    }
}

/// What `trimlab run` prints after a run: phases, then the totals (or the thin volume's).
pub fn summary(result: &RunResult) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(phases) = result.metrics["phases"].as_array() {
        for (i, p) in phases.iter().enumerate() {
            let d = &p["device"];
            let name = match p["round"].as_u64() {
                Some(r) => format!("{} #{}", p["name"].as_str().unwrap_or("?"), r + 1),
                None => p["name"].as_str().unwrap_or("?").to_string(),
            };
            lines.push(format!(
                "phase[{i}] {:<14} {:>10.3} ms  TRIM {} commands, {} bytes; writes {} bytes",
                name,
                p["elapsed_ns"].as_u64().unwrap_or(0) as f64 / 1e6,
                d["trim_commands"],
                d["trim_bytes"],
                d["write_bytes"]
            ));
        }
    }
    lines.extend(crate::aging_report::summary_line(&result.metrics["aging"]));
    for s in result.metrics["steady_state"].as_array().into_iter().flatten() {
        lines.push(s["verdict"].as_str().unwrap_or("steady state: ?").to_string());
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
        "WAF {}  spare_factor_seen_by_gc {:.4}  host pages written {}  NAND programs {}  erases {}  GC victims {}  {}  sim time {:.3} s",
        waf_text(r),
        r.spare_factor_seen_by_gc,
        r.host.pages_written,
        r.nand_pages_programmed,
        r.nand_blocks_erased,
        r.gc.victims,
        write_p99_text(result),
        r.sim_time_ns as f64 / 1e9
    ));
    // Issue 39: the lifetime projection, when the device has a rated P/E count (a line of its
    // own, so the lines above keep their figures).
    lines.extend(r.lifetime.as_ref().map(trimlab_device::Lifetime::summary_line));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_group_of_several_jobs_without_group_reporting_is_said_to_be_summed() {
        let base = RunConfig::default().workload;
        let parse =
            |text: &str| trimlab_scenario::fio::parse_fio_file(text, "t.fio", &base, Some(1 << 30)).unwrap();
        let jobs = "[a]\nrw=randwrite\nsize=16m\n[b]\nrw=randread\nsize=16m\n";
        let note = jobs_summed(&parse(jobs)).expect("two jobs, no group_reporting");
        assert!(note.contains("reports a+b (2 jobs) summed"), "{note}");
        assert_eq!(jobs_summed(&parse(&format!("[global]\ngroup_reporting\n{jobs}"))), None);
        assert_eq!(
            jobs_summed(&parse("[a]\nrw=randwrite\nsize=16m\n")),
            None,
            "one job: fio's block is the job's"
        );
        let clones = jobs_summed(&parse("[c]\nrw=randwrite\nsize=16m\nnumjobs=3\n")).unwrap();
        assert!(clones.contains("c (3 jobs)"), "{clones}");
    }

    #[test]
    fn unknown_calls_are_listed_by_count_then_summed() {
        assert_eq!(unknown_calls_text(&json!({})), None);
        assert_eq!(
            unknown_calls_text(&json!({"brk": 40, "mmap": 80, "arch_prctl": 40})).unwrap(),
            "160 unknown calls (not replayed): 80 mmap, 40 arch_prctl, 40 brk"
        );
        let many: serde_json::Map<String, serde_json::Value> =
            (0..13u64).map(|i| (format!("c{i:02}"), json!(i + 1))).collect();
        let line = unknown_calls_text(&json!(many)).unwrap();
        assert!(line.starts_with("91 unknown calls (not replayed): 13 c12, 12 c11,"), "{line}");
        assert!(line.ends_with("4 c03 +3 more names (6 calls)"), "{line}");
    }
}
