//! `idle`: nothing submitted for `duration` (background threads, the TRIM engine's idle work
//! and idle-time GC run, and are done by the phase's end).

use crate::phase::{Outcome, PhaseKind, PhaseRun, PhaseSpec, Report};
use crate::stack::Stack;

impl PhaseKind {
    #[allow(non_upper_case_globals)]
    pub const Idle: PhaseKind = PhaseKind("idle");
}

pub const SPEC: PhaseSpec = PhaseSpec {
    kind: PhaseKind::Idle,
    help: "nothing is submitted for duration (background work and idle-time GC run)",
    block_keys: Some(&["duration"]),
    fs_keys: Some(&["duration"]),
    required: Some("duration"),
    implicit: false,
    report: Report::Entry,
    run,
};

fn run(stack: &mut Stack, p: &mut PhaseRun) -> Result<Outcome, String> {
    let ns = p.section.duration.map_or(0, |d| d.0);
    match stack {
        Stack::Block(b) => {
            let end = b.now.after(ns);
            b.ssd.idle_until(end);
            b.now = end;
        }
        Stack::File(f) => {
            let fs = f.fs_mut();
            fs.idle_until(fs.now().after(ns));
        }
    }
    Ok(Outcome::default())
}
