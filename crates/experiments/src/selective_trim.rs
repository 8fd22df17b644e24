//! `selective-trim` (001): Postmark on an aged SSD with TRIM on and off (Fig. 1a), and the
//! Selective TRIM watermarks on the 60/40/70/60 % utilization schedule (Fig. 1b).
//!
//! Aging (Fig. 1a, as 001 describes it): mkfs, fill the file system to 100 %, delete random files
//! down to the target utilization, fstrim (the deleted files' blocks are trimmed), mkfs again
//! without discard (the device still holds the surviving files' data, now dead to the new file
//! system), mount with TRIM on (`discard`) or off (`nodiscard`), run Postmark.
//! Fig. 1b: the drive is aged to full once (filled, reformatted without discard); then, on one
//! mount, utilization is set to 60, 40, 70 and 60 % by creating or deleting files, with Postmark
//! after each stage. The device is a SATA-like drive: TRIM is not queued.

use super::bands;
use super::host::{
    cost_suffix, describe, ext4, holding_ranges, int, phase, run_point, ssd, TRIM_COST_SWEEP_NS,
};
use super::{parallel_map, Options};
use anyhow::Result;
use trimlab_fs::PolicyKind;
use trimlab_report::{Cell, ExperimentReport, Plot, PlotKind, Series, SeriesStyle, Table};
use trimlab_scenario::host::HostSection;
use trimlab_scenario::phase::{PhaseKind, PhaseSection};
use trimlab_scenario::RunConfig;
use trimlab_sim::{ByteSize, DurationNs};
use trimlab_workload::file::Postmark;
use trimlab_workload::{WorkloadConfig, WorkloadKind};

/// 001 ran on a 60 GB SATA SSD of 2011: the experiment's default drive is of that era.
const PRESET: &str = "sata-mlc-2011";
const DEVICE_BYTES: u64 = 256 << 20;
const UTILIZATIONS: [f64; 8] = [0.3, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95];
const SCHEDULE: [f64; 4] = [0.6, 0.4, 0.7, 0.6];

fn device_bytes(o: &Options) -> u64 {
    (((DEVICE_BYTES as f64 * o.scale) as u64) >> 26 << 26).max(256 << 20)
}

/// 001's Postmark (4250 files of 0.1-3 MB, 20 000 transactions on a 60 GB SSD) scaled with the
/// device: sizes by 1/8, file and transaction counts by (60 GB / device) / 8, so the initial
/// set (about 11 % of the device) and the total written (about 0.4 x the device) keep their
/// proportions to the drive.
fn postmark(o: &Options) -> Postmark {
    let counts = 60e9 / device_bytes(o) as f64 / 8.0;
    Postmark {
        files: (4250.0 / counts).round() as usize,
        min_bytes: 100_000 / 8,
        max_bytes: 3_000_000 / 8,
        transactions: (20_000.0 / counts).round() as usize,
        block_bytes: 16 << 10,
    }
}

/// jbd2's 5 s commit interval shrunk with the workload: 001's Postmark ran for minutes (tens of
/// commits); the scaled one runs for about a second of simulated time.
const COMMIT_INTERVAL: DurationNs = DurationNs(100_000_000);

/// The drive, and the file system made on it first: nodiscard, mkfs discarding the drive. A small
/// page cache keeps the device in the loop, as 001's 60 GB runs were.
fn base(drive: RunConfig, seed_path: String, o: &Options) -> RunConfig {
    let host = HostSection {
        mkfs_discard: Some(true),
        dirty_limit_bytes: Some(ByteSize(4 << 20)),
        commit_interval: Some(COMMIT_INTERVAL),
        ..ext4(PolicyKind::NoDiscard)
    };
    RunConfig { seed: Some(o.seed), seed_path: Some(seed_path), host, ..drive }
}

