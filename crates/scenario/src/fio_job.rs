//! A job file of another tool made the run's workload: `run --fio` (one fio job as
//! `[workload]`, or each group of jobs that run at once as a `workload` phase) and `run
//! --filebench` (a Filebench model as the file-level workload).

use crate::phase::{PhaseKind, PhaseSection};
use crate::{RunConfig, ScenarioError};
use trimlab_workload::kind::filebench;
use trimlab_workload::{Precondition, WorkloadConfig, WorkloadKind};

/// Makes a Filebench model file (`run --filebench FILE.f`) the run's workload: its text and
/// the name errors give it. Without a config (`config_given` false) the drive gets the
/// default ext4 file system the model needs.
pub fn with_filebench(config: &mut RunConfig, text: String, origin: &str, config_given: bool) {
    let keys = filebench::Keys {
        operations: Some(text),
        filebench: Some(origin.to_string()),
        stream: config.workload.keys.text("stream").map(str::to_string),
    };
    config.workload = WorkloadConfig::of_kind(WorkloadKind::Filebench, &keys);
    if !config_given || config.host.fs.is_none() {
        config.host.fs = Some(crate::host::FsKind::Ext4);
    }
}

/// Makes `fio`'s jobs the run's workload: one job alone (no clones, no ramp) is `[workload]`
/// as before; otherwise each group of jobs that run at once (between stonewalls) is a
/// `[[phase]] kind = "workload"` whose streams are the jobs' clones, preceded by its ramp phase
/// and a `measure` when a job has `ramp_time`. A config's precondition comes first as a fill or
/// age phase; without a config the drive starts empty, as fio finds a new one. Returns the
/// notes to print (options ignored, the parser's notes), each naming `origin`.
pub fn apply_fio(
    config: &mut RunConfig,
    config_given: bool,
    text: &str,
    origin: &str,
    capacity: Option<u64>,
) -> Result<Vec<String>, ScenarioError> {
    let mut notes = Vec::new();
    if !config.phases.is_empty() {
        return Err(ScenarioError::Parse(format!("{origin}: --fio makes the run's phases from the job file; the config's [[phase]] list would be replaced (drop one or the other)")));
    }
    let mut base = config.workload.clone();
    if !config_given {
        base.precondition = Precondition::None;
    }
    let file = trimlab_workload::fio::parse_fio_file(text, origin, &base, capacity)?;
    notes.extend(file.ignored.iter().map(|i| format!("{i} ignored (no effect on a simulated drive)")));
    notes.extend(file.notes.iter().map(|n| format!("{}: {n}", origin)));
    if let [group] = file.groups.as_slice() {
        if let ([stream], [], None) = (group.streams.as_slice(), group.ramp.as_slice(), &group.steady) {
            config.workload = WorkloadConfig { precondition: base.precondition, ..stream.clone() };
            return Ok(notes);
        }
    }
    let named = |kind: PhaseKind, name: String| PhaseSection { name: Some(name), ..PhaseSection::new(kind) };
    match base.precondition {
        Precondition::None => {}
        Precondition::Fill => config.phases.push(named(PhaseKind::Fill, "precondition fill".into())),
        Precondition::Steady => config.phases.push(named(PhaseKind::Age, "precondition".into())),
    }
    if base.precondition != Precondition::None {
        config.phases.push(PhaseSection::new(PhaseKind::Measure));
    }
    for group in &file.groups {
        let streams = |jobs: &[WorkloadConfig]| WorkloadConfig {
            jobs: Some(jobs.to_vec()),
            ..WorkloadConfig::default()
        };
        let label = group.names.join("+");
        if !group.ramp.is_empty() {
            config.phases.push(PhaseSection {
                name: Some(format!("{label} ramp")),
                ..PhaseSection::workload(&streams(&group.ramp))
            });
            // fio leaves ramp I/O out of its figures: the device report starts after it.
            config.phases.push(named(PhaseKind::Measure, format!("{label} measure")));
        }
        let phase = match &group.steady {
            None => PhaseSection { name: Some(label), ..PhaseSection::workload(&streams(&group.streams)) },
            Some(rule) => steady_phase(label, &group.streams, rule, origin, &mut notes)?,
        };
        config.phases.push(phase);
    }
    Ok(notes)
}

/// A group with fio's `ss=`: its streams run in rounds of the check interval (each stream's
/// generator continues from round to round), at most its `runtime`, until fio's criterion holds
/// over the window (`steady_state.rs`).
fn steady_phase(
    label: String,
    streams: &[WorkloadConfig],
    rule: &trimlab_workload::fio::GroupSteady,
    origin: &str,
    notes: &mut Vec<String>,
) -> Result<PhaseSection, ScenarioError> {
    let time_based = |w: &WorkloadConfig| w.runtime.is_some() && w.io_bytes.is_none() && w.ops.is_none();
    if !streams.iter().all(time_based) {
        return Err(ScenarioError::Parse(format!(
            "{origin}: [{label}]: ss= runs the group in rounds of ss_interval of simulated time until steady or runtime ends; give its jobs time_based with runtime"
        )));
    }
    let runtime = streams.iter().filter_map(|w| w.runtime).map(|d| d.0).max().unwrap_or(0);
    let rounds = runtime.div_ceil(rule.interval_ns).max(1);
    if runtime % rule.interval_ns != 0 {
        notes.push(format!(
            "{origin}: [{label}]: runtime is not a whole number of ss_interval samples; the last round runs a whole interval"
        ));
    }
    let round = |w: &WorkloadConfig| WorkloadConfig {
        runtime: Some(trimlab_sim::DurationNs(rule.interval_ns)),
        ..w.clone()
    };
    let jobs: Vec<WorkloadConfig> = streams.iter().map(round).collect();
    let steady = crate::steady_state::SteadyKeys {
        fio: Some(rule.criterion.clone()),
        window: Some(rule.window),
        ramp: Some(rule.ramp),
        ..Default::default()
    };
    Ok(PhaseSection {
        name: Some(label),
        until: Some(crate::steady_state::UNTIL_STEADY.into()),
        repeat: Some(u32::try_from(rounds).unwrap_or(u32::MAX)),
        steady: Some(steady),
        ..PhaseSection::workload(&WorkloadConfig { jobs: Some(jobs), ..WorkloadConfig::default() })
    })
}
