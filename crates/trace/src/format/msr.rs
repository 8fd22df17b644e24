//! MSR Cambridge CSV (Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime).

use super::{FormatSpec, TraceFormat};
use crate::line;

impl TraceFormat {
    #[allow(non_upper_case_globals)]
    pub const Msr: TraceFormat = TraceFormat("msr");
}

pub(super) const SPEC: FormatSpec = FormatSpec {
    kind: TraceFormat::Msr,
    layout: "\"Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\" (timestamp in 100 ns units, Type Read or Write)",
    detect: |l, _| l.split(',').count() == 7,
    parse: |l, _| line::msr(l),
    fast: None,
};