/// Postmark as a phase: `prefix` names its files, `stream` its random stream.
fn postmark_phase(o: &Options, prefix: String, stream: &str) -> PhaseSection {
    let pm = postmark(o);
    PhaseSection::workload(&WorkloadConfig {
        kind: WorkloadKind::Postmark,
        files: Some(pm.files as u64),
        transactions: Some(pm.transactions as u64),
        file_bytes_min: Some(ByteSize(pm.min_bytes)),
        file_bytes_max: Some(ByteSize(pm.max_bytes)),
        append_bytes: Some(ByteSize(pm.block_bytes)),
        prefix: Some(prefix),
        stream: Some(stream.into()),
        ..WorkloadConfig::default()
    })
}

/// Aging files of 001: 1-8 MiB written in 256 KiB appends.
fn aging_files(p: &mut PhaseSection, prefix: &str, stream: &str) {
    p.prefix = Some(prefix.into());
    p.stream = Some(stream.into());
    p.file_bytes_min = Some(ByteSize(1 << 20));
    p.file_bytes_max = Some(ByteSize(8 << 20));
    p.append_bytes = Some(ByteSize(256 << 10));
}

/// Fig. 1a: age to `util`, fstrim, mkfs again without discard with TRIM on or off, Postmark.
fn fig1a_config(util: f64, trim_on: bool, o: &Options) -> RunConfig {
    let mut c = base(ssd(PRESET, device_bytes(o), None, None), format!("selective-trim/1a/{util}"), o);
    let policy = if trim_on { PolicyKind::Discard } else { PolicyKind::NoDiscard };
    c.phases = vec![
        phase(PhaseKind::Age, |p| {
            aging_files(p, "age", "aging");
            p.utilization = Some(util);
        }),
        phase(PhaseKind::Fstrim, |_| {}),
        phase(PhaseKind::Mkfs, |p| p.discard = Some(policy.config_name())),
        postmark_phase(o, "pma_".into(), "postmark"),
    ];
    c
}

fn fig1a_point(util: f64, trim_on: bool, o: &Options) -> Result<(u64, f64)> {
    let m = run_point(&fig1a_config(util, trim_on, o))?;
    Ok((int(&m, "/phases/3/figures/postmark_ns")?, util))
}

/// Fig. 1b: the drive filled once and reformatted without discard; then on one mount the
/// utilization follows the schedule, with Postmark after each stage. The drive is the era's,
/// its per-command TRIM cost replaced by `trim_command_ns` (`[trim.cost] command_ns`) if given.
fn fig1b_config(policy: PolicyKind, trim_command_ns: Option<u64>, o: &Options) -> RunConfig {
    let drive = ssd(PRESET, device_bytes(o), trim_command_ns, None);
    let mut c = base(drive, "selective-trim/1b".into(), o);
    c.phases = vec![
        phase(PhaseKind::Fill, |p| aging_files(p, "old", "precondition")),
        phase(PhaseKind::Mkfs, |p| p.discard = Some(policy.config_name())),
    ];
    for (i, &target) in SCHEDULE.iter().enumerate() {
        c.phases.push(phase(PhaseKind::Utilization, |p| {
            aging_files(p, &format!("s{i}_"), "stages");
            p.utilization = Some(target);
        }));
        c.phases.push(postmark_phase(o, format!("pm{i}_"), "stages"));
    }
    c
}

fn fig1b_run(policy: PolicyKind, trim_command_ns: Option<u64>, o: &Options) -> Result<(u64, Vec<u64>, u64)> {
    let m = run_point(&fig1b_config(policy, trim_command_ns, o))?;
    let stage_times: Vec<u64> = (0..SCHEDULE.len())
        .map(|i| int(&m, &format!("/phases/{}/figures/postmark_ns", 3 + 2 * i)))
        .collect::<Result<_>>()?;
    let total =
        int(&m, &format!("/phases/{}/end_ns", 1 + 2 * SCHEDULE.len()))? - int(&m, "/phases/1/end_ns")?;
    Ok((stage_times.iter().sum(), stage_times, total))
}

