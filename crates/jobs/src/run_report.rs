//! The page `trimlab run --html` (and `replay --html`) writes: the totals and the time series as
//! plots; and [`write_job_page`], which writes any job's page.

use std::path::{Path, PathBuf};
use trimlab_device::timeseries::Row;
use trimlab_device::{DeviceReport, SsdConfig};
use trimlab_report::{
    format_display, Cell, ExperimentReport, Page, PageKind, Plot, PlotKind, Series, SeriesStyle, Table,
};
use trimlab_scenario::{RunConfig, WorkloadLatency};
use trimlab_sim::ByteSize;

/// Writes a job's report files and its page (`index.html` of `kind`) under `out`, warnings
/// first on the page; returns the page's path.
pub fn write_job_page(
    out: &Path,
    kind: PageKind,
    report: &ExperimentReport,
    warnings: &[String],
) -> Result<PathBuf, trimlab_report::ReportError> {
    trimlab_report::write_experiment(out, report)?;
    let page = Page { kind, reports: std::slice::from_ref(report), references: &[], warnings };
    trimlab_report::write_page(out, &page)
}

fn line(label: &str, points: Vec<(f64, f64)>) -> Series {
    Series { label: label.into(), points, style: SeriesStyle::Line }
}

fn plot(name: &str, title: &str, y_label: &str, log_y: bool, series: Vec<Series>) -> Plot {
    Plot {
        name: name.into(),
        title: title.into(),
        x_label: "simulated time (s)".into(),
        y_label: y_label.into(),
        log_y,
        log_x: false,
        symlog_y: false,
        kind: PlotKind::Lines { series },
    }
}

/// A drive's mapping unit when it is larger than its device page: (unit, page) in bytes.
pub fn mapping_unit(device: &SsdConfig) -> Option<(u64, u64)> {
    let (unit, page) = (device.geometry.page_bytes as u64, device.host_page_bytes as u64);
    (unit > page).then_some((unit, page))
}

/// [`mapping_unit`] of a config's drive (`None` when it does not resolve: the run says why).
pub fn mapping_unit_of(config: &RunConfig) -> Option<(u64, u64)> {
    SsdConfig::resolve(&config.device, &config.ftl, &config.trim).ok().as_ref().and_then(mapping_unit)
}

/// Totals table, the time series as a table and five plots of it (none when it is empty).
/// `unit` ([`mapping_unit`]): the drive maps units larger than its page, and the totals show
/// the unit, its read-modify-writes and the share of TRIM bytes that unmapped nothing.
pub fn run_report(title: &str, r: &DeviceReport, rows: &[Row], unit: Option<(u64, u64)>) -> ExperimentReport {
    run_report_with(title, r, rows, unit, None)
}

/// [`run_report`] whose headline latencies are the workload's phases' (`workload`, when the run
/// has setup phases the whole run's figures count: mkfs, aging, a precondition's fill).
pub fn run_report_with(
    title: &str,
    r: &DeviceReport,
    rows: &[Row],
    unit: Option<(u64, u64)>,
    workload: Option<&WorkloadLatency>,
) -> ExperimentReport {
    let workload = workload.filter(|w| w.excludes_phases);
    let mut totals = totals_table(r, workload);
    let mut notes = Vec::new();
    if let Some((unit, page)) = unit {
        unit_totals(&mut totals, r, unit, page);
        notes.push(format!(
            "The drive maps {} units ([ftl] mapping_unit): a TRIM deallocates only the whole units inside its ranges, the rest of its bytes are ineffective; a write that covers part of a unit is a read-modify-write. WAF is in bytes; the page counts (host, NAND, per interval) count units (docs/config.md, \"Mapping units\").",
            ByteSize(unit)
        ));
    }
    let mut tables = vec![totals];
    let mut plots = Vec::new();
    if !rows.is_empty() {
        tables.push(timeseries_table(rows));
        plots = timeseries_plots(rows);
    }
    if !rows.is_empty() && rows.iter().all(|row| row.read_commands == 0) {
        notes.push("No reads in this run: the latency plot has no read line.".to_string());
    }
    ExperimentReport {
        name: "run".into(),
        title: title.into(),
        summary: format!(
            "{} {} time-series rows; latency histograms in latency_histogram.csv, every counter in metrics.json.",
            headline(r, workload),
            rows.len()
        ),
        paper: Vec::new(),
        verdicts: Vec::new(),
        notes,
        tables,
        plots,
        params: Vec::new(),
    }
}

