//! `delayed-trim`: 002's evaluation of Delayed TRIM (Figs. 2-4) on a simulated 32 GB drive.
//!
//! Setup as in 002 §III: fill 75 % of the drive, then three iterations of (TRIM 32 MB, TRIM 2 GB,
//! 10 GB of 4 KiB random writes over the filled region), with an idle gap before and after each
//! phase. Policies: Baseline (immediate TRIM), DT-512MB, DT-1GB, DT-ALL (how much pending TRIM a
//! GC applies first) and Write-Only (the TRIMs are not sent). DT-ALL also runs with the partial
//! bitmap, which must change nothing but the bitmap's memory.
//!
//! The idle gap decides how much of the deferred work idle time absorbs; 002 does not state it.
//! We use 20 ms (the device calls itself idle after 1 ms without a command): long enough to
//! drain part of a 2 GB TRIM, too short to drain all of it, so what the pre-GC cap leaves behind
//! matters. A second table shows the same run at a range of gaps (at a reduced scale).

use super::bands;
use super::host::{ms, paper_level, secs, sweep_holds, sweep_line, sweep_plot, TRIM_COST_SWEEP_NS};
use super::prose::Prose;
use super::table::{flag, table};
use super::{try_parallel_map, Options};
use anyhow::{Context, Result};
use trimlab_device::{DeviceReport, DeviceSection, FtlSection, SsdConfig, TrimSection};
use trimlab_report::{Cell, ExperimentReport, Plot, PlotKind, Table, Verdict};
use trimlab_scenario::phase::{PhaseKind, PhaseSection};
use trimlab_scenario::RunConfig;
use trimlab_sim::{ByteSize, DurationNs};
use trimlab_trim::{BeforeGcCap, BitmapKind, DelayedConfig, EngineKind, TrimCostModel, TrimCostOverrides};
use trimlab_workload::{AccessPattern, Volume, WorkloadConfig};

const GIB: f64 = (1u64 << 30) as f64;
const MIB: f64 = (1u64 << 20) as f64;
/// 002 §III, at scale 1.
const FLASH_BYTES: f64 = 32.0 * GIB;
const FILL_SHARE: f64 = 0.75;
const ITERATIONS: usize = 3;
const SMALL_TRIM_BYTES: f64 = 32.0 * MIB;
const LARGE_TRIM_BYTES: f64 = 2.0 * GIB;
const RANDOM_WRITE_BYTES: f64 = 10.0 * GIB;
/// Each TRIM command names one range of this size (fio's trim with bs=1M); the cost model's
/// 80 % share of steps 2 and 3 is calibrated at this size.
const TRIM_COMMAND_BYTES: u64 = 1 << 20;
const IDLE_GAP_NS: u64 = 20_000_000;
const IDLE_THRESHOLD_NS: u64 = 1_000_000;
const QUEUE_DEPTH: u32 = 32;
const GAP_SWEEP_NS: [u64; 6] = [0, 2_000_000, 10_000_000, 20_000_000, 50_000_000, 1_000_000_000];
const GAP_SWEEP_SCALE: f64 = 0.125;

#[derive(Clone, Copy, PartialEq)]
pub enum Policy {
    Baseline,
    Delayed(BeforeGcCap, BitmapKind),
    WriteOnly,
}

impl Policy {
    pub fn label(self) -> String {
        match self {
            Policy::Baseline => "Baseline".into(),
            Policy::WriteOnly => "Write-Only".into(),
            Policy::Delayed(cap, BitmapKind::Full) => cap.label(),
            Policy::Delayed(cap, BitmapKind::Partial) => format!("{} (partial bitmap)", cap.label()),
        }
    }
}

pub fn policies(scale: f64) -> Vec<Policy> {
    let cap = |bytes: f64| BeforeGcCap::Bytes(((bytes * scale) as u64).max(1 << 20));
    vec![
        Policy::Baseline,
        Policy::Delayed(cap(512.0 * MIB), BitmapKind::Full),
        Policy::Delayed(cap(GIB), BitmapKind::Full),
        Policy::Delayed(BeforeGcCap::All, BitmapKind::Full),
        Policy::Delayed(BeforeGcCap::All, BitmapKind::Partial),
        Policy::WriteOnly,
    ]
}

/// 002's numbers (Fig. 2 WAF; Fig. 4 foreground TRIM overhead as a share of Baseline).
fn paper(policy: Policy) -> (Option<f64>, Option<f64>) {
    match policy {
        Policy::Baseline => (Some(1.02), Some(1.0)),
        Policy::WriteOnly => (Some(1.2), None),
        Policy::Delayed(BeforeGcCap::All, _) => (Some(1.02), Some(0.36)),
        Policy::Delayed(BeforeGcCap::Bytes(b), _) if b >= 1 << 30 => (Some(1.04), Some(0.20)),
        Policy::Delayed(_, _) => (Some(1.05), Some(0.10)),
    }
}

/// One run of the experiment. `idle_gap_ns` and the idle threshold are for scale 1 and shrink
/// with the scale like every volume, so the share of deferred work that idle time absorbs does
/// not depend on the scale.
#[derive(Clone, Copy)]
struct Point {
    scale: f64,
    policy: Policy,
    idle_gap_ns: u64,
    trim_command_ns: Option<u64>,
    idle_gc: bool,
}

impl Point {
    /// The config's file name under `--emit-configs`.
    fn name(&self) -> String {
        let mut name = self.policy.label().to_lowercase().replace([' ', '(', ')'], "-").replace("--", "-");
        name = name.trim_end_matches('-').to_string();
        if let Some(ns) = self.trim_command_ns {
            name = format!("cost-{}us-{name}", ns / 1000);
        }
        if self.idle_gc {
            name = format!("{name}-idle-gc");
        }
        format!("scale{}-gap{}ms-{name}", self.scale, self.idle_gap_ns as f64 / 1e6)
    }
}

