//! Create / append / delete churn at a utilization until `writes` bytes were written.

use super::{KindSpec, Level, WorkloadKind};
use crate::config::WorkloadConfig;
use crate::file::{file_churn, FileShape, FileState, Figures};
use trimlab_device::BlockDevice;
use trimlab_fs::{FileSystem, FsError};

impl WorkloadKind {
    #[allow(non_upper_case_globals)]
    pub const FileChurn: WorkloadKind = WorkloadKind("file-churn");
}

pub(super) const SPEC: KindSpec = KindSpec {
    kind: WorkloadKind::FileChurn,
    help: "create / append / delete churn at a utilization until `writes` bytes were written",
    level: Level::File,
    keys: &["utilization", "file_bytes_min", "file_bytes_max", "append_bytes", "prefix", "stream"],
};

pub(super) fn run<D: BlockDevice>(
    fs: &mut FileSystem<D>,
    w: &WorkloadConfig,
    state: &mut FileState,
    capacity_bytes: u64,
) -> Result<Figures, FsError> {
    let shape = FileShape {
        prefix: w.prefix.clone().unwrap_or_else(|| "c".into()),
        chunk_bytes: w.append_bytes.map_or(1 << 20, |b| b.0),
        hole_bytes: 0,
        ..FileShape::aging(w)
    };
    let (target, bytes) = (w.utilization.unwrap_or(0.5), w.writes.bytes(capacity_bytes));
    let stream = w.stream.clone().unwrap_or_else(|| "churn".to_string());
    state.with_stream(&stream, |rng, live| file_churn(fs, rng, live, &shape, target, bytes))
}
