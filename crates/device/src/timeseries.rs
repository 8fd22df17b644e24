//! Per-interval samples of a run, like fio's `log_avg_msec` logs: host and NAND traffic, GC,
//! TRIM, free blocks, WAF and latency percentiles for each interval of simulated time.
//!
//! Sampling is driven by submissions, never by a clock: when a command arrives at or after the
//! end of the open interval, the device closes it with the counters as they are before that
//! command runs. Intervals in which no command arrived are not written (fio does the same), so
//! a long idle gap costs nothing; the `start_ns` column shows the gap. Every command is counted
//! in the interval its arrival falls into, and so is its latency.

use crate::command::CommandKind;
use hdrhistogram::Histogram;
use std::fmt::Write as _;
use trimlab_sim::SimTime;

/// Device counters that only grow (the measurement baseline never resets them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct DeviceCounters {
    pub nand_pages_programmed: u64,
    pub nand_blocks_erased: u64,
    pub gc_pages_copied: u64,
    pub gc_busy_ns: u64,
    pub trim_pages_unmapped: u64,
    /// `HostCounters::unit_pages_filled`: device pages a unit's program carried that the host
    /// did not write (0 without `[ftl] mapping_unit`).
    pub unit_pages_filled: u64,
}

/// One interval `[start_ns, end_ns)` of simulated time.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Row {
    pub start_ns: u64,
    pub end_ns: u64,
    pub read_commands: u64,
    pub write_commands: u64,
    pub trim_commands: u64,
    pub flush_commands: u64,
    pub host_pages_read: u64,
    pub host_pages_written: u64,
    pub host_pages_trimmed: u64,
    pub nand_pages_programmed: u64,
    pub nand_blocks_erased: u64,
    pub gc_pages_copied: u64,
    pub gc_busy_ns: u64,
    /// Pages the TRIM engine unmapped in this interval (deferred work shows up when it runs).
    pub trim_pages_unmapped: u64,
    /// Erased blocks at the end of the interval.
    pub free_blocks: u64,
    /// NAND bytes programmed / host bytes written in this interval, as the report's total WAF
    /// (with `[ftl] mapping_unit`, a read-modify-write's fill counts as NAND, not host, bytes);
    /// `None` without host writes.
    pub waf: Option<f64>,
    /// The same since the time series was enabled.
    pub waf_so_far: Option<f64>,
    pub read_p50_ns: u64,
    pub read_p99_ns: u64,
    pub write_p50_ns: u64,
    pub write_p99_ns: u64,
    pub write_max_ns: u64,
    pub trim_p99_ns: u64,
}

impl Row {
    pub const CSV_HEADER: &'static str = "start_ns,end_ns,read_commands,write_commands,trim_commands,flush_commands,host_pages_read,host_pages_written,host_pages_trimmed,nand_pages_programmed,nand_blocks_erased,gc_pages_copied,gc_busy_ns,trim_pages_unmapped,free_blocks,waf,waf_so_far,read_p50_ns,read_p99_ns,write_p50_ns,write_p99_ns,write_max_ns,trim_p99_ns";

    /// One CSV line (no newline); an undefined WAF is an empty field.
    pub fn csv_line(&self) -> String {
        let waf = |w: Option<f64>| w.map_or(String::new(), |w| format!("{w:.4}"));
        format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            self.start_ns,
            self.end_ns,
            self.read_commands,
            self.write_commands,
            self.trim_commands,
            self.flush_commands,
            self.host_pages_read,
            self.host_pages_written,
            self.host_pages_trimmed,
            self.nand_pages_programmed,
            self.nand_blocks_erased,
            self.gc_pages_copied,
            self.gc_busy_ns,
            self.trim_pages_unmapped,
            self.free_blocks,
            waf(self.waf),
            waf(self.waf_so_far),
            self.read_p50_ns,
            self.read_p99_ns,
            self.write_p50_ns,
            self.write_p99_ns,
            self.write_max_ns,
            self.trim_p99_ns
        )
    }
}

/// The whole series as CSV text with a header line.
pub fn rows_to_csv(rows: &[Row]) -> String {
    let mut out = String::with_capacity(64 + rows.len() * 96);
    out.push_str(Row::CSV_HEADER);
    out.push('\n');
    for r in rows {
        out.push_str(&r.csv_line());
        out.push('\n');
    }
    out
}

