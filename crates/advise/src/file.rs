//! `advise` on a file-level workload: the config's workload (a script, or any other file-system
//! kind or `[[phase]]` list) run once per host TRIM policy (no discard, online discard, fstrim
//! at each period, Lazy TRIM, Selective TRIM) on the same device and seed, its host-side and
//! device-side costs side by side, and the recommendation of `file_rule`.

use crate::advice::{ms, us, Advice};
use crate::file_rule::{recommend, Costs, FileAdvice, TIME_SAME, TIME_WORTH, WAF_SAME};
use crate::life::Life;
use crate::mapping_units::{Role, UnitComparison, UnitRun};
use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;
use serde_json::Value;
use trimlab_device::DeviceReport;
use trimlab_experiments::{parallel_map, Progress};
use trimlab_fs::{Kernel, Layout};
use trimlab_replay::trace_options::parse_periods;
use trimlab_report::{Cell, ExperimentReport, Plot, PlotKind, Table};
use trimlab_scenario::host::HostSection;
use trimlab_scenario::{Resolved, RunConfig};
use trimlab_sim::{ByteSize, DurationNs};

/// One way of handling discards the workload runs under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choice {
    pub label: String,
    /// The `[host] discard` text of its run.
    pub discard: String,
}

/// The policies compared: no discard first (the baseline of every WAF gain), the file
/// system's online discard second, then fstrim at each period, Lazy TRIM and Selective TRIM.
pub fn choices(host: &HostSection, fstrim_periods_ns: &[u64]) -> Vec<Choice> {
    let choice = |label: String, discard: String| Choice { label, discard };
    let online = online_discard(host);
    let mut list = vec![
        choice("no discard".into(), "nodiscard".into()),
        choice(format!("online discard ({online})"), online),
    ];
    for &p in fstrim_periods_ns {
        list.push(choice(format!("fstrim every {}", DurationNs(p)), format!("fstrim:{}", DurationNs(p))));
    }
    list.push(choice("Lazy TRIM".into(), "lazy".into()));
    list.push(choice("Selective TRIM (40:90)".into(), "selective:40:90".into()));
    list
}

/// The online discard the config's file system would use: its own `[host] discard` when that
/// is one, else what `-o discard` means on its layout (ext4 4.x's per-extent TRIM at commit,
/// or Linux >= 6.8's discard worker with `kernel = "linux-6.18"`; XFS's batched discards;
/// btrfs' discard=async).
fn online_discard(host: &HostSection) -> String {
    const ONLINE: [&str; 4] = ["discard", "discard-batch", "ext4-discard", "async"];
    if let Some(text) = &host.discard {
        if trimlab_fs::policy::parse(text).is_ok_and(|p| ONLINE.contains(&p.kind.name())) {
            return text.clone();
        }
    }
    let name = match (host.layout.unwrap_or_default(), host.kernel.unwrap_or_default()) {
        (Layout::Btrfs, _) => "async",
        (Layout::Xfs, _) => "discard-batch",
        (Layout::Ext4, Kernel::Linux6_18) => "ext4-discard",
        (Layout::Ext4, Kernel::Paper) => "discard",
    };
    name.to_string()
}

/// metrics.json's `host.calls`, read back.
#[derive(Deserialize)]
struct CallLatencies {
    fsync: Latency,
    write: Latency,
}

#[derive(Deserialize)]
struct Latency {
    count: u64,
    p50_ns: u64,
    p99_ns: u64,
    p999_ns: u64,
}

/// One policy's run, as the report shows it.
struct Measured {
    /// Its metrics.json (the steady-state rounds for the sentence on how the runs went).
    metrics: Value,
    costs: Costs,
    report: DeviceReport,
    commits: u64,
    commit_ns_total: u64,
    commit_ns_max: u64,
    space_wait_ns: u64,
    /// The application's fsync and write calls (from entry to return).
    calls: CallLatencies,
    /// Mean time a freed block stayed unusable (held for a TRIM or a commit), in seconds.
    freed_unusable_mean_s: f64,
    phases: Vec<PhaseTimes>,
}

