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
#[doc(hidden)]
pub struct DeviceCounters {
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
#[doc(hidden)]
pub struct Timeseries {
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
    pub fn new(interval_ns: u64, start: SimTime, counters: DeviceCounters, pages_per_unit: u64) -> Self {
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
    pub fn due(&self, arrival: SimTime) -> bool {
        arrival.ns() >= self.open.end_ns
    }

    /// Closes the open interval with the counters now and opens the one holding `arrival`.
    pub fn advance(&mut self, arrival: SimTime, now: DeviceCounters, free_blocks: u64) {
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
    pub fn record(&mut self, kind: CommandKind, pages: u64, latency_ns: u64) {
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
    pub fn finish(&mut self, end: SimTime, now: DeviceCounters, free_blocks: u64) {
        let start = end.ns().max(self.open.start_ns);
        self.open.end_ns = self.open.end_ns.min(start);
        self.close(now, free_blocks);
        // A later finish (a caller reporting twice) must not write the same interval again.
        self.open = Row { start_ns: start, end_ns: start + self.interval_ns, ..Row::default() };
        self.at_open = now;
    }

    pub fn rows(&self) -> &[Row] {
        &self.rows
    }
}
