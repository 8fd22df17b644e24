//! `lazy-trim` (000): the cost of TRIM inside an ext4 journal commit, and Lazy TRIM / Reuse TRIM.
//!
//! Fig. 3/4: for each append size, a file is written with appends and equal-sized holes until
//! it spans `FILE_BYTES x scale`, fsynced, unlinked, and the next fsync is timed; the TRIM issue
//! time runs from that fsync to the last TRIM's completion. Table II: a file system is filled
//! to 100 % with fragmented files, a random one is removed and fsynced, and the next write that
//! needs a new block is timed.

use super::bands;
use super::host::{
    cost_suffix, describe, ext4, holding_ranges, int, mib, ms, num, run_point, ssd, TRIM_COST_SWEEP_NS,
};
use super::{parallel_map, Options};
use anyhow::Result;
use trimlab_fs::PolicyKind;
use trimlab_report::{Cell, ExperimentReport, Plot, PlotKind, Series, SeriesStyle, Table};
use trimlab_scenario::RunConfig;
use trimlab_sim::ByteSize;
use trimlab_workload::{WorkloadConfig, WorkloadKind};

/// 000 ran on a Galaxy S8 (64 GB UFS 2.1): the experiment's default drive is of that era.
const PRESET: &str = "ufs-2018";
const APPENDS: [u64; 6] = [64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20];
const FILE_BYTES: u64 = 1 << 30;
const POLICIES: [PolicyKind; 4] =
    [PolicyKind::Discard, PolicyKind::DiscardBatch, PolicyKind::Lazy, PolicyKind::LazyReuse];
const TABLE2_FS_BYTES: u64 = 512 << 20;

fn file_bytes(o: &Options) -> u64 {
    (((FILE_BYTES as f64 * o.scale) as u64) >> 26 << 26).max(128 << 20)
}

/// What the micro-benchmark measures of one point.
struct MicroResult {
    extents: usize,
    fsync_ns: u64,
    trim_issue_ns: u64,
    trim_commands: u64,
}

/// One micro-benchmark point on the era drive, its per-command TRIM cost replaced by `cost`.
fn micro_config(policy: PolicyKind, append: u64, cost: Option<u64>, o: &Options) -> RunConfig {
    let file = file_bytes(o);
    let workload = WorkloadConfig {
        kind: WorkloadKind::AppendHoles,
        append_bytes: Some(ByteSize(append)),
        file_bytes: Some(ByteSize(file)),
        ..WorkloadConfig::default()
    };
    RunConfig { seed: Some(o.seed), host: ext4(policy), workload, ..ssd(PRESET, file * 2, cost, None) }
}

fn micro(policy: PolicyKind, append: u64, cost: Option<u64>, o: &Options) -> Result<MicroResult> {
    let m = run_point(&micro_config(policy, append, cost, o))?;
    Ok(MicroResult {
        extents: int(&m, "/phases/0/figures/extents")? as usize,
        fsync_ns: int(&m, "/phases/0/figures/fsync_ns")?,
        trim_issue_ns: int(&m, "/phases/0/figures/trim_issue_ns")?,
        trim_commands: int(&m, "/phases/0/figures/trim_commands")?,
    })
}

struct Table2 {
    write_ns: u64,
    fsync_ns: u64,
    removed_extents: usize,
    cancelled_blocks: u64,
    unusable_mean_ms: f64,
}

/// Files of 8-32 MiB written as 64 KiB appends with 64 KiB holes (fragmented like the
/// micro-benchmark's file) fill the file system; then the workload writes its last blocks one
/// at a time, removes a random file and times the next write.
fn table2_config(policy: PolicyKind, cost: Option<u64>, o: &Options) -> RunConfig {
    let workload = WorkloadConfig { kind: WorkloadKind::RemoveWhenFull, ..WorkloadConfig::default() };
    RunConfig {
        seed: Some(o.seed),
        seed_path: Some("lazy-trim/table2".into()),
        host: ext4(policy),
        workload,
        ..ssd(PRESET, TABLE2_FS_BYTES, cost, None)
    }
}