/// A phase of a run (mkfs and umount included): its span and the `*_ns` figures its workload
/// measured.
struct PhaseTimes {
    name: String,
    elapsed_ns: u64,
    figures: Vec<(String, u64)>,
}

/// Runs the file workload of `config` (`name` names it in the report) once per policy on
/// `progress`'s worker pool and recommends one. Without `fstrim_periods` the fstrim runs use
/// a tenth and a third of the no-discard run's program time, so that they fire.
pub fn advise_file(
    config: &RunConfig,
    name: &str,
    fstrim_periods: &[String],
    mapping_units: &[String],
    life: Option<&Life>,
    progress: &dyn Progress,
) -> Result<Advice> {
    check_file_level(config, name)?;
    let aged = life.map(|l| crate::life::aged(config, l, name)).transpose()?;
    let config = aged.as_ref().unwrap_or(config);
    let resolved = check_file_level(config, name)?;
    let given = parse_periods(fstrim_periods)?;
    let units = crate::mapping_units::units_to_compare(config, &resolved.device, mapping_units)?;
    let baseline = if given.is_empty() {
        Some(run_choice(config, &choices(&config.host, &[])[0]).map_err(|e| crate::life::hint(e, life))?)
    } else {
        None
    };
    let periods = match &baseline {
        Some(b) => life
            .and_then(|_| crate::life::round_periods(&b.metrics))
            .unwrap_or_else(|| derived_periods(b.costs.program_ns)),
        None => given,
    };
    let list = choices(&config.host, &periods);
    let skip = usize::from(baseline.is_some());
    let runs = parallel_map(progress, &list[skip..], "advise", |c| run_choice(config, c));
    let results: Vec<Measured> = baseline
        .into_iter()
        .map(Ok)
        .chain(runs)
        .collect::<Result<_>>()
        .map_err(|e| crate::life::hint(e, life))?;
    let span_ns = results[0].costs.program_ns;
    let warning = fstrim_warning(&periods, span_ns);
    let mut report = file_report(config, &resolved, name, &list, &results, &periods, warning.as_deref());
    if let Some(l) = life {
        add_life(&mut report, l, &list, &results);
    }
    let comparison = unit_comparison(config, &resolved, &units, &list, &results, progress)?;
    comparison.add_to(
        &mut report,
        "the workload run again under no discard, online discard and each fstrim period on the drive",
    );
    Ok(Advice { report, warnings: warning.into_iter().collect() })
}

/// The aged, repeated runs' part of the report: what was done (summary and first note), the
/// life table, the convergence and erase-count plots, and the chosen policy's life sentence.
fn add_life(report: &mut ExperimentReport, l: &Life, list: &[Choice], results: &[Measured]) {
    let Some(first) = results.first() else { return };
    let how = crate::life::sentence(l, &first.metrics);
    report.summary = format!(
        "{how} {}",
        report.summary.replace(
            "each run covers mkfs, the workload and umount",
            "each run covers mkfs, the aging, the rounds and umount"
        )
    );
    report.notes.insert(0, how);
    let labels: Vec<String> = list.iter().map(|c| c.label.clone()).collect();
    let metrics: Vec<&Value> = results.iter().map(|r| &r.metrics).collect();
    report.tables.insert(3, crate::life::life_table(&labels, &metrics));
    report.plots.extend(crate::life::life_plots(&labels, &metrics));
    let chosen = report.params.iter().find(|p| p.0 == "recommendation").map(|p| p.1.clone());
    let chosen_index = chosen.and_then(|c| labels.iter().position(|l| c.starts_with(l.as_str())));
    if let Some(i) = chosen_index.filter(|&i| i != 0) {
        if let Some(line) = crate::life::life_sentence(&labels[i], &results[i].metrics, &results[0].metrics) {
            report.notes.insert(1, line);
        }
    }
    report.params.push(("life".into(), format!("aged to {:.2}, at most {} rounds", l.utilization, l.rounds)));
}

