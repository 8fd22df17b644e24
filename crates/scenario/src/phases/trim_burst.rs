//! `trim-burst`: on a bare SSD, `bytes` of the workload region TRIMmed from `offset` (default
//! its start), back to back, in commands of `command_bytes` (default and at most the device's
//! largest TRIM).

use super::shared;
use crate::phase::{Outcome, PhaseKind, PhaseRun, PhaseSpec, Report};
use crate::stack::Stack;
use trimlab_device::TrimSplitter;
use trimlab_sim::ByteSize;

impl PhaseKind {
    #[allow(non_upper_case_globals)]
    pub const TrimBurst: PhaseKind = PhaseKind("trim-burst");
}

pub const SPEC: PhaseSpec = PhaseSpec {
    kind: PhaseKind::TrimBurst,
    help: "block: TRIM bytes of the region from offset, back to back, in commands of command_bytes",
    block_keys: Some(&["bytes", "offset", "command_bytes"]),
    fs_keys: None,
    required: None,
    implicit: false,
    report: Report::Entry,
    run,
};

fn run(stack: &mut Stack, p: &mut PhaseRun) -> Result<Outcome, String> {
    let b = shared::block(stack, p)?;
    let phase = p.section;
    let (region_offset, region) = p.base.region(b.ssd.capacity_bytes());
    let skip = phase.offset.map_or(0, |b| b.0);
    if skip >= region {
        return Err(format!("offset = {} is past the workload region ({})", ByteSize(skip), ByteSize(region)));
    }
    let offset = region_offset + skip;
    let bytes = phase.bytes.map_or(region, |b| b.0).min(region - skip);
    let page = b.ssd.page_bytes();
    let max = b.ssd.config().trim_max_bytes.max(page);
    let max = match phase.command_bytes {
        Some(c) if c.0 % page != 0 => {
            return Err(format!("command_bytes = {c} is not a multiple of the {page}-byte page"))
        }
        Some(c) => c.0.min(max),
        None => max,
    };
    // A burst sends one range per command, each when the previous one completes.
    let mut end = b.now;
    let ssd = &mut b.ssd;
    TrimSplitter::new(max, 1)
        .split([(offset, bytes)], |command| {
            end = ssd.submit(end, command, None)?.done;
            Ok(())
        })
        .map_err(shared::refused)?;
    b.now = end;
    Ok(Outcome::default())
}