fn sections(point: &Point) -> (DeviceSection, FtlSection, TrimSection) {
    let scale = point.scale;
    // nvme-tlc: 8 channels of 8 planes of 1 MiB blocks; 512 blocks a plane make 32 GiB. Smaller
    // scales drop channels before planes get short of blocks (the FTL keeps 4 a plane in reserve).
    let total_blocks = ((FLASH_BYTES * scale) / (256.0 * 4096.0)).round() as u32;
    let (mut channels, mut chips, mut dies) = (8u32, 2u32, 2u32);
    while total_blocks / (channels * chips * dies * 2) < 128 {
        if channels > 1 {
            channels /= 2;
        } else if chips > 1 {
            chips = 1;
        } else if dies > 1 {
            dies = 1;
        } else {
            break;
        }
    }
    let blocks = (total_blocks / (channels * chips * dies * 2)).max(32);
    let device = DeviceSection {
        preset: Some("nvme-tlc".into()),
        channels: Some(channels),
        chips_per_channel: Some(chips),
        dies_per_chip: Some(dies),
        blocks_per_plane: Some(blocks),
        spare_factor: Some(0.07),
        idle_threshold: Some(DurationNs(((IDLE_THRESHOLD_NS as f64 * scale) as u64).max(1))),
        ..Default::default()
    };
    let (engine, delayed) = match point.policy {
        Policy::Baseline | Policy::WriteOnly => (EngineKind::Immediate, None),
        Policy::Delayed(before_gc, bitmap) => {
            (EngineKind::Delayed, Some(DelayedConfig { before_gc, bitmap, ..DelayedConfig::default() }))
        }
    };
    // 002's era: the Cosmos+ OpenSSD whose TRIM split (steps 2+3 = 80 %) the 002 cost model is;
    // the sweep replaces its per-command cost.
    let era = TrimCostOverrides::all(&TrimCostModel::openssd_002());
    let cost = TrimCostOverrides { command_ns: point.trim_command_ns.or(era.command_ns), ..era };
    let trim = TrimSection {
        engine: Some(engine),
        cost: Some(cost),
        engines: TrimSection::keys_of(EngineKind::Delayed, delayed.as_ref()),
    };
    // 002's OpenSSD firmware collects only on demand; idle-time GC is the sensitivity run's.
    let ftl = FtlSection { idle_gc: Some(point.idle_gc), ..Default::default() };
    (device, ftl, trim)
}

/// The run as a config: fill 75 % sequentially, an idle gap, then (measured) three iterations
/// of TRIM 32 MB, TRIM 2 GB, an idle gap, 10 GB of page-sized random writes over the filled
/// region and another gap (all volumes times the scale). Each iteration trims data not trimmed
/// before: consecutive slices of the filled region. `trimlab run` of it gives this point.
fn config(point: &Point, seed: u64) -> Result<RunConfig> {
    let (device, ftl, trim) = sections(point);
    let resolved = SsdConfig::resolve(&device, &ftl, &trim)?;
    let (capacity, page) = (resolved.logical_bytes(), resolved.geometry.page_bytes as u64);
    let scale = point.scale;
    let fill_bytes = align(capacity as f64 * FILL_SHARE, TRIM_COMMAND_BYTES);
    let small = align(SMALL_TRIM_BYTES * scale, TRIM_COMMAND_BYTES);
    let large = align(LARGE_TRIM_BYTES * scale, TRIM_COMMAND_BYTES);
    let writes = align(RANDOM_WRITE_BYTES * scale, page);
    let gap = DurationNs((point.idle_gap_ns as f64 * scale) as u64);
    let base = WorkloadConfig {
        region_bytes: Some(ByteSize(fill_bytes)),
        queue_depth: QUEUE_DEPTH,
        ..Default::default()
    };
    let named = |mut phase: PhaseSection, name: String| {
        phase.name = Some(name);
        phase
    };
    let idle = |name: &str| {
        named(PhaseSection { duration: Some(gap), ..PhaseSection::new(PhaseKind::Idle) }, name.into())
    };
    let workload = |w: WorkloadConfig, stream: &str, name: String| {
        let phase = PhaseSection { stream: Some(stream.into()), ..PhaseSection::workload(&w) };
        named(phase, name)
    };
    let fill = WorkloadConfig {
        pattern: AccessPattern::Sequential,
        block_bytes: ByteSize(128 << 10),
        writes: Volume::Bytes(fill_bytes),
        ..base.clone()
    };
    let random = WorkloadConfig {
        pattern: AccessPattern::UniformRandom,
        block_bytes: ByteSize(page),
        writes: Volume::Bytes(writes),
        ..base.clone()
    };
    let mut phases =
        vec![workload(fill, "fill", "fill".into()), idle("gap"), PhaseSection::new(PhaseKind::Measure)];
    for iteration in 0..ITERATIONS as u64 {
        let offset = iteration * (small + large);
        if point.policy != Policy::WriteOnly {
            for (at, bytes, what) in [(offset, small, "small"), (offset + small, large, "large")] {
                let burst = PhaseSection {
                    offset: Some(ByteSize(at)),
                    bytes: Some(ByteSize(bytes)),
                    command_bytes: Some(ByteSize(TRIM_COMMAND_BYTES)),
                    ..PhaseSection::new(PhaseKind::TrimBurst)
                };
                phases.push(named(burst, format!("trim {what} {}", iteration + 1)));
            }
        }
        phases.push(idle(PENDING_PHASE));
        phases.push(workload(random.clone(), "writes", format!("random writes {}", iteration + 1)));
        phases.push(idle("gap"));
    }
    Ok(RunConfig {
        seed: Some(seed),
        seed_path: Some("delayed-trim".into()),
        device,
        ftl,
        trim,
        workload: base,
        phases,
        ..Default::default()
    })
}

