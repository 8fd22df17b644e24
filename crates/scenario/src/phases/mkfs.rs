//! `mkfs`: on a file system, umount, then mkfs on the same device (`mkfs_discard`, `discard`)
//! with a new directory hash seed and no live files.

use super::shared;
use crate::phase::{Outcome, PhaseKind, PhaseRun, PhaseSpec, Report};
use crate::stack::{mkfs_hash_seed, Fs, Stack};
use trimlab_fs::{FileSystem, FsConfig, FsError};
use trimlab_workload::file::FileState;

impl PhaseKind {
    #[allow(non_upper_case_globals)]
    pub const Mkfs: PhaseKind = PhaseKind("mkfs");
}

pub const SPEC: PhaseSpec = PhaseSpec {
    kind: PhaseKind::Mkfs,
    help: "file system: umount, then mkfs on the same device (mkfs_discard, discard)",
    block_keys: None,
    fs_keys: Some(&["discard", "mkfs_discard"]),
    required: None,
    implicit: false,
    report: Report::Entry,
    run,
};

fn run(stack: &mut Stack, p: &mut PhaseRun) -> Result<Outcome, String> {
    let f = shared::file(stack, p)?;
    let config = shared::with_policy(&f.config, p.section.discard.as_deref()).map_err(|e| e.to_string())?;
    let discard = p.section.mkfs_discard.unwrap_or(false);
    f.swap(|fs, state| mkfs_again(fs, config, discard, state)).map_err(|e| e.to_string())?;
    Ok(Outcome::default())
}

fn mkfs_again(mut fs: Fs, config: FsConfig, discard: bool, state: &mut FileState) -> Result<Fs, FsError> {
    fs.umount();
    let now = fs.now();
    let mut fs = FileSystem::mkfs(fs.into_device(), config, now, discard)?;
    fs.set_hash_seed(mkfs_hash_seed(state));
    state.live.clear();
    Ok(fs)
}
