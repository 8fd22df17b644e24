//! A block trace replayed on a device: the trace read and parsed on its own thread
//! (`parsed_trace`), the trace knobs as text parsed once (`trace_options`), and the replay
//! itself, the drain of the write buffer, the time series and the consistency check
//! ([`replay_on`]), for `trimlab replay`, `advise` on a trace (once per discard choice) and
//! `bench`'s replay rows.

pub mod parsed_trace;
pub mod trace_options;

use crate::parsed_trace::ParsedTrace;
use crate::trace_options::Parsed;
use anyhow::{Context, Result};
use std::io::BufRead;
use trimlab_device::{DeviceReport, Ssd, SsdConfig};
use trimlab_scenario::Series;
use trimlab_trace::{ReplayOptions, ReplayStats, TraceFormat, TraceReader, TrimHandling};

/// blktrace's binary per-CPU files, read as one trace (the adapter finds and opens them).
pub use trimlab_trace::format::blktrace_bin;

/// A trace as the adapter opened it (a file, standard input), and the name errors give it.
pub struct TraceInput {
    pub reader: Box<dyn BufRead + Send>,
    pub name: String,
}

/// One replay's results.
pub struct Replayed {
    pub stats: ReplayStats,
    pub report: DeviceReport,
    pub skipped_bad: u64,
    pub format: TraceFormat,
    pub trims: TrimHandling,
    /// Pages still in the write buffer when the trace ended, programmed before the report.
    pub drained_pages: u64,
    pub series: Series,
    pub device: SsdConfig,
}

/// Above this share of latency spent waiting for the drive's queue, a replay is saturated.
pub const SATURATED_QUEUE_SHARE: f64 = 0.5;

/// The replay itself, on a resolved device with parsed knobs (advise runs it once per way of
/// handling the trace's discards).
pub fn replay_on(
    device: &SsdConfig,
    input: TraceInput,
    parsed: &Parsed,
    trims: TrimHandling,
    interval_ns: Option<u64>,
) -> Result<Replayed> {
    let reader = TraceReader::new(input.reader, &input.name, parsed.reader)?;
    let mut records = ParsedTrace::spawn(reader)?;
    let format = records.format();
    let mut ssd = Ssd::new(device.clone());
    if let Some(ns) = interval_ns {
        ssd.enable_timeseries(ns, trimlab_sim::SimTime::ZERO);
    }
    let options = ReplayOptions { pacing: parsed.pacing, lba: parsed.lba, trims };
    let outcome = trimlab_trace::replay(&mut ssd, records.by_ref(), options)?;
    // Pages still buffered at the end would count as host writes without their programs (a WAF
    // of 0.94 on a trace that rewrites nothing); a drive programs them once the host is idle.
    let (drained_pages, end) = ssd.drain_write_buffer(outcome.end);
    let series = Series::finish(&mut ssd, end);
    ssd.check().map_err(anyhow::Error::msg).context("consistency check after the replay")?;
    Ok(Replayed {
        stats: outcome.stats,
        report: ssd.report(end),
        skipped_bad: records.skipped_bad(),
        format,
        trims,
        drained_pages,
        series,
        device: device.clone(),
    })
}

impl Replayed {
    /// metrics.json of the replay of `trace` (its name as given).
    pub fn metrics(&self, trace: &str) -> serde_json::Value {
        serde_json::json!({
            "trimlab_version": env!("CARGO_PKG_VERSION"),
            "trace": trace,
            "format": self.format,
            "skipped_bad_lines": self.skipped_bad,
            "trims": self.trims,
            "device": self.device,
            "replay": self.stats,
            "buffered_pages_programmed_at_end": self.drained_pages,
            "report": self.report,
        })
    }

    /// A warning when the replay is saturated: more than half of the commands' latency was
    /// spent waiting for the drive's queue, so latencies measure the backlog of a drive that
    /// cannot keep up with the trace, not the drive (issue 25: write p99 1.04 s with no word).
    /// The half is an assumption: "dominates".
    pub fn saturation_warning(&self) -> Option<String> {
        let share = self.stats.queue_share();
        (share > SATURATED_QUEUE_SHARE).then(|| {
            format!(
                "saturated: {:.0} % of the commands' latency was spent waiting for a slot in the drive's queue (depth {}); the drive cannot keep up with the trace at this speed, so the latencies measure the backlog (try --speed below 1 or --closed-loop N)",
                share * 100.0,
                self.device.queue_depth
            )
        })
    }

    /// What `trimlab replay` prints: a note on drained pages, a saturation warning, then one
    /// line of totals.
    pub fn summary(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(warning) = self.saturation_warning() {
            lines.push(format!("warning: {warning}"));
        }
        if self.drained_pages > 0 {
            lines.push(format!(
                "{} pages were still in the write buffer when the trace ended; they were programmed before the totals below",
                self.drained_pages
            ));
        }
        let rep = &self.report;
        lines.push(format!(
            "{} requests ({}), WAF {}, erases {}, TRIM commands {} ({} bytes), write p99 {} us, sim time {:.3} s{}",
            self.stats.requests,
            self.format.name(),
            trimlab_scenario::waf_text(rep),
            rep.nand_blocks_erased,
            rep.trim.commands,
            rep.host.pages_trim_requested * self.device.geometry.page_bytes as u64,
            rep.latency.write.p99_ns / 1000,
            rep.sim_time_ns as f64 / 1e9,
            if self.skipped_bad > 0 { format!(", {} bad lines skipped", self.skipped_bad) } else { String::new() }
        ));
        lines
    }
}