/// A latency histogram as CSV buckets: `kind,lower_ns,upper_ns,count,cumulative_share`, one
/// row per power-of-two bucket from the first to the last non-empty one (fio's
/// `log_hist_msec` idea with fixed, readable bucket edges).
pub fn histogram_csv_rows(kind: &str, h: &Histogram<u64>, out: &mut String) {
    if h.is_empty() {
        return;
    }
    let total = h.len() as f64;
    let mut seen = 0u64;
    // Buckets [2^k, 2^(k+1)); count_between is inclusive, so the upper edge is 2^(k+1) - 1.
    let first = 63 - h.min().max(1).leading_zeros();
    let last = 63 - h.max().max(1).leading_zeros();
    for k in first..=last {
        let lo = 1u64 << k;
        let hi = (1u64 << (k + 1)) - 1;
        let n = h.count_between(lo, hi);
        seen += n;
        let _ = writeln!(out, "{kind},{lo},{},{n},{:.6}", hi + 1, seen as f64 / total);
    }
}

pub const HISTOGRAM_CSV_HEADER: &str = "kind,lower_ns,upper_ns,count,cumulative_share";

/// The sampler the device feeds.
pub(crate) struct Timeseries {
    interval_ns: u64,
    open: Row,
    open_has_commands: bool,
    at_open: DeviceCounters,
    at_enable: DeviceCounters,
    host_pages_written_total: u64,
    /// Device pages per mapping unit (1 without `[ftl] mapping_unit`): the counters count units,
    /// the WAF is in bytes.
    pages_per_unit: u64,
    /// Read, write, TRIM latencies of the open interval.
    latencies: [Histogram<u64>; 3],
    rows: Vec<Row>,
}

impl Timeseries {
    pub(crate) fn new(
        interval_ns: u64,
        start: SimTime,
        counters: DeviceCounters,
        pages_per_unit: u64,
    ) -> Self {
        assert!(interval_ns > 0, "timeseries: interval must be positive (callers validate it)");
        let make =
            || Histogram::new_with_bounds(1, 1 << 50, 3).expect("valid histogram bounds and precision");
        Timeseries {
            interval_ns,
            open: Row { start_ns: start.ns(), end_ns: start.ns() + interval_ns, ..Row::default() },
            open_has_commands: false,
            at_open: counters,
            at_enable: counters,
            host_pages_written_total: 0,
            pages_per_unit: pages_per_unit.max(1),
            latencies: [make(), make(), make()],
            rows: Vec::new(),
        }
    }

    pub(crate) fn interval_ns(&self) -> u64 {
        self.interval_ns
    }

    /// True when a command arriving at `arrival` belongs to a later interval.
    #[inline]
    pub(crate) fn due(&self, arrival: SimTime) -> bool {
        arrival.ns() >= self.open.end_ns
    }

    /// Closes the open interval with the counters now and opens the one holding `arrival`.
    pub(crate) fn advance(&mut self, arrival: SimTime, now: DeviceCounters, free_blocks: u64) {
        // Intervals stay on the grid that began when the series was enabled.
        let grid_start = self.open.start_ns;
        self.close(now, free_blocks);
        let k = (arrival.ns() - grid_start) / self.interval_ns;
        let start = grid_start + k * self.interval_ns;
        self.open = Row { start_ns: start, end_ns: start + self.interval_ns, ..Row::default() };
        self.at_open = now;
    }

