//! `cluster-host` (implicit): 004's cluster host (`os-install`, `iozone`) on a bare SSD, made
//! from a `[workload]` of those kinds; its phases and the FTL's measures go to metrics.json's
//! `cluster_host`.

use super::shared;
use crate::phase::{Outcome, PhaseKind, PhaseRun, PhaseSpec, Report};
use crate::stack::Stack;
use serde_json::json;

impl PhaseKind {
    #[allow(non_upper_case_globals)]
    pub const ClusterHost: PhaseKind = PhaseKind("cluster-host");
}

pub const SPEC: PhaseSpec = PhaseSpec {
    kind: PhaseKind::ClusterHost,
    help: "004's cluster host (os-install, iozone) on a bare SSD, with the FTL's measures",
    block_keys: Some(&[]),
    fs_keys: None,
    required: None,
    implicit: true,
    report: Report::TopLevel,
    run,
};

fn run(stack: &mut Stack, p: &mut PhaseRun) -> Result<Outcome, String> {
    let b = shared::block(stack, p)?;
    let run = trimlab_workload::cluster_host::run(&mut b.ssd, p.base, &b.seeds).map_err(|e| e.to_string())?;
    b.now = run.end;
    let mut out = Outcome::default();
    out.metrics.insert("cluster_host".into(), json!(run));
    out.cluster_host = Some(run);
    Ok(out)
}
