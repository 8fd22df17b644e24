//! `sync`: on a file system, sync(2): every dirty page, then a journal commit, waited for.

use super::shared;
use crate::phase::{Outcome, PhaseKind, PhaseRun, PhaseSpec, Report};
use crate::stack::Stack;

impl PhaseKind {
    #[allow(non_upper_case_globals)]
    pub const Sync: PhaseKind = PhaseKind("sync");
}

pub const SPEC: PhaseSpec = PhaseSpec {
    kind: PhaseKind::Sync,
    help: "file system: sync(2): every dirty page, then a journal commit, waited for",
    block_keys: None,
    fs_keys: Some(&[]),
    required: None,
    implicit: false,
    report: Report::Entry,
    run,
};

fn run(stack: &mut Stack, p: &mut PhaseRun) -> Result<Outcome, String> {
    shared::file(stack, p)?.fs_mut().sync();
    Ok(Outcome::default())
}