    /// Writes the open interval as a row if anything happened in it.
    fn close(&mut self, now: DeviceCounters, free_blocks: u64) {
        let c = &self.at_open;
        let r = &mut self.open;
        r.nand_pages_programmed = now.nand_pages_programmed - c.nand_pages_programmed;
        r.nand_blocks_erased = now.nand_blocks_erased - c.nand_blocks_erased;
        r.gc_pages_copied = now.gc_pages_copied - c.gc_pages_copied;
        r.gc_busy_ns = now.gc_busy_ns - c.gc_busy_ns;
        r.trim_pages_unmapped = now.trim_pages_unmapped - c.trim_pages_unmapped;
        if !self.open_has_commands && r.nand_pages_programmed == 0 && r.trim_pages_unmapped == 0 {
            return;
        }
        r.free_blocks = free_blocks;
        // In device pages, as `Ssd::waf`: units programmed × pages per unit over the units
        // written × pages per unit less the pages the host did not write. With one page per
        // unit nothing is filled and this is the old units-over-units ratio, bit for bit.
        let per_unit = self.pages_per_unit;
        let ratio = |nand: u64, host: u64, filled: u64| {
            let host_pages = (host * per_unit).saturating_sub(filled);
            (host_pages > 0).then(|| (nand * per_unit) as f64 / host_pages as f64)
        };
        let filled = now.unit_pages_filled - c.unit_pages_filled;
        r.waf = ratio(r.nand_pages_programmed, r.host_pages_written, filled);
        self.host_pages_written_total += r.host_pages_written;
        r.waf_so_far = ratio(
            now.nand_pages_programmed - self.at_enable.nand_pages_programmed,
            self.host_pages_written_total,
            now.unit_pages_filled - self.at_enable.unit_pages_filled,
        );
        let q = |h: &Histogram<u64>, p: f64| if h.is_empty() { 0 } else { h.value_at_quantile(p) };
        let [read, write, trim] = &self.latencies;
        r.read_p50_ns = q(read, 0.5);
        r.read_p99_ns = q(read, 0.99);
        r.write_p50_ns = q(write, 0.5);
        r.write_p99_ns = q(write, 0.99);
        r.write_max_ns = if write.is_empty() { 0 } else { write.max() };
        r.trim_p99_ns = q(trim, 0.99);
        for h in &mut self.latencies {
            if !h.is_empty() {
                h.reset();
            }
        }
        self.rows.push(std::mem::take(r));
        self.open_has_commands = false;
    }

    /// Counts one command of the open interval.
    pub(crate) fn record(&mut self, kind: CommandKind, pages: u64, latency_ns: u64) {
        self.open_has_commands = true;
        let r = &mut self.open;
        let slot = match kind {
            CommandKind::Read => {
                r.read_commands += 1;
                r.host_pages_read += pages;
                Some(0)
            }
            CommandKind::Write => {
                r.write_commands += 1;
                r.host_pages_written += pages;
                Some(1)
            }
            CommandKind::Trim => {
                r.trim_commands += 1;
                r.host_pages_trimmed += pages;
                Some(2)
            }
            CommandKind::Flush => {
                r.flush_commands += 1;
                None
            }
        };
        if let Some(i) = slot {
            self.latencies[i].saturating_record(latency_ns);
        }
    }

    /// Closes the last (possibly partial) interval at `end`.
    pub(crate) fn finish(&mut self, end: SimTime, now: DeviceCounters, free_blocks: u64) {
        let start = end.ns().max(self.open.start_ns);
        self.open.end_ns = self.open.end_ns.min(start);
        self.close(now, free_blocks);
        // A later finish (a caller reporting twice) must not write the same interval again.
        self.open = Row { start_ns: start, end_ns: start + self.interval_ns, ..Row::default() };
        self.at_open = now;
    }

