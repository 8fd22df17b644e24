//! `lazy-trim` (000): the cost of TRIM inside an ext4 journal commit, and Lazy TRIM / Reuse TRIM.
//!
//! Fig. 3/4: for each append size, a file is written with appends and equal-sized holes until
//! it spans `FILE_BYTES x scale`, fsynced, unlinked, and the next fsync is timed; the TRIM issue
//! time runs from that fsync to the last TRIM's completion. Table II: a file system is filled
//! to 100 % with fragmented files, a random one is removed and fsynced, and the next write that
//! needs a new block is timed.

use super::bands;
use super::host::{
    cost_suffix, describe, ext4, int, mib, ms, num, paper_level, ssd, sweep_holds, sweep_line, sweep_plot,
    TRIM_COST_SWEEP_NS,
};
use super::prose::Prose;
use super::table::{flag, table};
use super::{point, try_parallel_map, Options};
use anyhow::Result;
use trimlab_fs::PolicyKind;
use trimlab_report::{Cell, ExperimentReport, Plot, PlotKind, Table, Verdict};
use trimlab_scenario::RunConfig;
use trimlab_sim::ByteSize;
use trimlab_workload::{kind, WorkloadConfig, WorkloadKind};

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
    let keys =
        kind::append_holes::Keys { append_bytes: Some(ByteSize(append)), file_bytes: Some(ByteSize(file)) };
    let workload = WorkloadConfig::of_kind(WorkloadKind::AppendHoles, &keys);
    RunConfig { seed: Some(o.seed), host: ext4(policy), workload, ..ssd(PRESET, file * 2, cost, None) }
}

