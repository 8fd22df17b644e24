//! fio `write_iolog` version 2 (no timestamps).

use super::{FormatSpec, TraceFormat};
use crate::line;

impl TraceFormat {
    #[allow(non_upper_case_globals)]
    pub const FioV2: TraceFormat = TraceFormat("fio-v2");
}

pub(super) const SPEC: FormatSpec = FormatSpec {
    kind: TraceFormat::FioV2,
    layout: "\"FILE ACTION [OFFSET LENGTH]\" after the line \"fio version 2 iolog\"",
    detect: |l, _| l.starts_with("fio version 2 iolog"),
    parse: |l, o| line::fio(l, false, o.fio_time_unit),
    fast: Some(|bytes, unit| line::fio_fast(bytes, false, unit)),
};
