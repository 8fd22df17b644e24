//! One block-layer request of a trace, whatever format it came from. Its kind is the device's
//! [`CommandKind`] (a discard is a TRIM, blktrace's F and fio's sync are a FLUSH): a trace, the
//! workload generator and an NBD client speak one vocabulary of request kinds.

pub use trimlab_device::CommandKind;

/// A request at a byte offset. `time_ns` is relative to the trace's first request when the
/// format carries time; `None` when it does not (fio iolog v2), and replay then issues each
/// request when the previous one completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceRecord {
    pub time_ns: Option<u64>,
    pub op: CommandKind,
    pub offset: u64,
    pub bytes: u64,
}