/// No discard, online discard and the fstrim runs (not Lazy and Selective TRIM, which send
/// the online discard's ranges at other times) at each unit of `units`: the file system runs
/// on a drive of that unit itself (the drive carries a data tag per 4 KiB block,
/// crates/device/src/host_page_tags.rs), so what the runs wait for at that unit (the
/// read-modify-writes behind an fsync, the discards that unmap nothing) is in them. The drive's
/// own unit is the runs already made (`results`); the others run on `progress`'s worker pool.
fn unit_comparison(
    config: &RunConfig,
    resolved: &Resolved,
    units: &[u64],
    list: &[Choice],
    results: &[Measured],
    progress: &dyn Progress,
) -> Result<UnitComparison> {
    let own = resolved.device.geometry.page_bytes as u64;
    let role = |i: usize| match i {
        0 => Some(Role::NoDiscard),
        1 => Some(Role::Online),
        _ if list[i].discard.starts_with("fstrim:") => Some(Role::Fstrim),
        _ => None,
    };
    let compared: Vec<(usize, Role)> = (0..list.len()).filter_map(|i| Some((i, role(i)?))).collect();
    let jobs: Vec<(u64, usize)> = units
        .iter()
        .filter(|&&u| u != own)
        .flat_map(|&u| compared.iter().map(move |&(i, _)| (u, i)))
        .collect();
    let measured = parallel_map(progress, &jobs, "advise: mapping units", |&(unit, i)| {
        let mut at_unit = config.clone();
        at_unit.ftl.mapping_unit = Some(ByteSize(unit));
        run_choice(&at_unit, &list[i]).with_context(|| format!("at mapping_unit = {}", ByteSize(unit)))
    });
    let measured: Vec<Measured> = measured.into_iter().collect::<Result<_>>()?;
    let mut runs = Vec::new();
    for &unit in units {
        for &(i, role) in &compared {
            let report = match jobs.iter().position(|&job| job == (unit, i)) {
                Some(j) => &measured[j].report,
                None => &results[i].report,
            };
            let trim_bytes = crate::mapping_units::trim_bytes_received(report, unit);
            runs.push(UnitRun::new(unit, &list[i].label, role, report, trim_bytes));
        }
    }
    Ok(UnitComparison { runs, own_unit: own })
}

/// A tenth and a third of the program time, in whole milliseconds (at least 1 ms).
fn derived_periods(span_ns: u64) -> Vec<u64> {
    let mut periods: Vec<u64> =
        [10, 3].iter().map(|&share| crate::advice::span_share_ns(span_ns, share)).collect();
    periods.dedup();
    periods
}

/// Only a file-system run has host policies to compare; a config that changes the policy
/// itself (a `[[phase]]` with `discard`) would make the runs differ only until that phase.
fn check_file_level(config: &RunConfig, name: &str) -> Result<Resolved> {
    let resolved = config.resolve().with_context(|| name.to_string())?;
    if resolved.host.is_none() {
        bail!(
            "{name}: its workload is block-level ([workload] kind = \"{}\" on the bare device, [host] fs = \"none\"): advise compares host discard policies, so a config needs [host] fs = \"ext4\" and a file-level workload (docs/config.md); for a block trace use `trimlab advise TRACE --device CONFIG`",
            resolved.workload.kind.name()
        );
    }
    if resolved.thin.is_some() {
        bail!("{name}: device.kind = \"thin\": advise weighs WAF and GC, which only an SSD reports; use an SSD device");
    }
    if let Some((i, p)) = config.phases.iter().enumerate().find(|(_, p)| p.discard.is_some()) {
        bail!(
            "{name}: phase[{i}] ({}) sets discard = {:?}, which replaces the policy advise compares; remove it (the policy is what advise varies)",
            p.label(),
            p.discard.as_deref().unwrap_or("")
        );
    }
    Ok(resolved)
}

