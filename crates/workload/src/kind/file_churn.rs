//! Create / append / delete churn at a utilization until `writes` bytes were written.

use super::keys::{checks, KeyError, KeysSpec, OwnKeys};
use super::{KindSpec, Level, WorkloadKind};
use crate::config::WorkloadConfig;
use crate::file::{file_churn, FileShape, FileState, Figures};
use trimlab_device::BlockDevice;
use trimlab_fs::{FileSystem, FsError};
use serde::{Deserialize, Serialize};
use trimlab_sim::ByteSize;

impl WorkloadKind {
    #[allow(non_upper_case_globals)]
    pub const FileChurn: WorkloadKind = WorkloadKind("file-churn");
}

pub(super) const SPEC: KindSpec = KindSpec {
    kind: WorkloadKind::FileChurn,
    help: "create / append / delete churn at a utilization until `writes` bytes were written",
    level: Level::File,
    keys: KeysSpec::of::<Keys>(),
};

/// Its keys (docs/config.md gives the defaults).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Keys {
    pub utilization: Option<f64>,
    pub file_bytes_min: Option<ByteSize>,
    pub file_bytes_max: Option<ByteSize>,
    pub append_bytes: Option<ByteSize>,
    pub prefix: Option<String>,
    pub stream: Option<String>,
}

impl OwnKeys for Keys {
    fn check(&self) -> Result<(), KeyError> {
        checks::fraction("utilization", self.utilization)?;
        checks::min_max(self.file_bytes_min, self.file_bytes_max)?;
        checks::positive(&[("append_bytes", self.append_bytes), ("file_bytes_min", self.file_bytes_min)])
    }
}

pub(super) fn run<D: BlockDevice>(
    fs: &mut FileSystem<D>,
    w: &WorkloadConfig,
    state: &mut FileState,
    capacity_bytes: u64,
) -> Result<Figures, FsError> {
    let k: Keys = super::own(w)?;
    let shape = FileShape {
        prefix: k.prefix.unwrap_or_else(|| "c".into()),
        chunk_bytes: k.append_bytes.map_or(1 << 20, |b| b.0),
        hole_bytes: 0,
        ..FileShape::aging(None, k.file_bytes_min, k.file_bytes_max, None, None)
    };
    let (target, bytes) = (k.utilization.unwrap_or(0.5), w.writes.bytes(capacity_bytes));
    let stream = k.stream.unwrap_or_else(|| "churn".to_string());
    state.with_stream(&stream, |rng, live| file_churn(fs, rng, live, &shape, target, bytes))
}