    pub(crate) fn rows(&self) -> &[Row] {
        &self.rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counters(programmed: u64) -> DeviceCounters {
        DeviceCounters { nand_pages_programmed: programmed, ..DeviceCounters::default() }
    }

    #[test]
    fn intervals_close_on_the_arrival_that_crosses_them_and_skip_empty_ones() {
        let mut t = Timeseries::new(100, SimTime(5), counters(0), 1);
        t.record(CommandKind::Write, 4, 10);
        assert!(!t.due(SimTime(104)) && t.due(SimTime(105)));
        // The next command arrives at 355: [5,105) closes, [105,305) were empty, [305,405) opens.
        t.advance(SimTime(355), counters(6), 7);
        t.record(CommandKind::Read, 2, 30);
        t.finish(SimTime(385), counters(6), 7);
        let rows = t.rows();
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].start_ns, rows[0].end_ns, rows[0].host_pages_written), (5, 105, 4));
        assert_eq!((rows[0].nand_pages_programmed, rows[0].waf, rows[0].free_blocks), (6, Some(1.5), 7));
        assert_eq!(rows[0].write_p50_ns, 10);
        assert_eq!((rows[1].start_ns, rows[1].end_ns, rows[1].host_pages_read), (305, 385, 2));
        assert_eq!((rows[1].waf, rows[1].waf_so_far), (None, Some(1.5)));
        assert_eq!(rows[1].read_p99_ns, 30);
        let csv = rows_to_csv(rows);
        assert_eq!(csv.lines().count(), 3);
        assert!(csv.lines().nth(2).unwrap().contains(",,1.5000,"), "{csv}");
    }

    #[test]
    fn the_waf_of_an_interval_is_in_bytes_with_a_mapping_unit() {
        // 16 KiB units of four 4 KiB pages: 10 units written, 24 of their 40 pages filled by
        // the read-modify-write (16 host pages), 10 units programmed: 40 / 16 = 2.5.
        let filled =
            |programmed, filled| DeviceCounters { unit_pages_filled: filled, ..counters(programmed) };
        let mut t = Timeseries::new(100, SimTime(0), counters(0), 4);
        for _ in 0..10 {
            t.record(CommandKind::Write, 1, 10);
        }
        t.advance(SimTime(150), filled(10, 24), 3);
        // The second interval writes whole units: 4 units, 8 programmed (GC copied 4): 32 / 16.
        t.record(CommandKind::Write, 4, 10);
        t.finish(SimTime(180), filled(18, 24), 3);
        let rows = t.rows();
        assert_eq!(rows[0].waf, Some(2.5));
        assert_eq!(rows[1].waf, Some(2.0));
        assert_eq!(rows[1].waf_so_far, Some(72.0 / 32.0), "18 units over 14 × 4 − 24 pages");
    }

    /// The device end to end at a 16 KiB unit: 4 KiB random writes into a full drive, sampled;
    /// the series' last `waf_so_far` is the report's WAF, and each interval's WAF is in bytes
    /// (without the correction a 4 KiB write to a 16 KiB unit would show about 1, not about 4).
    #[test]
    fn a_sampled_run_at_a_16_kib_unit_agrees_with_the_report() {
        use crate::{Command, DeviceSection, FtlSection, Ssd, SsdConfig, TrimSection};
        use trimlab_sim::ByteSize;
        let device = DeviceSection {
            blocks_per_plane: Some(48),
            page_bytes: Some(4096),
            flash_page_bytes: Some(4096),
            pages_per_block: Some(64),
            channels: Some(2),
            chips_per_channel: Some(1),
            dies_per_chip: Some(1),
            planes_per_die: Some(1),
            multi_plane: Some(false),
            spare_factor: Some(0.3),
            write_buffer_bytes: Some(ByteSize(0)),
            ..Default::default()
        };
        let ftl = FtlSection { mapping_unit: Some(ByteSize(16 << 10)), ..Default::default() };
        let config = SsdConfig::resolve(&device, &ftl, &TrimSection::default()).unwrap();
        let capacity = config.logical_bytes();
        let mut ssd = Ssd::new(config);
        let mut now = SimTime::ZERO;
        let submit = |ssd: &mut Ssd, now: SimTime, command: Command| {
            ssd.submit(now, &command, None).unwrap_or_else(|e| panic!("{command:?}: {e}"));
        };
        for offset in (0..capacity).step_by(1 << 20) {
            let bytes = (capacity - offset).min(1 << 20);
            submit(&mut ssd, now, Command::Write { offset, bytes, tag: 1 });
        }
        ssd.start_measurement(now);
        ssd.enable_timeseries(1_000_000_000, now);
        // A fixed odd stride walks every 4 KiB page in a scattered order, deterministically.
        let pages = capacity / 4096;
        for i in 0..3 * pages {
            now = now.after(1_000_000);
            let offset = (i * 2_654_435_761) % pages * 4096;
            submit(&mut ssd, now, Command::Write { offset, bytes: 4096, tag: 2 + i });
        }
        ssd.finish_timeseries(now);
        let report = ssd.report(now);
        let rows = ssd.timeseries();
        assert!(rows.len() >= 3, "{} rows", rows.len());
        let last = rows.last().unwrap().waf_so_far.unwrap();
        assert!((last - report.waf).abs() < 1e-9 * report.waf, "series {last} vs report {}", report.waf);
        assert!(report.waf > 4.0, "a 4 KiB write to a 16 KiB unit programs 16 KiB at least: {}", report.waf);
        for r in rows {
            assert!(r.waf.unwrap() >= 4.0, "interval WAF in bytes: {r:?}");
        }
    }

    #[test]
    fn histogram_buckets_cover_every_sample_once() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 1 << 50, 3).unwrap();
        for v in [3u64, 5, 6, 7, 1000, 1023, 1024] {
            h.record(v).unwrap();
        }
        let mut out = String::new();
        histogram_csv_rows("write", &h, &mut out);
        let counts: Vec<u64> = out.lines().map(|l| l.split(',').nth(3).unwrap().parse().unwrap()).collect();
        assert_eq!(counts.iter().sum::<u64>(), 7);
        assert!(out.starts_with("write,2,4,1,"), "{out}");
        assert!(out.lines().last().unwrap().starts_with("write,1024,2048,1,1.000000"), "{out}");
    }
}