/// The workload under `choice`: the config with `[host] discard` replaced, run to its metrics.
fn run_choice(config: &RunConfig, choice: &Choice) -> Result<Measured> {
    let mut config = config.clone();
    config.host.discard = Some(choice.discard.clone());
    let result =
        trimlab_scenario::run(&config, None, &mut ()).with_context(|| format!("with {}", choice.label))?;
    let m = &result.metrics;
    if let Some(e) = trimlab_scenario::script_error(m) {
        bail!("with {}: {e}", choice.label);
    }
    let expected = trimlab_fs::policy::parse(&choice.discard).map_err(|e| anyhow!(e))?.kind.label();
    let ended = m["host"]["discard"].as_str().unwrap_or("");
    if ended != expected {
        bail!("with {}: the workload ended under the policy {ended:?} (a `mount discard=` or `remount discard=` line?); advise compares policies, so the workload must not set its own", choice.label);
    }
    // The device latency columns are the workload's phases', not mkfs's (issue 43).
    let mut report = result.report;
    report.latency = result.workload_latency.map_or(report.latency, |w| w.latency);
    measured(m, report)
}

fn field(m: &Value, path: &[&str]) -> Result<u64> {
    let mut v = m;
    for key in path {
        v = &v[*key];
    }
    v.as_u64().ok_or_else(|| anyhow!("metrics.json has no {}: a bug in trimlab", path.join(".")))
}

fn measured(m: &Value, report: DeviceReport) -> Result<Measured> {
    let stats = |key: &str| field(m, &["host", "stats", key]);
    let costs = Costs {
        waf: report.waf,
        // With rounds after aging, the program's time is the rounds' (`life.rs`).
        program_ns: match crate::life::rounds_ns(m) {
            Some(ns) => ns,
            None => field(m, &["host", "phases_end_ns"])?.saturating_sub(field(m, &["host", "mkfs_ns"])?),
        },
        calls: stats("syscalls")?,
        policy_trim_commands: field(m, &["host", "policy", "trim_commands"])?,
        trim_commands: stats("trim_commands")?,
    };
    let mut phases = Vec::new();
    for p in m["phases"].as_array().map(Vec::as_slice).unwrap_or_default() {
        let name = p["name"].as_str().unwrap_or("?").to_string();
        let figures = p["figures"].as_object().into_iter().flatten();
        let times =
            figures.filter(|(k, _)| k.ends_with("_ns")).filter_map(|(k, v)| Some((k.clone(), v.as_u64()?)));
        phases.push(PhaseTimes { name, elapsed_ns: field(p, &["elapsed_ns"])?, figures: times.collect() });
    }
    Ok(Measured {
        metrics: m.clone(),
        costs,
        commits: stats("commits")?,
        commit_ns_total: stats("commit_ns_total")?,
        commit_ns_max: stats("commit_ns_max")?,
        space_wait_ns: stats("space_wait_ns")?,
        calls: serde_json::from_value(m["host"]["calls"].clone())
            .map_err(|e| anyhow!("metrics.json's host.calls: {e}: a bug in trimlab"))?,
        freed_unusable_mean_s: m["host"]["freed_unusable_mean_s"].as_f64().unwrap_or(0.0),
        report,
        phases,
    })
}

/// The fstrim periods longer than the program time never fire: those rows are no discard.
fn fstrim_warning(periods_ns: &[u64], span_ns: u64) -> Option<String> {
    let never: Vec<String> =
        periods_ns.iter().filter(|&&p| p > span_ns).map(|&p| DurationNs(p).to_string()).collect();
    if never.is_empty() {
        return None;
    }
    let suggest: Vec<String> =
        derived_periods(span_ns).into_iter().map(|p| DurationNs(p).to_string()).collect();
    Some(format!(
        "the workload runs {:.3} s, so fstrim every {} never runs and {} the same as \"no discard\"; pass shorter periods, e.g. --fstrim-periods {} (or none: a tenth and a third of the run)",
        span_ns as f64 / 1e9,
        never.join(", every "),
        if never.len() == 1 { "that row is" } else { "those rows are" },
        suggest.join(",")
    ))
}