fn table2(policy: PolicyKind, cost: Option<u64>, o: &Options) -> Result<Table2> {
    let m = run_point(&table2_config(policy, cost, o))?;
    Ok(Table2 {
        write_ns: int(&m, "/phases/0/figures/write_ns")?,
        fsync_ns: int(&m, "/phases/0/figures/fsync_ns")?,
        removed_extents: int(&m, "/phases/0/figures/removed_extents")? as usize,
        cancelled_blocks: int(&m, "/host/policy/reuse_cancelled_blocks")?,
        unusable_mean_ms: num(&m, "/host/freed_unusable_mean_s")? * 1e3,
    })
}

/// 000's claims evaluated on one set of runs (the era drive, or one point of the cost sweep).
struct Judged {
    fsync_cut: f64,
    fsync_in_band: bool,
    grows: bool,
    issue_cut_best: f64,
    issue_falls: bool,
    issue_in_band: bool,
    /// Table II write latency: discard, lazy, lazy-reuse.
    t2: [u64; 3],
    t2_order: bool,
    t2_in_band: bool,
}

fn judge<'a>(get: &dyn Fn(PolicyKind, u64) -> &'a MicroResult, t2: &[Table2]) -> Judged {
    let (d, l) = (get(PolicyKind::Discard, APPENDS[0]), get(PolicyKind::Lazy, APPENDS[0]));
    let fsync_cut = 1.0 - l.fsync_ns as f64 / d.fsync_ns as f64;
    let issue_cut_best = APPENDS
        .iter()
        .map(|&a| {
            1.0 - get(PolicyKind::Lazy, a).trim_issue_ns as f64
                / get(PolicyKind::Discard, a).trim_issue_ns as f64
        })
        .fold(f64::MIN, f64::max);
    // Where the file has many fragments Lazy TRIM must be faster; with a handful of large
    // TRIMs the device's per-page work dominates and both must be about equal.
    let issue_falls = APPENDS.iter().all(|&a| {
        let (l, d) =
            (get(PolicyKind::Lazy, a).trim_issue_ns as f64, get(PolicyKind::Discard, a).trim_issue_ns as f64);
        if a <= 1 << 20 {
            l < 0.9 * d
        } else {
            l <= 1.01 * d
        }
    });
    let t2 = [t2[0].write_ns, t2[1].write_ns, t2[2].write_ns];
    let [wd, wl, wr] = t2;
    Judged {
        fsync_cut,
        fsync_in_band: bands::within_15_pp(-100.0 * fsync_cut, -99.0),
        grows: d.fsync_ns > get(PolicyKind::Discard, APPENDS[5]).fsync_ns * 10,
        issue_cut_best,
        issue_falls,
        issue_in_band: bands::within_15_pp(-100.0 * issue_cut_best, -60.0),
        t2,
        t2_order: wl > 10 * wd.max(1) && wl > 10 * wr.max(1),
        t2_in_band: bands::within_2x(ms(wd), 2.0)
            && bands::within_2x(ms(wl), 840.0)
            && bands::within_2x(ms(wr), 2.0),
    }
}

fn points() -> Vec<(PolicyKind, u64)> {
    POLICIES.iter().flat_map(|&p| APPENDS.iter().map(move |&a| (p, a))).collect()
}

const T2_POLICIES: [PolicyKind; 3] = [PolicyKind::Discard, PolicyKind::Lazy, PolicyKind::LazyReuse];

/// Every point this experiment runs, by name.
/// The era drive's points, then the TRIM-cost sweep's (`micro-trim<us>us-...`,
/// `table2-trim<us>us-...`: discard and Lazy TRIM at every append size, and Table II).
pub fn configs(o: &Options) -> Vec<(String, RunConfig)> {
    let mut v: Vec<(String, RunConfig)> = points()
        .into_iter()
        .map(|(p, a)| (format!("micro-{}-{}k", p.config_name(), a >> 10), micro_config(p, a, None, o)))
        .collect();
    v.extend(T2_POLICIES.iter().map(|&p| (format!("table2-{}", p.config_name()), table2_config(p, None, o))));
    for (c, p, a) in sweep_points() {
        v.push((
            format!("micro{}-{}-{}k", cost_suffix(c), p.config_name(), a >> 10),
            micro_config(p, a, Some(c), o),
        ));
    }
    for (c, p) in sweep_t2_points() {
        v.push((format!("table2{}-{}", cost_suffix(c), p.config_name()), table2_config(p, Some(c), o)));
    }
    v
}

