//! Shared set-up of the host-side experiments: every point is a `RunConfig` (the drive, the
//! file system, the workload or phases) run through `point::run` (the scenario entry), and the
//! figures are read back from its metrics, so `--emit-configs` writes exactly what was run. The drive of
//! each point is its paper's era preset, and the TRIM-cost sweep they all run is a `[trim.cost]`
//! override of the point's config.

use anyhow::{Context, Result};
use serde_json::Value;
use trimlab_device::{DeviceSection, FtlSection, SsdConfig, TrimSection};
use trimlab_fs::PolicyKind;
use trimlab_report::{Plot, PlotKind, Series, SeriesStyle};
use trimlab_scenario::host::{FsKind, HostSection};
use trimlab_scenario::phase::{PhaseKind, PhaseSection};
use trimlab_scenario::RunConfig;
use trimlab_sim::ByteSize;
use trimlab_trim::TrimCostOverrides;

/// A drive of the `preset` (each experiment names its paper's era) holding `logical_bytes`,
/// with 64-page blocks so that a drive of a few hundred MiB still has many blocks per plane;
/// the preset's parallelism is fitted to the capacity (`SsdConfig::geometry_note` says how).
/// `trim_command_ns` replaces the preset's per-command TRIM cost (the sweep's knob, written as
/// `[trim.cost] command_ns`); `idle_gc` forces idle-time GC on or off (`None`: the preset's).
pub fn ssd(
    preset: &str,
    logical_bytes: u64,
    trim_command_ns: Option<u64>,
    idle_gc: Option<bool>,
) -> RunConfig {
    let device = DeviceSection {
        preset: Some(preset.into()),
        logical_bytes: Some(ByteSize(logical_bytes)),
        pages_per_block: Some(64),
        ..Default::default()
    };
    let ftl = FtlSection { track_data: Some(true), idle_gc, ..Default::default() };
    let trim = TrimSection {
        cost: trim_command_ns.map(|ns| TrimCostOverrides { command_ns: Some(ns), ..Default::default() }),
        ..TrimSection::default()
    };
    RunConfig { device, ftl, trim, ..RunConfig::default() }
}

/// The resolved drive of [`ssd`].
pub fn ssd_config(
    preset: &str,
    logical_bytes: u64,
    trim_command_ns: Option<u64>,
    idle_gc: Option<bool>,
) -> Result<SsdConfig> {
    let c = ssd(preset, logical_bytes, trim_command_ns, idle_gc);
    Ok(SsdConfig::resolve(&c.device, &c.ftl, &c.trim)?)
}

/// One line for a report: the preset, its fitted shape and its TRIM cost.
pub fn describe(preset: &str, logical_bytes: u64) -> Result<String> {
    let c = ssd_config(preset, logical_bytes, None, None)?;
    let g = &c.geometry;
    let t = &c.trim_cost;
    Ok(format!(
        "{preset} fitted to {}: {} ch x {} chips x {} dies x {} planes, {} blocks of {} x {} B pages per plane, spare {:.3} (GC sees {:.3}), {} TRIM of {} us per command + {:.2} us per mapped page, idle-time GC {}",
        mib(logical_bytes),
        g.channels,
        g.chips_per_channel,
        g.dies_per_chip,
        g.planes_per_die,
        g.blocks_per_plane,
        g.pages_per_block,
        g.page_bytes,
        c.spare_factor,
        c.spare_factor_seen_by_gc(),
        if c.trim_queued { "queued" } else { "non-queued" },
        t.command_ns / 1000,
        (t.map_lookup_ns + t.map_invalidate_ns) as f64 / 1e3,
        if c.idle_gc_free_blocks > 0 { format!("on (to {} free blocks per plane)", c.idle_gc_free_blocks) } else { "off".into() }
    ))
}

