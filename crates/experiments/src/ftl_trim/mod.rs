//! `ftl-trim`: 004 (Kim et al., "FTL Design for TRIM Command"): the hybrid FAST FTL with a
//! trimmed-range list against the page-mapping FTL, each with and without TRIM, on 4 channels
//! of K9LAG08U0M NAND, under an OS-install-like and an IOZone-like workload (Tables 2, 3, 4 and
//! E_ftl), plus the GC-below-30 %-free regime, page- vs block-level striping, and the lazy
//! backward map of 004 §4.1.

mod plots;
mod tables;
mod verdicts;

use super::host::secs;
use super::prose::Prose;
use super::{point, try_parallel_map, Options};
use anyhow::{Context, Result};
use trimlab_device::metrics::{FtlDetail, FtlMeasures};
use trimlab_device::{DeviceSection, FtlKind, FtlSection, StripingChoice, TrimSection};
use trimlab_report::ExperimentReport;
use trimlab_scenario::RunConfig;
use trimlab_sim::ByteSize;
use trimlab_workload::cluster_host::PhaseMeter;
use trimlab_workload::kind::{iozone, os_install};
use trimlab_workload::{Volume, WorkloadConfig, WorkloadKind};

/// Blocks per plane at scale 1: the K9LAG08U0M's 2048, so the default device is the paper's
/// 8 GiB (4 chips x 4 planes x 2048 blocks x 128 pages x 2 KiB). Workloads scale with it.
const BLOCKS_PER_PLANE_AT_SCALE_1: f64 = 2048.0;
/// The `k9lag08u0m-4ch` preset's array: 4 channels of one chip with 4 planes, 128 pages of
/// 2 KiB a block.
const PLANES: u64 = 16;
const PAGES_PER_BLOCK: u32 = 128;
const PAGE_BYTES: u64 = 2048;
/// Logical share of the flash (the `k9lag08u0m-4ch` preset's spare factor 0.07).
const LOGICAL_SHARE: f64 = 0.93;
const SPARE_FACTOR: f64 = 0.07;
/// 004 §4.1: GC runs when free space falls under 30 %.
const GC_FREE_SHARE: f64 = 0.30;
/// Incremental GC: an invocation stops once its plane gained this many free blocks.
const GC_GAIN_BLOCKS: u32 = 1;
/// Controller time per command (parsing, scheduling). 004 gives none; 2 us keeps it far below
/// one NAND program (800 us) so it cannot decide any comparison.
const FIRMWARE_NS: u64 = 2_000;
/// OS install: bytes of files written, as a share of the logical capacity
/// (`cluster_host::OS_VOLUME`, the os-install default).
/// IOZone: the installed data before it runs in the GC regime (the other IOZone settings are the
/// iozone kind's defaults, `cluster_host::IOZONE_*`: 45 % image, 10 % file, 4-256 KiB records,
/// 200 ms pauses). 004 gives no utilization; 0.76 is the smallest share in steps of 0.02 at
/// which every phase of both runs keeps free space at the 30 % threshold (checked in the report;
/// 0.62, used before, left the TRIM run's write phase above it).
const IOZONE_GC_IMAGE_SHARE: f64 = 0.76;
/// Hash groups of the trimmed-range list (004 does not give N).
const HBL_GROUPS: u32 = 1024;
/// 004 §4.1: "Sectors requested by TRIM command are only erased in the Forward Mapping table
/// ... The difference is reflected on Backward Mapping table regularly." 004 gives no period;
/// every 4096 trimmed pages (8 MiB) is an assumption, and the eager and reconcile-at-GC-only
/// maps are the sensitivity runs.
const RECONCILE_EVERY_PAGES: u32 = 4096;
/// A "GC running" phase: at least this share of its commands leave free space at or below the
/// GC threshold (30 % of each plane's blocks, rounded up to a block), where every write needs GC.
const GC_REGIME_MIN_SHARE: f64 = 0.9;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Workload {
    OsInstall,
    /// IOZone on a drive with `cluster_host::IOZONE_IMAGE` installed: GC does not run with TRIM.
    Iozone,
    /// IOZone with `IOZONE_GC_IMAGE_SHARE` installed: free space is under 30 % with or without TRIM.
    IozoneGc,
}

