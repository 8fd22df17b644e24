//! `advise`: the operator's question of 003 (online discard, periodic fstrim, or none?)
//! answered for one workload by running it once per way of handling discards on the same
//! device, then a recommendation with its reason. Two inputs: a block trace, which already
//! carries the kernel's discards (`trace`), and a file-level workload of a config, run through
//! the file-system model under each host TRIM policy (`file`, its rule in `file_rule`).

pub mod file;
pub mod file_rule;
pub mod mapping_units;
pub mod trace;

pub use file::advise_file;
pub use trace::advise;

use trimlab_report::ExperimentReport;

/// The advice: a report (tables, plots, notes with the recommendation first) and warnings for
/// the terminal and the page: an fstrim period that never fires within the workload, a trace
/// the drive cannot keep up with.
pub struct Advice {
    pub report: ExperimentReport,
    pub warnings: Vec<String>,
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// `1/share` of a run or trace of `span_ns`, in whole milliseconds (at least 1 ms): the fstrim
/// periods both advice forms suggest (a tenth and a third), so a period fires a few times.
fn span_share_ns(span_ns: u64, share: u64) -> u64 {
    (span_ns / share / 1_000_000).max(1) * 1_000_000
}
