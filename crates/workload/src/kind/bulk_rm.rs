//! 003: `files` large files written in parallel with O_DIRECT, then all removed.

use super::{KindSpec, Level, WorkloadKind};
use crate::config::WorkloadConfig;
use crate::file::{bulk_rm, FileState, Figures};
use trimlab_device::BlockDevice;
use trimlab_fs::{FileSystem, FsError};

impl WorkloadKind {
    #[allow(non_upper_case_globals)]
    pub const BulkRm: WorkloadKind = WorkloadKind("bulk-rm");
}

pub(super) const SPEC: KindSpec = KindSpec {
    kind: WorkloadKind::BulkRm,
    help: "003: `files` large files written in parallel with O_DIRECT, then all removed",
    level: Level::File,
    keys: &["files", "file_bytes", "append_bytes"],
};

pub(super) fn run<D: BlockDevice>(
    fs: &mut FileSystem<D>,
    w: &WorkloadConfig,
    _state: &mut FileState,
    _capacity_bytes: u64,
) -> Result<Figures, FsError> {
    bulk_rm(
        fs,
        w.files.unwrap_or(64) as usize,
        w.file_bytes.map_or(64 << 20, |b| b.0),
        w.append_bytes.map_or(1 << 20, |b| b.0),
    )
}
