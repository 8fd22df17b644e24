//! 001's aging: fill the file system, delete random files down to `utilization`.

use super::keys::{checks, KeyError, KeysSpec, OwnKeys};
use super::{KindSpec, Level, WorkloadKind};
use crate::config::WorkloadConfig;
use crate::file::{age, FileShape, FileState, Figures};
use trimlab_device::BlockDevice;
use serde::{Deserialize, Serialize};
use trimlab_fs::{FileSystem, FsError};
use trimlab_sim::ByteSize;

impl WorkloadKind {
    #[allow(non_upper_case_globals)]
    pub const Aging: WorkloadKind = WorkloadKind("aging");
}

pub(super) const SPEC: KindSpec = KindSpec {
    kind: WorkloadKind::Aging,
    help: "001's aging: fill the file system, delete random files down to `utilization`",
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
    pub hole_bytes: Option<ByteSize>,
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
    _capacity_bytes: u64,
) -> Result<Figures, FsError> {
    let k: Keys = super::own(w)?;
    let shape = FileShape::aging(k.prefix.as_deref(), k.file_bytes_min, k.file_bytes_max, k.append_bytes, k.hole_bytes);
    let target = k.utilization.unwrap_or(0.9);
    let stream = k.stream.unwrap_or_else(|| "aging".to_string());
    state.with_stream(&stream, |rng, live| age(fs, rng, live, &shape, target))?;
    Ok(vec![("files_live", state.live.len() as u64)])
}
