//! One block-layer request of a trace, whatever format it came from.

use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TraceOp {
    Read,
    Write,
    /// Discard / TRIM / deallocate.
    Trim,
    /// A cache flush (blktrace's F with no data, fio's sync).
    Flush,
}

/// A request at a byte offset. `time_ns` is relative to the trace's first request when the
/// format carries time; `None` when it does not (fio iolog v2), and replay then issues each
/// request when the previous one completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceRecord {
    pub time_ns: Option<u64>,
    pub op: TraceOp,
    pub offset: u64,
    pub bytes: u64,
}
