//! `age`: on a bare SSD, fill then `writes` of uniform random writes; on a file system, fill
//! to 100 % then delete random files down to `utilization` (default 0.9, 001's aging).

use super::shared::{self, FILE_KEYS};
use crate::phase::{Outcome, PhaseKind, PhaseRun, PhaseSpec, Report};
use crate::stack::Stack;
use trimlab_workload::file::age;
use trimlab_workload::Precondition;

impl PhaseKind {
    #[allow(non_upper_case_globals)]
    pub const Age: PhaseKind = PhaseKind("age");
}

pub const SPEC: PhaseSpec = PhaseSpec {
    kind: PhaseKind::Age,
    help: "block: fill, then writes of uniform random writes; file system: fill to 100 %, then delete random files down to utilization (001's aging)",
    block_keys: Some(&["writes"]),
    fs_keys: Some(FILE_KEYS),
    required: None,
    implicit: false,
    report: Report::Entry,
    run,
};

fn run(stack: &mut Stack, p: &mut PhaseRun) -> Result<Outcome, String> {
    match stack {
        Stack::Block(b) => shared::precondition(b, p, Precondition::Steady)?,
        Stack::File(f) => {
            let (s, target) = (shared::shape(p.section, p.index), p.section.utilization.unwrap_or(0.9));
            let (fs, state) = f.parts();
            state
                .with_stream(&shared::stream(p.section), |rng, live| age(fs, rng, live, &s, target))
                .map_err(|e| e.to_string())?;
        }
    }
    Ok(Outcome::default())
}
