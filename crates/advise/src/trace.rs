//! `advise` on a block trace: the trace replayed once per way of handling its discards (and
//! per TRIM engine), then a recommendation with its reason.

use crate::advice::{ms, us, Advice};
use crate::mapping_units::{Role, UnitComparison, UnitRun};
use anyhow::Result;
use trimlab_device::{DeviceReport, SsdConfig};
use trimlab_experiments::{parallel_map, Progress};
use trimlab_replay::trace_options::{parse_periods, TraceOptions};
use trimlab_replay::{replay_on, Replayed, TraceInput};
use trimlab_report::{Cell, ExperimentReport, Plot, PlotKind, Table};
use trimlab_scenario::RunConfig;
use trimlab_trace::advice::{period_label, scenarios, Scenario};
use trimlab_trace::TrimHandling;

/// Replays the trace `open` gives (once per scenario, on `progress`'s worker pool) on the
/// device of `config` and recommends. `trace` names it in the report.
pub fn advise(
    config: &RunConfig,
    trace: &str,
    open: &(dyn Fn() -> Result<TraceInput> + Sync),
    options: &TraceOptions,
    fstrim_periods: &[String],
    mapping_units: &[String],
    progress: &dyn Progress,
) -> Result<Advice> {
    let base = SsdConfig::resolve(&config.device, &config.ftl, &config.trim)?;
    let parsed = TraceOptions { closed_loop: None, ..options.clone() }.parse()?;
    let periods = parse_periods(fstrim_periods)?;
    let units = crate::mapping_units::units_to_compare(config, &base, mapping_units)?;
    let list = scenarios(base.trim_engine, &periods);
    let results = parallel_map(progress, &list, "advise", |s| {
        let mut device = base.clone();
        if let Some((engine, cap)) = s.engine {
            device.trim_engine = engine;
            device.trim_keys.set(trimlab_device::config::EngineKind::Delayed, "before_gc", &cap);
        }
        replay_on(&device, open()?, &parsed, s.trims, None)
    });
    let results: Vec<Replayed> = results.into_iter().collect::<Result<_>>()?;
    let fstrim = fstrim_warning(&periods, results[0].stats.trace_span_ns);
    let mut report = advice_report(trace, parsed.speed, &base, &list, &results, fstrim.as_deref());
    let replay_at = |unit: u64, s: &Scenario| -> Result<Replayed> {
        replay_on(&crate::mapping_units::resolve_at(config, unit)?, open()?, &parsed, s.trims, None)
    };
    let comparison = unit_comparison(&base, &units, &list, &results, &replay_at, progress)?;
    comparison.add_to(
        &mut report,
        "online discard, each fstrim period and no discard replayed again on the same drive",
    );
    let mut warnings: Vec<String> = fstrim.into_iter().collect();
    // Online discard replays the trace as recorded: if the drive cannot keep up with it, every
    // scenario's latencies measure a backlog (issue 25: write p99 1.04 s with no word).
    warnings.extend(results[0].saturation_warning());
    warnings.extend(too_small(&list, &results));
    Ok(Advice { report, warnings })
}

/// A trace that never made the drive collect garbage (no GC victim even without discards)
/// cannot show what TRIM saves: every row's WAF is the same for that reason alone.
fn too_small(list: &[Scenario], results: &[Replayed]) -> Option<String> {
    let none = list.iter().position(|s| s.trims == TrimHandling::Drop)?;
    let share = results[none].report.written_share_without_gc()?;
    Some(format!(
        "the trace wrote {:.1} % of the drive's capacity and GC never ran even without discards, so TRIM cannot change WAF here and the rows differ only in the TRIMs' own time: replay it on a drive it fills (--set device.logical_bytes=...), or give the program's strace (advise --strace FILE --root DIR), which advise ages and repeats to steady state",
        share * 100.0
    ))
}

/// The scenarios that handle discards differently on the configured drive (not the other
/// engines' rows) at each unit of `units`: the drive's own unit reuses `results`, the others
/// are replayed by `replay_at` on `progress`'s worker pool.
fn unit_comparison(
    base: &SsdConfig,
    units: &[u64],
    list: &[Scenario],
    results: &[Replayed],
    replay_at: &(dyn Fn(u64, &Scenario) -> Result<Replayed> + Sync),
    progress: &dyn Progress,
) -> Result<UnitComparison> {
    let own = base.geometry.page_bytes as u64;
    let policies: Vec<usize> = (0..list.len()).filter(|&i| list[i].engine.is_none()).collect();
    let jobs: Vec<(u64, usize)> =
        units.iter().filter(|&&u| u != own).flat_map(|&u| policies.iter().map(move |&i| (u, i))).collect();
    let replayed = parallel_map(progress, &jobs, "advise: mapping units", |&(u, i)| replay_at(u, &list[i]));
    let mut replayed = replayed.into_iter();
    let mut runs = Vec::new();
    for &unit in units {
        for &i in &policies {
            let other = if unit == own { None } else { Some(replayed.next().expect("one replay per job")?) };
            let r = other.as_ref().unwrap_or(&results[i]);
            let (role, trim_bytes) = match list[i].trims {
                TrimHandling::AsRecorded => (Role::Online, r.stats.trim_bytes_recorded),
                TrimHandling::Periodic { .. } => (Role::Fstrim, r.stats.fstrim_bytes),
                TrimHandling::Drop => (Role::NoDiscard, 0),
            };
            runs.push(UnitRun::new(unit, &list[i].label, role, &r.report, trim_bytes));
        }
    }
    Ok(UnitComparison { runs, own_unit: own })
}

