//! fio `write_iolog` version 3 (timestamps).

use super::{FormatSpec, TraceFormat};
use crate::line;

impl TraceFormat {
    #[allow(non_upper_case_globals)]
    pub const FioV3: TraceFormat = TraceFormat("fio-v3");
}

pub(super) const SPEC: FormatSpec = FormatSpec {
    kind: TraceFormat::FioV3,
    layout: "\"TIMESTAMP FILE ACTION [OFFSET LENGTH]\" after the line \"fio version 3 iolog\" (timestamp in microseconds)",
    detect: |l, _| l.starts_with("fio version 3 iolog"),
    parse: |l, o| line::fio(l, true, o.fio_time_unit),
    fast: Some(|bytes, unit| line::fio_fast(bytes, true, unit)),
};
