//! `fstrim`: on a file system, FITRIM of the whole file system (`minlen_bytes`), reporting
//! the bytes it trimmed.

use super::shared;
use crate::phase::{Outcome, PhaseKind, PhaseRun, PhaseSpec, Report};
use crate::stack::Stack;

impl PhaseKind {
    #[allow(non_upper_case_globals)]
    pub const Fstrim: PhaseKind = PhaseKind("fstrim");
}

pub const SPEC: PhaseSpec = PhaseSpec {
    kind: PhaseKind::Fstrim,
    help: "file system: FITRIM of the whole file system (minlen_bytes)",
    block_keys: None,
    fs_keys: Some(&["minlen_bytes"]),
    required: None,
    implicit: false,
    report: Report::Entry,
    run,
};

fn run(stack: &mut Stack, p: &mut PhaseRun) -> Result<Outcome, String> {
    let fs = shared::file(stack, p)?.fs_mut();
    let trimmed = fs.fstrim(0, u64::MAX, p.section.minlen_bytes.map_or(0, |b| b.0));
    Ok(Outcome { figures: vec![("trimmed_bytes", trimmed)], ..Outcome::default() })
}