/// How the scenarios treat the trace's discards, worded from the periods actually replayed.
fn periods_note(periods_ns: &[u64], span_ns: u64) -> String {
    let fstrim = if periods_ns.is_empty() {
        "no fstrim period was given".to_string()
    } else {
        let when: Vec<String> = periods_ns.iter().map(|&p| period_label(p)).collect();
        format!(
            "fstrim collects the trimmed ranges not written again since and sends them {} of trace time, starting one period after the trace starts (this trace spans {:.3} s, so a longer period never reaches an fstrim)",
            when.join(" / "),
            span_ns as f64 / 1e9
        )
    };
    format!("Online discard sends each TRIM when it was recorded; {fstrim}; no discard drops them. The rows after \"no discard\" keep online discard and change the drive's TRIM engine.")
}

/// The fstrim periods that never fire within the trace make rows identical to "no discard";
/// say so, and what to pass instead.
fn fstrim_warning(periods_ns: &[u64], span_ns: u64) -> Option<String> {
    let never: Vec<String> = periods_ns.iter().filter(|&&p| p > span_ns).map(|&p| period_label(p)).collect();
    if never.is_empty() {
        return None;
    }
    let all = never.len() == periods_ns.len();
    // Suggest periods that fire a few times: a tenth and a third of the trace.
    let suggest = |share: u64| trimlab_sim::DurationNs(crate::advice::span_share_ns(span_ns, share));
    Some(format!(
        "{} no fstrim in this {:.3} s trace (fstrim {}), so {} the same as \"no discard\"; pass shorter periods, e.g. --fstrim-periods {},{}",
        if all { "no fstrim period fits in the trace:" } else { "some fstrim periods never run:" },
        span_ns as f64 / 1e9,
        never.join(", "),
        if never.len() == 1 { "that row is" } else { "those rows are" },
        suggest(10),
        suggest(3)
    ))
}

fn advice_report(
    trace: &str,
    speed: f64,
    base: &SsdConfig,
    list: &[Scenario],
    results: &[Replayed],
    fstrim_warning: Option<&str>,
) -> ExperimentReport {
    let replays: Vec<_> = results
        .iter()
        .map(|r| trimlab_trace::advice::Replayed { stats: &r.stats, report: &r.report })
        .collect();
    let advice = trimlab_trace::advice::recommend(list, &replays);
    let (choice, reason) = (advice.policy.to_string(), advice.reason);
    let table = advice_table(list, results);
    let plots = advice_plots(list, results);
    let s = &results[0].stats;
    let skipped = results[0].skipped_bad;
    let periods: Vec<u64> = list
        .iter()
        .filter_map(|sc| match sc.trims {
            TrimHandling::Periodic { period_ns } => Some(period_ns),
            _ => None,
        })
        .collect();
    let mut notes = vec![
        format!("Recommendation: {choice}. {reason}"),
        periods_note(&periods, s.trace_span_ns),
        "Rule: no TRIMs -> nothing to decide; trimming gains < 2 % WAF -> fstrim (or no discard when no fstrim period falls inside the trace); online discard costs > 10 % in p99 latency -> fstrim if it keeps half the WAF gain, else discard; otherwise discard if it beats the best fstrim's WAF by > 1 point, else fstrim.".into(),
    ];
    if skipped > 0 {
        notes.push(format!("{skipped} malformed lines were skipped (--skip-bad)."));
    }
    if let Some(warning) = fstrim_warning {
        notes.insert(0, format!("Warning: {warning}"));
    }
    ExperimentReport {
        name: "advise".into(),
        title: format!("Discard advice for {trace}"),
        summary: format!(
            "{} requests ({} reads, {} writes, {} TRIMs of {} bytes, {} flushes) over {:.3} s of trace time, format {}, replayed open loop at speed {} on {} ({} logical bytes, engine {:?}).",
            s.requests,
            s.reads,
            s.writes,
            s.trims,
            s.trim_bytes_recorded,
            s.flushes,
            s.trace_span_ns as f64 / 1e9,
            results[0].format.name(),
            speed,
            base.preset,
            base.logical_bytes(),
            base.trim_engine
        ),
        paper: vec![
            "003: online discard makes mkfs and rm many times slower on thin storage; not trimming raises write amplification and wear; periodic fstrim is the usual middle way.".into(),
        ],
        verdicts: Vec::new(),
        notes,
        tables: vec![table],
        plots,
        params: vec![
            ("trace".into(), trace.to_string()),
            ("recommendation".into(), choice),
            ("reason".into(), reason),
        ],
    }
}

