//! `ops`: on a file system, a script of file operations (`operations`, or a `script` file;
//! docs/config.md "Scripts"). Each part between its `phase` lines is reported as a phase of
//! its own; a failing line stops the run, with what ran before it reported.

use super::shared;
use crate::phase::{Outcome, PhaseKind, PhaseRun, PhaseSpec, Report};
use crate::stack::{file_entry, Stack};
use serde_json::json;
use trimlab_workload::script::{with_interpreter, Script};

impl PhaseKind {
    #[allow(non_upper_case_globals)]
    pub const Ops: PhaseKind = PhaseKind("ops");
}

pub const SPEC: PhaseSpec = PhaseSpec {
    kind: PhaseKind::Ops,
    help: "file system: a script of file operations (operations, or a script file)",
    block_keys: None,
    fs_keys: Some(&["operations", "script", "stream"]),
    required: Some("operations"),
    implicit: false,
    report: Report::Parts,
    run,
};

fn run(stack: &mut Stack, p: &mut PhaseRun) -> Result<Outcome, String> {
    let f = shared::file(stack, p)?;
    let phase = p.section;
    let parts = &mut *p.parts;
    let origin = phase.script.clone().unwrap_or_else(|| "operations".into());
    let stopped = |e: String| Ok(Outcome { stopped: Some(e), ..Outcome::default() });
    let script = match Script::parse(phase.operations.as_deref().unwrap_or(""), &origin) {
        Ok(s) => s,
        Err(e) => return stopped(e.to_string()),
    };
    let (fs, state) = f.parts();
    let result = with_interpreter(fs, state, phase.stream.as_deref(), |it, fs| {
        for part in script.phases() {
            let (start, traffic0, ops0, enospc0) = (fs.now(), fs.device().traffic, it.file_ops, it.mkdir_enospc);
            let name = part.name.unwrap_or_else(|| phase.label());
            fs.device_mut().mark_phase(start, &name);
            let result = it.run(fs, &script, &part.lines);
            let mut e = file_entry(fs, &name, "ops", start, traffic0);
            e["figures"] = json!({ "file_ops": it.file_ops - ops0 });
            if it.mkdir_enospc > enospc0 {
                e["figures"]["mkdir_enospc"] = json!(it.mkdir_enospc - enospc0);
            }
            parts.push(e);
            result.map_err(|e| e.to_string())?;
        }
        Ok(())
    });
    match result {
        Ok(()) => Ok(Outcome::default()),
        Err(e) => stopped(e),
    }
}