/// A time in ns in the unit that suits it.
fn duration_text(ns: u64) -> String {
    match ns {
        n if n >= 1_000_000_000 => format!("{} s", format_display(n as f64 / 1e9)),
        n if n >= 1_000_000 => format!("{} ms", format_display(n as f64 / 1e6)),
        n => format!("{} µs", format_display(n as f64 / 1e3)),
    }
}

/// The figures a reader looks for first, as one sentence; the latencies are `workload`'s when
/// given, with the whole run's beside them.
fn headline(r: &DeviceReport, workload: Option<&WorkloadLatency>) -> String {
    let waf = if r.host.pages_written == 0 { "n/a".to_string() } else { format_display(r.waf) };
    let mut parts = vec![format!("WAF {waf}")];
    match workload {
        Some(w) => {
            for (kind, mine, whole) in
                [("write", &w.latency.write, &r.latency.write), ("read", &w.latency.read, &r.latency.read)]
            {
                if whole.count > 0 {
                    let p99 = if mine.count > 0 { duration_text(mine.p99_ns) } else { "none".into() };
                    parts.push(format!(
                        "{kind} p99 ({}) {p99} (whole run {})",
                        w.phases_text(),
                        duration_text(whole.p99_ns)
                    ));
                }
            }
        }
        None => {
            if r.latency.write.count > 0 {
                parts.push(format!("write p99 {}", duration_text(r.latency.write.p99_ns)));
            }
            if r.latency.read.count > 0 {
                parts.push(format!("read p99 {}", duration_text(r.latency.read.p99_ns)));
            }
        }
    }
    parts.push(format!("{} NAND blocks erased", r.nand_blocks_erased));
    parts.push(format!("{} TRIM commands", r.trim.commands));
    format!("Headline: {}, in {} of simulated time.", parts.join(", "), duration_text(r.sim_time_ns))
}

/// What a run's page says about the run beyond the drive's counters: a precondition that ran
/// before the measured phase (its writes are in no figure of the page).
pub fn add_run_context(report: &mut ExperimentReport, metrics: &serde_json::Value) {
    let Some(end_ns) = metrics["precondition_end_ns"].as_u64().filter(|&ns| ns > 0) else { return };
    let workload = &metrics["config"]["workload"];
    let how = match (workload["precondition"].as_str(), workload["precondition_writes"].as_str()) {
        (Some(kind), Some(writes)) => {
            format!(" (precondition = \"{kind}\", precondition_writes = \"{writes}\")")
        }
        (Some(kind), None) => format!(" (precondition = \"{kind}\")"),
        _ => String::new(),
    };
    report.notes.insert(
        0,
        format!(
            "A precondition{how} filled the drive first, for {} of simulated time; the measured phase starts there, and the totals and plots count the measured phase only.",
            duration_text(end_ns)
        ),
    );
}

fn totals_table(r: &DeviceReport, workload: Option<&WorkloadLatency>) -> Table {
    let mut totals = Table::new("totals", "Totals of the measured phase", &["measure", "value"]);
    let waf = if r.host.pages_written == 0 { Cell::Text("n/a".into()) } else { Cell::Num(r.waf) };
    totals.push_row([Cell::from("WAF"), waf]);
    for (k, v) in [
        ("host pages written", r.host.pages_written),
        ("NAND pages programmed", r.nand_pages_programmed),
        ("NAND blocks erased", r.nand_blocks_erased),
        ("GC victims", r.gc.victims),
        ("TRIM commands", r.trim.commands),
        ("write p99 (us)", r.latency.write.p99_ns / 1000),
        ("read p99 (us)", r.latency.read.p99_ns / 1000),
    ] {
        totals.push_row([Cell::from(k), Cell::from(v)]);
    }
    if let Some(w) = workload {
        for (k, v) in [("write", &w.latency.write), ("read", &w.latency.read)] {
            totals.push_row([
                Cell::Text(format!("{k} p99, {} (us)", w.phases_text())),
                Cell::from(v.p99_ns / 1000),
            ]);
        }
    }
    totals.push_row([Cell::from("simulated time (s)"), Cell::Num(r.sim_time_ns as f64 / 1e9)]);
    totals
}

