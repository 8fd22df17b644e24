//! What a run measures, and the report it writes: host traffic, NAND traffic, WAF, GC and TRIM
//! cost, latency percentiles per command type and the wear distribution.

use crate::command::CommandKind;
use hdrhistogram::Histogram;
use serde::Serialize;
use std::borrow::Cow;
use trimlab_ftl::FtlStats;
/// The report's FTL section names these; callers read them here, not from the FTL crate.
pub use trimlab_ftl::{FtlDetail, FtlMeasures};
use trimlab_nand::FlashCounters;
use trimlab_trim::{TrimEngine, TrimStats};

/// Host-side counters, kept by the device as commands arrive.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct HostCounters {
    pub read_commands: u64,
    pub write_commands: u64,
    pub trim_commands: u64,
    pub flush_commands: u64,
    pub pages_read: u64,
    pub pages_written: u64,
    pub pages_trim_requested: u64,
    /// Reads answered with zeros because the page was never written or was trimmed.
    pub pages_read_unmapped: u64,
    pub pages_read_from_buffer: u64,
    /// Writes that replaced a page still dirty in the write buffer (no extra program).
    pub pages_coalesced_in_buffer: u64,
    /// Sub-page writes that had to read the old page first (with `[ftl] mapping_unit`, sub-unit
    /// writes of a mapped unit: one NAND read of the unit each, in `nand_pages_read`).
    pub read_modify_writes: u64,
    /// With `[ftl] mapping_unit`: device pages (`[device] page_bytes`) of the units the host
    /// wrote that its writes did not cover, rewritten with the unit (the read-modify-write's
    /// extra programs). Always 0 without a unit, and then not serialized.
    #[serde(skip_serializing_if = "is_zero")]
    pub unit_pages_filled: u64,
    /// With `[ftl] mapping_unit`: TRIM bytes in mapping units the ranges covered only in part,
    /// left mapped (reported in [`TrimReport::trim_bytes_ineffective`]).
    #[serde(skip)]
    pub trim_bytes_ineffective: u64,
    /// With `[ftl] mapping_unit`: bytes of the TRIM ranges received, the whole of which
    /// `trim_bytes_ineffective` is a part (counted only with a unit, as that part is; not
    /// serialized at zero, so outputs without a unit keep their bytes).
    #[serde(skip_serializing_if = "is_zero")]
    pub trim_bytes_with_unit: u64,
}

/// Counters that only a non-default option moves are left out of the JSON at zero, so the
/// outputs of configs without the option keep their bytes.
pub(crate) fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[doc(hidden)]
pub struct Latencies {
    histograms: [Histogram<u64>; 4],
    /// Per kind, the latencies not yet in `histograms`: how many commands in a row of that
    /// kind took a latency the histogram cannot tell from the run's first one (the same bucket:
    /// hdrhistogram keeps counts per bucket, and its min, max, mean and percentiles are read
    /// per bucket too, so n records of equivalent values and one record of n counts of the
    /// first give the same histogram). In a closed loop most writes take exactly as long as the
    /// one before (the firmware and link times); in a trace replayed faster than the drive
    /// serves it, latency is mostly queue wait and drifts by microseconds from one command to
    /// the next while a bucket spans milliseconds. Recording costs a subtraction and a compare
    /// there, where the histogram pays its bucket arithmetic and three stores per command (4 %
    /// of a replay's simulation thread, issue 27). A run per kind, so a replay's TRIMs do not
    /// break its writes' runs.
    runs: [LatencyRun; 4],
    /// Where the phase now running started (`None`: at the start of the measurement). A copy
    /// taken at each phase boundary, so the hot path records nothing twice (issue 43: a run's
    /// headline latencies are its workload's, not mkfs's).
    phase_start: Option<Box<LatencyHistograms>>,
    /// The phases [`Latencies::end_phase`] was told are the workload's, summed.
    workload: Option<Box<LatencyHistograms>>,
}

#[derive(Clone, Copy)]
struct LatencyRun {
    /// The run's first latency, what is recorded for all of it.
    latency_ns: u64,
    /// The bucket of `latency_ns`: a latency belongs to the run when `latency - low <= span`.
    low: u64,
    span: u64,
    count: u64,
}

impl LatencyRun {
    /// Matches nothing but `u64::MAX`, which it would record as itself.
    const EMPTY: LatencyRun = LatencyRun { latency_ns: u64::MAX, low: u64::MAX, span: 0, count: 0 };
}

