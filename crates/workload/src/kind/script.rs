//! A person's own file workload: a script of file operations (`operations`, or a `script` file
//! the config loader reads into `operations`), run line by line (crates/workload/src/script/).

use super::keys::{KeyError, KeysSpec, OwnKeys};
use super::{KindSpec, Level, WorkloadKind};
use crate::config::WorkloadConfig;
use crate::file::{FileState, Figures};
use crate::script::{with_interpreter, Script};
use trimlab_device::BlockDevice;
use trimlab_fs::{FileSystem, FsError};
use serde::{Deserialize, Serialize};

impl WorkloadKind {
    #[allow(non_upper_case_globals)]
    pub const Script: WorkloadKind = WorkloadKind("script");
}

pub(super) const SPEC: KindSpec = KindSpec {
    kind: WorkloadKind::Script,
    help: "your own file workload: a script of file operations (mkdir, create, rm -r, mv, punch-hole, fstrim, ...; docs/config.md \"Scripts\")",
    level: Level::File,
    keys: KeysSpec::of::<Keys>(),
};

/// Its keys (docs/config.md gives the defaults).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Keys {
    pub operations: Option<String>,
    pub script: Option<String>,
    pub stream: Option<String>,
}

impl OwnKeys for Keys {
    fn check(&self) -> Result<(), KeyError> {
        let Some(text) = self.operations.as_deref() else {
            return parse(self, "workload.operations").map(|_| ()).map_err(|e| ("operations".into(), "unset".into(), e));
        };
        // The error names the value it blames: the script's file, or the inline line at fault.
        Script::parse(text, self.script.as_deref().unwrap_or("workload.operations")).map(|_| ()).map_err(|e| {
            match &self.script {
                Some(file) => ("script".into(), format!("{file:?}"), e.to_string()),
                None => ("operations".into(), format!("{:?}", e.text), e.to_string()),
            }
        })
    }
}

/// The script of `k`, parsed (`origin` names it in errors).
pub fn parse(k: &Keys, origin: &str) -> Result<Script, String> {
    let text = k.operations.as_deref().ok_or_else(|| {
        "kind = \"script\" needs operations = \"\"\"...\"\"\" or script = \"FILE\"".to_string()
    })?;
    let origin = k.script.as_deref().unwrap_or(origin);
    Script::parse(text, origin).map_err(|e| e.to_string())
}

/// Runs the whole script as one phase (its `phase` lines only mark; a run whose only workload
/// is a script reports each of them as a phase instead, crates/scenario/src/phases/ops.rs).
pub(super) fn run<D: BlockDevice>(
    fs: &mut FileSystem<D>,
    w: &WorkloadConfig,
    state: &mut FileState,
    _capacity_bytes: u64,
) -> Result<Figures, FsError> {
    let k: Keys = super::own(w)?;
    let script = parse(&k, "workload.operations").map_err(FsError::Layout)?;
    let (done, ops, enospc) = with_interpreter(fs, state, k.stream.as_deref(), |it, fs| {
        (it.run(fs, &script, &script.lines), it.file_ops, it.mkdir_enospc)
    });
    done.map_err(|e| FsError::Layout(e.to_string()))?;
    let mut figures = vec![("file_ops", ops)];
    if enospc > 0 {
        figures.push(("mkdir_enospc", enospc));
    }
    Ok(figures)
}
