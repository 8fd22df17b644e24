//! `measure`: the device report covers from here (on a file system, background work finishes
//! first).

use crate::phase::{Outcome, PhaseKind, PhaseRun, PhaseSpec, Report};
use crate::stack::{Device, Stack};

impl PhaseKind {
    #[allow(non_upper_case_globals)]
    pub const Measure: PhaseKind = PhaseKind("measure");
}

pub const SPEC: PhaseSpec = PhaseSpec {
    kind: PhaseKind::Measure,
    help: "the device report covers from here (background work finishes first)",
    block_keys: Some(&[]),
    fs_keys: Some(&["calls"]),
    required: None,
    implicit: false,
    report: Report::Entry,
    run,
};

fn run(stack: &mut Stack, p: &mut PhaseRun) -> Result<Outcome, String> {
    match stack {
        Stack::Block(b) => {
            b.ssd.start_measurement(b.now);
            b.counters_restarted = true;
        }
        Stack::File(f) => {
            let fs = f.fs_mut();
            fs.quiesce();
            if p.section.calls == Some(true) {
                fs.restart_call_latencies();
            }
            let now = fs.now();
            if let Device::Ssd(ssd) = &mut fs.device_mut().device {
                ssd.start_measurement(now);
            }
        }
    }
    Ok(Outcome::default())
}