/// The mapping unit's rows of the totals: the unit, read-modify-writes, and the TRIM bytes
/// received and ineffective (with their share: "n/a" without TRIMs).
fn unit_totals(totals: &mut Table, r: &DeviceReport, unit: u64, page: u64) {
    let shape = format!("{} ({} device pages of {})", ByteSize(unit), unit / page.max(1), ByteSize(page));
    totals.push_row([Cell::from("mapping unit"), Cell::Text(shape)]);
    for (k, v) in [
        ("read-modify-writes", r.host.read_modify_writes),
        ("unit pages filled (programmed, not written by the host)", r.host.unit_pages_filled),
        ("TRIM bytes", r.host.trim_bytes_with_unit),
        ("TRIM bytes ineffective (partial units)", r.trim.trim_bytes_ineffective),
    ] {
        totals.push_row([Cell::from(k), Cell::from(v)]);
    }
    let sent = r.host.trim_bytes_with_unit;
    let share = if sent == 0 {
        Cell::Text("n/a".into())
    } else {
        Cell::Num(r.trim.trim_bytes_ineffective as f64 * 100.0 / sent as f64)
    };
    totals.push_row([Cell::from("TRIM bytes ineffective (%)"), share]);
}

fn timeseries_table(rows: &[Row]) -> Table {
    let mut t = Table::new(
        "timeseries",
        "Per interval (also timeseries.csv)",
        &[
            "start_s",
            "host_pages_written",
            "nand_pages_programmed",
            "nand_blocks_erased",
            "gc_busy_ms",
            "trim_commands",
            "free_blocks",
            "waf",
            "waf_so_far",
            "write_p99_us",
        ],
    );
    for row in rows {
        t.push_row([
            Cell::Num(row.start_ns as f64 / 1e9),
            Cell::from(row.host_pages_written),
            Cell::from(row.nand_pages_programmed),
            Cell::from(row.nand_blocks_erased),
            Cell::Num(row.gc_busy_ns as f64 / 1e6),
            Cell::from(row.trim_commands),
            Cell::from(row.free_blocks),
            Cell::from(row.waf),
            Cell::from(row.waf_so_far),
            Cell::Num(row.write_p99_ns as f64 / 1e3),
        ]);
    }
    t
}

/// What a stretch without rows (no commands in it) means for a quantity.
#[derive(Clone, Copy, PartialEq)]
enum Gap {
    /// A count per interval: nothing happened, so zero (the line drops to 0 and back).
    Zero,
    /// A value measured per interval (a latency, a WAF): none there, the line breaks.
    Break,
}

/// Points of `f` over the rows, each at the middle of its interval, in seconds. Intervals
/// without commands have no row: see [`Gap`]. (A replay's sparse trace drew fragments.)
fn points(rows: &[Row], f: &dyn Fn(&Row) -> f64, gap: Gap) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(rows.len());
    for (i, row) in rows.iter().enumerate() {
        if i > 0 && rows[i - 1].end_ns != row.start_ns {
            match gap {
                Gap::Zero => {
                    out.push((rows[i - 1].end_ns as f64 / 1e9, 0.0));
                    out.push((row.start_ns as f64 / 1e9, 0.0));
                }
                Gap::Break => out.push((f64::NAN, f64::NAN)),
            }
        }
        out.push(((row.start_ns + row.end_ns) as f64 / 2e9, f(row)));
    }
    out
}

/// A latency in µs, NaN in an interval without such commands (0 ns there is no latency).
fn latency_us(commands: u64, ns: u64) -> f64 {
    if commands == 0 {
        f64::NAN
    } else {
        ns as f64 / 1e3
    }
}