fn file_report(
    config: &RunConfig,
    resolved: &Resolved,
    name: &str,
    list: &[Choice],
    results: &[Measured],
    periods: &[u64],
    warning: Option<&str>,
) -> ExperimentReport {
    let labels: Vec<String> = list.iter().map(|c| c.label.clone()).collect();
    let costs: Vec<Costs> = results.iter().map(|r| r.costs.clone()).collect();
    let FileAdvice { choice, reason } = recommend(&labels, &costs, 1, 0);
    let chosen = choice.map_or("no discard needed".to_string(), |i| {
        format!("{} ([host] discard = \"{}\")", list[i].label, list[i].discard)
    });
    let mut notes = vec![
        format!("Recommendation: {chosen}. {reason}"),
        rule_note(),
        periods_note(periods, warning.is_none()),
    ];
    if let Some(w) = warning {
        notes.insert(0, format!("Warning: {w}"));
    }
    let host = &config.host;
    ExperimentReport {
        name: "advise".into(),
        title: format!("Discard advice for {name}"),
        summary: format!(
            "The file workload of {name} ([workload] kind = \"{}\"{}) on the {} layout (kernel {}) over {} ({} logical bytes, TRIM engine {}), run once per host TRIM policy with seed {}; each run covers mkfs, the workload and umount.",
            config.workload.kind.name(),
            if config.phases.is_empty() { String::new() } else { format!(", {} phases", config.phases.len()) },
            serde_name(host.layout.unwrap_or_default()),
            serde_name(host.kernel.unwrap_or_default()),
            resolved.device.preset,
            resolved.device.logical_bytes(),
            results[0].report.trim.engine,
            config.seed.unwrap_or(1),
        ),
        paper: vec![
            "003: online discard makes mkfs and rm many times slower on thin storage; not trimming raises write amplification and wear; periodic fstrim is the usual middle way.".into(),
            "000 (Lazy TRIM) and 001 (Selective TRIM): trimming in the background, or only while the drive is full enough, keeps most of the WAF gain without the commit stalls.".into(),
        ],
        verdicts: Vec::new(),
        notes,
        tables: costs_tables(&labels, results).into_iter().chain([phases_table(&labels, results)]).collect(),
        plots: plots(&labels, results),
        params: vec![("config".into(), name.to_string()), ("recommendation".into(), chosen), ("reason".into(), reason)],
    }
}

/// The name a config writes for `value` (`linux-6.18`, not `Linux6_18`).
fn serde_name(value: impl serde::Serialize) -> String {
    serde_json::to_value(value).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()
}

fn rule_note() -> String {
    let p = |x: f64| format!("{} %", x * 100.0);
    format!(
        "Rule (its thresholds are assumptions): the workload frees nothing (online discard sent no TRIM) -> nothing to decide; else among the policies whose WAF is within {} of the lowest, the least program time per file-system call (mkfs end to the last operation, or the rounds' own spans after aging, over the calls made: fsync waits, commit-time discards and space stalls are in it), among those within {} of it the fewest TRIM commands, then the lowest WAF; the one of least time per call among those more than {} below that which keep at least half of its WAF gain over no discard wins instead.",
        p(WAF_SAME),
        p(TIME_SAME),
        p(TIME_WORTH)
    )
}

fn periods_note(periods: &[u64], all_fire: bool) -> String {
    let when: Vec<String> = periods.iter().map(|&p| DurationNs(p).to_string()).collect();
    format!(
        "fstrim runs FITRIM every {} of simulated time from mount{}; online discard is the file system's own -o discard; Lazy TRIM queues freed extents for background workers; Selective TRIM trims only while utilization is between 40 % and 90 %.",
        when.join(" / "),
        if all_fire { "" } else { " (see the warning)" }
    )
}

