//! `utilization`: on a file system, files created while below `utilization`, else deleted
//! down to it.

use super::shared::{self, FILE_KEYS};
use crate::phase::{Outcome, PhaseKind, PhaseRun, PhaseSpec, Report};
use crate::stack::Stack;
use trimlab_workload::file::set_utilization;

impl PhaseKind {
    #[allow(non_upper_case_globals)]
    pub const Utilization: PhaseKind = PhaseKind("utilization");
}

pub const SPEC: PhaseSpec = PhaseSpec {
    kind: PhaseKind::Utilization,
    help: "file system: create files while below utilization, else delete down to it",
    block_keys: None,
    fs_keys: Some(FILE_KEYS),
    required: Some("utilization"),
    implicit: false,
    report: Report::Entry,
    run,
};

fn run(stack: &mut Stack, p: &mut PhaseRun) -> Result<Outcome, String> {
    let (s, target) = (shared::shape(p.section, p.index), p.section.utilization.unwrap_or(0.0));
    let (fs, state) = shared::file(stack, p)?.parts();
    state
        .with_stream(&shared::stream(p.section), |rng, live| set_utilization(fs, rng, live, &s, target))
        .map_err(|e| e.to_string())?;
    Ok(Outcome::default())
}