/// Latencies in nanoseconds, one count per command.
pub type LatencyHistogram = Histogram<u64>;

/// One [`LatencyHistogram`] per command kind, in [`CommandKind::ALL`]'s order.
pub type LatencyHistograms = [LatencyHistogram; 4];

/// A histogram of latencies in nanoseconds: 1 ns .. ~13 simulated days at 3 significant
/// figures; longer latencies saturate.
pub fn latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 1 << 50, 3).expect("valid histogram bounds and precision")
}

impl Default for Latencies {
    fn default() -> Self {
        Latencies::new()
    }
}

impl Latencies {
    pub fn new() -> Self {
        let make = latency_histogram;
        Latencies {
            histograms: [make(), make(), make(), make()],
            runs: [LatencyRun::EMPTY; 4],
            phase_start: None,
            workload: None,
        }
    }

    #[inline]
    pub fn record(&mut self, kind: CommandKind, latency_ns: u64) {
        let run = &mut self.runs[kind as usize];
        if latency_ns.wrapping_sub(run.low) <= run.span {
            run.count += 1;
            return;
        }
        self.start_run(kind, latency_ns);
    }

    #[inline(never)]
    fn start_run(&mut self, kind: CommandKind, latency_ns: u64) {
        let h = &mut self.histograms[kind as usize];
        let run = &mut self.runs[kind as usize];
        if run.count > 0 {
            h.saturating_record_n(run.latency_ns, run.count);
        }
        // Past the upper bound the histogram clamps; such a run holds only its exact value.
        let (low, span) = if latency_ns <= h.high() {
            let low = h.lowest_equivalent(latency_ns);
            (low, h.highest_equivalent(latency_ns) - low)
        } else {
            (latency_ns, 0)
        };
        *run = LatencyRun { latency_ns, low, span, count: 1 };
    }

    /// `kind`'s histogram with its pending run in it (a copy when there is one).
    pub fn histogram(&self, kind: CommandKind) -> Cow<'_, Histogram<u64>> {
        let recorded = &self.histograms[kind as usize];
        let run = &self.runs[kind as usize];
        if run.count == 0 {
            return Cow::Borrowed(recorded);
        }
        let mut h = recorded.clone();
        h.saturating_record_n(run.latency_ns, run.count);
        Cow::Owned(h)
    }

    pub fn summary(&self, kind: CommandKind) -> LatencySummary {
        LatencySummary::of(&self.histogram(kind))
    }

    /// Ends a phase here: the latencies of the commands since the last boundary (or the start
    /// of the measurement), exact (histogram differences, not samples), each kind summarized;
    /// `workload` adds them to [`Latencies::workload`]. A kind without new commands costs a
    /// compare (a run of many short rounds ends a phase per round).
    pub(crate) fn end_phase(&mut self, workload: bool) -> LatencyReport {
        let mut start = self
            .phase_start
            .take()
            .unwrap_or_else(|| Box::new(CommandKind::ALL.map(|_| latency_histogram())));
        let mut sums = self.workload.take();
        let mut summaries = [LatencySummary::default(); 4];
        for kind in CommandKind::ALL {
            let i = kind as usize;
            let now = self.histogram(kind);
            if now.len() == start[i].len() {
                continue;
            }
            let now = now.into_owned();
            let mut phase = now.clone();
            if let Err(e) = phase.subtract(&start[i]) {
                unreachable!(
                    "latencies only grow within a measurement ({e}: {} < {})",
                    now.len(),
                    start[i].len()
                );
            }
            summaries[i] = LatencySummary::of(&phase);
            if workload {
                let sum = sums.get_or_insert_with(|| Box::new(CommandKind::ALL.map(|_| latency_histogram())));
                if let Err(e) = sum[i].add(&phase) {
                    unreachable!("histograms of the same bounds add ({e})");
                }
            }
            start[i] = now;
        }
        if workload && sums.is_none() {
            // A workload phase without commands still counts: the figure exists, all zero.
            sums = Some(Box::new(CommandKind::ALL.map(|_| latency_histogram())));
        }
        self.phase_start = Some(start);
        self.workload = sums;
        let [read, write, trim, flush] = summaries;
        LatencyReport { read, write, trim, flush }
    }

    /// The summed latencies of the phases [`Latencies::end_phase`] was told are the workload's
    /// (`None` before the first).
    pub(crate) fn workload(&self) -> Option<LatencyReport> {
        self.workload.as_deref().map(LatencyReport::of)
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LatencySummary {
    pub count: u64,
    pub mean_ns: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
}

impl LatencySummary {
    /// Count, mean and percentiles of a histogram of nanoseconds (all 0 when it is empty).
    pub fn of(h: &Histogram<u64>) -> LatencySummary {
        if h.is_empty() {
            return LatencySummary::default();
        }
        LatencySummary {
            count: h.len(),
            mean_ns: h.mean().round() as u64,
            p50_ns: h.value_at_quantile(0.50),
            p99_ns: h.value_at_quantile(0.99),
            p999_ns: h.value_at_quantile(0.999),
            max_ns: h.max(),
        }
    }
}

/// The erase counts of the drive's blocks at the end: their spread, percentiles (nearest
/// rank) and a histogram of [`ERASE_HISTOGRAM_BINS`] equal-width bins.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct EraseSummary {
    pub min: u32,
    pub mean: f64,
    pub max: u32,
    pub stddev: f64,
    pub p50: u32,
    pub p90: u32,
    pub p99: u32,
    /// max / mean: 1 when wear is even (0 before any erase).
    pub max_over_mean: f64,
    pub histogram: EraseHistogram,
}

