//! A real program's file operations: an `strace -f -ttt` trace of it (`strace = "FILE"`),
//! replayed through the file system (crates/importers/src/strace/).

use super::keys::{KeyError, KeysSpec, OwnKeys};
use super::{KindSpec, Level, WorkloadKind};
use crate::config::WorkloadConfig;
use crate::file::{Figures, FileState};
use crate::strace::{check_root, replay, StraceOptions};
use trimlab_device::BlockDevice;
use trimlab_fs::{FileSystem, FsError};
use serde::{Deserialize, Serialize};
use trimlab_sim::DurationNs;

impl WorkloadKind {
    #[allow(non_upper_case_globals)]
    pub const Strace: WorkloadKind = WorkloadKind("strace");
}

pub(super) const SPEC: KindSpec = KindSpec {
    kind: WorkloadKind::Strace,
    help: "a real program's file operations: an `strace -f -ttt` trace replayed on the file system (docs/config.md \"strace replay\")",
    level: Level::File,
    keys: KeysSpec::of::<Keys>(),
};

/// Its keys (docs/config.md gives the defaults).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Keys {
    pub strace: Option<String>,
    pub strace_root: Option<String>,
    pub strace_gap_max: Option<DurationNs>,
    pub strace_reads: Option<bool>,
}

impl OwnKeys for Keys {
    fn check(&self) -> Result<(), KeyError> {
        options(self).map(|_| ())
    }
}

/// The replay options of `k`, checked.
pub fn options(k: &Keys) -> Result<StraceOptions, KeyError> {
    if k.strace.is_none() {
        let why = "kind = \"strace\" needs the trace: strace = \"FILE\" (the output of strace -f -ttt -o FILE)";
        return Err(("strace".into(), "unset".into(), why.into()));
    }
    let Some(root) = k.strace_root.as_deref() else {
        let why = "kind = \"strace\" needs strace_root = \"/DIR\": the directory the traced program worked in, which stands for the mount point";
        return Err(("strace_root".into(), "unset".into(), why.into()));
    };
    let root = check_root(root).map_err(|e| ("strace_root".to_string(), format!("{root:?}"), e))?;
    Ok(StraceOptions {
        root,
        gap_max_ns: k.strace_gap_max.map(|d| d.0),
        reads: k.strace_reads.unwrap_or(false),
    })
}

/// Streams the trace from its file and replays it. The file is opened here, at run time,
/// rather than read into the config like a script's: a trace of millions of lines is not held
/// in memory (the config loader has already checked it can be opened).
pub(super) fn run<D: BlockDevice>(
    fs: &mut FileSystem<D>,
    w: &WorkloadConfig,
    state: &mut FileState,
    _capacity_bytes: u64,
) -> Result<Figures, FsError> {
    let k: Keys = super::own(w)?;
    let options =
        options(&k).map_err(|(key, value, why)| FsError::Layout(format!("workload.{key} = {value} ({why})")))?;
    let written = k.strace.as_deref().unwrap_or_default();
    let path = w.dir.as_ref().map_or_else(|| written.into(), |dir| dir.join(written));
    let origin = path.display().to_string();
    let file = std::fs::File::open(&path)
        .map_err(|e| FsError::Layout(format!("workload.strace = {written:?}: cannot read {origin}: {e}")))?;
    let reader = std::io::BufReader::with_capacity(1 << 16, file);
    let mut counts = replay(reader, &origin, fs, &options).map_err(|e| FsError::Layout(e.to_string()))?;
    state.strace_unknown_calls = std::mem::take(&mut counts.unknown_by_name);
    Ok(counts.figures())
}
