//! Postmark (Katcher 1997) as 001 runs it.

use super::{KindSpec, Level, WorkloadKind};
use crate::config::WorkloadConfig;
use crate::file::{FileState, Figures, Postmark};
use trimlab_device::BlockDevice;
use trimlab_fs::{FileSystem, FsError};

impl WorkloadKind {
    #[allow(non_upper_case_globals)]
    pub const Postmark: WorkloadKind = WorkloadKind("postmark");
}

pub(super) const SPEC: KindSpec = KindSpec {
    kind: WorkloadKind::Postmark,
    help: "Postmark (Katcher 1997) as 001 runs it",
    level: Level::File,
    keys: &["files", "transactions", "file_bytes_min", "file_bytes_max", "append_bytes", "prefix", "stream"],
};

pub(super) fn run<D: BlockDevice>(
    fs: &mut FileSystem<D>,
    w: &WorkloadConfig,
    state: &mut FileState,
    _capacity_bytes: u64,
) -> Result<Figures, FsError> {
    let pm = Postmark {
        files: w.files.unwrap_or(4250) as usize,
        min_bytes: w.file_bytes_min.map_or(100_000, |b| b.0),
        max_bytes: w.file_bytes_max.map_or(3_000_000, |b| b.0),
        transactions: w.transactions.unwrap_or(20_000) as usize,
        block_bytes: w.append_bytes.map_or(16 << 10, |b| b.0),
    };
    let prefix = w.prefix.clone().unwrap_or_else(|| "pm_".into());
    let stream = w.stream.clone().unwrap_or_else(|| "postmark".to_string());
    let ns = state.with_stream(&stream, |rng, _| pm.run(fs, rng, &prefix))?;
    Ok(vec![("postmark_ns", ns)])
}
