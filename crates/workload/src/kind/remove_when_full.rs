//! 000 Table II: fill to 100 %, remove a random file, time the next write needing a block.

use super::keys::{checks, KeyError, KeysSpec, OwnKeys};
use super::{KindSpec, Level, WorkloadKind};
use crate::config::WorkloadConfig;
use crate::file::{remove_when_full, FileShape, FileState, Figures};
use trimlab_device::BlockDevice;
use trimlab_fs::{FileSystem, FsError};
use serde::{Deserialize, Serialize};
use trimlab_sim::ByteSize;

impl WorkloadKind {
    #[allow(non_upper_case_globals)]
    pub const RemoveWhenFull: WorkloadKind = WorkloadKind("remove-when-full");
}

pub(super) const SPEC: KindSpec = KindSpec {
    kind: WorkloadKind::RemoveWhenFull,
    help: "000 Table II: fill to 100 %, remove a random file, time the next write needing a block",
    level: Level::File,
    keys: KeysSpec::of::<Keys>(),
};

/// Its keys (docs/config.md gives the defaults).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Keys {
    pub file_bytes_min: Option<ByteSize>,
    pub file_bytes_max: Option<ByteSize>,
    pub append_bytes: Option<ByteSize>,
    pub hole_bytes: Option<ByteSize>,
}

impl OwnKeys for Keys {
    fn check(&self) -> Result<(), KeyError> {
        checks::min_max(self.file_bytes_min, self.file_bytes_max)?;
        checks::positive(&[("append_bytes", self.append_bytes), ("file_bytes_min", self.file_bytes_min)])
    }
}

pub(super) fn run<D: BlockDevice>(
    fs: &mut FileSystem<D>,
    w: &WorkloadConfig,
    state: &mut FileState,
    _capacity_bytes: u64,
) -> Result<Figures, FsError> {
    let k: Keys = super::own(w)?;
    let shape = FileShape {
        prefix: "f".into(),
        min_bytes: k.file_bytes_min.map_or(8 << 20, |b| b.0),
        max_bytes: k.file_bytes_max.map_or(32 << 20, |b| b.0),
        chunk_bytes: k.append_bytes.map_or(64 << 10, |b| b.0),
        hole_bytes: k.hole_bytes.map_or(64 << 10, |b| b.0),
    };
    remove_when_full(fs, state, &shape)
}