/// One row per scenario: WAF, erases, latency percentiles, TRIM and GC time.
fn advice_table(list: &[Scenario], results: &[Replayed]) -> Table {
    let mut table = Table::new(
        "advise",
        "Each way of handling the trace's discards, replayed on the same device",
        &[
            "scenario",
            "waf",
            "nand_blocks_erased",
            "read_p50_us",
            "read_p99_us",
            "read_p999_us",
            "write_p50_us",
            "write_p99_us",
            "write_p999_us",
            "trim_commands",
            "trim_foreground_ms",
            "gc_busy_ms",
            "sim_time_s",
        ],
    );
    for (s, r) in list.iter().zip(results) {
        let rep = &r.report;
        table.push_row([
            Cell::Text(s.label.clone()),
            Cell::Num(rep.waf),
            Cell::Int(rep.nand_blocks_erased as i64),
            Cell::Num(us(rep.latency.read.p50_ns)),
            Cell::Num(us(rep.latency.read.p99_ns)),
            Cell::Num(us(rep.latency.read.p999_ns)),
            Cell::Num(us(rep.latency.write.p50_ns)),
            Cell::Num(us(rep.latency.write.p99_ns)),
            Cell::Num(us(rep.latency.write.p999_ns)),
            Cell::Int(rep.trim.commands as i64),
            Cell::Num(ms(rep.trim.foreground_total_ns)),
            Cell::Num(ms(rep.gc.busy_ns)),
            Cell::Num(rep.sim_time_ns as f64 / 1e9),
        ]);
    }
    table
}

/// WAF, p99 latencies and TRIM / GC time per scenario, as bars.
fn advice_plots(list: &[Scenario], results: &[Replayed]) -> Vec<Plot> {
    let labels: Vec<String> = list.iter().map(|s| s.label.clone()).collect();
    // Read and write latencies (and TRIM and GC times) differ by orders of magnitude: those
    // plots use a log axis so the small values stay visible.
    let bars = |name: &str, title: &str, y: &str, log_y: bool, series: Vec<(String, Vec<f64>)>| Plot {
        name: name.into(),
        title: title.into(),
        x_label: "scenario".into(),
        y_label: y.into(),
        log_y,
        log_x: false,
        symlog_y: false,
        kind: PlotKind::Bars { categories: labels.clone(), series },
    };
    let pick = |f: &dyn Fn(&DeviceReport) -> f64| results.iter().map(|r| f(&r.report)).collect::<Vec<f64>>();
    vec![
        bars("waf", "Write amplification", "WAF", false, vec![("WAF".into(), pick(&|r| r.waf))]),
        bars(
            "latency_p99",
            "p99 latency (us)",
            "microseconds (log)",
            true,
            vec![
                ("read p99".into(), pick(&|r| us(r.latency.read.p99_ns))),
                ("write p99".into(), pick(&|r| us(r.latency.write.p99_ns))),
            ],
        ),
        bars(
            "trim_and_gc_time",
            "Foreground TRIM time and GC time (ms)",
            "milliseconds (log)",
            true,
            vec![
                ("TRIM foreground".into(), pick(&|r| ms(r.trim.foreground_total_ns))),
                ("GC busy".into(), pick(&|r| ms(r.gc.busy_ns))),
            ],
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use trimlab_trace::advice::DAY_NS;

    #[test]
    fn advise_warns_when_no_fstrim_period_fits_and_words_notes_from_the_periods() {
        let span = 98_400_000_000; // 98.4 s, the shipped ext4 traces
        let w = fstrim_warning(&[DAY_NS, 7 * DAY_NS], span).unwrap();
        assert!(w.starts_with("no fstrim period fits in the trace"), "{w}");
        assert!(w.contains("98.400 s") && w.contains("daily, weekly") && w.contains("those rows are"), "{w}");
        assert!(w.contains("--fstrim-periods 9840ms,32800ms"), "{w}");
        let w = fstrim_warning(&[10_000_000_000, DAY_NS], span).unwrap();
        assert!(w.starts_with("some fstrim periods never run") && w.contains("(fstrim daily)"), "{w}");
        assert_eq!(fstrim_warning(&[10_000_000_000], span), None);
        let note = periods_note(&[10_000_000_000, DAY_NS], span);
        assert!(note.contains("sends them every 10s / daily of trace time"), "{note}");
        assert!(!note.contains("every day or week"), "{note}");
    }
}
