//! The ftrace `blk` tracer, or the `block:block_*` tracepoints, from /sys/kernel/tracing/trace.

use super::{FormatSpec, TraceFormat};
use crate::line;

impl TraceFormat {
    #[allow(non_upper_case_globals)]
    pub const FtraceBlk: TraceFormat = TraceFormat("ftrace-blk");
}

pub(super) const SPEC: FormatSpec = FormatSpec {
    kind: TraceFormat::FtraceBlk,
    layout: "\"TASK-PID [CPU] FLAGS SECONDS.MICROS: MAJ,MIN ACTION RWBS SECTOR + SECTORS [COMM]\" (blk tracer) or \"...: block_rq_issue: MAJ,MIN RWBS BYTES () SECTOR + SECTORS [COMM]\" (tracepoints)",
    detect: |l, tokens| l.contains(": ") && tokens.iter().any(|t| t.starts_with('[') && t.ends_with(']')),
    parse: |l, o| line::ftrace(l, o.blk_action),
    fast: None,
};
