//! `delete`: on a file system, random live files deleted down to `utilization`.

use super::shared;
use crate::phase::{Outcome, PhaseKind, PhaseRun, PhaseSpec, Report};
use crate::stack::Stack;
use trimlab_fs::FsError;
use trimlab_workload::file::delete_down_to;

impl PhaseKind {
    #[allow(non_upper_case_globals)]
    pub const Delete: PhaseKind = PhaseKind("delete");
}

pub const SPEC: PhaseSpec = PhaseSpec {
    kind: PhaseKind::Delete,
    help: "file system: delete random live files down to utilization",
    block_keys: None,
    fs_keys: Some(&["utilization", "stream"]),
    required: Some("utilization"),
    implicit: false,
    report: Report::Entry,
    run,
};

fn run(stack: &mut Stack, p: &mut PhaseRun) -> Result<Outcome, String> {
    let target = p.section.utilization.unwrap_or(0.0);
    let (fs, state) = shared::file(stack, p)?.parts();
    state
        .with_stream(&shared::stream(p.section), |rng, live| -> Result<(), FsError> {
            *live = delete_down_to(fs, rng, std::mem::take(live), target)?;
            Ok(())
        })
        .map_err(|e| e.to_string())?;
    Ok(Outcome::default())
}
