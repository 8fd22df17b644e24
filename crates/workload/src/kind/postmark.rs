//! Postmark (Katcher 1997) as 001 runs it.

use super::keys::{checks, KeyError, KeysSpec, OwnKeys};
use super::{KindSpec, Level, WorkloadKind};
use crate::config::WorkloadConfig;
use crate::file::{FileState, Figures, Postmark};
use trimlab_device::BlockDevice;
use trimlab_fs::{FileSystem, FsError};
use serde::{Deserialize, Serialize};
use trimlab_sim::ByteSize;

impl WorkloadKind {
    #[allow(non_upper_case_globals)]
    pub const Postmark: WorkloadKind = WorkloadKind("postmark");
}

pub(super) const SPEC: KindSpec = KindSpec {
    kind: WorkloadKind::Postmark,
    help: "Postmark (Katcher 1997) as 001 runs it",
    level: Level::File,
    keys: KeysSpec::of::<Keys>(),
};

/// Its keys (docs/config.md gives the defaults).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Keys {
    pub files: Option<u64>,
    pub transactions: Option<u64>,
    pub file_bytes_min: Option<ByteSize>,
    pub file_bytes_max: Option<ByteSize>,
    pub append_bytes: Option<ByteSize>,
    pub prefix: Option<String>,
    pub stream: Option<String>,
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
    let pm = Postmark {
        files: k.files.unwrap_or(4250) as usize,
        min_bytes: k.file_bytes_min.map_or(100_000, |b| b.0),
        max_bytes: k.file_bytes_max.map_or(3_000_000, |b| b.0),
        transactions: k.transactions.unwrap_or(20_000) as usize,
        block_bytes: k.append_bytes.map_or(16 << 10, |b| b.0),
    };
    let prefix = k.prefix.unwrap_or_else(|| "pm_".into());
    let stream = k.stream.unwrap_or_else(|| "postmark".to_string());
    let ns = state.with_stream(&stream, |rng, _| pm.run(fs, rng, &prefix))?;
    Ok(vec![("postmark_ns", ns)])
}