/// Free blocks: a state, unchanged while no command runs, so the line goes straight on.
fn counts_held(rows: &[Row]) -> Vec<(f64, f64)> {
    rows.iter().map(|row| ((row.start_ns + row.end_ns) as f64 / 2e9, row.free_blocks as f64)).collect()
}

fn timeseries_plots(rows: &[Row]) -> Vec<Plot> {
    let pts = |f: &dyn Fn(&Row) -> f64| points(rows, f, Gap::Break);
    let counts = |f: &dyn Fn(&Row) -> f64| points(rows, f, Gap::Zero);
    let mut latency = vec![
        line("write p50", pts(&|row| latency_us(row.write_commands, row.write_p50_ns))),
        line("write p99", pts(&|row| latency_us(row.write_commands, row.write_p99_ns))),
    ];
    if rows.iter().any(|row| row.read_commands > 0) {
        latency.push(line("read p99", pts(&|row| latency_us(row.read_commands, row.read_p99_ns))));
    }
    let per_s = |row: &Row, v: u64| v as f64 * 1e9 / (row.end_ns - row.start_ns).max(1) as f64;
    vec![
        plot(
            "pages_per_s",
            "Host writes and NAND programs per second",
            "pages per second",
            false,
            vec![
                line("host pages written", counts(&|row| per_s(row, row.host_pages_written))),
                // Dashed over the solid host line: at WAF 1 the two coincide and both show.
                Series {
                    label: "NAND pages programmed".into(),
                    points: counts(&|row| per_s(row, row.nand_pages_programmed)),
                    style: SeriesStyle::Dashed,
                },
            ],
        ),
        plot(
            "waf",
            "Write amplification per interval and so far",
            "WAF",
            false,
            vec![
                line("per interval", pts(&|row| row.waf.unwrap_or(f64::NAN))),
                line("so far", pts(&|row| row.waf_so_far.unwrap_or(f64::NAN))),
            ],
        ),
        plot("latency", "Write and read latency per interval", "microseconds", true, latency),
        plot(
            "free_blocks",
            "Free (erased) blocks at the end of each interval",
            "blocks",
            false,
            vec![line("free blocks", counts_held(rows))],
        ),
        plot(
            "gc_busy",
            "GC busy time per interval (summed over planes)",
            "milliseconds",
            false,
            vec![line("GC busy", counts(&|row| row.gc_busy_ns as f64 / 1e6))],
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row<'a>(t: &'a Table, measure: &str) -> Option<&'a Cell> {
        t.rows.iter().find(|r| r[0] == Cell::from(measure)).map(|r| &r[1])
    }

    #[test]
    fn the_totals_show_the_unit_and_the_ineffective_share_only_with_a_unit() {
        let mut r = DeviceReport::default();
        r.host.trim_bytes_with_unit = 64 << 10;
        r.trim.trim_bytes_ineffective = 48 << 10;
        r.host.read_modify_writes = 7;
        let plain = run_report("t", &r, &[], None);
        assert!(row(&plain.tables[0], "mapping unit").is_none() && plain.notes.is_empty());
        let unit = run_report("t", &r, &[], Some((16 << 10, 4 << 10)));
        let t = &unit.tables[0];
        assert_eq!(row(t, "mapping unit"), Some(&Cell::Text("16KiB (4 device pages of 4KiB)".into())));
        assert_eq!(row(t, "read-modify-writes"), Some(&Cell::from(7u64)));
        assert_eq!(row(t, "TRIM bytes ineffective (%)"), Some(&Cell::Num(75.0)));
        assert!(unit.notes[0].starts_with("The drive maps 16KiB units"), "{:?}", unit.notes);
        r.host.trim_bytes_with_unit = 0;
        let t = run_report("t", &r, &[], Some((16 << 10, 4 << 10))).tables.remove(0);
        assert_eq!(row(&t, "TRIM bytes ineffective (%)"), Some(&Cell::Text("n/a".into())), "no TRIMs");
    }
}
