//! 001's aging: fill the file system, delete random files down to `utilization`.

use super::{KindSpec, Level, WorkloadKind};
use crate::config::WorkloadConfig;
use crate::file::{age, FileShape, FileState, Figures};
use trimlab_device::BlockDevice;
use trimlab_fs::{FileSystem, FsError};

impl WorkloadKind {
    #[allow(non_upper_case_globals)]
    pub const Aging: WorkloadKind = WorkloadKind("aging");
}

pub(super) const SPEC: KindSpec = KindSpec {
    kind: WorkloadKind::Aging,
    help: "001's aging: fill the file system, delete random files down to `utilization`",
    level: Level::File,
    keys: &["utilization", "file_bytes_min", "file_bytes_max", "append_bytes", "hole_bytes", "prefix", "stream"],
};

pub(super) fn run<D: BlockDevice>(
    fs: &mut FileSystem<D>,
    w: &WorkloadConfig,
    state: &mut FileState,
    _capacity_bytes: u64,
) -> Result<Figures, FsError> {
    let shape = FileShape::aging(w);
    let target = w.utilization.unwrap_or(0.9);
    let stream = w.stream.clone().unwrap_or_else(|| "aging".to_string());
    state.with_stream(&stream, |rng, live| age(fs, rng, live, &shape, target))?;
    Ok(vec![("files_live", state.live.len() as u64)])
}
