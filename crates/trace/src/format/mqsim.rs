//! MQSim ASCII: arrival (ns), device, start sector, sectors, type (1 read, 0 write).

use super::{FormatSpec, TraceFormat};
use crate::line;

impl TraceFormat {
    #[allow(non_upper_case_globals)]
    pub const Mqsim: TraceFormat = TraceFormat("mqsim");
}

pub(super) const SPEC: FormatSpec = FormatSpec {
    kind: TraceFormat::Mqsim,
    layout: "\"ARRIVAL_NS DEVICE SECTOR SECTORS TYPE\" (TYPE 1 = read, 0 = write)",
    detect: |_, tokens| super::five_numbers(tokens) && !tokens[0].contains('.'),
    parse: |l, _| line::sim_ascii(l, false),
    fast: None,
};
