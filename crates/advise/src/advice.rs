//! The advice both forms give: a report (tables, plots, the recommendation first) and
//! warnings, and the units and period shares they share.

use trimlab_report::ExperimentReport;

/// The advice: a report (tables, plots, notes with the recommendation first) and warnings for
/// the terminal and the page: an fstrim period that never fires within the workload, a trace
/// the drive cannot keep up with.
pub struct Advice {
    pub report: ExperimentReport,
    pub warnings: Vec<String>,
}

pub(crate) fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

pub(crate) fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// `1/share` of a run or trace of `span_ns`, in whole milliseconds (at least 1 ms): the fstrim
/// periods both advice forms suggest (a tenth and a third), so a period fires a few times.
pub(crate) fn span_share_ns(span_ns: u64, share: u64) -> u64 {
    (span_ns / share / 1_000_000).max(1) * 1_000_000
}
