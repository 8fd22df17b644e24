//! `workload`: the `[workload]` section with this phase's `[phase.workload]` keys laid over
//! it. On a bare SSD a block generator of the phase's `stream` (phases naming one stream
//! continue one generator); on a file system the file-level kind, reporting its figures.

use super::shared;
use crate::phase::{Outcome, PhaseKind, PhaseRun, PhaseSection, PhaseSpec, Report};
use crate::stack::Stack;
use trimlab_workload::run_file_workload;
use trimlab_workload::{measured_drive, run_phase, Generator, WorkloadConfig};

impl PhaseKind {
    #[allow(non_upper_case_globals)]
    pub const Workload: PhaseKind = PhaseKind("workload");
}

pub const SPEC: PhaseSpec = PhaseSpec {
    kind: PhaseKind::Workload,
    help: "the [workload] section, with this phase's [phase.workload] keys laid over it",
    block_keys: Some(&["workload", "stream"]),
    fs_keys: Some(&["workload"]),
    required: None,
    implicit: false,
    report: Report::Entry,
    run,
};

impl PhaseSection {
    /// A `workload` phase running `w`: its `[phase.workload]` holds the keys where `w` differs
    /// from the `[workload]` defaults.
    pub fn workload(w: &WorkloadConfig) -> PhaseSection {
        let table = |w: &WorkloadConfig| match toml::Value::try_from(w) {
            Ok(toml::Value::Table(t)) => t,
            _ => toml::Table::new(),
        };
        let defaults = table(&WorkloadConfig::default());
        let over: toml::Table = table(w).into_iter().filter(|(k, v)| defaults.get(k) != Some(v)).collect();
        PhaseSection { workload: Some(over), ..PhaseSection::new(PhaseKind::Workload) }
    }
}

fn run(stack: &mut Stack, p: &mut PhaseRun) -> Result<Outcome, String> {
    let w = p.workload.ok_or("a workload phase without its workload")?;
    match stack {
        Stack::Block(b) => {
            let index = p.index;
            let stream = p.section.stream.clone().unwrap_or_else(|| format!("phase{index}"));
            let capacity = b.ssd.capacity_bytes();
            let seeds = &b.seeds;
            let (first_w, first, generator) = b.streams.entry(stream.clone()).or_insert_with(|| {
                let generator = Generator::new(
                    w,
                    capacity,
                    seeds.fork(&format!("{stream}.mix")),
                    seeds.fork(&format!("{stream}.address")),
                );
                (w.clone(), index, generator)
            });
            if first_w != w {
                return Err(format!(
                    "stream = {stream:?} continues phase[{first}]'s generator, but this phase's workload differs from that one's; name another stream"
                ));
            }
            if p.round > 0 {
                // A round is the workload again: its streams' ends count from this round.
                generator.restart_ends();
            }
            let drive = measured_drive(w, capacity);
            let end = run_phase(&mut b.ssd, generator, b.now, drive, &mut b.tag, p.progress)
                .map_err(shared::refused)?
                .end;
            b.now = end.max(b.now);
            Ok(Outcome::default())
        }
        Stack::File(f) => {
            let capacity = f.capacity;
            let (fs, state) = f.parts();
            let figures = run_file_workload(fs, w, state, capacity).map_err(|e| e.to_string())?;
            let mut entry = serde_json::Map::new();
            let unknown = std::mem::take(&mut state.strace_unknown_calls);
            if !unknown.is_empty() {
                entry.insert("unknown_calls".into(), serde_json::json!(unknown));
            }
            Ok(Outcome { figures, entry, ..Outcome::default() })
        }
    }
}
