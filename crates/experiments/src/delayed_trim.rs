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
use super::host::{holding_ranges, TRIM_COST_SWEEP_NS};
use super::{parallel_map, Options};
use anyhow::{Context, Result};
use trimlab_device::{DeviceReport, DeviceSection, FtlSection, SsdConfig, TrimSection};
use trimlab_report::{Cell, ExperimentReport, Plot, PlotKind, Series, SeriesStyle, Table};
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
enum Policy {
    Baseline,
    Delayed(BeforeGcCap, BitmapKind),
    WriteOnly,
}

impl Policy {
    fn label(self) -> String {
        match self {
            Policy::Baseline => "Baseline".into(),
            Policy::WriteOnly => "Write-Only".into(),
            Policy::Delayed(cap, BitmapKind::Full) => cap.label(),
            Policy::Delayed(cap, BitmapKind::Partial) => format!("{} (partial bitmap)", cap.label()),
        }
    }
}

fn policies(scale: f64) -> Vec<Policy> {
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
    let trim = TrimSection { engine: Some(engine), cost: Some(cost), delayed };
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
fn measure(point: &Point, seed: u64) -> Result<Outcome> {
    let config = config(point, seed)?;
    let run = trimlab_scenario::run(&config, None, &mut ())
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
    r.gc.busy_ns + r.trim.before_gc_ns
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
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

pub fn run(options: &Options) -> Result<ExperimentReport> {
    let scale = options.scale;
    let list = policies(scale);
    let all = points(scale);
    let sweep_names = [list[1].label(), list[3].label()];
    let cost_sweep_start = list.len() + GAP_SWEEP_NS.len() * 2;
    let idle_gc_start = cost_sweep_start + TRIM_COST_SWEEP_NS.len() * 4 + 1;
    let outcomes: Vec<Outcome> = parallel_map(options, &all, "delayed-trim", |p| measure(p, options.seed))
        .into_iter()
        .collect::<Result<_>>()?;
    let mut idle_gc_off: Vec<&Outcome> = outcomes[idle_gc_start..].iter().collect();
    let idle_gc_on = idle_gc_off.split_off(5);
    let main = &outcomes[..list.len()];
    let base = &main[0].report;
    let base_fg = base.trim.foreground_total_ns.max(1) as f64;
    let base_gc = gc_total_ns(base).max(1) as f64;

    let mut waf = Table::new(
        "fig2_waf",
        "Fig. 2: WAF per policy (host writes after the fill)",
        &["policy", "waf", "waf_paper", "diff_vs_paper_pct", "gc_pages_copied", "nand_blocks_erased"],
    );
    let mut gc = Table::new(
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
        ],
    );
    let mut fig4 = Table::new(
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
    );
    let mut memory = Table::new(
        "trim_memory",
        "Trim-validity bitmap and trim buffer",
        &["policy", "bitmap", "bitmap_bytes_max", "trim_buffer_entries_max", "model_heap_bytes"],
    );
    for (policy, o) in list.iter().zip(main) {
        let r = &o.report;
        let (waf_paper, fg_paper) = paper(*policy);
        let waf_paper_cell = waf_paper.map_or(Cell::Empty, Cell::Num);
        let diff = waf_paper.map_or(Cell::Empty, |w| Cell::Num((r.waf - w) / w * 100.0));
        waf.push_row([
            Cell::Text(policy.label()),
            Cell::Num(r.waf),
            waf_paper_cell,
            diff,
            Cell::Int(r.gc.pages_copied as i64),
            Cell::Int(r.nand_blocks_erased as i64),
        ]);
        let total = gc_total_ns(r);
        gc.push_row([
            Cell::Text(policy.label()),
            Cell::Int(r.gc.invocations as i64),
            Cell::Num(ms(r.gc.busy_ns)),
            Cell::Num(ms(r.trim.before_gc_ns)),
            Cell::Num(ms(total)),
            Cell::Num(total as f64 / base_gc),
            Cell::Num(if r.gc.invocations == 0 { 0.0 } else { total as f64 / r.gc.invocations as f64 / 1e3 }),
        ]);
        let t = &r.trim;
        let share =
            |ns: u64| if *policy == Policy::WriteOnly { Cell::Empty } else { Cell::Num(ns as f64 / base_fg) };
        fig4.push_row([
            Cell::Text(policy.label()),
            share(t.foreground_step1_ns),
            share(t.foreground_step2_ns),
            share(t.foreground_step3_ns),
            share(t.foreground_total_ns),
            fg_paper.map_or(Cell::Empty, Cell::Num),
            Cell::Num(ms(t.foreground_total_ns)),
            Cell::Num(ms(t.idle_total_ns)),
            Cell::Num(ms(t.before_gc_ns)),
            Cell::Num(ms(t.buffer_full_ns)),
            Cell::Text(o.pending_at_writes_text()),
        ]);
        if let Policy::Delayed(_, bitmap) = policy {
            memory.push_row([
                Cell::Text(policy.label()),
                Cell::Text(format!("{bitmap:?}").to_lowercase()),
                Cell::Int(t.bitmap_bytes_max as i64),
                Cell::Int(t.trim_buffer_entries_max as i64),
                Cell::Int(o.heap_bytes as i64),
            ]);
        }
    }

    let mut sweep = Table::new(
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
    );
    for (i, (point, o)) in all.iter().zip(&outcomes[..cost_sweep_start]).skip(list.len()).enumerate() {
        let r = &o.report;
        sweep.push_row([
            Cell::Num(ms(point.idle_gap_ns)),
            Cell::Text(sweep_names[i % 2].clone()),
            Cell::Num(r.waf),
            Cell::Num(ms(r.trim.foreground_total_ns)),
            Cell::Num(ms(r.trim.idle_total_ns)),
            Cell::Num(ms(r.trim.before_gc_ns)),
            Cell::Num(ms(gc_total_ns(r))),
            Cell::Text(o.pending_at_writes_text()),
        ]);
    }

    let labels: Vec<String> = list.iter().map(|p| p.label()).collect();
    let pick = |f: &dyn Fn(&Outcome) -> f64| -> Vec<f64> { main.iter().map(f).collect() };
    // Fig. 4 leaves Write-Only (the last policy) out: it sends no TRIM.
    let trimmed = labels.len() - 1;
    let fg_share = |f: &dyn Fn(&trimlab_device::metrics::TrimReport) -> u64| -> Vec<f64> {
        main[..trimmed].iter().map(|o| f(&o.report.trim) as f64 / base_fg).collect()
    };
    let paper_or_nan = |f: &dyn Fn(Policy) -> Option<f64>| -> Vec<f64> {
        list.iter().map(|&p| f(p).unwrap_or(f64::NAN)).collect()
    };
    let forced_any = main.iter().any(|o| o.report.trim.before_gc_ns > 0);
    let s = |ns: u64| ns as f64 / 1e9;
    let mut plots = vec![
        Plot {
            name: "fig2_waf".into(),
            title: "Fig. 2: WAF per policy".into(),
            x_label: "policy".into(),
            y_label: "write amplification".into(),
            log_y: false,
            kind: PlotKind::Bars {
                categories: labels.clone(),
                series: vec![
                    ("trimlab".into(), pick(&|o| o.report.waf)),
                    ("paper".into(), paper_or_nan(&|p| paper(p).0)),
                ],
            },
        },
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
            kind: PlotKind::Bars {
                categories: labels.clone(),
                // An all-zero series would be an empty legend entry; the title says why it is absent.
                series: if forced_any {
                    vec![
                        ("GC".into(), pick(&|o| s(o.report.gc.busy_ns))),
                        ("forced TRIM before GC".into(), pick(&|o| s(o.report.trim.before_gc_ns))),
                    ]
                } else {
                    vec![("GC".into(), pick(&|o| s(o.report.gc.busy_ns)))]
                },
            },
        },
        Plot {
            name: "fig4_trim_overhead".into(),
            title: "Fig. 4: foreground TRIM overhead by step, share of Baseline".into(),
            x_label: "policy".into(),
            y_label: "share of Baseline's foreground TRIM time".into(),
            log_y: false,
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
    ];

    // Indices into `list`: 0 Baseline, 1 DT-512MB, 2 DT-1GB, 3 DT-ALL, 4 DT-ALL partial, 5 Write-Only.
    let r = |i: usize| &main[i].report;
    let w = |i: usize| r(i).waf;
    let fg = |i: usize| r(i).trim.foreground_total_ns;
    let gct = |i: usize| gc_total_ns(r(i));
    let era = Judged::of([r(0), r(1), r(2), r(3), r(5)]);
    let mut partial_json = serde_json::to_value(r(4))?;
    let mut full_json = serde_json::to_value(r(3))?;
    for v in [&mut partial_json, &mut full_json] {
        v["trim"]["bitmap_bytes"] = serde_json::Value::Null;
        v["trim"]["bitmap_bytes_max"] = serde_json::Value::Null;
    }

    let mut cost_sweep = Table::new(
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
    );
    // The cost sweep's runs, ending with its one Write-Only run (the idle-GC runs follow).
    let swept_outcomes = &outcomes[cost_sweep_start..idle_gc_start];
    let write_only = &swept_outcomes[swept_outcomes.len() - 1].report;
    let mut swept = Vec::new();
    let mut share_lines: [Vec<(f64, f64)>; 3] = Default::default();
    for (&cost, runs) in TRIM_COST_SWEEP_NS.iter().zip(swept_outcomes.chunks(4)) {
        let j = Judged::of([&runs[0].report, &runs[1].report, &runs[2].report, &runs[3].report, write_only]);
        cost_sweep.push_row([
            Cell::Num(cost as f64 / 1e3),
            Cell::Num(runs[0].report.waf),
            Cell::Num(runs[1].report.waf),
            Cell::Num(runs[2].report.waf),
            Cell::Num(runs[3].report.waf),
            Cell::Num(j.fg_shares[0]),
            Cell::Num(j.fg_shares[1]),
            Cell::Num(j.fg_shares[2]),
            Cell::Text(j.waf_order.to_string()),
            Cell::Text(j.waf_in_band.to_string()),
            Cell::Text(j.fg_order.to_string()),
            Cell::Text(j.gc_order.to_string()),
            Cell::Text(j.step1_more.to_string()),
        ]);
        for (line, share) in share_lines.iter_mut().zip(j.fg_shares) {
            line.push(((cost as f64 / 1e3).log10(), share));
        }
        swept.push(j);
    }
    let mut idle_gc = Table::new(
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
    );
    let off_runs: Vec<&DeviceReport> = idle_gc_off.iter().map(|o| &o.report).collect();
    let on_runs: Vec<&DeviceReport> = idle_gc_on.iter().map(|o| &o.report).collect();
    let fg_base = |x: &[&DeviceReport]| x[0].trim.foreground_total_ns.max(1) as f64;
    for (i, (off, on)) in off_runs.iter().zip(&on_runs).enumerate() {
        let share = |x: &[&DeviceReport], r: &DeviceReport| {
            if i == 4 {
                Cell::Empty
            } else {
                Cell::Num(r.trim.foreground_total_ns as f64 / fg_base(x))
            }
        };
        idle_gc.push_row([
            Cell::Text(list[[0, 1, 2, 3, 5][i]].label()),
            Cell::Num(off.waf),
            Cell::Num(on.waf),
            Cell::Num(ms(gc_total_ns(off))),
            Cell::Num(ms(gc_total_ns(on))),
            Cell::Int(on.gc.idle_victims as i64),
            Cell::Int(on.gc.idle_pages_copied as i64),
            share(&off_runs, off),
            share(&on_runs, on),
        ]);
    }
    let idle_on = Judged::of([on_runs[0], on_runs[1], on_runs[2], on_runs[3], on_runs[4]]);
    let idle_gc_victims: u64 = on_runs.iter().map(|r| r.gc.idle_victims).sum();
    let range = |f: &dyn Fn(&Judged) -> bool| {
        holding_ranges(&TRIM_COST_SWEEP_NS, &swept.iter().map(f).collect::<Vec<_>>())
    };
    let [l512, l1g, lall] = share_lines;
    plots.push(Plot {
        name: "trim_cost_sweep".into(),
        title: "Fig. 4's foreground TRIM share vs the cost of one TRIM command".into(),
        x_label: "TRIM cost per command (log10 us)".into(),
        y_label: "share of Baseline's foreground TRIM time".into(),
        log_y: false,
        kind: PlotKind::Lines {
            series: vec![
                Series { label: "DT-512MB (002: 0.10)".into(), points: l512, style: SeriesStyle::Line },
                Series { label: "DT-1GB (002: 0.20)".into(), points: l1g, style: SeriesStyle::Line },
                Series { label: "DT-ALL (002: 0.36)".into(), points: lall, style: SeriesStyle::Line },
            ],
        },
    });
    let step1_floor = TrimCostModel::openssd_002().step1_ns(1) as f64
        / TrimCostModel::openssd_002().single_range_ns(TRIM_COMMAND_BYTES / 4096) as f64;
    let verdicts = vec![
        bands::shape(
            "Fig. 2: WAF Write-Only > DT-512MB > DT-1GB > DT-ALL ≈ Baseline (within 1 %)",
            era.waf_order,
            format!(
                "Write-Only {:.4}, DT-512MB {:.4}, DT-1GB {:.4}, DT-ALL {:.4}, Baseline {:.4}; {}",
                w(5),
                w(1),
                w(2),
                w(3),
                w(0),
                range(&|j| j.waf_order)
            ),
        ),
        bands::band(
            "Fig. 2: WAF values 1.2 / 1.05 / 1.04 / 1.02 / 1.02 (Write-Only, DT-512MB, DT-1GB, DT-ALL, Baseline)",
            "each within 0.15",
            era.waf_order,
            era.waf_in_band,
            format!("Baseline {:.3} vs 1.02, Write-Only {:.3} vs 1.2; {}", w(0), w(5), range(&|j| j.waf_in_band)),
        ),
        bands::shape(
            "Fig. 4: foreground TRIM overhead DT-512MB < DT-1GB < DT-ALL < Baseline",
            era.fg_order,
            format!(
                "shares of Baseline: DT-512MB {:.3}, DT-1GB {:.3}, DT-ALL {:.3}; {}",
                era.fg_shares[0],
                era.fg_shares[1],
                era.fg_shares[2],
                range(&|j| j.fg_order)
            ),
        ),
        bands::direction_only(
            "Fig. 4: foreground TRIM falls to ~10 % (DT-512MB), ~20 % (DT-1GB), ~36 % (DT-ALL) of Baseline",
            era.fg_order && era.fg_shares.iter().all(|&x| x < 1.0),
            format!(
                "shares {:.3} / {:.3} / {:.3}; step 1 of a 1 MiB TRIM is {:.1} % of Baseline's here",
                era.fg_shares[0],
                era.fg_shares[1],
                era.fg_shares[2],
                step1_floor * 100.0
            ),
            "002 puts 80 % of a TRIM in steps 2-3, so step 1 is 20 % of Baseline, and says Delayed TRIM's step 1 costs more than Baseline's: every delayed share is then > 0.20, yet DT-512MB is ~0.10 and DT-1GB ~0.20",
        ),
        bands::shape(
            "Fig. 4: Delayed TRIM's step 1 costs more than Baseline's step 1",
            era.step1_more,
            format!(
                "step 1: Baseline {:.2} ms, DT-ALL {:.2} ms; {}",
                ms(base.trim.foreground_step1_ns),
                ms(r(3).trim.foreground_step1_ns),
                range(&|j| j.step1_more)
            ),
        ),
        bands::shape(
            "Fig. 3: Baseline has the lowest total GC time; DT-ALL's is a little higher (forced TRIM), DT-1GB and DT-512MB higher still",
            era.gc_order && gct(0) <= gct(4),
            format!(
                "total GC ms: Baseline {:.1}, DT-ALL {:.1}, DT-1GB {:.1}, DT-512MB {:.1}, Write-Only {:.1}; {}",
                ms(gct(0)),
                ms(gct(3)),
                ms(gct(2)),
                ms(gct(1)),
                ms(gct(5)),
                range(&|j| j.gc_order)
            ),
        ),
        bands::shape(
            "The partial trim bitmap gives results identical to the full one",
            partial_json == full_json,
            format!(
                "DT-ALL full bitmap {} B vs partial at most {} B",
                r(3).trim.bitmap_bytes_max,
                r(4).trim.bitmap_bytes_max
            ),
        ),
    ];
    let _ = fg;

    let page = 4096u64;
    let logical = main[0].report.logical_pages * page;
    let idle_gc_note = format!(
        "Idle-time GC (table idle_gc; off on 002's drive, on by default on nvme-tlc): with 20 ms gaps in simulated time at scale {}, it reclaimed {idle_gc_victims} blocks; WAF Baseline {:.4} -> {:.4}, Write-Only {:.4} -> {:.4}; orderings with it on: WAF {}, Fig. 4 {}. Idle GC needs the dies idle: at small scales the write buffer's backlog alone outlasts the gap and it does nothing.",
        scale * GAP_SWEEP_SCALE, off_runs[0].waf, on_runs[0].waf, off_runs[4].waf, on_runs[4].waf, idle_on.waf_order, idle_on.fg_order
    );
    let notes = vec![
        idle_gc_note,
        format!(
            "Full trim-validity bitmap: {} per TiB of logical space at our 4 KiB mapping unit, {} at the 16 KiB pages of 002's DaisyPlus (002: about 8 MB per 1 TB); for this {:.1} GiB drive {} bytes.",
            ByteSize(trimlab_trim::full_bitmap_bytes(1 << 40, page)),
            ByteSize(trimlab_trim::full_bitmap_bytes(1 << 40, 16 << 10)),
            logical as f64 / GIB,
            trimlab_trim::full_bitmap_bytes(logical, page)
        ),
        "The pre-GC cap is a budget per busy period that refills when the device goes idle (002 does not say per what; per GC invocation it would drain any backlog within a few GCs and the caps could not differ in WAF).".into(),
        format!(
            "Idle gap {} ms, idle threshold {} ms; TRIM commands of {} each. 002 states neither; the sweep table shows how the results move with the gap: at 0 ms the engine can only defer to GC, at 1 s everything drains at idle and every cap gives Baseline's WAF.",
            ms(IDLE_GAP_NS),
            ms(IDLE_THRESHOLD_NS),
            ByteSize(TRIM_COMMAND_BYTES)
        ),
        "Foreground TRIM time = step 1 at the command + steps 2-3 forced before GC or by a full trim buffer; idle-time work is excluded as in 002's Fig. 4. GC total = GC's own busy time on the dies + forced TRIM work before it.".into(),
        format!(
            "Magnitudes. WAF is {:+.0} % (Baseline) to {:+.0} % (Write-Only) off 002's: our GC starts once the ~25 % of flash left free after the fill is used up and then runs at the filled region's steady state, where greedy GC copies much more than 002's WAF of 1.02 implies; 002 does not say how large the random-write region or the drive's spare area was, so we keep the stated 75 % fill and report the difference. The WAF gaps between policies are what Delayed TRIM decides, and their order matches.",
            (w(0) - 1.02) / 1.02 * 100.0,
            (w(5) - 1.2) / 1.2 * 100.0
        ),
        format!(
            "Magnitudes. Foreground TRIM shares {:.2} / {:.2} / {:.2} (DT-512MB / DT-1GB / DT-ALL) vs 002's 0.10 / 0.20 / 0.36: step 1 alone is {:.0} % of Baseline's time with 1 MiB commands (the cost model puts 82 % of a 1 MiB TRIM in steps 2-3, as 002 measures), so no delayed policy can go below that floor here; larger TRIM commands or a longer idle gap lower every share (see the sweep).",
            fg(1) as f64 / base_fg,
            fg(2) as f64 / base_fg,
            fg(3) as f64 / base_fg,
            r(3).trim.foreground_step1_ns as f64 / base_fg * 100.0
        ),
    ];
    let params = vec![
        ("seed".into(), options.seed.to_string()),
        ("scale".into(), scale.to_string()),
        ("flash_bytes".into(), ByteSize((FLASH_BYTES * scale) as u64).to_string()),
        ("idle_gap".into(), format!("{} ms", ms(IDLE_GAP_NS))),
        ("trim_command_bytes".into(), ByteSize(TRIM_COMMAND_BYTES).to_string()),
        ("queue_depth".into(), QUEUE_DEPTH.to_string()),
    ];
    Ok(ExperimentReport {
        name: "delayed-trim".into(),
        title: "Delayed TRIM (002): WAF, GC time and foreground TRIM overhead".into(),
        summary: format!(
            "{} of flash (scale {scale}), nvme-tlc timing, 75 % filled; 3 x (TRIM {} + {}, then {} of 4 KiB random writes at QD {QUEUE_DEPTH}), {} ms idle between phases; Baseline, DT-512MB, DT-1GB, DT-ALL (full and partial bitmap), Write-Only.",
            ByteSize((FLASH_BYTES * scale) as u64),
            ByteSize(align(SMALL_TRIM_BYTES * scale, TRIM_COMMAND_BYTES)),
            ByteSize(align(LARGE_TRIM_BYTES * scale, TRIM_COMMAND_BYTES)),
            ByteSize(align(RANDOM_WRITE_BYTES * scale, 4096)),
            ms(IDLE_GAP_NS)
        ),
        paper: vec![
            "Fig. 2 WAF: Write-Only ~1.2 > DT-512MB ~1.05 > DT-1GB ~1.04 > Baseline ~ DT-ALL ~1.02.".into(),
            "Fig. 3 GC latency: Baseline lowest; DT-ALL's GC equals Baseline's but its total is a bit higher (forced TRIM); DT-1GB and DT-512MB clearly higher (more GC).".into(),
            "Fig. 4 foreground TRIM overhead: Step 1 costs more than Baseline's; total ~36 % (DT-ALL), ~20 % (DT-1GB), ~10 % (DT-512MB) of Baseline.".into(),
        ],
        verdicts,
        notes,
        tables: vec![waf, gc, fig4, memory, sweep, cost_sweep, idle_gc],
        plots,
        params,
    })
}
