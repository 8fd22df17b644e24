//! The page `trimlab run --html` (and `replay --html`) writes: the totals and the time series as
//! plots; and [`write_job_page`], which writes any job's page.

use std::path::{Path, PathBuf};
use trimlab_device::timeseries::Row;
use trimlab_device::{DeviceReport, SsdConfig};
use trimlab_report::{Cell, ExperimentReport, Page, PageKind, Plot, PlotKind, Series, SeriesStyle, Table};
use trimlab_scenario::RunConfig;
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
    let mut totals = totals_table(r);
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
    ExperimentReport {
        name: "run".into(),
        title: title.into(),
        summary: format!(
            "{} time-series rows; latency histograms in latency_histogram.csv, every counter in metrics.json.",
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

fn totals_table(r: &DeviceReport) -> Table {
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

/// Points of `f` over the rows, each at the middle of its interval, in seconds. Intervals
/// without commands have no row; a NaN point there breaks the line instead of bridging the gap.
fn points(rows: &[Row], f: &dyn Fn(&Row) -> f64) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(rows.len());
    for (i, row) in rows.iter().enumerate() {
        if i > 0 && rows[i - 1].end_ns != row.start_ns {
            out.push((f64::NAN, f64::NAN));
        }
        out.push(((row.start_ns + row.end_ns) as f64 / 2e9, f(row)));
    }
    out
}

fn timeseries_plots(rows: &[Row]) -> Vec<Plot> {
    let pts = |f: &dyn Fn(&Row) -> f64| points(rows, f);
    let per_s = |row: &Row, v: u64| v as f64 * 1e9 / (row.end_ns - row.start_ns).max(1) as f64;
    vec![
        plot(
            "pages_per_s",
            "Host writes and NAND programs per second",
            "pages per second",
            false,
            vec![
                line("host pages written", pts(&|row| per_s(row, row.host_pages_written))),
                line("NAND pages programmed", pts(&|row| per_s(row, row.nand_pages_programmed))),
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
        plot(
            "latency",
            "Write and read latency per interval",
            "microseconds",
            true,
            vec![
                line("write p50", pts(&|row| row.write_p50_ns as f64 / 1e3)),
                line("write p99", pts(&|row| row.write_p99_ns as f64 / 1e3)),
                line("read p99", pts(&|row| row.read_p99_ns as f64 / 1e3)),
            ],
        ),
        plot(
            "free_blocks",
            "Free (erased) blocks at the end of each interval",
            "blocks",
            false,
            vec![line("free blocks", pts(&|row| row.free_blocks as f64))],
        ),
        plot(
            "gc_busy",
            "GC busy time per interval (summed over planes)",
            "milliseconds",
            false,
            vec![line("GC busy", pts(&|row| row.gc_busy_ns as f64 / 1e6))],
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
