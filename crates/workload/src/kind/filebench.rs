//! A Filebench workload model (`filebench = "FILE.f"`, read into `operations` by the config
//! loader, or `trimlab run --filebench FILE.f`), run with Filebench's semantics
//! (crates/importers/src/filebench/).

use super::keys::{KeyError, KeysSpec, OwnKeys};
use super::{KindSpec, Level, WorkloadKind};
use crate::config::WorkloadConfig;
use crate::file::{FileState, Figures};
use crate::filebench::{self, Model};
use trimlab_device::BlockDevice;
use trimlab_fs::{FileSystem, FsError};
use serde::{Deserialize, Serialize};

impl WorkloadKind {
    #[allow(non_upper_case_globals)]
    pub const Filebench: WorkloadKind = WorkloadKind("filebench");
}

pub(super) const SPEC: KindSpec = KindSpec {
    kind: WorkloadKind::Filebench,
    help: "a Filebench workload model (.f: filesets, processes, threads, flowops; docs/config.md \"Filebench workload models\")",
    level: Level::File,
    keys: KeysSpec::of::<Keys>(),
};

/// Its keys (docs/config.md gives the defaults).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Keys {
    pub operations: Option<String>,
    pub filebench: Option<String>,
    pub stream: Option<String>,
}

impl OwnKeys for Keys {
    fn check(&self) -> Result<(), KeyError> {
        // The error names the value it blames: the model's file, when it came from one.
        parse(self, "workload.operations").map(|_| ()).map_err(|e| match &self.filebench {
            Some(file) => ("filebench".into(), format!("{file:?}"), e),
            None => ("operations".into(), "(the inline model)".into(), e),
        })
    }
}

/// The random stream a model draws from unless `stream` names another.
const STREAM: &str = "filebench";

/// The model of `k`, parsed (`origin` names it in errors when no file does).
pub fn parse(k: &Keys, origin: &str) -> Result<Model, String> {
    let text = k.operations.as_deref().ok_or_else(|| {
        "kind = \"filebench\" needs filebench = \"FILE.f\" (or the model's text in operations = \"\"\"...\"\"\")".to_string()
    })?;
    let origin = k.filebench.as_deref().unwrap_or(origin);
    filebench::parse(text, origin).map_err(|e| e.to_string())
}

pub(super) fn run<D: BlockDevice>(
    fs: &mut FileSystem<D>,
    w: &WorkloadConfig,
    state: &mut FileState,
    _capacity_bytes: u64,
) -> Result<Figures, FsError> {
    let k: Keys = super::own(w)?;
    let model = parse(&k, "workload.operations").map_err(FsError::Layout)?;
    let origin = k.filebench.as_deref().unwrap_or("workload.operations");
    let stream = k.stream.as_deref().unwrap_or(STREAM);
    let outcome = state.with_stream(stream, |rng, _| filebench::run(fs, &model, origin, rng));
    let outcome = outcome.map_err(|e| FsError::Layout(e.to_string()))?;
    Ok(outcome.figures())
}
