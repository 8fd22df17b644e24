//! 003: `files` large files written in parallel with O_DIRECT, then all removed.

use super::keys::{checks, KeyError, KeysSpec, OwnKeys};
use super::{KindSpec, Level, WorkloadKind};
use crate::config::WorkloadConfig;
use crate::file::{bulk_rm, FileState, Figures};
use trimlab_device::BlockDevice;
use trimlab_fs::{FileSystem, FsError};
use serde::{Deserialize, Serialize};
use trimlab_sim::ByteSize;

impl WorkloadKind {
    #[allow(non_upper_case_globals)]
    pub const BulkRm: WorkloadKind = WorkloadKind("bulk-rm");
}

pub(super) const SPEC: KindSpec = KindSpec {
    kind: WorkloadKind::BulkRm,
    help: "003: `files` large files written in parallel with O_DIRECT, then all removed",
    level: Level::File,
    keys: KeysSpec::of::<Keys>(),
};

/// Its keys (docs/config.md gives the defaults).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Keys {
    pub files: Option<u64>,
    pub file_bytes: Option<ByteSize>,
    pub append_bytes: Option<ByteSize>,
}

impl OwnKeys for Keys {
    fn check(&self) -> Result<(), KeyError> {
        checks::positive(&[("append_bytes", self.append_bytes), ("file_bytes", self.file_bytes)])
    }
}

pub(super) fn run<D: BlockDevice>(
    fs: &mut FileSystem<D>,
    w: &WorkloadConfig,
    _state: &mut FileState,
    _capacity_bytes: u64,
) -> Result<Figures, FsError> {
    let k: Keys = super::own(w)?;
    bulk_rm(
        fs,
        k.files.unwrap_or(64) as usize,
        k.file_bytes.map_or(64 << 20, |b| b.0),
        k.append_bytes.map_or(1 << 20, |b| b.0),
    )
}