impl Workload {
    fn name(self) -> &'static str {
        match self {
            Workload::OsInstall => "os-install",
            Workload::Iozone => "iozone",
            Workload::IozoneGc => "iozone-gc",
        }
    }
}

/// The page FTL's backward map (`[ftl] backward_map`, `reconcile_every_pages`).
#[derive(Clone, Copy, Debug, PartialEq)]
enum BackwardUpdate {
    Eager,
    /// Trimmed pages' backward entries stay stale until reconciled every so many trimmed pages
    /// (0: only when GC examines a block).
    Lazy {
        reconcile_every_pages: u32,
    },
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Ftl {
    Hybrid(StripingChoice),
    Page(StripingChoice, BackwardUpdate),
}

impl Ftl {
    const HYBRID: Ftl = Ftl::Hybrid(StripingChoice::Block);
    /// 004's page-mapping FTL: page-level striping, the backward map reconciled lazily.
    const PAGE: Ftl = Ftl::Page(
        StripingChoice::Page,
        BackwardUpdate::Lazy { reconcile_every_pages: RECONCILE_EVERY_PAGES },
    );

    fn label(self) -> String {
        match self {
            Ftl::Hybrid(StripingChoice::Block) => "hybrid".into(),
            Ftl::Hybrid(StripingChoice::Page) => "hybrid page-striped".into(),
            Ftl::Page(unit, update) => {
                let mut s = String::from("page");
                if unit == StripingChoice::Block {
                    s.push_str(" block-striped");
                }
                match update {
                    BackwardUpdate::Lazy { reconcile_every_pages: RECONCILE_EVERY_PAGES } => {}
                    BackwardUpdate::Eager => s.push_str(" eager"),
                    BackwardUpdate::Lazy { reconcile_every_pages: 0 } => s.push_str(" lazy-at-gc"),
                    BackwardUpdate::Lazy { reconcile_every_pages: n } => {
                        s.push_str(&format!(" lazy-every-{n}"))
                    }
                }
                s
            }
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Point {
    ftl: Ftl,
    trim: bool,
    workload: Workload,
    /// Sensitivity: the host places clusters next-fit instead of reusing freed ones at once.
    next_fit: bool,
}

impl Point {
    fn label(&self) -> String {
        format!(
            "{} {} {}{}",
            self.workload.name(),
            self.ftl.label(),
            if self.trim { "TRIM" } else { "no-TRIM" },
            if self.next_fit { " next-fit" } else { "" }
        )
    }
}

struct Outcome {
    /// Measures over the measured part (OS install: everything; IOZone: after the image).
    measures: FtlMeasures,
    duration_ns: u64,
    phases: Vec<PhaseMeter>,
    /// The FTL's own counters over the whole run (merges and list, or GC and backward map).
    detail: FtlDetail,
}

fn blocks_per_plane(options: &Options) -> u32 {
    ((BLOCKS_PER_PLANE_AT_SCALE_1 * options.scale).round() as u32).max(64)
}

fn physical_pages(blocks_per_plane: u32) -> u64 {
    PLANES * blocks_per_plane as u64 * PAGES_PER_BLOCK as u64
}

fn logical_pages(blocks_per_plane: u32) -> u32 {
    let pages = (physical_pages(blocks_per_plane) as f64 * LOGICAL_SHARE) as u32;
    pages - pages % PAGES_PER_BLOCK
}

/// The device sections of `point`: the `k9lag08u0m-4ch` preset at the experiment's scale, with
/// 004's controller (no write buffer, one command at a time) and the point's FTL.
fn sections(point: &Point, options: &Options) -> (DeviceSection, FtlSection, TrimSection) {
    let device = DeviceSection {
        preset: Some("k9lag08u0m-4ch".into()),
        logical_bytes: Some(ByteSize(logical_pages(blocks_per_plane(options)) as u64 * PAGE_BYTES)),
        spare_factor: Some(SPARE_FACTOR),
        queue_depth: Some(1),
        write_buffer_bytes: Some(ByteSize(0)),
        firmware_ns: Some(FIRMWARE_NS),
        ..Default::default()
    };
    let ftl = match point.ftl {
        Ftl::Hybrid(striping) => FtlSection {
            kind: Some(FtlKind::Hybrid),
            striping: Some(striping),
            log_blocks_sequential: Some(1),
            log_blocks_random: Some(4),
            // A host that sends no TRIM needs no list (its columns stay empty in the report).
            trimmed_list: Some(point.trim),
            trimmed_list_groups: point.trim.then_some(HBL_GROUPS),
            ..Default::default()
        },
        Ftl::Page(unit, update) => FtlSection {
            kind: Some(FtlKind::Page),
            gc_free_blocks: Some(trimlab_device::config::GcThreshold::Percent(GC_FREE_SHARE * 100.0)),
            striping: Some(unit),
            backward_map: Some(match update {
                BackwardUpdate::Eager => trimlab_device::BackwardMap::Eager,
                BackwardUpdate::Lazy { .. } => trimlab_device::BackwardMap::Lazy,
            }),
            reconcile_every_pages: match update {
                BackwardUpdate::Eager => None,
                BackwardUpdate::Lazy { reconcile_every_pages } => Some(reconcile_every_pages),
            },
            erase_when_invalid: Some(true),
            gc_gain_blocks_max: Some(GC_GAIN_BLOCKS),
            ..Default::default()
        },
    };
    // 004 gives no TRIM cost; the k9lag preset's own (1 ms per command, an assumption for the
    // SATA era) would dominate its 800 us programs, so this experiment keeps 002's controller
    // split, as it did before presets carried TRIM costs.
    let cost = trimlab_trim::TrimCostOverrides::all(&trimlab_trim::TrimCostModel::openssd_002());
    (device, ftl, TrimSection { cost: Some(cost), ..TrimSection::default() })
}

/// The run configuration of `point`: what `--emit-configs` writes and `trimlab run` runs to
/// the same measures (the `os-install` / `iozone` workload kinds on 004's cluster host).
fn config(point: &Point, options: &Options) -> RunConfig {
    let (device, ftl, trim) = sections(point, options);
    let kind = match point.workload {
        Workload::OsInstall => WorkloadKind::OsInstall,
        Workload::Iozone | Workload::IozoneGc => WorkloadKind::Iozone,
    };
    RunConfig {
        seed: Some(options.seed),
        seed_path: Some(format!("ftl-trim/{}", point.workload.name())),
        device,
        ftl,
        trim,
        workload: cluster_workload(kind, point),
        ..Default::default()
    }
}

/// The point's `os-install` or `iozone` section.
fn cluster_workload(kind: WorkloadKind, point: &Point) -> WorkloadConfig {
    // The random streams keep the names this experiment always used.
    let stream = Some("ftl-trim".to_string());
    let (host_discard, first_fit) = (Some(point.trim), point.next_fit.then_some(false));
    if kind == WorkloadKind::Iozone {
        let image = (point.workload == Workload::IozoneGc).then_some(Volume::Capacity(IOZONE_GC_IMAGE_SHARE));
        let keys = iozone::Keys { image, host_discard, first_fit, stream, ..Default::default() };
        WorkloadConfig::of_kind(kind, &keys)
    } else {
        let keys = os_install::Keys { host_discard, first_fit, stream, ..Default::default() };
        WorkloadConfig::of_kind(kind, &keys)
    }
}

/// Every point of the experiment as a named configuration.
pub fn configs(options: &Options) -> Vec<(String, RunConfig)> {
    points().iter().map(|p| (p.label().replace(' ', "-"), config(p, options))).collect()
}

/// Runs `point` through the scenario entry, as `trimlab run` runs its config: the cluster
/// host's phases and starting measures, the FTL's measures and typed detail at the end.
fn measure(point: &Point, options: &Options) -> Result<Outcome> {
    let context = || format!("ftl-trim point {}", point.label());
    let run = point::run(options, &config(point, options)).with_context(context)?;
    let cluster =
        run.cluster_host.with_context(context).context("an os-install or iozone run has a cluster host")?;
    let ftl = run.report.ftl;
    Ok(Outcome {
        measures: ftl.measures.since(&cluster.measures_before),
        duration_ns: cluster.end.since(cluster.start),
        phases: cluster.phases,
        detail: ftl.detail.with_context(context).context("an SSD run reports its FTL")?,
    })
}

fn pct(new: f64, old: f64) -> f64 {
    (new / old - 1.0) * 100.0
}

fn points() -> Vec<Point> {
    let point = |ftl, trim, workload| Point { ftl, trim, workload, next_fit: false };
    let mut points = Vec::new();
    for workload in [Workload::OsInstall, Workload::Iozone] {
        for ftl in [Ftl::HYBRID, Ftl::PAGE] {
            for trim in [true, false] {
                points.push(point(ftl, trim, workload));
            }
        }
    }
    for trim in [true, false] {
        points.push(point(Ftl::PAGE, trim, Workload::IozoneGc));
    }
    points.push(point(Ftl::Hybrid(StripingChoice::Page), true, Workload::OsInstall));
    if let Ftl::Page(_, update) = Ftl::PAGE {
        points.push(point(Ftl::Page(StripingChoice::Block, update), true, Workload::OsInstall));
    }
    // The backward map's sensitivity: eager, and reconciled only when GC examines a block.
    for update in [BackwardUpdate::Eager, BackwardUpdate::Lazy { reconcile_every_pages: 0 }] {
        points.push(point(Ftl::Page(StripingChoice::Page, update), true, Workload::IozoneGc));
    }
    // The host's sensitivity: next-fit placement, with and without TRIM.
    for workload in [Workload::Iozone, Workload::IozoneGc] {
        for trim in [true, false] {
            points.push(Point { ftl: Ftl::PAGE, trim, workload, next_fit: true });
        }
    }
    points
}

const PROSE: Prose = Prose(include_str!("ftl_trim.md"));

pub fn run(options: &Options) -> Result<ExperimentReport> {
    let points = points();
    let outcomes = try_parallel_map(options, &points, "ftl-trim", |p| measure(p, options))?;
    let results = Results { points, outcomes };
    let blocks_per_plane = blocks_per_plane(options);
    Ok(ExperimentReport {
        name: "ftl-trim".into(),
        title: "FTL design for TRIM: hybrid FAST vs page mapping (004)".into(),
        summary: PROSE.item(
            "summary",
            &[
                ("blocks_per_plane", &blocks_per_plane),
                ("scale", &options.scale),
                ("hbl_groups", &HBL_GROUPS),
            ],
        ),
        paper: PROSE.items("paper"),
        verdicts: verdicts::verdicts(&results),
        notes: notes(options, blocks_per_plane),
        tables: tables::tables(&results),
        plots: plots::plots(&results),
        params: vec![
            ("seed".into(), options.seed.to_string()),
            ("scale".into(), options.scale.to_string()),
            ("blocks_per_plane".into(), blocks_per_plane.to_string()),
            ("logical_pages".into(), logical_pages(blocks_per_plane).to_string()),
            ("hbl_groups".into(), HBL_GROUPS.to_string()),
        ],
    })
}

fn notes(options: &Options, blocks_per_plane: u32) -> Vec<String> {
    PROSE.filled(
        "notes",
        &[
            ("scale", &options.scale),
            ("blocks_per_plane", &blocks_per_plane),
            ("flash_mib", &((physical_pages(blocks_per_plane) * PAGE_BYTES) >> 20)),
            ("logical_mib", &((logical_pages(blocks_per_plane) as u64 * PAGE_BYTES) >> 20)),
            ("firmware_ns", &FIRMWARE_NS),
        ],
    )
}

/// 004's Table 4 for IOZone on page mapping while GC is not running: MB/s with and without
/// TRIM and the gain in percent, per phase (write, re-write, random write).
const PAPER_T4: [(f64, f64, f64); 3] = [(137.6, 120.5, 12.4), (222.6, 192.7, 13.5), (222.8, 199.0, 10.7)];
/// Table 4's gains with GC running (free space under 30 %), in percent.
const PAPER_T4_GC: [f64; 3] = [-1.3, -4.7, -2.3];
/// Table 2's four runs of a workload: hybrid, then page mapping, each with and without TRIM.
const TABLE2_RUNS: [(Ftl, bool); 4] =
    [(Ftl::HYBRID, true), (Ftl::HYBRID, false), (Ftl::PAGE, true), (Ftl::PAGE, false)];
/// Table 3: hybrid and page mapping's blocks programmed and minutes to install Windows 7.
const PAPER_T3_N_PB: [f64; 2] = [53119.0, 23512.0];
const PAPER_T3_MIN: [f64; 2] = [41.0, 7.0];

/// Every point with its outcome, and the quantities 004's tables, claims and plots share.
struct Results {
    points: Vec<Point>,
    outcomes: Vec<Outcome>,
}

impl Results {
    fn iter(&self) -> impl Iterator<Item = (&Point, &Outcome)> {
        self.points.iter().zip(&self.outcomes)
    }

    /// The first-fit host's run of `workload` on `ftl`, with or without TRIM.
    fn find(&self, workload: Workload, ftl: Ftl, trim: bool) -> &Outcome {
        let i = self
            .points
            .iter()
            .position(|p| p.workload == workload && p.ftl == ftl && p.trim == trim && !p.next_fit)
            .expect("every looked-up point is in points()");
        &self.outcomes[i]
    }

    /// The next-fit host's run of `workload` on page mapping, with or without TRIM.
    fn next_fit(&self, workload: Workload, trim: bool) -> &Outcome {
        let i = self
            .points
            .iter()
            .position(|p| p.workload == workload && p.trim == trim && p.next_fit)
            .expect("the next-fit points are in points()");
        &self.outcomes[i]
    }

    /// How much TRIM changes E_ftl of `ftl` under `workload`, in percent.
    fn e_change(&self, workload: Workload, ftl: Ftl) -> f64 {
        pct(self.find(workload, ftl, true).measures.e_ftl(), self.find(workload, ftl, false).measures.e_ftl())
    }

    /// Table 3's runs: the OS install with TRIM on hybrid and on page mapping.
    fn table3(&self) -> (&Outcome, &Outcome) {
        (self.find(Workload::OsInstall, Ftl::HYBRID, true), self.find(Workload::OsInstall, Ftl::PAGE, true))
    }

    /// Table 3's ratios hybrid / page mapping: blocks programmed, and time.
    fn table3_ratios(&self) -> (f64, f64) {
        let (hyb, page) = self.table3();
        (
            hyb.measures.blocks_programmed as f64 / page.measures.blocks_programmed as f64,
            hyb.duration_ns as f64 / page.duration_ns as f64,
        )
    }

    /// Table 4: the runs of `workload` on page mapping with and without TRIM, first-fit hosts
    /// then next-fit ones.
    fn table4_runs(&self, workload: Workload) -> [&Outcome; 4] {
        [
            self.find(workload, Ftl::PAGE, true),
            self.find(workload, Ftl::PAGE, false),
            self.next_fit(workload, true),
            self.next_fit(workload, false),
        ]
    }

    /// Table 4: TRIM's throughput gain on page mapping per phase of `workload`, in percent,
    /// with first-fit hosts or next-fit ones.
    fn gains(&self, workload: Workload, next_fit: bool) -> Vec<(&'static str, f64)> {
        let [t, n, tf, nf] = self.table4_runs(workload);
        let (t, n) = if next_fit { (tf, nf) } else { (t, n) };
        t.phases
            .iter()
            .zip(&n.phases)
            .map(|(pt, pn)| (pt.name, pct(pt.throughput_mb_s(), pn.throughput_mb_s())))
            .collect()
    }

    /// Every phase of both IOZone runs in the GC regime, with the share of its commands that left
    /// free space at or below the GC threshold and the lowest and highest free share: the regime
    /// is a precondition of the comparison.
    fn gc_regime(&self) -> Vec<(String, f64, f64, f64)> {
        let [t, n, ..] = self.table4_runs(Workload::IozoneGc);
        let mut phases = Vec::new();
        for (pt, pn) in t.phases.iter().zip(&n.phases) {
            for (run, m) in [("TRIM", pt), ("no-TRIM", pn)] {
                phases.push((
                    format!("{} {run}", pt.name),
                    m.at_gc_threshold_share(),
                    m.free_share_min.unwrap_or(f64::NAN),
                    m.free_share_max.unwrap_or(f64::NAN),
                ));
            }
        }
        phases
    }

    /// The hybrid FTL's source blocks per full merge (associativity) and the run's time, for
    /// the first hybrid run `pick` accepts; NaN and 0 if none does.
    fn associativity(&self, pick: impl Fn(&Point) -> bool) -> (f64, u64) {
        self.iter()
            .find_map(|(p, o)| match &o.detail {
                FtlDetail::Hybrid { merges, .. } if pick(p) => {
                    Some((merges.source_blocks_per_full_merge(), o.duration_ns))
                }
                _ => None,
            })
            .unwrap_or((f64::NAN, 0))
    }
}

fn seconds(o: &Outcome) -> f64 {
    secs(o.duration_ns)
}
