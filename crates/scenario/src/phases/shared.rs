//! What several phase kinds share: the stack each kind needs, the block precondition that
//! `fill` and `age` run on a bare SSD, a file phase's file shape and random stream, and a
//! `discard` key laid over a file system's config.

use crate::host::parse_discard;
use crate::phase::{PhaseRun, PhaseSection};
use crate::stack::{BlockStack, FileStack, Stack};
use trimlab_fs::{FsConfig, FsError};
use trimlab_workload::file::FileShape;
use trimlab_workload::{precondition_from, Precondition, WorkloadConfig};

/// The bare SSD, for a kind that runs only there (validation keeps the others away).
pub fn block<'a>(stack: &'a mut Stack, p: &PhaseRun) -> Result<&'a mut BlockStack, String> {
    match stack {
        Stack::Block(b) => Ok(b),
        Stack::File(_) => {
            Err(format!("{} needs a bare block device (host.fs = \"none\")", p.section.kind.name()))
        }
    }
}

/// The file system, for a kind that runs only there.
pub fn file<'a>(stack: &'a mut Stack, p: &PhaseRun) -> Result<&'a mut FileStack, String> {
    match stack {
        Stack::File(f) => Ok(f),
        Stack::Block(_) => Err(format!("{} needs host.fs = \"ext4\"", p.section.kind.name())),
    }
}

/// A command the SSD refused, as a phase's error.
pub fn refused(e: trimlab_device::CommandError) -> String {
    format!("the device refused a command: {e}")
}

/// `fill` (`how` = Fill) or `age` (Steady) on a bare SSD: the workload's precondition, with
/// this phase's `writes`, from its own seed branch (`phaseN`, then `roundR` for later rounds).
pub fn precondition(b: &mut BlockStack, p: &mut PhaseRun, how: Precondition) -> Result<(), String> {
    let w = WorkloadConfig {
        precondition: how,
        precondition_writes: p.section.writes.unwrap_or(p.base.precondition_writes),
        ..p.base.clone()
    };
    let mut seeds = b.seeds.child(&format!("phase{}", p.index));
    if p.round > 0 {
        seeds = seeds.child(&format!("round{}", p.round));
    }
    b.now = precondition_from(&mut b.ssd, &w, &seeds, b.now, &mut b.tag, p.progress).map_err(refused)?;
    Ok(())
}

/// A file phase's random stream (default `aging`, shared by every phase that names none).
pub fn stream(phase: &PhaseSection) -> String {
    phase.stream.clone().unwrap_or_else(|| "aging".into())
}

/// A phase's file shape: the keys it sets, the aging defaults for the rest, and a prefix of
/// its own so that files of two phases never share a name.
pub fn shape(phase: &PhaseSection, index: usize) -> FileShape {
    let prefix = phase.prefix.clone().unwrap_or_else(|| format!("p{index}_"));
    FileShape::aging(
        Some(&prefix),
        phase.file_bytes_min,
        phase.file_bytes_max,
        phase.append_bytes,
        phase.hole_bytes,
    )
}

/// The keys a file-creating phase reads (`fill`, `age`, `utilization` on a file system).
pub const FILE_KEYS: &[&str] =
    &["utilization", "file_bytes_min", "file_bytes_max", "append_bytes", "hole_bytes", "prefix", "stream"];

/// The file system with `discard` (and the keys its text sets, fstrim's period) replacing the
/// policy of `base`.
pub fn with_policy(base: &FsConfig, discard: Option<&str>) -> Result<FsConfig, FsError> {
    let mut config = base.clone();
    if let Some(text) = discard {
        let parsed = parse_discard(text).map_err(FsError::Layout)?;
        config.policy = parsed.kind;
        config.params.overlay(&parsed.params);
    }
    Ok(config)
}