/// The TRIM-cost sweep of lazy-trim, selective-trim and delayed-trim: per-command cost from
/// 5 us to 5 ms, log-spaced (a factor of 10^(1/2) apart).
pub const TRIM_COST_SWEEP_NS: [u64; 7] = [5_000, 15_811, 50_000, 158_114, 500_000, 1_581_139, 5_000_000];

/// A sweep point's name suffix for `--emit-configs`: `-trim5us`, `-trim1581us`.
pub fn cost_suffix(ns: u64) -> String {
    format!("-trim{}us", ns / 1000)
}

/// Over which costs of [`TRIM_COST_SWEEP_NS`] `claim` holds, given what was judged at each cost
/// (see [`holding_ranges`]).
pub fn sweep_holds<J>(swept: &[J], claim: impl Fn(&J) -> bool) -> String {
    holding_ranges(&TRIM_COST_SWEEP_NS, &swept.iter().map(claim).collect::<Vec<_>>())
}

/// A line of what was judged at each cost of [`TRIM_COST_SWEEP_NS`]: x is the cost in
/// microseconds (drawn on a log axis by [`sweep_plot`]); y is `y` of the judgement at that cost.
pub fn sweep_line<J>(label: &str, swept: &[J], y: impl Fn(&J) -> f64) -> Series {
    Series {
        label: label.into(),
        points: TRIM_COST_SWEEP_NS.iter().zip(swept).map(|(&cost, j)| (cost as f64 / 1e3, y(j))).collect(),
        style: SeriesStyle::Line,
    }
}

/// The paper's value as a labelled reference line across the swept costs: the paper reports
/// one figure at its own (unknown) TRIM cost, so it is a level to compare each point with.
pub fn paper_level(label: &str, y: f64) -> Series {
    let (first, last) = (TRIM_COST_SWEEP_NS[0], TRIM_COST_SWEEP_NS[TRIM_COST_SWEEP_NS.len() - 1]);
    Series {
        label: format!("paper {label}"),
        points: vec![(first as f64 / 1e3, y), (last as f64 / 1e3, y)],
        style: SeriesStyle::Dashed,
    }
}

/// A plot of `lines` ([`sweep_line`], [`paper_level`]) against the swept cost of one TRIM
/// command, on a log axis (the sweep spans three decades).
pub fn sweep_plot(name: &str, title: &str, y_label: &str, lines: Vec<Series>) -> Plot {
    Plot {
        name: name.into(),
        title: title.into(),
        x_label: "TRIM cost per command (µs)".into(),
        y_label: y_label.into(),
        log_y: false,
        log_x: true,
        symlog_y: false,
        kind: PlotKind::Lines { series: lines },
    }
}

/// "holds from X to Y" over a sweep: the contiguous runs of costs at which a claim held.
pub fn holding_ranges(costs_ns: &[u64], holds: &[bool]) -> String {
    let mut runs: Vec<(u64, u64)> = Vec::new();
    let mut start: Option<u64> = None;
    for (i, (&c, &h)) in costs_ns.iter().zip(holds).enumerate() {
        match (h, start) {
            (true, None) => start = Some(c),
            (false, Some(s)) => {
                runs.push((s, costs_ns[i - 1]));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        runs.push((s, *costs_ns.last().unwrap_or(&s)));
    }
    if runs.is_empty() {
        return "holds at no swept cost (5 us to 5 ms per TRIM)".into();
    }
    let fmt = |ns: u64| {
        if ns >= 1_000_000 {
            format!("{:.2} ms", ns as f64 / 1e6)
        } else {
            format!("{:.0} us", ns as f64 / 1e3)
        }
    };
    let parts: Vec<String> = runs
        .iter()
        .map(
            |&(a, b)| {
                if a == b {
                    format!("at {}", fmt(a))
                } else {
                    format!("from {} to {}", fmt(a), fmt(b))
                }
            },
        )
        .collect();
    format!("holds {} per TRIM (swept 5 us to 5 ms)", parts.join(" and "))
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

pub fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}
