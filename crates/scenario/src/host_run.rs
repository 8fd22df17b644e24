//! A run with `[host] fs = "ext4"`: mkfs on the chosen device, the phases (or the one
//! `[workload]`) on the mounted file system, then umount and the full consistency check.
//! Each phase reports its simulated span, the commands and bytes that reached the device, the
//! file system's utilization and the figures its workload measures.

use crate::config::Resolved;
use crate::host::{parse_discard, HostPlan};
use crate::phase::{PhaseKind, PhaseSection};
use crate::stack::Device;
use crate::ScenarioError;
use serde_json::{json, Map, Value};
use trimlab_device::{DeviceReport, Metered, Recording, ThinVolume, Traffic};
use trimlab_fs::{FileSystem, FsConfig, FsError};
use trimlab_sim::{SeedTree, SimTime};
use trimlab_workload::file::{
    age, delete_down_to, fill, run_file_workload, set_utilization, FileShape, FileState,
};
use trimlab_workload::script::{with_interpreter, Script};
use trimlab_workload::{Progress, WorkloadConfig, WorkloadKind};

type Fs = FileSystem<Metered<Device>>;

/// What the file-system run adds to metrics.json, the SSD's report (default for a thin volume)
/// and, on an SSD, its latency histograms and time series.
pub(crate) struct HostOutcome {
    pub metrics: Map<String, Value>,
    pub report: DeviceReport,
    pub series: Option<crate::run::Series>,
}

pub(crate) fn run(
    resolved: &Resolved,
    plan: &HostPlan,
    seeds: SeedTree,
    interval_ns: Option<u64>,
    progress: &mut dyn Progress,
    record: Option<Box<dyn std::io::Write + Send>>,
) -> Result<HostOutcome, ScenarioError> {
    let mut fs = mkfs(resolved, plan, interval_ns, record)?;
    let mkfs_ns = fs.now().ns();
    let mut state = FileState::new(seeds);
    fs.set_hash_seed(mkfs_hash_seed(&mut state));
    let mut reports = vec![entry(&fs, "mkfs", "mkfs", SimTime::ZERO, Traffic::default())];
    let (mut fs, failed) = run_phases(fs, resolved, plan, &mut state, &mut reports, progress)?;
    let end_of_phases = fs.now();
    let traffic0 = fs.device().traffic;
    fs.device_mut().mark_phase(end_of_phases, "umount");
    fs.umount();
    reports.push(entry(&fs, "umount", "umount", end_of_phases, traffic0));
    if let Some(r) = fs.device_mut().recording.take() {
        r.finish().map_err(|e| ScenarioError::Run(format!("--record: {e}")))?;
    }
    fs.check().map_err(|e| ScenarioError::Run(format!("consistency check after the run failed: {e}")))?;
    let end = fs.now();
    let mut metrics = Map::new();
    let policy = fs.policy();
    metrics.insert(
        "host".into(),
        json!({
            "fs": "ext4",
            "discard": policy.kind().label(),
            "mkfs_ns": mkfs_ns,
            "phases_end_ns": end_of_phases.ns(),
            "umount_end_ns": end.ns(),
            "utilization": fs.utilization(),
            "stats": fs.stats(),
            "policy": policy.stats(),
            "freed_unusable_mean_s": policy.stats().unusable_mean_s(),
            "calls": fs.call_latencies(),
            "device": fs.device().traffic,
        }),
    );
    metrics.insert("phases".into(), Value::Array(reports));
    if let Some(e) = failed {
        metrics.insert("error".into(), json!(e));
    }
    let (report, series) = match &mut fs.device_mut().device {
        // mkfs, the phases and umount all reach the SSD; its series covers them from the last
        // `measure` phase (or mkfs), like its report.
        Device::Ssd(ssd) => (ssd.report(end), Some(crate::run::Series::finish(ssd, end))),
        Device::Thin(t) => {
            metrics
                .insert("thin".into(), json!({ "allocated_bytes": t.allocated_bytes(), "stats": t.stats() }));
            (DeviceReport::default(), None)
        }
    };
    Ok(HostOutcome { metrics, report, series })
}

/// The device (an SSD, or the thin volume), its recording if `run --record` asked for one,
/// and mkfs on it.
fn mkfs(
    resolved: &Resolved,
    plan: &HostPlan,
    interval_ns: Option<u64>,
    record: Option<Box<dyn std::io::Write + Send>>,
) -> Result<Fs, ScenarioError> {
    let device = match &resolved.thin {
        Some(t) => Device::Thin(ThinVolume::new(t.clone()).map_err(ScenarioError::Run)?),
        None => Device::Ssd(crate::run::new_ssd(resolved, interval_ns)),
    };
    let mut metered = Metered::new(device);
    if let Some(out) = record {
        let recording = Recording::start(out).map_err(|e| ScenarioError::Run(format!("--record: {e}")))?;
        metered.recording = Some(recording);
        metered.mark_phase(SimTime::ZERO, "mkfs");
    }
    FileSystem::mkfs(metered, plan.fs.clone(), SimTime::ZERO, plan.mkfs_discard)
        .map_err(|e| ScenarioError::Run(format!("mkfs: {e}")))
}

