//! 000's micro-benchmark: appends with equal holes, fsync, unlink, timed fsync.

use super::keys::{checks, KeyError, KeysSpec, OwnKeys};
use super::{KindSpec, Level, WorkloadKind};
use crate::config::WorkloadConfig;
use crate::file::{lazy_micro, FileState, Figures};
use trimlab_device::BlockDevice;
use trimlab_fs::{FileSystem, FsError};
use serde::{Deserialize, Serialize};
use trimlab_sim::ByteSize;

impl WorkloadKind {
    #[allow(non_upper_case_globals)]
    pub const AppendHoles: WorkloadKind = WorkloadKind("append-holes");
}

pub(super) const SPEC: KindSpec = KindSpec {
    kind: WorkloadKind::AppendHoles,
    help: "000's micro-benchmark: appends with equal holes, fsync, unlink, timed fsync",
    level: Level::File,
    keys: KeysSpec::of::<Keys>(),
};

/// Its keys (docs/config.md gives the defaults).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Keys {
    pub append_bytes: Option<ByteSize>,
    pub file_bytes: Option<ByteSize>,
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
    let r = lazy_micro(fs, k.append_bytes.map_or(64 << 10, |b| b.0), k.file_bytes.map_or(1 << 30, |b| b.0))?;
    Ok(vec![
        ("extents", r.extents as u64),
        ("fsync_ns", r.fsync_ns),
        ("trim_issue_ns", r.trim_issue_ns),
        ("trim_commands", r.trim_commands),
    ])
}