/// 001's "performance degrades as the high watermark is decreased": Postmark times of SeT(40,100)
/// down to SeT(40,60) never fall (ties allowed: neighbouring watermarks may switch TRIM at the
/// same stages) and the lowest watermark is slower than the highest.
fn degrades(times: &[u64]) -> bool {
    times.windows(2).all(|w| w[1] >= w[0]) && times.last() > times.first()
}

const POLICIES_1B: [PolicyKind; 8] = [
    PolicyKind::NoDiscard,
    PolicyKind::Selective { low_pct: 0, high_pct: 100 },
    PolicyKind::Selective { low_pct: 40, high_pct: 100 },
    PolicyKind::Selective { low_pct: 40, high_pct: 90 },
    PolicyKind::Selective { low_pct: 40, high_pct: 80 },
    PolicyKind::Selective { low_pct: 40, high_pct: 70 },
    PolicyKind::Selective { low_pct: 40, high_pct: 60 },
    PolicyKind::Discard,
];

/// Every point this experiment runs, by name.
pub fn configs(o: &Options) -> Vec<(String, RunConfig)> {
    let mut v = Vec::new();
    for &u in &UTILIZATIONS {
        for on in [false, true] {
            let name = format!("fig1a-{}pct-trim-{}", (u * 100.0).round(), if on { "on" } else { "off" });
            v.push((name, fig1a_config(u, on, o)));
        }
    }
    // The era drive's points, then the TRIM-cost sweep's (`fig1b-trim<us>us-<policy>`).
    for cost in std::iter::once(None).chain(TRIM_COST_SWEEP_NS.iter().map(|&c| Some(c))) {
        for p in POLICIES_1B {
            let name = format!(
                "fig1b{}-{}",
                cost.map(cost_suffix).unwrap_or_default(),
                p.config_name().replace(':', "-")
            );
            v.push((name, fig1b_config(p, cost, o)));
        }
    }
    v
}