/// The idle gap before each iteration's writes: what it leaves pending is what GC meets.
const PENDING_PHASE: &str = "gap before writes";

/// Every point of the experiment as a named configuration.
pub fn configs(options: &Options) -> Vec<(String, RunConfig)> {
    points(options.scale)
        .into_iter()
        .filter_map(|p| config(&p, options.seed).ok().map(|c| (p.name(), c)))
        .collect()
}

struct Outcome {
    report: DeviceReport,
    /// Pages still pending when each iteration's random-write phase began.
    pending_at_writes: Vec<u64>,
    heap_bytes: u64,
}

impl Outcome {
    fn pending_at_writes_text(&self) -> String {
        self.pending_at_writes.iter().map(u64::to_string).collect::<Vec<_>>().join(" / ")
    }
}

fn align(bytes: f64, to: u64) -> u64 {
    ((bytes as u64) / to).max(1) * to
}

/// Runs `point` through the scenario layer, exactly as `trimlab run` runs its config.
fn measure(point: &Point, options: &Options) -> Result<Outcome> {
    let config = config(point, options.seed)?;
    let run = super::point::run(options, &config)
        .with_context(|| format!("delayed-trim point {}", point.name()))?;
    let phases = run.metrics["phases"].as_array().cloned().unwrap_or_default();
    let pending_at_writes = phases
        .iter()
        .filter(|p| p["name"] == PENDING_PHASE)
        .map(|p| p["trim_pending_pages"].as_u64().unwrap_or(0))
        .collect();
    let heap_bytes = run.metrics["model_heap_bytes"].as_u64().unwrap_or(0);
    Ok(Outcome { report: run.report, pending_at_writes, heap_bytes })
}

/// 002's claims evaluated on one set of runs: Baseline, DT-512MB, DT-1GB, DT-ALL, Write-Only.
struct Judged {
    waf_order: bool,
    waf_in_band: bool,
    fg_order: bool,
    /// Foreground TRIM time of DT-512MB, DT-1GB, DT-ALL as shares of Baseline's.
    fg_shares: [f64; 3],
    gc_order: bool,
    step1_more: bool,
}

impl Judged {
    fn of(r: [&DeviceReport; 5]) -> Judged {
        let [base, d512, d1g, dall, wo] = r;
        let near = |a: f64, b: f64| (a - b).abs() / b <= 0.01;
        let fg = |x: &DeviceReport| x.trim.foreground_total_ns;
        let base_fg = fg(base).max(1) as f64;
        let gct = |x: &DeviceReport| gc_total_ns(x);
        let paper_waf = [1.02, 1.05, 1.04, 1.02, 1.2];
        Judged {
            waf_order: wo.waf > d512.waf
                && d512.waf > d1g.waf
                && d1g.waf > dall.waf
                && near(dall.waf, base.waf),
            waf_in_band: r.iter().zip(paper_waf).all(|(x, p)| bands::waf_within(x.waf, p)),
            fg_order: fg(d512) < fg(d1g) && fg(d1g) < fg(dall) && fg(dall) < fg(base),
            fg_shares: [fg(d512) as f64 / base_fg, fg(d1g) as f64 / base_fg, fg(dall) as f64 / base_fg],
            gc_order: [d512, d1g, dall, wo].iter().all(|x| gct(base) <= gct(x))
                && gct(dall) <= gct(d1g)
                && gct(d1g) <= gct(d512),
            step1_more: [d512, d1g, dall]
                .iter()
                .all(|x| x.trim.foreground_step1_ns > base.trim.foreground_step1_ns),
        }
    }
}

fn gc_total_ns(r: &DeviceReport) -> u64 {
    r.gc.busy_ns + r.trim.figure("before_gc_ns")
}

/// Every run, in the order `run` reads them: the policies at scale; the idle-gap sweep (DT-512MB
/// and DT-ALL per gap) and the TRIM-cost sweep (Baseline, DT-512MB, DT-1GB, DT-ALL per cost,
/// then Write-Only once: it sends no TRIM) at the sweep's scale; then idle-time GC off and on.
fn points(scale: f64) -> Vec<Point> {
    let point = |scale, policy, idle_gap_ns, trim_command_ns, idle_gc| Point {
        scale,
        policy,
        idle_gap_ns,
        trim_command_ns,
        idle_gc,
    };
    let mut points: Vec<Point> =
        policies(scale).into_iter().map(|p| point(scale, p, IDLE_GAP_NS, None, false)).collect();
    // The sweep's caps shrink with its scale; rows keep the scale-1 names.
    let sweep_scale = scale * GAP_SWEEP_SCALE;
    let sweep_list = policies(sweep_scale);
    for &gap in &GAP_SWEEP_NS {
        for &p in &[sweep_list[1], sweep_list[3]] {
            points.push(point(sweep_scale, p, gap, None, false));
        }
    }
    for &cost in &TRIM_COST_SWEEP_NS {
        for &p in &sweep_list[..4] {
            points.push(point(sweep_scale, p, IDLE_GAP_NS, Some(cost), false));
        }
    }
    points.push(point(sweep_scale, sweep_list[5], IDLE_GAP_NS, None, false));
    // Idle-time GC off and on (on is the nvme-tlc preset's default; 002's drive has none).
    // Reclaiming a block takes the same time at any scale, so these runs keep the scale-1 idle
    // gap of 20 ms in simulated time instead of shrinking it with the volumes.
    let idle_gap_unscaled = (IDLE_GAP_NS as f64 / sweep_scale) as u64;
    for on in [false, true] {
        for i in [0, 1, 2, 3, 5] {
            points.push(point(sweep_scale, sweep_list[i], idle_gap_unscaled, None, on));
        }
    }
    points
}

pub const PROSE: Prose = Prose(include_str!("delayed_trim.md"));

