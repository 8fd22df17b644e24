//! Shared set-up of the host-side experiments: every point is a `RunConfig` (the drive, the
//! file system, the workload or phases) run through `trimlab_scenario::run`, and the figures
//! are read back from its metrics, so `--emit-configs` writes exactly what was run.

use anyhow::{Context, Result};
use serde_json::Value;
use trimlab_device::{DeviceSection, FtlSection, TrimSection};
use trimlab_fs::PolicyKind;
use trimlab_scenario::host::{FsKind, HostSection};
use trimlab_scenario::phase::{PhaseKind, PhaseSection};
use trimlab_scenario::RunConfig;
use trimlab_sim::ByteSize;
use trimlab_trim::TrimCostModel;

/// An `nvme-tlc`-timed drive of `logical_bytes` (2-4 channels, 64-page blocks, 7 % spare); `sata` makes TRIM non-queued (a 2011-era SATA SSD:
/// each TRIM drains the queue and blocks the commands behind it) with a SATA II link.
pub fn ssd(logical_bytes: u64, sata: bool) -> RunConfig {
    ssd_with_trim_command_ns(logical_bytes, sata, None)
}

/// As [`ssd`], with the controller time of TRIM step 1 per command replaced (a sensitivity
/// knob: drives differ widely in what one TRIM costs).
pub fn ssd_with_trim_command_ns(logical_bytes: u64, sata: bool, trim_command_ns: Option<u64>) -> RunConfig {
    let mut device = DeviceSection {
        preset: Some("nvme-tlc".into()),
        logical_bytes: Some(ByteSize(logical_bytes)),
        // Fewer channels than the preset (4, or 2 below 1 GiB) and 64-page blocks, so a drive
        // of a few hundred MiB still has many blocks per plane at the preset's 7 % spare.
        channels: Some(if logical_bytes < 1 << 30 { 2 } else { 4 }),
        pages_per_block: Some(64),
        ..Default::default()
    };
    if sata {
        device.trim_queued = Some(false);
        device.queue_depth = Some(32);
        device.host_transfer_ps_per_byte = Some(3_333);
    }
    let ftl = FtlSection { track_data: Some(true), ..Default::default() };
    let trim = TrimSection {
        cost: trim_command_ns.map(|command_ns| TrimCostModel { command_ns, ..TrimCostModel::default() }),
        ..TrimSection::default()
    };
    RunConfig { device, ftl, trim, ..RunConfig::default() }
}

/// `[host]` of the ext4-like file system with `policy` and its defaults otherwise.
pub fn ext4(policy: PolicyKind) -> HostSection {
    HostSection { fs: Some(FsKind::Ext4), discard: Some(policy.config_name()), ..HostSection::default() }
}

/// A phase of `kind` with the keys `set` fills in.
pub fn phase(kind: PhaseKind, set: impl FnOnce(&mut PhaseSection)) -> PhaseSection {
    let mut p = PhaseSection::new(kind);
    set(&mut p);
    p
}

/// Runs one point and returns its metrics.json content.
pub fn run_point(config: &RunConfig) -> Result<Value> {
    Ok(trimlab_scenario::run(config, None, &mut ())?.metrics)
}

/// An integer at `path` (`/`-separated, as in a JSON pointer) of a run's metrics.
pub fn int(metrics: &Value, path: &str) -> Result<u64> {
    metrics
        .pointer(path)
        .and_then(Value::as_u64)
        .with_context(|| format!("metrics have no integer at {path}"))
}

/// A number at `path` of a run's metrics.
pub fn num(metrics: &Value, path: &str) -> Result<f64> {
    metrics.pointer(path).and_then(Value::as_f64).with_context(|| format!("metrics have no number at {path}"))
}

/// Every point's config as TOML, named `<point>.toml`.
pub fn emit(points: Vec<(String, RunConfig)>) -> Result<Vec<(String, String)>> {
    points.into_iter().map(|(name, c)| Ok((format!("{name}.toml"), c.to_toml()?))).collect()
}

pub fn mib(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{} KiB", bytes >> 10)
    }
}

pub fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}