pub fn run(o: &Options) -> Result<ExperimentReport> {
    let points: Vec<(f64, bool)> = UTILIZATIONS.iter().flat_map(|&u| [(u, false), (u, true)]).collect();
    let policies_1b = POLICIES_1B;
    enum Job {
        A(f64, bool),
        B(PolicyKind, Option<u64>),
    }
    let mut jobs: Vec<Job> = points.iter().map(|&(u, on)| Job::A(u, on)).collect();
    jobs.extend(policies_1b.iter().map(|&p| Job::B(p, None)));
    for &cost in &TRIM_COST_SWEEP_NS {
        jobs.extend(policies_1b.iter().map(|&p| Job::B(p, Some(cost))));
    }
    enum Out {
        A(u64),
        B((u64, Vec<u64>, u64)),
    }
    let outs: Vec<Out> = parallel_map(o, &jobs, "selective-trim", |j| match *j {
        Job::A(u, on) => fig1a_point(u, on, o).map(|(t, _)| Out::A(t)),
        Job::B(p, cost) => fig1b_run(p, cost, o).map(Out::B),
    })
    .into_iter()
    .collect::<Result<_>>()?;
    let a: Vec<u64> = outs.iter().filter_map(|x| if let Out::A(t) = x { Some(*t) } else { None }).collect();
    let mut b: Vec<(u64, Vec<u64>, u64)> =
        outs.into_iter().filter_map(|x| if let Out::B(r) = x { Some(r) } else { None }).collect();
    let swept: Vec<Vec<(u64, Vec<u64>, u64)>> =
        b.split_off(policies_1b.len()).chunks(policies_1b.len()).map(|c| c.to_vec()).collect();
    let s = |ns: u64| ns as f64 / 1e9;

    let mut t1a = Table::new(
        "fig1a",
        "Postmark time vs utilization after aging, TRIM on and off (Fig. 1a)",
        &["utilization_pct", "trim_off_s", "trim_on_s", "on_minus_off_s"],
    );
    let (mut off_pts, mut on_pts) = (Vec::new(), Vec::new());
    for (i, &u) in UTILIZATIONS.iter().enumerate() {
        let (off, on) = (a[2 * i], a[2 * i + 1]);
        t1a.push_row(vec![
            Cell::Num(u * 100.0),
            Cell::Num(s(off)),
            Cell::Num(s(on)),
            Cell::Num(s(on) - s(off)),
        ]);
        off_pts.push((u * 100.0, s(off)));
        on_pts.push((u * 100.0, s(on)));
    }
    let mut t1b = Table::new(
        "fig1b",
        "Postmark time over the 60/40/70/60 % schedule (Fig. 1b)",
        &[
            "policy",
            "postmark_total_s",
            "stage_60_s",
            "stage_40_s",
            "stage_70_s",
            "stage_60b_s",
            "with_setup_s",
        ],
    );
    for (p, (sum, st, total)) in policies_1b.iter().zip(&b) {
        let mut row = vec![Cell::from(p.label()), Cell::Num(s(*sum))];
        row.extend(st.iter().map(|&x| Cell::Num(s(x))));
        row.push(Cell::Num(s(*total)));
        t1b.push_row(row);
    }
    // The TRIM-cost sweep: which of Fig. 1b's claims hold at each per-command cost.
    let claims_at = |runs: &[(u64, Vec<u64>, u64)]| -> (bool, bool, bool) {
        let t: Vec<u64> = runs.iter().map(|r| r.0).collect();
        let (off, on) = (t[0], t[7]);
        let best = t[1..7].iter().copied().min().unwrap_or(u64::MAX);
        (best < off && best < on, degrades(&t[2..7]), on < off)
    };
    let mut sweep = Table::new(
        "fig1b_trim_cost_sweep",
        "Sensitivity: Fig. 1b at each per-command TRIM cost (the era drive otherwise unchanged)",
        &[
            "trim_command_us",
            "trim_off_s",
            "trim_on_s",
            "best_set_s",
            "set_40_100_s",
            "set_40_60_s",
            "set_beats_both",
            "degrades_with_high_watermark",
            "on_beats_off",
        ],
    );
    let mut sweep_claims = Vec::new();
    let (mut off_line, mut on_line, mut best_line) = (Vec::new(), Vec::new(), Vec::new());
    for (&cost, runs) in TRIM_COST_SWEEP_NS.iter().zip(&swept) {
        let c = claims_at(runs);
        let best = runs[1..7].iter().map(|r| r.0).min().unwrap_or(0);
        sweep.push_row(vec![
            Cell::Num(cost as f64 / 1e3),
            Cell::Num(s(runs[0].0)),
            Cell::Num(s(runs[7].0)),
            Cell::Num(s(best)),
            Cell::Num(s(runs[2].0)),
            Cell::Num(s(runs[6].0)),
            Cell::from(c.0.to_string()),
            Cell::from(c.1.to_string()),
            Cell::from(c.2.to_string()),
        ]);
        let x = (cost as f64 / 1e3).log10();
        off_line.push((x, s(runs[0].0)));
        on_line.push((x, s(runs[7].0)));
        best_line.push((x, s(best)));
        sweep_claims.push(c);
    }
    let beats: Vec<bool> = sweep_claims.iter().map(|c| c.0).collect();
    let degr: Vec<bool> = sweep_claims.iter().map(|c| c.1).collect();
    let on_off: Vec<bool> = sweep_claims.iter().map(|c| c.2).collect();
    // Slopes of the TRIM-on curve per segment.
    let slope = |pts: &[(f64, f64)], i: usize| (pts[i + 1].1 - pts[i].1) / (pts[i + 1].0 - pts[i].0);
    let on_slopes: Vec<f64> = (0..on_pts.len() - 1).map(|i| slope(&on_pts, i)).collect();
    let last = on_slopes.len() - 1;
    let steepest_high = on_slopes[last] >= on_slopes.iter().cloned().fold(f64::MIN, f64::max) - 1e-12;
    let off_total = b[0].0;
    let on_total = b[7].0;
    let set_totals: Vec<u64> = b[1..7].iter().map(|r| r.0).collect();
    let set_best = *set_totals.iter().min().unwrap_or(&u64::MAX);
    let set_beats_both = set_totals.iter().filter(|&&t| t < off_total && t < on_total).count();
    let set_degrades = degrades(&b[2..7].iter().map(|r| r.0).collect::<Vec<_>>());
    let era_ns = trimlab_trim::TrimCostModel::sata_2011().command_ns;
    let verdicts = vec![
        bands::shape(
            "Fig. 1a: the TRIM-on curve is steepest at the highest utilizations (90 % to 95 % here; 001: 90 % to 100 %)",
            steepest_high,
            format!("TRIM-on slopes (s per utilization point): {}", on_slopes.iter().map(|x| format!("{x:.4}")).collect::<Vec<_>>().join(", ")),
        ),
        bands::shape(
            "Fig. 1a: at low utilization TRIM on can be slower than off",
            a[1] > a[0],
            format!("at {} %: off {:.3} s, on {:.3} s", UTILIZATIONS[0] * 100.0, s(a[0]), s(a[1])),
        ),
        bands::shape(
            "Fig. 1b: SeT beats both always-off and always-on on the 60/40/70/60 schedule (era drive)",
            set_beats_both > 0 && set_best < off_total && set_best < on_total,
            format!("off {:.3} s, on {:.3} s, best SeT {:.3} s; {} of 6 SeT settings beat both; {}", s(off_total), s(on_total), s(set_best), set_beats_both, holding_ranges(&TRIM_COST_SWEEP_NS, &beats)),
        ),
        bands::shape(
            "Fig. 1b: performance degrades as the high watermark drops from 100 to 60 (era drive; ties allowed, 60 slower than 100)",
            set_degrades,
            format!(
                "SeT(40,100) {:.3}, (40,90) {:.3}, (40,80) {:.3}, (40,70) {:.3}, (40,60) {:.3} s; {}",
                s(b[2].0), s(b[3].0), s(b[4].0), s(b[5].0), s(b[6].0), holding_ranges(&TRIM_COST_SWEEP_NS, &degr)
            ),
        ),
        bands::shape(
            "Fig. 1b: TRIM always on beats always off (001: utilization is high and much space is deleted)",
            on_total < off_total,
            format!("off {:.3} s, on {:.3} s; {}", s(off_total), s(on_total), holding_ranges(&TRIM_COST_SWEEP_NS, &on_off)),
        ),
        bands::shape(
            "001's premise: SeT's gain comes from TRIM's cost, so the sweep has a cost below which SeT no longer beats both, and SeT beats both at the era drive's cost",
            !beats[0] && beats.iter().any(|&h| h) && set_beats_both > 0,
            format!("SeT beats both: {} (era drive: {} us per TRIM)", holding_ranges(&TRIM_COST_SWEEP_NS, &beats), era_ns / 1000),
        ),
    ];
    let pm = postmark(o);
    Ok(ExperimentReport {
        name: "selective-trim".into(),
        title: "To TRIM or not to TRIM (001): Selective TRIM".into(),
        summary: format!(
            "001's era: {} (SATA II link), under the ext4-like file system (4 MiB dirty limit, 100 ms commit interval). Postmark scaled with the device: {} files of {}-{} bytes, {} transactions, 16 KiB I/O. Aging per 001; Fig. 1b after preconditioning the drive full.",
            describe(PRESET, device_bytes(o))?, pm.files, pm.min_bytes, pm.max_bytes, pm.transactions
        ),
        paper: vec![
            "Fig. 1a (60 GB SSD, 4250 files of 0.1-3 MB, 20 000 transactions): the TRIM-on curve is steepest between 90 % and 100 % utilization; at low utilization TRIM on can be slower than off.".into(),
            "Fig. 1b: TRIM on beats TRIM off; every SeT setting beats both; performance degrades as the high watermark drops from 100 to 60.".into(),
        ],
        verdicts,
        notes: vec![
            "Utilization in Fig. 1a is what aging leaves valid on the device; the new file system starts empty. TRIM off leaves Postmark's deleted files valid on the device too.".into(),
            "The benefit of TRIM comes from less GC copying; its cost from serial, non-queued TRIMs in each commit, which block the drive's queue. Postmark itself never fsyncs: the application feels both through dirty-limit write-back and reads.".into(),
            "Utilizations stop at 95 %: at 100 % Postmark's own files do not fit.".into(),
            format!(
                "TRIM-cost sweep (table fig1b_trim_cost_sweep, plot fig1b_trim_cost_sweep): SeT beats both {}; degradation with the high watermark {}; always-on beats always-off {}. Where TRIM is nearly free every TRIM SeT skips costs GC copies later, so always-on wins and SeT's time falls toward it as the high watermark drops; SeT wins once TRIM costs more than the GC work it saves. The era drive's cost ({} us per command) is an assumption (see trimlab presets): the sweep, not that number, is the result.",
                holding_ranges(&TRIM_COST_SWEEP_NS, &beats),
                holding_ranges(&TRIM_COST_SWEEP_NS, &degr),
                holding_ranges(&TRIM_COST_SWEEP_NS, &on_off),
                era_ns / 1000
            ),
            "Postmark spans ~1 s of simulated time, so the commit interval is scaled to 100 ms to keep the tens of commits (and of TRIM bursts) a minutes-long Postmark has.".into(),
        ],
        tables: vec![t1a, t1b, sweep],
        plots: vec![
            Plot {
                name: "fig1a_postmark_vs_utilization".into(),
                title: "Fig. 1a: Postmark time vs utilization".into(),
                x_label: "utilization after aging (%)".into(),
                y_label: "Postmark time (s)".into(),
                log_y: false,
                kind: PlotKind::Lines {
                    series: vec![
                        Series { label: "TRIM off".into(), points: off_pts, style: SeriesStyle::Line },
                        Series { label: "TRIM on".into(), points: on_pts, style: SeriesStyle::Line },
                    ],
                },
            },
            Plot {
                name: "fig1b_set_policies".into(),
                title: "Fig. 1b: Postmark time over the 60/40/70/60 schedule".into(),
                x_label: "policy".into(),
                y_label: "Postmark time (s)".into(),
                log_y: false,
                kind: PlotKind::Bars {
                    categories: policies_1b.iter().map(|p| if *p == PolicyKind::NoDiscard { "TRIM off".into() } else if *p == PolicyKind::Discard { "TRIM on".into() } else { p.label() }).collect(),
                    series: vec![("trimlab".into(), b.iter().map(|r| s(r.0)).collect())],
                },
            },
            Plot {
                name: "fig1b_trim_cost_sweep".into(),
                title: "Fig. 1b vs the cost of one TRIM: where SeT starts and stops winning".into(),
                x_label: "TRIM cost per command (log10 us)".into(),
                y_label: "Postmark time over the schedule (s)".into(),
                log_y: false,
                kind: PlotKind::Lines {
                    series: vec![
                        Series { label: "TRIM off".into(), points: off_line, style: SeriesStyle::Line },
                        Series { label: "TRIM on".into(), points: on_line, style: SeriesStyle::Line },
                        Series { label: "best SeT".into(), points: best_line, style: SeriesStyle::Line },
                    ],
                },
            },
        ],
        params: vec![
            ("seed".into(), o.seed.to_string()),
            ("scale".into(), o.scale.to_string()),
            ("device_bytes".into(), device_bytes(o).to_string()),
        ],
    })
}