/// Runs the phases (the `[[phase]]` list, or the implicit one), each reported in `reports`. A
/// script's failing line ends them: what ran before it is reported, and its error returned
/// beside the file system (metrics.json carries it and the run exits non-zero).
fn run_phases(
    mut fs: Fs,
    resolved: &Resolved,
    plan: &HostPlan,
    state: &mut FileState,
    reports: &mut Vec<Value>,
    progress: &mut dyn Progress,
) -> Result<(Fs, Option<String>), ScenarioError> {
    let capacity = match &resolved.thin {
        Some(t) => t.capacity_bytes,
        None => resolved.device.logical_bytes(),
    };
    let implicit = implicit_phases(resolved);
    let phases = if resolved.phases.is_empty() { &implicit[..] } else { &resolved.phases[..] };
    for (i, (phase, workload)) in phases.iter().enumerate() {
        let at = |e: &dyn std::fmt::Display| format!("phase[{i}] ({}): {e}", phase.label());
        if phase.kind == PhaseKind::Ops {
            if let Err(e) = run_script(&mut fs, phase, state, reports) {
                return Ok((fs, Some(at(&e))));
            }
        } else {
            let (start, traffic0) = (fs.now(), fs.device().traffic);
            fs.device_mut().mark_phase(start, &phase.label());
            let (next, figures) = run_phase(fs, i, phase, workload.as_ref(), plan, state, capacity)
                .map_err(|e| ScenarioError::Run(at(&e)))?;
            fs = next;
            let mut e = entry(&fs, &phase.label(), phase.kind.name(), start, traffic0);
            if let Some(w) = workload {
                e["workload"] = json!(w.kind.name());
            }
            e["figures"] =
                Value::Object(figures.into_iter().map(|(k, v)| (k.to_string(), json!(v))).collect());
            reports.push(e);
        }
        progress.update(1000 * (i as u64 + 1) / phases.len() as u64);
    }
    Ok((fs, None))
}

/// A `mkfs` phase: umount, mkfs on the same device (a new hash seed), no live files.
fn mkfs_again(mut fs: Fs, config: FsConfig, discard: bool, state: &mut FileState) -> Result<Fs, FsError> {
    fs.umount();
    let now = fs.now();
    let mut fs = FileSystem::mkfs(fs.into_device(), config, now, discard)?;
    fs.set_hash_seed(mkfs_hash_seed(state));
    state.live.clear();
    Ok(fs)
}

/// ext4's directory hash seed, which mke2fs draws at random for each file system: here from
/// the run's seed (stream `mkfs.hash_seed`, a new draw per mkfs), so that runs with other
/// seeds see what other mkfs runs would (the order `rm -r` unlinks in, Orlov's spread).
fn mkfs_hash_seed(state: &mut FileState) -> u64 {
    use rand::RngCore;
    state.with_stream("mkfs.hash_seed", |rng, _| rng.next_u64())
}

/// The phases of a run without `[[phase]]`: its `[workload]` as one phase, or a script's
/// phases (its `phase` lines split it).
fn implicit_phases(resolved: &Resolved) -> Vec<(PhaseSection, Option<WorkloadConfig>)> {
    let w = &resolved.workload;
    if w.kind == WorkloadKind::Script {
        let ops = PhaseSection {
            name: Some("script".into()),
            operations: w.operations.clone(),
            script: w.script.clone(),
            stream: w.stream.clone(),
            ..PhaseSection::new(PhaseKind::Ops)
        };
        return vec![(ops, None)];
    }
    vec![(PhaseSection::new(PhaseKind::Workload), Some(w.clone()))]
}

/// One entry of metrics.json's `phases`: the span, what reached the device, utilization.
fn entry(fs: &Fs, name: &str, kind: &str, start: SimTime, traffic0: Traffic) -> Value {
    let mut e = json!({
        "name": name,
        "kind": kind,
        "start_ns": start.ns(),
        "end_ns": fs.now().ns(),
        "elapsed_ns": fs.now().since(start),
        "device": fs.device().traffic.since(&traffic0),
        "utilization": fs.utilization(),
    });
    if let Device::Thin(t) = &fs.device().device {
        e["allocated_bytes"] = json!(t.allocated_bytes());
    }
    e
}