fn micro(policy: PolicyKind, append: u64, cost: Option<u64>, o: &Options) -> Result<MicroResult> {
    let m = point::metrics(o, &micro_config(policy, append, cost, o))?;
    Ok(MicroResult {
        extents: int(&m, "/phases/1/figures/extents")? as usize,
        fsync_ns: int(&m, "/phases/1/figures/fsync_ns")?,
        trim_issue_ns: int(&m, "/phases/1/figures/trim_issue_ns")?,
        trim_commands: int(&m, "/phases/1/figures/trim_commands")?,
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
    let m = point::metrics(o, &table2_config(policy, cost, o))?;
    Ok(Table2 {
        write_ns: int(&m, "/phases/1/figures/write_ns")?,
        fsync_ns: int(&m, "/phases/1/figures/fsync_ns")?,
        removed_extents: int(&m, "/phases/1/figures/removed_extents")? as usize,
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

const PROSE: Prose = Prose(include_str!("lazy_trim.md"));

pub fn run(o: &Options) -> Result<ExperimentReport> {
    let runs = Runs::measure(o)?;
    let era = judge(&|p, a| runs.micro(p, a), &runs.t2);
    let swept = runs.swept();
    let summary = PROSE.item(
        "summary",
        &[
            ("drive", &describe(PRESET, file_bytes(o) * 2)?),
            ("file", &mib(file_bytes(o))),
            ("table2_fs", &mib(TABLE2_FS_BYTES)),
        ],
    );
    let mut plots = plots(&runs);
    plots.extend(sweep_plots(&swept));
    Ok(ExperimentReport {
        name: "lazy-trim".into(),
        title: "Lazy TRIM (000): journaling overhead of TRIM on ext4".into(),
        summary,
        paper: PROSE.items("paper"),
        verdicts: verdicts(&runs, &era, &swept),
        notes: PROSE.items("notes"),
        tables: vec![fig_table(&runs), table2_table(&runs.t2), sweep_table(&swept)],
        plots,
        params: vec![
            ("seed".into(), o.seed.to_string()),
            ("scale".into(), o.scale.to_string()),
            ("file_bytes".into(), file_bytes(o).to_string()),
            ("table2_fs_bytes".into(), TABLE2_FS_BYTES.to_string()),
        ],
    })
}

/// Table II's write latency as 000 gives it: discard, lazy, lazy-reuse (ms).
const PAPER_T2_MS: [f64; 3] = [2.0, 840.0, 2.0];

/// Every run of the experiment: the micro-benchmark and Table II on the era drive, then both
/// per swept TRIM cost.
struct Runs {
    /// Per point of [`points`].
    micro: Vec<MicroResult>,
    /// Per policy of `T2_POLICIES`.
    t2: Vec<Table2>,
    /// Per point of [`sweep_points`] and [`sweep_t2_points`].
    sweep_micro: Vec<MicroResult>,
    sweep_t2: Vec<Table2>,
}

impl Runs {
    fn measure(o: &Options) -> Result<Runs> {
        let era_micro = try_parallel_map(o, &points(), "lazy-trim", |&(p, a)| micro(p, a, None, o))?;
        let era_t2 = try_parallel_map(o, &T2_POLICIES, "lazy-trim table II", |&p| table2(p, None, o))?;
        // The TRIM-cost sweep: discard and Lazy TRIM at every append size, and Table II, per cost.
        let sweep_micro = try_parallel_map(o, &sweep_points(), "lazy-trim cost sweep", |&(c, p, a)| {
            micro(p, a, Some(c), o)
        })?;
        let sweep_t2 = try_parallel_map(o, &sweep_t2_points(), "lazy-trim table II sweep", |&(c, p)| {
            table2(p, Some(c), o)
        })?;
        Ok(Runs { micro: era_micro, t2: era_t2, sweep_micro, sweep_t2 })
    }

    /// The era drive's micro-benchmark of `policy` at appends of `append` bytes.
    fn micro(&self, policy: PolicyKind, append: u64) -> &MicroResult {
        let i =
            points().iter().position(|&(q, b)| q == policy && b == append).unwrap_or_else(|| unreachable!());
        &self.micro[i]
    }

    /// 000's claims at each swept cost.
    fn swept(&self) -> Vec<Judged> {
        let per_cost = APPENDS.len() * 2;
        let micro = self.sweep_micro.chunks(per_cost);
        let t2 = self.sweep_t2.chunks(T2_POLICIES.len());
        micro
            .zip(t2)
            .map(|(m, t2)| {
                let at = |p: PolicyKind, a: u64| -> &MicroResult {
                    let k = APPENDS.iter().position(|&x| x == a).unwrap_or(0);
                    &m[if p == PolicyKind::Discard { k } else { APPENDS.len() + k }]
                };
                judge(&at, t2)
            })
            .collect()
    }
}

/// The share by which `policy` cuts discard's `measure` at appends of `append`, in percent.
fn cut_pct(runs: &Runs, policy: PolicyKind, append: u64, measure: fn(&MicroResult) -> u64) -> f64 {
    100.0
        * (1.0
            - measure(runs.micro(policy, append)) as f64
                / measure(runs.micro(PolicyKind::Discard, append)) as f64)
}

fn fig_table(runs: &Runs) -> Table {
    table(
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
        points().into_iter().zip(&runs.micro).map(|((p, a), r)| {
            vec![
                Cell::from(p.label()),
                Cell::from(mib(a)),
                Cell::from(r.extents),
                Cell::from(r.trim_commands),
                Cell::Num(ms(r.fsync_ns)),
                Cell::Num(ms(r.trim_issue_ns)),
                Cell::Num(cut_pct(runs, p, a, |r| r.fsync_ns)),
                Cell::Num(cut_pct(runs, p, a, |r| r.trim_issue_ns)),
            ]
        }),
    )
}

fn table2_table(t2: &[Table2]) -> Table {
    table(
        "table2",
        "Latency of a write needing a new block right after a random file is removed on a full file system (Table II)",
        &["policy", "write_ms", "paper_write_ms", "fsync_after_unlink_ms", "removed_file_extents", "reuse_cancelled_blocks", "freed_unusable_mean_ms"],
        T2_POLICIES.iter().zip(t2).zip(PAPER_T2_MS).map(|((p, r), paper)| {
            vec![
                Cell::from(p.label()),
                Cell::Num(ms(r.write_ns)),
                Cell::Num(paper),
                Cell::Num(ms(r.fsync_ns)),
                Cell::from(r.removed_extents),
                Cell::from(r.cancelled_blocks),
                Cell::Num(r.unusable_mean_ms),
            ]
        }),
    )
}

fn sweep_table(swept: &[Judged]) -> Table {
    table(
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
        TRIM_COST_SWEEP_NS.iter().zip(swept).map(|(&cost, j)| {
            vec![
                Cell::Num(cost as f64 / 1e3),
                Cell::Num(100.0 * j.fsync_cut),
                Cell::Num(100.0 * j.issue_cut_best),
                Cell::Num(ms(j.t2[0])),
                Cell::Num(ms(j.t2[1])),
                Cell::Num(ms(j.t2[2])),
                flag(j.fsync_in_band),
                flag(j.issue_falls),
                flag(j.issue_in_band),
                flag(j.t2_order),
                flag(j.t2_in_band),
            ]
        }),
    )
}

fn verdicts(runs: &Runs, era: &Judged, swept: &[Judged]) -> Vec<Verdict> {
    let d = runs.micro(PolicyKind::Discard, APPENDS[0]);
    let l = runs.micro(PolicyKind::Lazy, APPENDS[0]);
    let [wd, wl, wr] = era.t2;
    vec![
        bands::band(
            "Fig. 3: fsync latency falls from discard to Lazy TRIM at 64 KiB appends by up to 99 %",
            "within 15 points of -99 %",
            era.fsync_cut > 0.0,
            era.fsync_in_band,
            format!("discard {:.2} ms, lazy {:.3} ms: -{:.1} %; in band {}", ms(d.fsync_ns), ms(l.fsync_ns), 100.0 * era.fsync_cut, sweep_holds(swept, |j| j.fsync_in_band)),
        ),
        bands::shape(
            "Fig. 3: conventional discard's fsync latency grows with the number of fragments",
            era.grows,
            format!("64 KiB: {:.2} ms ({} extents); 64 MiB: {:.2} ms; {}", ms(d.fsync_ns), d.extents, ms(runs.micro(PolicyKind::Discard, APPENDS[5]).fsync_ns), sweep_holds(swept, |j| j.grows)),
        ),
        bands::band(
            "Fig. 4: Lazy TRIM's parallel workers issue all TRIMs faster than serial discard where TRIMs are many (64 KiB-1 MiB appends), no slower elsewhere; up to 60 % shorter",
            "best reduction within 15 points of -60 %",
            era.issue_falls,
            era.issue_in_band,
            format!("best reduction {:.1} %; shape {}; band {}", 100.0 * era.issue_cut_best, sweep_holds(swept, |j| j.issue_falls), sweep_holds(swept, |j| j.issue_in_band)),
        ),
        bands::shape(
            "Table II ordering: the post-delete write is fast with discard and lazy-reuse, slow with lazy",
            era.t2_order,
            format!("discard {:.3} ms, lazy {:.2} ms, lazy-reuse {:.3} ms; {}", ms(wd), ms(wl), ms(wr), sweep_holds(swept, |j| j.t2_order)),
        ),
        bands::band(
            "Table II values: conventional 2 ms, Lazy TRIM 840 ms, Lazy + Reuse 2 ms",
            "each within 2x",
            era.t2_order,
            era.t2_in_band,
            format!("discard {:.3} ms, lazy {:.2} ms ({:.2}x of 840), lazy-reuse {:.3} ms; lazy alone within 2x {}", ms(wd), ms(wl), ms(wl) / 840.0, ms(wr), sweep_holds(swept, |j| bands::within_2x(ms(j.t2[1]), 840.0))),
        ),
    ]
}

/// Figs. 3 and 4 and Table II on the era drive.
fn plots(runs: &Runs) -> Vec<Plot> {
    let categories: Vec<String> = APPENDS.iter().map(|&a| mib(a)).collect();
    let series = |f: &dyn Fn(&MicroResult) -> f64| -> Vec<(String, Vec<f64>)> {
        POLICIES
            .iter()
            .map(|&p| (p.label(), APPENDS.iter().map(|&a| f(runs.micro(p, a))).collect()))
            .collect()
    };
    // Lazy TRIM's cut against discard per append size, in percent.
    let cut = |f: fn(&MicroResult) -> u64| -> Vec<f64> {
        APPENDS.iter().map(|&a| cut_pct(runs, PolicyKind::Lazy, a, f)).collect()
    };
    vec![
        Plot {
            name: "fig3_fsync_latency".into(),
            title: "Fig. 3: fsync latency after unlinking the fragmented file".into(),
            x_label: "append size".into(),
            y_label: "fsync latency (ms, log)".into(),
            log_y: true,
            log_x: false,
            symlog_y: false,
            kind: PlotKind::Bars { categories: categories.clone(), series: series(&|r| ms(r.fsync_ns)) },
        },
        Plot {
            name: "fig4_trim_issue_time".into(),
            title: "Fig. 4: time to issue all TRIMs of the file".into(),
            x_label: "append size".into(),
            y_label: "TRIM issue time (ms, log)".into(),
            log_y: true,
            log_x: false,
            symlog_y: false,
            kind: PlotKind::Bars { categories: categories.clone(), series: series(&|r| ms(r.trim_issue_ns)) },
        },
        Plot {
            name: "fig3_fig4_reductions".into(),
            title: "Fig. 3/4 as cuts against discard (paper: fsync -99 % at 64 KB; TRIM issue up to -60 %, size not given)".into(),
            x_label: "append size".into(),
            y_label: "reduction vs discard (%)".into(),
            log_y: false,
            log_x: false,
            symlog_y: false,
            kind: PlotKind::Bars {
                categories,
                series: vec![
                    ("trimlab fsync".into(), cut(|r| r.fsync_ns)),
                    ("paper fsync".into(), APPENDS.iter().map(|&a| if a == APPENDS[0] { 99.0 } else { f64::NAN }).collect()),
                    ("trimlab TRIM issue".into(), cut(|r| r.trim_issue_ns)),
                ],
            },
        },
        Plot {
            name: "table2_write_latency".into(),
            title: "Table II: write needing a new block after a removal on a full file system".into(),
            x_label: "policy".into(),
            y_label: "write latency (ms, log)".into(),
            log_y: true,
            log_x: false,
            symlog_y: false,
            kind: PlotKind::Bars {
                categories: T2_POLICIES.iter().map(|p| p.label()).collect(),
                series: vec![
                    ("trimlab".into(), runs.t2.iter().map(|r| ms(r.write_ns).max(1e-3)).collect()),
                    ("paper".into(), PAPER_T2_MS.to_vec()),
                ],
            },
        },
    ]
}

/// The claims against the swept TRIM cost, each beside the paper's figure as a level.
fn sweep_plots(swept: &[Judged]) -> [Plot; 2] {
    let mut table2 = sweep_plot(
        "table2_trim_cost_sweep",
        "Table II's Lazy TRIM write latency vs the cost of one TRIM",
        "write latency (ms)",
        vec![
            // A latency below 1 us is drawn at 1 us: a log axis has no zero.
            sweep_line("Lazy TRIM", swept, |j| ms(j.t2[1]).max(1e-3)),
            paper_level("Lazy TRIM (000): 840 ms", 840.0),
        ],
    );
    table2.log_y = true;
    [
        sweep_plot(
            "trim_cost_sweep",
            "Lazy TRIM's gains vs the cost of one TRIM",
            "reduction vs discard (%)",
            vec![
                sweep_line("fsync, 64 KiB appends", swept, |j| 100.0 * j.fsync_cut),
                sweep_line("TRIM issue time, best append", swept, |j| 100.0 * j.issue_cut_best),
                paper_level("fsync, 64 KiB (000): up to 99 %", 99.0),
                paper_level("TRIM issue time (000): up to 60 %", 60.0),
            ],
        ),
        table2,
    ]
}