pub fn run(options: &Options) -> Result<ExperimentReport> {
    let scale = options.scale;
    let list = policies(scale);
    let outcomes = try_parallel_map(options, &points(scale), "delayed-trim", |p| measure(p, options))?;
    let runs = Runs::split(outcomes, &list);
    let swept = runs.swept();
    Ok(ExperimentReport {
        name: "delayed-trim".into(),
        title: "Delayed TRIM (002): WAF, GC time and foreground TRIM overhead".into(),
        summary: summary(scale, &runs.names),
        paper: PROSE.items("paper"),
        verdicts: verdicts(&runs, &swept)?,
        notes: notes(&runs, scale),
        tables: vec![
            waf_table(&list, &runs.main),
            gc_table(&list, &runs.main),
            fig4_table(&list, &runs.main),
            memory_table(&list, &runs.main),
            gap_sweep_table(scale, &list, &runs.gap_sweep),
            cost_sweep_table(scale, &runs.cost_sweep, &swept),
            idle_gc_table(scale, &list, &runs),
        ],
        plots: plots(&list, &runs.main, &swept),
        params: vec![
            ("seed".into(), options.seed.to_string()),
            ("scale".into(), scale.to_string()),
            ("flash_bytes".into(), ByteSize((FLASH_BYTES * scale) as u64).to_string()),
            ("idle_gap".into(), format!("{} ms", ms(IDLE_GAP_NS))),
            ("trim_command_bytes".into(), ByteSize(TRIM_COMMAND_BYTES).to_string()),
            ("queue_depth".into(), QUEUE_DEPTH.to_string()),
        ],
    })
}

/// Every run, in the groups of [`points`].
struct Runs {
    /// The policies at scale: Baseline, DT-512MB, DT-1GB, DT-ALL, DT-ALL with the partial
    /// bitmap, Write-Only.
    main: Vec<Outcome>,
    /// The idle-gap sweep: per gap of `GAP_SWEEP_NS`, DT-512MB then DT-ALL.
    gap_sweep: Vec<Outcome>,
    /// The TRIM-cost sweep: per cost of `TRIM_COST_SWEEP_NS`, Baseline, DT-512MB, DT-1GB and
    /// DT-ALL; and its one Write-Only run (it sends no TRIM).
    cost_sweep: Vec<Outcome>,
    cost_sweep_write_only: Outcome,
    /// Idle-time GC off and on: Baseline, DT-512MB, DT-1GB, DT-ALL, Write-Only.
    idle_gc_off: Vec<Outcome>,
    idle_gc_on: Vec<Outcome>,
    /// The two capped policies' names at the run's scale, as its bars and tables label them
    /// ("DT-51MB" for 002's DT-512MB at scale 0.1): every sentence about this run's figures
    /// uses these (issue 43: bars said DT-51MB beside text that said DT-512MB).
    names: [String; 2],
}

impl Runs {
    /// The outcomes of [`points`] (`policies` of them at scale first), in its groups.
    fn split(mut main: Vec<Outcome>, list: &[Policy]) -> Runs {
        let mut gap_sweep = main.split_off(list.len());
        let mut cost_sweep = gap_sweep.split_off(GAP_SWEEP_NS.len() * 2);
        let mut idle_gc_off = cost_sweep.split_off(TRIM_COST_SWEEP_NS.len() * 4 + 1);
        let cost_sweep_write_only = cost_sweep.pop().expect("the cost sweep ends with Write-Only");
        let idle_gc_on = idle_gc_off.split_off(5);
        assert_eq!(idle_gc_on.len(), 5, "points() ends with idle-time GC off and on, 5 policies each");
        let names = [list[1].label(), list[2].label()];
        Runs { main, gap_sweep, cost_sweep, cost_sweep_write_only, idle_gc_off, idle_gc_on, names }
    }

    /// The report of `main`'s policy `i`: 0 Baseline, 1 DT-512MB, 2 DT-1GB, 3 DT-ALL, 4 DT-ALL
    /// partial, 5 Write-Only.
    fn main(&self, i: usize) -> &DeviceReport {
        &self.main[i].report
    }

    /// 002's claims on the policies at scale.
    fn era(&self) -> Judged {
        Judged::of([0, 1, 2, 3, 5].map(|i| self.main(i)))
    }

    /// 002's claims at each cost of the TRIM-cost sweep.
    fn swept(&self) -> Vec<Judged> {
        let write_only = &self.cost_sweep_write_only.report;
        let judge =
            |r: &[Outcome]| Judged::of([&r[0].report, &r[1].report, &r[2].report, &r[3].report, write_only]);
        self.cost_sweep.chunks(4).map(judge).collect()
    }
}

/// Baseline's foreground TRIM time (at least 1 ns) in a group of runs that starts with Baseline:
/// what Fig. 4's shares divide by.
fn baseline_fg_ns(runs: &[Outcome]) -> f64 {
    runs[0].report.trim.foreground_total_ns.max(1) as f64
}