/// Runs an `ops` phase: each part between its `phase` lines is reported as a phase of its own
/// (the part before the first `phase` line under the phase's own label).
fn run_script(
    fs: &mut Fs,
    phase: &PhaseSection,
    state: &mut FileState,
    reports: &mut Vec<Value>,
) -> Result<(), String> {
    let origin = phase.script.clone().unwrap_or_else(|| "operations".into());
    let script =
        Script::parse(phase.operations.as_deref().unwrap_or(""), &origin).map_err(|e| e.to_string())?;
    with_interpreter(fs, state, phase.stream.as_deref(), |it, fs| {
        for part in script.phases() {
            let (start, traffic0, ops0) = (fs.now(), fs.device().traffic, it.file_ops);
            let name = part.name.unwrap_or_else(|| phase.label());
            fs.device_mut().mark_phase(start, &name);
            let result = it.run(fs, &script, &part.lines);
            let mut e = entry(fs, &name, "ops", start, traffic0);
            e["figures"] = json!({ "file_ops": it.file_ops - ops0 });
            reports.push(e);
            result.map_err(|e| e.to_string())?;
        }
        Ok(())
    })
}

/// A phase's file shape: the keys it sets, the aging defaults for the rest, and a prefix of
/// its own so that files of two phases never share a name.
fn shape(phase: &PhaseSection, index: usize) -> FileShape {
    let keys = WorkloadConfig {
        prefix: Some(phase.prefix.clone().unwrap_or_else(|| format!("p{index}_"))),
        file_bytes_min: phase.file_bytes_min,
        file_bytes_max: phase.file_bytes_max,
        append_bytes: phase.append_bytes,
        hole_bytes: phase.hole_bytes,
        ..WorkloadConfig::default()
    };
    FileShape::aging(&keys)
}

/// The file system with `discard` (and its fstrim period) replacing the policy of `base`.
fn with_policy(base: &FsConfig, discard: Option<&str>) -> Result<FsConfig, FsError> {
    let mut config = base.clone();
    if let Some(text) = discard {
        let (policy, period) = parse_discard(text).map_err(FsError::Layout)?;
        config.policy = policy;
        if let Some(p) = period {
            config.params.fstrim_period_ns = p;
        }
    }
    Ok(config)
}

type Figures = Vec<(&'static str, u64)>;

fn run_phase(
    mut fs: Fs,
    index: usize,
    phase: &PhaseSection,
    workload: Option<&WorkloadConfig>,
    plan: &HostPlan,
    state: &mut FileState,
    capacity: u64,
) -> Result<(Fs, Figures), FsError> {
    let stream = phase.stream.clone().unwrap_or_else(|| "aging".into());
    let mut figures = Vec::new();
    match phase.kind {
        PhaseKind::Fill => {
            let (s, target) = (shape(phase, index), phase.utilization.unwrap_or(1.0));
            state.with_stream(&stream, |rng, live| -> Result<(), FsError> {
                let names = fill(
                    &mut fs,
                    rng,
                    &s.prefix,
                    s.min_bytes,
                    s.max_bytes,
                    s.chunk_bytes,
                    s.hole_bytes,
                    target,
                )?;
                live.extend(names);
                Ok(())
            })?;
        }
        PhaseKind::Age => {
            let (s, target) = (shape(phase, index), phase.utilization.unwrap_or(0.9));
            state.with_stream(&stream, |rng, live| age(&mut fs, rng, live, &s, target))?;
        }
        PhaseKind::Delete => {
            let target = phase.utilization.unwrap_or(0.0);
            state.with_stream(&stream, |rng, live| -> Result<(), FsError> {
                *live = delete_down_to(&mut fs, rng, std::mem::take(live), target)?;
                Ok(())
            })?;
        }
        PhaseKind::Utilization => {
            let (s, target) = (shape(phase, index), phase.utilization.unwrap_or(0.0));
            state.with_stream(&stream, |rng, live| set_utilization(&mut fs, rng, live, &s, target))?;
        }
        PhaseKind::Idle => fs.idle_until(fs.now().after(phase.duration.map_or(0, |d| d.0))),
        PhaseKind::Workload => {
            let w =
                workload.ok_or_else(|| FsError::Layout("a workload phase without its workload".into()))?;
            figures = run_file_workload(&mut fs, w, state, capacity)?;
        }
        PhaseKind::Fstrim => {
            let trimmed = fs.fstrim(0, u64::MAX, phase.minlen_bytes.map_or(0, |b| b.0));
            figures.push(("trimmed_bytes", trimmed));
        }
        PhaseKind::Remount => {
            let config = with_policy(fs.config(), phase.discard.as_deref())?;
            fs.remount_with(config.policy, config.params);
        }
        PhaseKind::Mkfs => {
            let config = with_policy(&plan.fs, phase.discard.as_deref())?;
            fs = mkfs_again(fs, config, phase.mkfs_discard.unwrap_or(false), state)?;
        }
        PhaseKind::Sync => fs.sync(),
        PhaseKind::Measure => {
            fs.quiesce();
            let now = fs.now();
            if let Device::Ssd(ssd) = &mut fs.device_mut().device {
                ssd.start_measurement(now);
            }
        }
        // Validation keeps trim-burst off a file system; ops phases run through run_script.
        PhaseKind::TrimBurst | PhaseKind::Ops => return Err(FsError::Invalid(phase.kind.name().into())),
    }
    Ok((fs, figures))
}