/// One row per policy: device-side then host-side costs.
/// One policy table: a `policy` column, then `columns` filled by `cells` per policy.
fn policy_table(
    labels: &[String],
    results: &[Measured],
    (name, title): (&str, &str),
    columns: &[&str],
    cells: &dyn Fn(&Measured) -> Vec<Cell>,
) -> Table {
    let mut t = Table::new(name, title, &[&["policy"][..], columns].concat());
    for (label, r) in labels.iter().zip(results) {
        t.push_row(std::iter::once(Cell::Text(label.clone())).chain(cells(r)));
    }
    t
}

/// The policy tables: three of 9 columns rather than one of 25, so each fits a terminal and
/// a page: the device, the application's calls, the host's time.
fn costs_tables(labels: &[String], results: &[Measured]) -> [Table; 3] {
    [device_table(labels, results), calls_table(labels, results), host_table(labels, results)]
}

fn device_table(labels: &[String], results: &[Measured]) -> Table {
    let columns = [
        "waf",
        "gc_pages_copied",
        "nand_blocks_erased",
        "device_write_p99_us",
        "device_flush_p99_us",
        "trim_commands",
        "policy_trim_commands",
        "device_trim_ms",
    ];
    let title = "The device under each host TRIM policy (same workload, device and seed)";
    policy_table(labels, results, ("advise", title), &columns, &|r| {
        let d = &r.report;
        vec![
            Cell::Num(d.waf),
            Cell::Int(d.gc.pages_copied as i64),
            Cell::Int(d.nand_blocks_erased as i64),
            Cell::Num(us(d.latency.write.p99_ns)),
            Cell::Num(us(d.latency.flush.p99_ns)),
            Cell::Int(r.costs.trim_commands as i64),
            Cell::Int(r.costs.policy_trim_commands as i64),
            Cell::Num(ms(d.trim.foreground_total_ns)),
        ]
    })
}

fn calls_table(labels: &[String], results: &[Measured]) -> Table {
    let columns = [
        "fsync_count",
        "fsync_p50_us",
        "fsync_p99_us",
        "fsync_p999_us",
        "write_count",
        "write_p50_us",
        "write_p99_us",
        "write_p999_us",
    ];
    let title = "The application's calls under each policy: fsync and write latency";
    policy_table(labels, results, ("advise_calls", title), &columns, &|r| {
        let c = &r.calls;
        vec![
            Cell::Int(c.fsync.count as i64),
            Cell::Num(us(c.fsync.p50_ns)),
            Cell::Num(us(c.fsync.p99_ns)),
            Cell::Num(us(c.fsync.p999_ns)),
            Cell::Int(c.write.count as i64),
            Cell::Num(us(c.write.p50_ns)),
            Cell::Num(us(c.write.p99_ns)),
            Cell::Num(us(c.write.p999_ns)),
        ]
    })
}

fn host_table(labels: &[String], results: &[Measured]) -> Table {
    let columns = [
        "program_s",
        "fs_calls",
        "per_call_us",
        "commits",
        "commit_mean_ms",
        "commit_max_ms",
        "space_wait_ms",
        "freed_unusable_mean_s",
    ];
    let title = "The host's time under each policy: the program, journal commits, space waits";
    policy_table(labels, results, ("advise_host", title), &columns, &|r| {
        vec![
            Cell::Num(r.costs.program_ns as f64 / 1e9),
            Cell::Int(r.costs.calls as i64),
            Cell::Num(us(r.costs.program_ns / r.costs.calls.max(1))),
            Cell::Int(r.commits as i64),
            Cell::Num(ms(r.commit_ns_total / r.commits.max(1))),
            Cell::Num(ms(r.commit_ns_max)),
            Cell::Num(ms(r.space_wait_ns)),
            Cell::Num(r.freed_unusable_mean_s),
        ]
    })
}