fn sweep_points() -> Vec<(u64, PolicyKind, u64)> {
    TRIM_COST_SWEEP_NS
        .iter()
        .flat_map(|&c| {
            [PolicyKind::Discard, PolicyKind::Lazy]
                .into_iter()
                .flat_map(move |p| APPENDS.iter().map(move |&a| (c, p, a)))
        })
        .collect()
}

fn sweep_t2_points() -> Vec<(u64, PolicyKind)> {
    TRIM_COST_SWEEP_NS.iter().flat_map(|&c| T2_POLICIES.iter().map(move |&p| (c, p))).collect()
}

pub fn run(o: &Options) -> Result<ExperimentReport> {
    let points = points();
    let results: Vec<MicroResult> = parallel_map(o, &points, "lazy-trim", |&(p, a)| micro(p, a, None, o))
        .into_iter()
        .collect::<Result<_>>()?;
    let t2_policies = T2_POLICIES;
    let t2: Vec<Table2> = parallel_map(o, &t2_policies, "lazy-trim table II", |&p| table2(p, None, o))
        .into_iter()
        .collect::<Result<_>>()?;
    // The TRIM-cost sweep: discard and Lazy TRIM at every append size, and Table II, per cost.
    let sweep_points = sweep_points();
    let sweep_micro: Vec<MicroResult> =
        parallel_map(o, &sweep_points, "lazy-trim cost sweep", |&(c, p, a)| micro(p, a, Some(c), o))
            .into_iter()
            .collect::<Result<_>>()?;
    let sweep_t2_points = sweep_t2_points();
    let sweep_t2: Vec<Table2> =
        parallel_map(o, &sweep_t2_points, "lazy-trim table II sweep", |&(c, p)| table2(p, Some(c), o))
            .into_iter()
            .collect::<Result<_>>()?;
    let get = |p: PolicyKind, a: u64| -> &MicroResult {
        let i = points.iter().position(|&(q, b)| q == p && b == a).unwrap_or_else(|| unreachable!());
        &results[i]
    };
    let mut fig = Table::new(
        "fig3_fig4",
        "fsync latency after unlink (Fig. 3) and time to issue all TRIMs (Fig. 4)",
        &[
            "policy",
            "append",
            "extents",
            "trim_commands",
            "fsync_ms",
            "trim_issue_ms",
            "fsync_reduction_vs_discard_pct",
            "trim_issue_reduction_vs_discard_pct",
        ],
    );
    for (&(p, a), r) in points.iter().zip(&results) {
        let base = get(PolicyKind::Discard, a);
        fig.push_row(vec![
            Cell::from(p.label()),
            Cell::from(mib(a)),
            Cell::from(r.extents),
            Cell::from(r.trim_commands),
            Cell::Num(ms(r.fsync_ns)),
            Cell::Num(ms(r.trim_issue_ns)),
            Cell::Num(100.0 * (1.0 - r.fsync_ns as f64 / base.fsync_ns as f64)),
            Cell::Num(100.0 * (1.0 - r.trim_issue_ns as f64 / base.trim_issue_ns as f64)),
        ]);
    }
    let mut t2table = Table::new(
        "table2",
        "Latency of a write needing a new block right after a random file is removed on a full file system (Table II)",
        &["policy", "write_ms", "paper_write_ms", "fsync_after_unlink_ms", "removed_file_extents", "reuse_cancelled_blocks", "freed_unusable_mean_ms"],
    );
    let paper_t2 = [2.0, 840.0, 2.0];
    for ((p, r), paper) in t2_policies.iter().zip(&t2).zip(paper_t2) {
        t2table.push_row(vec![
            Cell::from(p.label()),
            Cell::Num(ms(r.write_ns)),
            Cell::Num(paper),
            Cell::Num(ms(r.fsync_ns)),
            Cell::from(r.removed_extents),
            Cell::from(r.cancelled_blocks),
            Cell::Num(r.unusable_mean_ms),
        ]);
    }
    let categories: Vec<String> = APPENDS.iter().map(|&a| mib(a)).collect();
    let series = |f: &dyn Fn(&MicroResult) -> f64| -> Vec<(String, Vec<f64>)> {
        POLICIES.iter().map(|&p| (p.label(), APPENDS.iter().map(|&a| f(get(p, a))).collect())).collect()
    };
    // Lazy TRIM's cut against discard per append size, in percent.
    let cut = |f: &dyn Fn(&MicroResult) -> u64| -> Vec<f64> {
        APPENDS
            .iter()
            .map(|&a| {
                100.0 * (1.0 - f(get(PolicyKind::Lazy, a)) as f64 / f(get(PolicyKind::Discard, a)) as f64)
            })
            .collect()
    };
    let mut plots = vec![
        Plot {
            name: "fig3_fsync_latency".into(),
            title: "Fig. 3: fsync latency after unlinking the fragmented file".into(),
            x_label: "append size".into(),
            y_label: "fsync latency (ms, log)".into(),
            log_y: true,
            kind: PlotKind::Bars { categories: categories.clone(), series: series(&|r| ms(r.fsync_ns)) },
        },
        Plot {
            name: "fig4_trim_issue_time".into(),
            title: "Fig. 4: time to issue all TRIMs of the file".into(),
            x_label: "append size".into(),
            y_label: "TRIM issue time (ms, log)".into(),
            log_y: true,
            kind: PlotKind::Bars { categories, series: series(&|r| ms(r.trim_issue_ns)) },
        },
        Plot {
            name: "fig3_fig4_reductions".into(),
            title: "Fig. 3/4 as cuts against discard (paper: fsync -99 % at 64 KB; TRIM issue up to -60 %, size not given)".into(),
            x_label: "append size".into(),
            y_label: "reduction vs discard (%)".into(),
            log_y: false,
            kind: PlotKind::Bars {
                categories: APPENDS.iter().map(|&a| mib(a)).collect(),
                series: vec![
                    ("trimlab fsync".into(), cut(&|r| r.fsync_ns)),
                    ("paper fsync".into(), APPENDS.iter().map(|&a| if a == APPENDS[0] { 99.0 } else { f64::NAN }).collect()),
                    ("trimlab TRIM issue".into(), cut(&|r| r.trim_issue_ns)),
                ],
            },
        },
        Plot {
            name: "table2_write_latency".into(),
            title: "Table II: write needing a new block after a removal on a full file system".into(),
            x_label: "policy".into(),
            y_label: "write latency (ms, log)".into(),
            log_y: true,
            kind: PlotKind::Bars {
                categories: t2_policies.iter().map(|p| p.label()).collect(),
                series: vec![
                    ("trimlab".into(), t2.iter().map(|r| ms(r.write_ns).max(1e-3)).collect()),
                    ("paper".into(), paper_t2.to_vec()),
                ],
            },
        },
    ];

    let era = judge(&|p, a| get(p, a), &t2);
    let mut sweep = Table::new(
        "trim_cost_sweep",
        "Sensitivity: each claim at each per-command TRIM cost (the era drive otherwise unchanged)",
        &[
            "trim_command_us",
            "fsync_cut_64k_pct",
            "best_issue_cut_pct",
            "table2_discard_ms",
            "table2_lazy_ms",
            "table2_reuse_ms",
            "fsync_cut_in_band",
            "issue_falls",
            "issue_cut_in_band",
            "table2_order",
            "table2_in_band",
        ],
    );
    let per_cost = APPENDS.len() * 2;
    let mut swept = Vec::new();
    let (mut fsync_line, mut issue_line, mut t2_line) = (Vec::new(), Vec::new(), Vec::new());
    for (i, &cost) in TRIM_COST_SWEEP_NS.iter().enumerate() {
        let m = &sweep_micro[i * per_cost..(i + 1) * per_cost];
        let at = |p: PolicyKind, a: u64| -> &MicroResult {
            let k = APPENDS.iter().position(|&x| x == a).unwrap_or(0);
            &m[if p == PolicyKind::Discard { k } else { APPENDS.len() + k }]
        };
        let j = judge(&at, &sweep_t2[i * 3..i * 3 + 3]);
        sweep.push_row(vec![
            Cell::Num(cost as f64 / 1e3),
            Cell::Num(100.0 * j.fsync_cut),
            Cell::Num(100.0 * j.issue_cut_best),
            Cell::Num(ms(j.t2[0])),
            Cell::Num(ms(j.t2[1])),
            Cell::Num(ms(j.t2[2])),
            Cell::from(j.fsync_in_band.to_string()),
            Cell::from(j.issue_falls.to_string()),
            Cell::from(j.issue_in_band.to_string()),
            Cell::from(j.t2_order.to_string()),
            Cell::from(j.t2_in_band.to_string()),
        ]);
        let x = (cost as f64 / 1e3).log10();
        fsync_line.push((x, 100.0 * j.fsync_cut));
        issue_line.push((x, 100.0 * j.issue_cut_best));
        t2_line.push((x, ms(j.t2[1]).max(1e-3).log10()));
        swept.push(j);
    }
    let range = |f: &dyn Fn(&Judged) -> bool| {
        holding_ranges(&TRIM_COST_SWEEP_NS, &swept.iter().map(f).collect::<Vec<_>>())
    };
    let d = get(PolicyKind::Discard, APPENDS[0]);
    let l = get(PolicyKind::Lazy, APPENDS[0]);
    let [wd, wl, wr] = era.t2;
    let verdicts = vec![
        bands::band(
            "Fig. 3: fsync latency falls from discard to Lazy TRIM at 64 KiB appends by up to 99 %",
            "within 15 points of -99 %",
            era.fsync_cut > 0.0,
            era.fsync_in_band,
            format!("discard {:.2} ms, lazy {:.3} ms: -{:.1} %; in band {}", ms(d.fsync_ns), ms(l.fsync_ns), 100.0 * era.fsync_cut, range(&|j| j.fsync_in_band)),
        ),
        bands::shape(
            "Fig. 3: conventional discard's fsync latency grows with the number of fragments",
            era.grows,
            format!("64 KiB: {:.2} ms ({} extents); 64 MiB: {:.2} ms; {}", ms(d.fsync_ns), d.extents, ms(get(PolicyKind::Discard, APPENDS[5]).fsync_ns), range(&|j| j.grows)),
        ),
        bands::band(
            "Fig. 4: Lazy TRIM's parallel workers issue all TRIMs faster than serial discard where TRIMs are many (64 KiB-1 MiB appends), no slower elsewhere; up to 60 % shorter",
            "best reduction within 15 points of -60 %",
            era.issue_falls,
            era.issue_in_band,
            format!("best reduction {:.1} %; shape {}; band {}", 100.0 * era.issue_cut_best, range(&|j| j.issue_falls), range(&|j| j.issue_in_band)),
        ),
        bands::shape(
            "Table II ordering: the post-delete write is fast with discard and lazy-reuse, slow with lazy",
            era.t2_order,
            format!("discard {:.3} ms, lazy {:.2} ms, lazy-reuse {:.3} ms; {}", ms(wd), ms(wl), ms(wr), range(&|j| j.t2_order)),
        ),
        bands::band(
            "Table II values: conventional 2 ms, Lazy TRIM 840 ms, Lazy + Reuse 2 ms",
            "each within 2x",
            era.t2_order,
            era.t2_in_band,
            format!("discard {:.3} ms, lazy {:.2} ms ({:.2}x of 840), lazy-reuse {:.3} ms; lazy alone within 2x {}", ms(wd), ms(wl), ms(wl) / 840.0, ms(wr), range(&|j| bands::within_2x(ms(j.t2[1]), 840.0))),
        ),
    ];
    plots.push(Plot {
        name: "trim_cost_sweep".into(),
        title: "Lazy TRIM's gains vs the cost of one TRIM".into(),
        x_label: "TRIM cost per command (log10 us)".into(),
        y_label: "reduction vs discard (%)".into(),
        log_y: false,
        kind: PlotKind::Lines {
            series: vec![
                Series {
                    label: "fsync, 64 KiB appends".into(),
                    points: fsync_line,
                    style: SeriesStyle::Line,
                },
                Series {
                    label: "TRIM issue time, best append".into(),
                    points: issue_line,
                    style: SeriesStyle::Line,
                },
            ],
        },
    });
    plots.push(Plot {
        name: "table2_trim_cost_sweep".into(),
        title: "Table II's Lazy TRIM write latency vs the cost of one TRIM (000: 840 ms = 2.92)".into(),
        x_label: "TRIM cost per command (log10 us)".into(),
        y_label: "write latency (log10 ms)".into(),
        log_y: false,
        kind: PlotKind::Lines {
            series: vec![Series { label: "Lazy TRIM".into(), points: t2_line, style: SeriesStyle::Line }],
        },
    });
    Ok(ExperimentReport {
        name: "lazy-trim".into(),
        title: "Lazy TRIM (000): journaling overhead of TRIM on ext4".into(),
        summary: format!(
            "000's era: ext4-like file system (4 KiB blocks, ordered journal, 5 s commit) on {}; micro-benchmark file of {} (1 GiB x scale, rounded to 64 MiB), holes as large as the appends; Table II on a {} file system filled to 100 % with 8-32 MiB files of 64 KiB fragments. Host costs: 10 us submit + 15 us completion per command, 20 us thread wake-up; Lazy TRIM: up to 4 workers, one per 64 queued TRIMs.",
            describe(PRESET, file_bytes(o) * 2)?,
            mib(file_bytes(o)),
            mib(TABLE2_FS_BYTES)
        ),
        paper: vec![
            "Fig. 3: conventional fsync latency grows with the number of fragments; Lazy TRIM cuts it by up to 99 % at 64 KB appends.".into(),
            "Fig. 4: Lazy TRIM issues all TRIMs up to 60 % faster (parallel workers).".into(),
            "Table II: write latency needing a new block after a removal on a full file system: conventional 2 ms, Lazy TRIM 840 ms, Lazy + Reuse 2 ms.".into(),
            "Measured on a Galaxy S8 (UFS 2.1, kernel 4.4). trimlab's default drive is of that era (ufs-2018), but its TRIM cost (1 ms per command) is an assumption: the trim_cost_sweep table shows each claim from 5 us to 5 ms per TRIM.".into(),
        ],
        verdicts,
        notes: vec![
            "fsync here measures the commit that carries the unlink: ordered data (none left), journal blocks, commit block + FLUSH, then the policy's TRIMs (discard: one synchronous TRIM per freed extent; discard-batch: all at once, one wait; lazy: queued to workers).".into(),
            "TRIM issue time: from that fsync to the completion of the last TRIM. Lazy TRIM gains from overlapping per-command host costs (submission, completion interrupt, wake-up) across workers; the device's controller still serves TRIMs one at a time, so the gain is bounded by the host share of each TRIM's latency. With a millisecond-scale TRIM (the era drive) that share is a few percent, so Fig. 4's 60 % cannot appear; it comes within band only where a TRIM costs the drive about as little as the host's 25 us (see the sweep). 000 does not say whether its UFS device served TRIMs concurrently; if it did, this model, with one controller timeline, understates Lazy TRIM.".into(),
            "Table II's 2 ms for discard and Lazy + Reuse is a phone's whole write path; here the write lands in the page cache in microseconds, so those two values are out of band by construction; the claim that matters, Lazy TRIM's wait for the removed file's TRIMs, scales with the TRIM cost (within 2x of 840 ms around 1.6 ms per TRIM in the sweep).".into(),
            "Table II: Lazy TRIM returns a commit's freed blocks to the allocator only when its workers have issued the whole batch (as ext4 frees a commit's extents after its discards), so a write that needs a block on a full file system waits for the removed file's TRIMs; Reuse TRIM takes a queued extent and cancels its TRIM. Discard finished its TRIMs inside the fsync, so the write finds free blocks.".into(),
            "The micro-benchmark fsyncs the file before unlinking it so its blocks are allocated and on the device (the paper's 1 GB file exceeded the dirty limits anyway).".into(),
        ],
        tables: vec![fig, t2table, sweep],
        plots,
        params: vec![
            ("seed".into(), o.seed.to_string()),
            ("scale".into(), o.scale.to_string()),
            ("file_bytes".into(), file_bytes(o).to_string()),
            ("table2_fs_bytes".into(), TABLE2_FS_BYTES.to_string()),
        ],
    })
}
