//! A Filebench workload model (`filebench = "FILE.f"`, read into `operations` by the config
//! loader, or `trimlab run --filebench FILE.f`), run with Filebench's semantics
//! (crates/importers/src/filebench/).

use super::{KindSpec, Level, WorkloadKind};
use crate::config::WorkloadConfig;
use crate::file::{FileState, Figures};
use crate::filebench::{self, Model};
use trimlab_device::BlockDevice;
use trimlab_fs::{FileSystem, FsError};

impl WorkloadKind {
    #[allow(non_upper_case_globals)]
    pub const Filebench: WorkloadKind = WorkloadKind("filebench");
}

pub(super) const SPEC: KindSpec = KindSpec {
    kind: WorkloadKind::Filebench,
    help: "a Filebench workload model (.f: filesets, processes, threads, flowops; docs/config.md \"Filebench workload models\")",
    level: Level::File,
    keys: &["operations", "filebench", "stream"],
};

/// The random stream a model draws from unless `stream` names another.
const STREAM: &str = "filebench";

/// The model of `w`, parsed (`origin` names it in errors when no file does).
pub fn parse(w: &WorkloadConfig, origin: &str) -> Result<Model, String> {
    let text = w.operations.as_deref().ok_or_else(|| {
        "kind = \"filebench\" needs filebench = \"FILE.f\" (or the model's text in operations = \"\"\"...\"\"\")".to_string()
    })?;
    let origin = w.filebench.as_deref().unwrap_or(origin);
    filebench::parse(text, origin).map_err(|e| e.to_string())
}

pub(super) fn run<D: BlockDevice>(
    fs: &mut FileSystem<D>,
    w: &WorkloadConfig,
    state: &mut FileState,
    _capacity_bytes: u64,
) -> Result<Figures, FsError> {
    let model = parse(w, "workload.operations").map_err(FsError::Layout)?;
    let origin = w.filebench.as_deref().unwrap_or("workload.operations");
    let stream = w.stream.as_deref().unwrap_or(STREAM);
    let outcome = state.with_stream(stream, |rng, _| filebench::run(fs, &model, origin, rng));
    let outcome = outcome.map_err(|e| FsError::Layout(e.to_string()))?;
    Ok(outcome.figures())
}