/// Where the time went: each phase's span (and each time its workload measured) in ms, one
/// column per policy.
fn phases_table(labels: &[String], results: &[Measured]) -> Table {
    let mut columns = vec!["phase"];
    columns.extend(labels.iter().map(String::as_str));
    let mut table =
        Table::new("advise_phases", "Simulated time per phase and per measured figure (ms)", &columns);
    let row = |name: String, pick: &dyn Fn(&Measured) -> Option<u64>| -> Vec<Cell> {
        let cells = results.iter().map(|r| pick(r).map_or(Cell::Empty, |ns| Cell::Num(ms(ns))));
        std::iter::once(Cell::Text(name)).chain(cells).collect()
    };
    // The runs make the same phases; a run that made others shows an empty cell.
    fn same<'a>(r: &'a Measured, j: usize, name: &str) -> Option<&'a PhaseTimes> {
        r.phases.get(j).filter(|p| p.name == name)
    }
    for (j, phase) in results[0].phases.iter().enumerate() {
        let name = phase.name.as_str();
        table.push_row(row(name.to_string(), &|r| same(r, j, name).map(|p| p.elapsed_ns)));
        for (key, _) in &phase.figures {
            let figure = |r: &Measured| {
                same(r, j, name).and_then(|p| p.figures.iter().find(|f| f.0 == *key)).map(|f| f.1)
            };
            table.push_row(row(format!("{name}: {key}"), &figure));
        }
    }
    table
}

fn plots(labels: &[String], results: &[Measured]) -> Vec<Plot> {
    let bars = |name: &str, title: &str, y: &str, log_y: bool, series: Vec<(String, Vec<f64>)>| Plot {
        name: name.into(),
        title: title.into(),
        x_label: "policy".into(),
        y_label: y.into(),
        log_y,
        log_x: false,
        symlog_y: false,
        kind: PlotKind::Bars { categories: labels.to_vec(), series },
    };
    let pick = |f: &dyn Fn(&Measured) -> f64| results.iter().map(f).collect::<Vec<f64>>();
    vec![
        bars("waf", "Write amplification", "WAF", false, vec![("WAF".into(), pick(&|r| r.report.waf))]),
        bars(
            "program_time",
            "Program time (s)",
            "seconds",
            false,
            vec![("program".into(), pick(&|r| r.costs.program_ns as f64 / 1e9))],
        ),
        bars(
            "call_latency_p99",
            "p99 latency of the application's calls (us)",
            "microseconds (log)",
            true,
            vec![
                ("fsync p99".into(), pick(&|r| us(r.calls.fsync.p99_ns))),
                ("write p99".into(), pick(&|r| us(r.calls.write.p99_ns))),
            ],
        ),
        bars(
            "commit_time",
            "Journal commit time (ms)",
            "milliseconds (log)",
            true,
            vec![
                ("mean".into(), pick(&|r| ms(r.commit_ns_total / r.commits.max(1)))),
                ("max".into(), pick(&|r| ms(r.commit_ns_max))),
            ],
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_follow_the_layout_and_periods_fit_the_run() {
        let mut host = HostSection::default();
        let names =
            |h: &HostSection| choices(h, &[2_000_000_000]).into_iter().map(|c| c.discard).collect::<Vec<_>>();
        assert_eq!(names(&host), ["nodiscard", "discard", "fstrim:2s", "lazy", "selective:40:90"]);
        host.kernel = Some(Kernel::Linux6_18);
        assert_eq!(names(&host)[1], "ext4-discard");
        host.layout = Some(Layout::Xfs);
        assert_eq!(names(&host)[1], "discard-batch");
        host.discard = Some("async".into());
        assert_eq!(names(&host)[1], "async", "the config's own online discard is kept");
        host.discard = Some("lazy".into());
        assert_eq!(names(&host)[1], "discard-batch", "lazy is compared on its own row");
        assert_eq!(derived_periods(24_188_409_854), [2_418_000_000, 8_062_000_000]);
        assert_eq!(derived_periods(0), [1_000_000]);
        let w = fstrim_warning(&[1_000_000_000, 86_400_000_000_000], 24_188_409_854).unwrap();
        assert!(
            w.contains("fstrim every 86400s never runs") && w.contains("--fstrim-periods 2418ms,8062ms"),
            "{w}"
        );
        assert_eq!(fstrim_warning(&[1_000_000_000], 24_188_409_854), None);
    }
}
