//! `block-workload` (implicit): a run without `[[phase]]` on a bare SSD is its `[workload]`
//! alone: the precondition, measurement from its end, and the measured workload, reported at
//! metrics.json's top level (`precondition_end_ns`, `ops`).

use super::shared;
use crate::phase::{Outcome, PhaseKind, PhaseRun, PhaseSpec, Report};
use crate::stack::Stack;
use serde_json::json;

impl PhaseKind {
    #[allow(non_upper_case_globals)]
    pub const BlockWorkload: PhaseKind = PhaseKind("block-workload");
}

pub const SPEC: PhaseSpec = PhaseSpec {
    kind: PhaseKind::BlockWorkload,
    help: "a run's [workload] alone on a bare SSD: precondition, measurement, the measured workload",
    block_keys: Some(&[]),
    fs_keys: None,
    required: None,
    implicit: true,
    report: Report::TopLevel,
    run,
};

fn run(stack: &mut Stack, p: &mut PhaseRun) -> Result<Outcome, String> {
    let b = shared::block(stack, p)?;
    let outcome = trimlab_workload::run_workload(&mut b.ssd, p.base, &b.seeds, p.progress)
        .map_err(|e| format!("the workload sent a command the device refused: {e}"))?;
    b.now = outcome.measured.end;
    let mut out = Outcome::default();
    out.metrics.insert("precondition_end_ns".into(), json!(outcome.precondition_end.ns()));
    out.metrics.insert("ops".into(), json!(outcome.measured.ops));
    Ok(out)
}
