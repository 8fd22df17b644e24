//! `fill`: on a bare SSD, the workload region written once sequentially; on a file system,
//! files created up to `utilization` (default 1.0).

use super::shared::{self, FILE_KEYS};
use crate::phase::{Outcome, PhaseKind, PhaseRun, PhaseSpec, Report};
use crate::stack::Stack;
use trimlab_fs::FsError;
use trimlab_workload::file::fill;
use trimlab_workload::Precondition;

impl PhaseKind {
    #[allow(non_upper_case_globals)]
    pub const Fill: PhaseKind = PhaseKind("fill");
}

pub const SPEC: PhaseSpec = PhaseSpec {
    kind: PhaseKind::Fill,
    help: "block: write the workload region once sequentially; file system: create files up to utilization (default 1.0)",
    block_keys: Some(&[]),
    fs_keys: Some(FILE_KEYS),
    required: None,
    implicit: false,
    report: Report::Entry,
    run,
};

fn run(stack: &mut Stack, p: &mut PhaseRun) -> Result<Outcome, String> {
    match stack {
        Stack::Block(b) => shared::precondition(b, p, Precondition::Fill)?,
        Stack::File(f) => {
            let (s, target) = (shared::shape(p.section, p.index), p.section.utilization.unwrap_or(1.0));
            let (fs, state) = f.parts();
            state
                .with_stream(&shared::stream(p.section), |rng, live| -> Result<(), FsError> {
                    let names =
                        fill(fs, rng, &s.prefix, s.min_bytes, s.max_bytes, s.chunk_bytes, s.hole_bytes, target)?;
                    live.extend(names);
                    Ok(())
                })
                .map_err(|e| e.to_string())?;
        }
    }
    Ok(Outcome::default())
}
