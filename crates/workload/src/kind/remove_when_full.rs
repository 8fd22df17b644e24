//! 000 Table II: fill to 100 %, remove a random file, time the next write needing a block.

use super::{KindSpec, Level, WorkloadKind};
use crate::config::WorkloadConfig;
use crate::file::{remove_when_full, FileShape, FileState, Figures};
use trimlab_device::BlockDevice;
use trimlab_fs::{FileSystem, FsError};

impl WorkloadKind {
    #[allow(non_upper_case_globals)]
    pub const RemoveWhenFull: WorkloadKind = WorkloadKind("remove-when-full");
}

pub(super) const SPEC: KindSpec = KindSpec {
    kind: WorkloadKind::RemoveWhenFull,
    help: "000 Table II: fill to 100 %, remove a random file, time the next write needing a block",
    level: Level::File,
    keys: &["file_bytes_min", "file_bytes_max", "append_bytes", "hole_bytes"],
};

pub(super) fn run<D: BlockDevice>(
    fs: &mut FileSystem<D>,
    w: &WorkloadConfig,
    state: &mut FileState,
    _capacity_bytes: u64,
) -> Result<Figures, FsError> {
    let shape = FileShape {
        prefix: "f".into(),
        min_bytes: w.file_bytes_min.map_or(8 << 20, |b| b.0),
        max_bytes: w.file_bytes_max.map_or(32 << 20, |b| b.0),
        chunk_bytes: w.append_bytes.map_or(64 << 10, |b| b.0),
        hole_bytes: w.hole_bytes.map_or(64 << 10, |b| b.0),
    };
    remove_when_full(fs, state, &shape)
}