/// Blocks per erase-count bin: bin i holds the blocks erased `erase_count_min + i *
/// bin_erases` to `erase_count_min + (i + 1) * bin_erases - 1` times. Always
/// [`ERASE_HISTOGRAM_BINS`] bins (the last ones empty when the spread is small), so that a
/// sweep's rows flatten to the same columns.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EraseHistogram {
    pub erase_count_min: u32,
    pub bin_erases: u32,
    pub blocks: Vec<u64>,
}

impl Default for EraseHistogram {
    fn default() -> Self {
        EraseHistogram { erase_count_min: 0, bin_erases: 1, blocks: vec![0; ERASE_HISTOGRAM_BINS as usize] }
    }
}

/// Bins of the erase-count histogram: enough to show a hot/cold split, few enough to read.
pub const ERASE_HISTOGRAM_BINS: u32 = 16;

impl EraseSummary {
    /// O(blocks log blocks): a report's, not a command's, cost.
    pub fn of(counts: &[u32]) -> Self {
        if counts.is_empty() {
            return EraseSummary::default();
        }
        let n = counts.len() as f64;
        let mean = counts.iter().map(|&c| c as f64).sum::<f64>() / n;
        let var = counts.iter().map(|&c| (c as f64 - mean).powi(2)).sum::<f64>() / n;
        let mut sorted = counts.to_vec();
        sorted.sort_unstable();
        let (min, max) = (sorted[0], sorted[sorted.len() - 1]);
        // Nearest rank: the smallest count with at least q of the blocks at or below it.
        let rank = |q: f64| sorted[((q * n).ceil() as usize).clamp(1, sorted.len()) - 1];
        let bin_erases = (max - min) / ERASE_HISTOGRAM_BINS + 1;
        let mut histogram = EraseHistogram { erase_count_min: min, bin_erases, ..EraseHistogram::default() };
        for &c in &sorted {
            histogram.blocks[((c - min) / bin_erases) as usize] += 1;
        }
        EraseSummary {
            min,
            mean,
            max,
            stddev: var.sqrt(),
            p50: rank(0.50),
            p90: rank(0.90),
            p99: rank(0.99),
            max_over_mean: if mean > 0.0 { max as f64 / mean } else { 0.0 },
            histogram,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct GcReport {
    pub invocations: u64,
    pub victims: u64,
    pub pages_copied: u64,
    pub busy_ns: u64,
    pub stalls: u64,
    /// Of the victims and copies above, those of idle-time GC.
    pub idle_victims: u64,
    pub idle_pages_copied: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TrimReport {
    pub engine: String,
    pub commands: u64,
    pub ranges: u64,
    pub pages_requested: u64,
    pub pages_unmapped: u64,
    pub buffer_pages_dropped: u64,
    /// Foreground controller time per step of 002.
    pub foreground_step1_ns: u64,
    pub foreground_step2_ns: u64,
    pub foreground_step3_ns: u64,
    pub foreground_total_ns: u64,
    /// The engines' own figures (`trimlab_trim::report_figures`: the running engine's, and
    /// those every report carries, 0 where the engine does not keep them), serialized as keys
    /// of this section in that order. Read them with [`TrimReport::figure`].
    pub figures: Vec<(&'static str, u64)>,
    /// With `[ftl] mapping_unit`: bytes of TRIM ranges in units they covered only in part,
    /// which stay mapped (a TRIM deallocates whole units only). Not serialized at zero.
    pub trim_bytes_ineffective: u64,
}

impl TrimReport {
    /// The engine figure `key` (0 when the running engine does not keep it). A key no
    /// registered engine reports is a bug in the caller.
    pub fn figure(&self, key: &str) -> u64 {
        match self.figures.iter().find(|(k, _)| *k == key) {
            Some((_, value)) => *value,
            None => unreachable!("no TRIM engine reports {key:?}; the figures are {:?}", self.figures),
        }
    }
}

impl Default for TrimReport {
    /// Every figure present, at 0: the report of a run without an SSD has the same keys.
    fn default() -> Self {
        TrimReport {
            engine: String::new(),
            commands: 0,
            ranges: 0,
            pages_requested: 0,
            pages_unmapped: 0,
            buffer_pages_dropped: 0,
            foreground_step1_ns: 0,
            foreground_step2_ns: 0,
            foreground_step3_ns: 0,
            foreground_total_ns: 0,
            figures: trimlab_trim::report_figures(None).iter().map(|f| (f.key, 0)).collect(),
            trim_bytes_ineffective: 0,
        }
    }
}

impl Serialize for TrimReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut out = s.serialize_struct("TrimReport", 11 + self.figures.len())?;
        out.serialize_field("engine", &self.engine)?;
        out.serialize_field("commands", &self.commands)?;
        out.serialize_field("ranges", &self.ranges)?;
        out.serialize_field("pages_requested", &self.pages_requested)?;
        out.serialize_field("pages_unmapped", &self.pages_unmapped)?;
        out.serialize_field("buffer_pages_dropped", &self.buffer_pages_dropped)?;
        out.serialize_field("foreground_step1_ns", &self.foreground_step1_ns)?;
        out.serialize_field("foreground_step2_ns", &self.foreground_step2_ns)?;
        out.serialize_field("foreground_step3_ns", &self.foreground_step3_ns)?;
        out.serialize_field("foreground_total_ns", &self.foreground_total_ns)?;
        for (key, value) in &self.figures {
            out.serialize_field(key, value)?;
        }
        if is_zero(&self.trim_bytes_ineffective) {
            out.skip_field("trim_bytes_ineffective")?;
        } else {
            out.serialize_field("trim_bytes_ineffective", &self.trim_bytes_ineffective)?;
        }
        out.end()
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LatencyReport {
    pub read: LatencySummary,
    pub write: LatencySummary,
    pub trim: LatencySummary,
    pub flush: LatencySummary,
}

impl LatencyReport {
    /// The summaries of one histogram per kind, in [`CommandKind::ALL`]'s order.
    pub fn of(h: &LatencyHistograms) -> LatencyReport {
        let [read, write, trim, flush] = CommandKind::ALL.map(|kind| LatencySummary::of(&h[kind as usize]));
        LatencyReport { read, write, trim, flush }
    }
}

/// Everything one measured run reports. Counters cover the measured phase only (after the
/// precondition); erase counts and valid pages describe the device at the end.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct DeviceReport {
    pub sim_time_ns: u64,
    pub host: HostCounters,
    pub nand_pages_programmed: u64,
    pub nand_pages_read: u64,
    pub nand_blocks_erased: u64,
    /// Flash pages sensed (one tR each) and programmed, and tPROGs (a multi-plane program
    /// programs a flash page on several planes with one): NAND operations, where the
    /// `nand_pages_*` counts are pages (mapping units).
    pub nand_flash_pages_read: u64,
    pub nand_flash_pages_programmed: u64,
    pub nand_program_operations: u64,
    /// Empty slots programmed to pad partly filled host flash pages at a FLUSH (in
    /// `nand_pages_programmed` too: they use flash as data does).
    pub nand_pages_padded: u64,
    /// NAND pages programmed / host pages written (GC copies included, buffer coalescing saves).
    pub waf: f64,
    pub gc: GcReport,
    pub trim: TrimReport,
    pub latency: LatencyReport,
    pub erase_count: EraseSummary,
    /// Static wear levelling over the measured span (`[ftl] static_wl`; absent when off).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wear_levelling: Option<trimlab_ftl::WearLevellingStats>,
    /// The lifetime projection from the measured span (absent without a rated P/E count or
    /// without host writes; docs/lifetime.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lifetime: Option<crate::lifetime::Lifetime>,
    pub valid_pages: u64,
    /// (physical - logical) / physical.
    pub spare_factor: f64,
    /// The spare factor garbage collection effectively works with: erased pages parked in each
    /// plane's free-block reserve (about `gc_free_blocks - 1/2` blocks) and the unwritten half
    /// of its two open blocks hold no data, so they are not spare (see trimlab-analytic's
    /// `spare_factor_seen_by_gc`). Small devices with many planes lose a visible share here.
    pub spare_factor_seen_by_gc: f64,
    pub logical_pages: u64,
    pub physical_pages: u64,
    pub host_pages_written_per_sim_s: f64,
    pub ftl: FtlReport,
}

impl DeviceReport {
    /// The share of the logical capacity the host wrote, when it wrote something and GC never
    /// ran: a run in which TRIM cannot have changed WAF or wear (`run`'s and advise's warning).
    pub fn written_share_without_gc(&self) -> Option<f64> {
        let (written, capacity) = (self.host.pages_written, self.logical_pages);
        (written > 0 && self.gc.victims == 0).then(|| written as f64 / capacity.max(1) as f64)
    }
}

/// Which FTL ran and what only that kind counts (since the device was built, not since the
/// measurement started: 004's measures are whole-run).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FtlReport {
    pub kind: String,
    pub measures: FtlMeasures,
    /// `None` only in the empty report of a run without an SSD (a thin volume's): `null`.
    pub detail: Option<FtlDetail>,
}

/// Counter snapshots taken when measurement starts, subtracted at the end.
#[derive(Clone, Default)]
pub(crate) struct Baseline {
    pub flash: FlashCounters,
    pub ftl: FtlStats,
    pub trim: TrimStats,
    pub trim_figures: Vec<(&'static str, u64)>,
    pub wear: crate::lifetime::Wear,
    pub wear_levelling: Option<trimlab_ftl::WearLevellingStats>,
}

pub(crate) fn trim_report(engine: &dyn TrimEngine, base: &Baseline) -> TrimReport {
    let (now, base_stats) = (engine.stats(), &base.trim);
    let steps = now.foreground.since(&base_stats.foreground);
    let own = engine.figures();
    let value =
        |figures: &[(&str, u64)], key: &str| figures.iter().find(|(k, _)| *k == key).map_or(0, |f| f.1);
    let figures = trimlab_trim::report_figures(trimlab_trim::EngineKind::parse(engine.name()).ok())
        .iter()
        .map(|f| {
            let now = value(&own, f.key);
            (f.key, if f.gauge { now } else { now - value(&base.trim_figures, f.key) })
        })
        .collect();
    TrimReport {
        engine: engine.name().to_string(),
        commands: now.commands - base_stats.commands,
        ranges: now.ranges - base_stats.ranges,
        pages_requested: now.pages_requested - base_stats.pages_requested,
        pages_unmapped: now.pages_unmapped - base_stats.pages_unmapped,
        buffer_pages_dropped: now.buffer_pages_dropped - base_stats.buffer_pages_dropped,
        foreground_step1_ns: steps.step1_ns,
        foreground_step2_ns: steps.step2_ns,
        foreground_step3_ns: steps.step3_ns,
        foreground_total_ns: steps.total_ns(),
        figures,
        trim_bytes_ineffective: 0,
    }
}

pub(crate) fn gc_report(now: &FtlStats, base: &FtlStats) -> GcReport {
    GcReport {
        invocations: now.gc_invocations - base.gc_invocations,
        victims: now.gc_victims - base.gc_victims,
        pages_copied: now.gc_pages_copied - base.gc_pages_copied,
        busy_ns: now.gc_busy_ns - base.gc_busy_ns,
        stalls: now.gc_stalls - base.gc_stalls,
        idle_victims: now.idle_gc_victims - base.idle_gc_victims,
        idle_pages_copied: now.idle_gc_pages_copied - base.idle_gc_pages_copied,
    }
}