/// A scaled size as a reader writes it ("3.2GiB", as ByteSize writes whole sizes), where [`ByteSize`] would print a scaled
/// size that is no whole number of KiB in bytes ("3435973836B", issue 43).
fn readable_bytes(bytes: f64) -> String {
    let units = [(1u64 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    match units.iter().find(|(size, _)| bytes >= *size as f64) {
        Some(&(size, name)) => {
            format!("{}{name}", trimlab_report::format_display((bytes / size as f64 * 10.0).round() / 10.0))
        }
        None => format!("{bytes}B"),
    }
}

/// The policies as this run names them; where the scale changed the caps' sizes, 002's names too.
fn policies_text(names: &[String; 2]) -> String {
    let paper = ["DT-512MB", "DT-1GB"];
    let mut text = format!("Baseline, {}, {}", names[0], names[1]);
    if names.iter().zip(paper).any(|(n, p)| n != p) {
        text.push_str(&format!(" (002's {} and {}, their buffers scaled)", paper[0], paper[1]));
    }
    text + ", DT-ALL (full and partial bitmap), Write-Only"
}

pub fn summary(scale: f64, names: &[String; 2]) -> String {
    PROSE.item(
        "summary",
        &[
            ("flash", &readable_bytes(FLASH_BYTES * scale)),
            ("scale", &scale),
            ("small_trim", &ByteSize(align(SMALL_TRIM_BYTES * scale, TRIM_COMMAND_BYTES))),
            ("large_trim", &ByteSize(align(LARGE_TRIM_BYTES * scale, TRIM_COMMAND_BYTES))),
            ("random_writes", &ByteSize(align(RANDOM_WRITE_BYTES * scale, 4096))),
            ("queue_depth", &QUEUE_DEPTH),
            ("idle_gap_ms", &ms(IDLE_GAP_NS)),
            ("policies", &policies_text(names)),
        ],
    )
}

fn waf_table(list: &[Policy], main: &[Outcome]) -> Table {
    table(
        "fig2_waf",
        "Fig. 2: WAF per policy (host writes after the fill)",
        &["policy", "waf", "waf_paper", "diff_vs_paper_pct", "gc_pages_copied", "nand_blocks_erased"],
        list.iter().zip(main).map(|(policy, o)| {
            let r = &o.report;
            let waf_paper = paper(*policy).0;
            [
                Cell::Text(policy.label()),
                Cell::Num(r.waf),
                waf_paper.map_or(Cell::Empty, Cell::Num),
                waf_paper.map_or(Cell::Empty, |w| Cell::Num((r.waf - w) / w * 100.0)),
                Cell::Int(r.gc.pages_copied as i64),
                Cell::Int(r.nand_blocks_erased as i64),
            ]
        }),
    )
}

fn gc_table(list: &[Policy], main: &[Outcome]) -> Table {
    let base_gc = gc_total_ns(&main[0].report).max(1) as f64;
    table(
        "fig3_gc_latency",
        "Fig. 3: GC time, total and per GC, with the TRIM work forced before GC",
        &[
            "policy",
            "gc_invocations",
            "gc_busy_ms",
            "forced_trim_ms",
            "gc_total_ms",
            "gc_total_vs_baseline",
            "gc_per_invocation_us",
            "victims_per_invocation",
        ],
        list.iter().zip(main).map(|(policy, o)| {
            let r = &o.report;
            let total = gc_total_ns(r);
            [
                Cell::Text(policy.label()),
                Cell::Int(r.gc.invocations as i64),
                Cell::Num(ms(r.gc.busy_ns)),
                Cell::Num(ms(r.trim.figure("before_gc_ns"))),
                Cell::Num(ms(total)),
                Cell::Num(total as f64 / base_gc),
                Cell::Num(if r.gc.invocations == 0 {
                    0.0
                } else {
                    total as f64 / r.gc.invocations as f64 / 1e3
                }),
                Cell::Num(victims_per_invocation(r)),
            ]
        }),
    )
}

/// Blocks reclaimed per GC invocation: where the policies differ, since the number of
/// invocations follows the host's writes (see the notes).
fn victims_per_invocation(r: &DeviceReport) -> f64 {
    if r.gc.invocations == 0 {
        0.0
    } else {
        r.gc.victims as f64 / r.gc.invocations as f64
    }
}

fn fig4_table(list: &[Policy], main: &[Outcome]) -> Table {
    let base_fg = baseline_fg_ns(main);
    table(
        "fig4_trim_overhead",
        "Fig. 4: foreground TRIM overhead by step (idle-time work excluded), share of Baseline's total",
        &[
            "policy",
            "step1",
            "step2",
            "step3",
            "total",
            "total_paper",
            "foreground_ms",
            "idle_ms",
            "before_gc_ms",
            "buffer_full_ms",
            "pending_pages_at_writes",
        ],
        list.iter().zip(main).map(|(policy, o)| {
            let t = &o.report.trim;
            let share = |ns: u64| {
                if *policy == Policy::WriteOnly {
                    Cell::Empty
                } else {
                    Cell::Num(ns as f64 / base_fg)
                }
            };
            [
                Cell::Text(policy.label()),
                share(t.foreground_step1_ns),
                share(t.foreground_step2_ns),
                share(t.foreground_step3_ns),
                share(t.foreground_total_ns),
                paper(*policy).1.map_or(Cell::Empty, Cell::Num),
                Cell::Num(ms(t.foreground_total_ns)),
                Cell::Num(ms(t.figure("idle_total_ns"))),
                Cell::Num(ms(t.figure("before_gc_ns"))),
                Cell::Num(ms(t.figure("buffer_full_ns"))),
                Cell::Text(o.pending_at_writes_text()),
            ]
        }),
    )
}

/// The trim-validity bitmap and trim buffer of the Delayed TRIM policies.
fn memory_table(list: &[Policy], main: &[Outcome]) -> Table {
    table(
        "trim_memory",
        "Trim-validity bitmap and trim buffer",
        &["policy", "bitmap", "bitmap_bytes_max", "trim_buffer_entries_max", "model_heap_bytes"],
        list.iter().zip(main).filter_map(|(policy, o)| {
            let Policy::Delayed(_, bitmap) = policy else { return None };
            let t = &o.report.trim;
            Some([
                Cell::Text(policy.label()),
                Cell::Text(format!("{bitmap:?}").to_lowercase()),
                Cell::Int(t.figure("bitmap_bytes_max") as i64),
                Cell::Int(t.figure("trim_buffer_entries_max") as i64),
                Cell::Int(o.heap_bytes as i64),
            ])
        }),
    )
}

fn gap_sweep_table(scale: f64, list: &[Policy], gap_sweep: &[Outcome]) -> Table {
    let names = [list[1].label(), list[3].label()];
    table(
        "idle_gap_sweep",
        format!("Sensitivity to the idle gap between phases (scale {})", scale * GAP_SWEEP_SCALE),
        &[
            "idle_gap_ms_at_scale_1",
            "policy",
            "waf",
            "foreground_trim_ms",
            "idle_trim_ms",
            "before_gc_ms",
            "gc_total_ms",
            "pending_pages_at_writes",
        ],
        gap_sweep.iter().enumerate().map(|(i, o)| {
            let r = &o.report;
            [
                Cell::Num(ms(GAP_SWEEP_NS[i / 2])),
                Cell::Text(names[i % 2].clone()),
                Cell::Num(r.waf),
                Cell::Num(ms(r.trim.foreground_total_ns)),
                Cell::Num(ms(r.trim.figure("idle_total_ns"))),
                Cell::Num(ms(r.trim.figure("before_gc_ns"))),
                Cell::Num(ms(gc_total_ns(r))),
                Cell::Text(o.pending_at_writes_text()),
            ]
        }),
    )
}

fn cost_sweep_table(scale: f64, cost_sweep: &[Outcome], swept: &[Judged]) -> Table {
    table(
        "trim_cost_sweep",
        format!(
            "Sensitivity: each claim at each per-command TRIM cost (scale {}, 002's per-page costs kept)",
            scale * GAP_SWEEP_SCALE
        ),
        &[
            "trim_command_us",
            "waf_baseline",
            "waf_dt_512mb",
            "waf_dt_1gb",
            "waf_dt_all",
            "fg_share_dt_512mb",
            "fg_share_dt_1gb",
            "fg_share_dt_all",
            "waf_order",
            "waf_in_band",
            "fg_order",
            "gc_order",
            "step1_more",
        ],
        TRIM_COST_SWEEP_NS.iter().zip(cost_sweep.chunks(4)).zip(swept).map(|((&cost, runs), j)| {
            let mut row = vec![Cell::Num(cost as f64 / 1e3)];
            row.extend(runs.iter().map(|o| Cell::Num(o.report.waf)));
            row.extend(j.fg_shares.map(Cell::Num));
            row.extend([j.waf_order, j.waf_in_band, j.fg_order, j.gc_order, j.step1_more].map(flag));
            row
        }),
    )
}

fn idle_gc_table(scale: f64, list: &[Policy], runs: &Runs) -> Table {
    table(
        "idle_gc",
        format!(
            "Idle-time GC on vs off (scale {}, 002's TRIM costs, {} ms idle gaps in simulated time)",
            scale * GAP_SWEEP_SCALE,
            ms(IDLE_GAP_NS)
        ),
        &[
            "policy",
            "waf_off",
            "waf_on",
            "gc_total_ms_off",
            "gc_total_ms_on",
            "idle_gc_victims",
            "idle_gc_pages_copied",
            "fg_trim_share_off",
            "fg_trim_share_on",
        ],
        runs.idle_gc_off.iter().zip(&runs.idle_gc_on).enumerate().map(|(i, (off, on))| {
            // Write-Only (the last) sends no TRIM.
            let share = |x: &[Outcome], r: &DeviceReport| {
                if i == 4 {
                    Cell::Empty
                } else {
                    Cell::Num(r.trim.foreground_total_ns as f64 / baseline_fg_ns(x))
                }
            };
            let (off, on) = (&off.report, &on.report);
            [
                Cell::Text(list[[0, 1, 2, 3, 5][i]].label()),
                Cell::Num(off.waf),
                Cell::Num(on.waf),
                Cell::Num(ms(gc_total_ns(off))),
                Cell::Num(ms(gc_total_ns(on))),
                Cell::Int(on.gc.idle_victims as i64),
                Cell::Int(on.gc.idle_pages_copied as i64),
                share(&runs.idle_gc_off, off),
                share(&runs.idle_gc_on, on),
            ]
        }),
    )
}

fn plots(list: &[Policy], main: &[Outcome], swept: &[Judged]) -> Vec<Plot> {
    let labels: Vec<String> = list.iter().map(|p| p.label()).collect();
    let base_fg = baseline_fg_ns(main);
    let pick = |f: &dyn Fn(&Outcome) -> f64| -> Vec<f64> { main.iter().map(f).collect() };
    // Fig. 4 leaves Write-Only (the last policy) out: it sends no TRIM.
    let trimmed = labels.len() - 1;
    let fg_share = |f: &dyn Fn(&trimlab_device::metrics::TrimReport) -> u64| -> Vec<f64> {
        main[..trimmed].iter().map(|o| f(&o.report.trim) as f64 / base_fg).collect()
    };
    let paper_or_nan = |f: &dyn Fn(Policy) -> Option<f64>| -> Vec<f64> {
        list.iter().map(|&p| f(p).unwrap_or(f64::NAN)).collect()
    };
    vec![
        Plot {
            name: "fig2_waf".into(),
            title: "Fig. 2: WAF per policy".into(),
            x_label: "policy".into(),
            y_label: "write amplification".into(),
            log_y: false,
            log_x: false,
            symlog_y: false,
            kind: PlotKind::Bars {
                categories: labels.clone(),
                series: vec![
                    ("trimlab".into(), pick(&|o| o.report.waf)),
                    ("paper".into(), paper_or_nan(&|p| paper(p).0)),
                ],
            },
        },
        gc_plot(&labels, main),
        Plot {
            name: "fig4_trim_overhead".into(),
            title: "Fig. 4: foreground TRIM overhead by step, share of Baseline".into(),
            x_label: "policy".into(),
            y_label: "share of Baseline's foreground TRIM time".into(),
            log_y: false,
            log_x: false,
            symlog_y: false,
            kind: PlotKind::Bars {
                categories: labels[..trimmed].to_vec(),
                series: vec![
                    ("step 1".into(), fg_share(&|t| t.foreground_step1_ns)),
                    ("step 2".into(), fg_share(&|t| t.foreground_step2_ns)),
                    ("step 3".into(), fg_share(&|t| t.foreground_step3_ns)),
                    ("total".into(), fg_share(&|t| t.foreground_total_ns)),
                    ("paper total".into(), paper_or_nan(&|p| paper(p).1)[..trimmed].to_vec()),
                ],
            },
        },
        cost_sweep_plot(swept),
    ]
}

/// Fig. 3: GC time and the TRIM work forced before GC, per policy.
fn gc_plot(labels: &[String], main: &[Outcome]) -> Plot {
    let pick = |f: &dyn Fn(&Outcome) -> f64| -> Vec<f64> { main.iter().map(f).collect() };
    let forced_any = main.iter().any(|o| o.report.trim.figure("before_gc_ns") > 0);
    Plot {
        name: "fig3_gc_latency".into(),
        // GC runs for minutes, forced TRIM work for tens of ms: only a log axis shows both.
        // Their sum (002's "total") is in the table; on this axis it sits on the GC point.
        title: if forced_any {
            "Fig. 3: GC time and the TRIM work forced before GC (total in the table)".into()
        } else {
            "Fig. 3: GC time (no policy forced TRIM work before GC: GC is the total)".into()
        },
        x_label: "policy".into(),
        y_label: "seconds (summed over dies, log)".into(),
        log_y: true,
        log_x: false,
        symlog_y: false,
        kind: PlotKind::Bars {
            categories: labels.to_vec(),
            // An all-zero series would be an empty legend entry; the title says why it is absent.
            series: if forced_any {
                vec![
                    ("GC".into(), pick(&|o| secs(o.report.gc.busy_ns))),
                    ("forced TRIM before GC".into(), pick(&|o| secs(o.report.trim.figure("before_gc_ns")))),
                ]
            } else {
                vec![("GC".into(), pick(&|o| secs(o.report.gc.busy_ns)))]
            },
        },
    }
}

/// Fig. 4's shares of DT-512MB, DT-1GB and DT-ALL against the swept cost of one TRIM command.
fn cost_sweep_plot(swept: &[Judged]) -> Plot {
    let line = |label: &str, k: usize| sweep_line(label, swept, |j: &Judged| j.fg_shares[k]);
    sweep_plot(
        "trim_cost_sweep",
        "Fig. 4's foreground TRIM share vs the cost of one TRIM command",
        "share of Baseline's foreground TRIM time",
        vec![
            line("DT-512MB", 0),
            line("DT-1GB", 1),
            line("DT-ALL", 2),
            paper_level("DT-512MB (002): 0.10", 0.10),
            paper_level("DT-1GB (002): 0.20", 0.20),
            paper_level("DT-ALL (002): 0.36", 0.36),
        ],
    )
}

fn verdicts(runs: &Runs, swept: &[Judged]) -> Result<Vec<Verdict>> {
    let era = runs.era();
    let mut verdicts = Vec::from(waf_verdicts(runs, &era, swept));
    verdicts.extend(fg_verdicts(runs, &era, swept));
    verdicts.push(gc_verdict(runs, &era, swept));
    verdicts.push(bitmap_verdict(runs)?);
    Ok(verdicts)
}

/// Fig. 2: WAF's order and values.
fn waf_verdicts(runs: &Runs, era: &Judged, swept: &[Judged]) -> [Verdict; 2] {
    let w = |i: usize| runs.main(i).waf;
    let [small, large] = &runs.names;
    [
        bands::shape(
            &format!("Fig. 2: WAF Write-Only > {small} > {large} > DT-ALL ≈ Baseline (within 1 %)"),
            era.waf_order,
            format!(
                "Write-Only {:.4}, {small} {:.4}, {large} {:.4}, DT-ALL {:.4}, Baseline {:.4}; {}",
                w(5),
                w(1),
                w(2),
                w(3),
                w(0),
                sweep_holds(swept, |j| j.waf_order)
            ),
        ),
        bands::band(
            &format!("Fig. 2: WAF values 1.2 / 1.05 / 1.04 / 1.02 / 1.02 (Write-Only, {small}, {large}, DT-ALL, Baseline)"),
            "each within 0.15",
            era.waf_order,
            era.waf_in_band,
            format!("Baseline {:.3} vs 1.02, Write-Only {:.3} vs 1.2; {}", w(0), w(5), sweep_holds(swept, |j| j.waf_in_band)),
        ),
    ]
}

/// Fig. 4: foreground TRIM overhead, its order, its values and step 1.
fn fg_verdicts(runs: &Runs, era: &Judged, swept: &[Judged]) -> [Verdict; 3] {
    let step1_floor = TrimCostModel::openssd_002().step1_ns(1) as f64
        / TrimCostModel::openssd_002().single_range_ns(TRIM_COMMAND_BYTES / 4096) as f64;
    let [dt_512mb, dt_1gb, dt_all] = era.fg_shares;
    let [small, large] = &runs.names;
    [
        bands::shape(
            &format!("Fig. 4: foreground TRIM overhead {small} < {large} < DT-ALL < Baseline"),
            era.fg_order,
            format!(
                "shares of Baseline: {small} {dt_512mb:.3}, {large} {dt_1gb:.3}, DT-ALL {dt_all:.3}; {}",
                sweep_holds(swept, |j| j.fg_order)
            ),
        ),
        bands::direction_only(
            &format!("Fig. 4: foreground TRIM falls to ~10 % ({small}), ~20 % ({large}), ~36 % (DT-ALL) of Baseline"),
            era.fg_order && era.fg_shares.iter().all(|&x| x < 1.0),
            format!(
                "shares {dt_512mb:.3} / {dt_1gb:.3} / {dt_all:.3}; step 1 of a 1 MiB TRIM is {:.1} % of Baseline's here",
                step1_floor * 100.0
            ),
            &format!("002 puts 80 % of a TRIM in steps 2-3, so step 1 is 20 % of Baseline, and says Delayed TRIM's step 1 costs more than Baseline's: every delayed share is then > 0.20, yet {small} is ~0.10 and {large} ~0.20"),
        ),
        bands::shape(
            "Fig. 4: Delayed TRIM's step 1 costs more than Baseline's step 1",
            era.step1_more,
            format!(
                "step 1: Baseline {:.2} ms, DT-ALL {:.2} ms; {}",
                ms(runs.main(0).trim.foreground_step1_ns),
                ms(runs.main(3).trim.foreground_step1_ns),
                sweep_holds(swept, |j| j.step1_more)
            ),
        ),
    ]
}

/// Fig. 3: the order of total GC time.
fn gc_verdict(runs: &Runs, era: &Judged, swept: &[Judged]) -> Verdict {
    let gct = |i: usize| ms(gc_total_ns(runs.main(i)));
    let [small, large] = &runs.names;
    bands::shape(
        &format!("Fig. 3: Baseline has the lowest total GC time; DT-ALL's is a little higher (forced TRIM), {large} and {small} higher still"),
        era.gc_order && gc_total_ns(runs.main(0)) <= gc_total_ns(runs.main(4)),
        format!(
            "total GC ms: Baseline {:.1}, DT-ALL {:.1}, {large} {:.1}, {small} {:.1}, Write-Only {:.1}; {}",
            gct(0),
            gct(3),
            gct(2),
            gct(1),
            gct(5),
            sweep_holds(swept, |j| j.gc_order)
        ),
    )
}

/// DT-ALL with the partial bitmap reports what it reports with the full one, but for the
/// bitmap's size.
fn bitmap_verdict(runs: &Runs) -> Result<Verdict> {
    let (full, partial) = (runs.main(3), runs.main(4));
    let mut partial_json = serde_json::to_value(partial)?;
    let mut full_json = serde_json::to_value(full)?;
    for v in [&mut partial_json, &mut full_json] {
        v["trim"]["bitmap_bytes"] = serde_json::Value::Null;
        v["trim"]["bitmap_bytes_max"] = serde_json::Value::Null;
    }
    Ok(bands::shape(
        "The partial trim bitmap gives results identical to the full one",
        partial_json == full_json,
        format!(
            "DT-ALL full bitmap {} B vs partial at most {} B",
            full.trim.figure("bitmap_bytes_max"),
            partial.trim.figure("bitmap_bytes_max")
        ),
    ))
}

fn notes(runs: &Runs, scale: f64) -> Vec<String> {
    let r = |i: usize| runs.main(i);
    let (off, on) = (&runs.idle_gc_off, &runs.idle_gc_on);
    let idle_on = Judged::of([0, 1, 2, 3, 4].map(|i| &on[i].report));
    let idle_gc_victims: u64 = on.iter().map(|o| o.report.gc.idle_victims).sum();
    let page = 4096u64;
    let logical = r(0).logical_pages * page;
    let vs_paper = |waf: f64, paper: f64| format!("{:+.0}", (waf - paper) / paper * 100.0);
    let base_fg = baseline_fg_ns(&runs.main);
    let share = |i: usize| format!("{:.2}", r(i).trim.foreground_total_ns as f64 / base_fg);
    PROSE.filled(
        "notes",
        &[
            ("sweep_scale", &(scale * GAP_SWEEP_SCALE)),
            ("idle_gc_victims", &idle_gc_victims),
            ("waf_base_off", &format!("{:.4}", off[0].report.waf)),
            ("waf_base_on", &format!("{:.4}", on[0].report.waf)),
            ("waf_wo_off", &format!("{:.4}", off[4].report.waf)),
            ("waf_wo_on", &format!("{:.4}", on[4].report.waf)),
            ("waf_order_on", &idle_on.waf_order),
            ("fg_order_on", &idle_on.fg_order),
            ("bitmap_per_tib_4k", &ByteSize(trimlab_trim::full_bitmap_bytes(1 << 40, page))),
            ("bitmap_per_tib_16k", &ByteSize(trimlab_trim::full_bitmap_bytes(1 << 40, 16 << 10))),
            ("logical_gib", &format!("{:.1}", logical as f64 / GIB)),
            ("bitmap_bytes", &trimlab_trim::full_bitmap_bytes(logical, page)),
            ("idle_gap_ms", &ms(IDLE_GAP_NS)),
            ("idle_threshold_ms", &ms(IDLE_THRESHOLD_NS)),
            ("trim_command", &ByteSize(TRIM_COMMAND_BYTES)),
            ("waf_base_vs_paper_pct", &vs_paper(r(0).waf, 1.02)),
            ("waf_wo_vs_paper_pct", &vs_paper(r(5).waf, 1.2)),
            ("share_dt_512mb", &share(1)),
            ("share_dt_1gb", &share(2)),
            ("share_dt_all", &share(3)),
            ("dt_small", &runs.names[0]),
            ("dt_large", &runs.names[1]),
            ("step1_pct", &format!("{:.0}", r(3).trim.foreground_step1_ns as f64 / base_fg * 100.0)),
            ("gc_invocations", &r(0).gc.invocations),
            ("victims_base", &format!("{:.2}", victims_per_invocation(r(0)))),
            ("victims_wo", &format!("{:.2}", victims_per_invocation(r(5)))),
            (
                "per_gc_base_ms",
                &format!("{:.1}", gc_total_ns(r(0)) as f64 / r(0).gc.invocations.max(1) as f64 / 1e6),
            ),
            (
                "per_gc_wo_ms",
                &format!("{:.1}", gc_total_ns(r(5)) as f64 / r(5).gc.invocations.max(1) as f64 / 1e6),
            ),
        ],
    )
}
