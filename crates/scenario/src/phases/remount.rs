//! `remount`: on a file system, umount and mount again, optionally with another `discard`
//! policy.

use super::shared;
use crate::phase::{Outcome, PhaseKind, PhaseRun, PhaseSpec, Report};
use crate::stack::Stack;

impl PhaseKind {
    #[allow(non_upper_case_globals)]
    pub const Remount: PhaseKind = PhaseKind("remount");
}

pub const SPEC: PhaseSpec = PhaseSpec {
    kind: PhaseKind::Remount,
    help: "file system: umount and mount again, optionally with another discard policy",
    block_keys: None,
    fs_keys: Some(&["discard"]),
    required: None,
    implicit: false,
    report: Report::Entry,
    run,
};

fn run(stack: &mut Stack, p: &mut PhaseRun) -> Result<Outcome, String> {
    let fs = shared::file(stack, p)?.fs_mut();
    let config = shared::with_policy(fs.config(), p.section.discard.as_deref()).map_err(|e| e.to_string())?;
    fs.remount_with(config.policy, config.params);
    Ok(Outcome::default())
}
