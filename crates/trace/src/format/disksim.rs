//! DiskSim ASCII: arrival (ms, fractional), device, block (sector), sectors, flags (1 read, 0 write).

use super::{FormatSpec, TraceFormat};
use crate::line;

impl TraceFormat {
    #[allow(non_upper_case_globals)]
    pub const Disksim: TraceFormat = TraceFormat("disksim");
}

pub(super) const SPEC: FormatSpec = FormatSpec {
    kind: TraceFormat::Disksim,
    layout: "\"ARRIVAL_MS DEVICE SECTOR SECTORS FLAGS\" (FLAGS bit 0: 1 = read, 0 = write)",
    detect: |_, tokens| super::five_numbers(tokens) && tokens[0].contains('.'),
    parse: |l, _| line::sim_ascii(l, true),
    fast: None,
};
