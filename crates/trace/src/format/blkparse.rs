//! `blkparse` default text output.

use super::{FormatSpec, TraceFormat};
use crate::line;

impl TraceFormat {
    #[allow(non_upper_case_globals)]
    pub const Blkparse: TraceFormat = TraceFormat("blkparse");
}

pub(super) const SPEC: FormatSpec = FormatSpec {
    kind: TraceFormat::Blkparse,
    layout:
        "\"MAJ,MIN CPU SEQ SECONDS.NANOS PID ACTION RWBS SECTOR + SECTORS [COMM]\" (blkparse default output)",
    detect: |_, tokens| tokens.len() >= 7 && line::is_dev(tokens[0]) && tokens[3].contains('.'),
    parse: |l, o| line::blkparse(l, o.blk_action),
    fast: None,
};
