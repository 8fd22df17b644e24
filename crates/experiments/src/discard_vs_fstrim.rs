//! `discard-vs-fstrim` (003): on a thin-provisioned volume, mkfs with and without discard, a bulk
//! `rm` of large files written in parallel with and without `-o discard`, and fstrim of the whole
//! file system; then, on an SSD, the WAF and wear price of never trimming for one workload.

use super::bands;
use super::host::{describe, ext4, int, mib, num, phase, secs, ssd};
use super::prose::Prose;
use super::table::table;
use super::{point, try_parallel_map, Options};
use anyhow::Result;
use trimlab_device::{DeviceKind, DeviceSection};
use trimlab_fs::PolicyKind;
use trimlab_report::{Cell, ExperimentReport, Plot, PlotKind, Table, Verdict};
use trimlab_scenario::host::HostSection;
use trimlab_scenario::phase::{PhaseKind, PhaseSection};
use trimlab_scenario::RunConfig;
use trimlab_sim::ByteSize;
use trimlab_workload::{kind, Volume, WorkloadConfig, WorkloadKind};

/// 003's 10 TB volume and 64 x 16 GB files, divided by this at scale 1.
const SHRINK: u64 = 256;
const SSD_BYTES: u64 = 512 << 20;

fn volume_bytes(o: &Options) -> u64 {
    let v = ((10u64 << 40) / SHRINK) as f64 * o.scale;
    ((v as u64) >> 30 << 30).max(4 << 30)
}

/// Each of the 64 files: 003's 16 GB divided as the volume is, in whole MiB.
fn file_bytes(o: &Options) -> u64 {
    (((16u64 << 30) / SHRINK) as f64 * o.scale) as u64 >> 20 << 20
}

struct Thin {
    mkfs_s: f64,
    write_s: f64,
    rm_s: f64,
    fstrim_s: f64,
    fstrim_bytes: u64,
    allocated_after_rm: u64,
    rm_trims: u64,
}

/// The thin volume: mkfs with or without discard; the copy and rm run on a file system made
/// again without discard (as in 003), mounted with or without `-o discard`; then fstrim.
fn thin_config(discard: bool, o: &Options) -> RunConfig {
    let policy = if discard { PolicyKind::Discard } else { PolicyKind::NoDiscard };
    let device = DeviceSection {
        kind: Some(DeviceKind::Thin),
        logical_bytes: Some(ByteSize(volume_bytes(o))),
        ..DeviceSection::default()
    };
    let keys = kind::bulk_rm::Keys {
        files: Some(64),
        file_bytes: Some(ByteSize(file_bytes(o))),
        append_bytes: Some(ByteSize(1 << 20)),
    };
    let bulk_rm = WorkloadConfig::of_kind(WorkloadKind::BulkRm, &keys);
    RunConfig {
        seed: Some(o.seed),
        device,
        host: HostSection { mkfs_discard: Some(discard), ..ext4(policy) },
        phases: vec![
            phase(PhaseKind::Mkfs, |p| p.mkfs_discard = Some(false)),
            PhaseSection::workload(&bulk_rm),
            phase(PhaseKind::Fstrim, |_| {}),
        ],
        ..RunConfig::default()
    }
}

fn thin_run(discard: bool, o: &Options) -> Result<Thin> {
    let m = point::metrics(o, &thin_config(discard, o))?;
    Ok(Thin {
        mkfs_s: secs(int(&m, "/host/mkfs_ns")?),
        write_s: secs(int(&m, "/phases/2/figures/write_ns")?),
        rm_s: secs(int(&m, "/phases/2/figures/rm_ns")?),
        fstrim_s: secs(int(&m, "/phases/3/elapsed_ns")?),
        fstrim_bytes: int(&m, "/phases/3/figures/trimmed_bytes")?,
        allocated_after_rm: int(&m, "/phases/2/allocated_bytes")?,
        rm_trims: int(&m, "/phases/2/figures/rm_trim_commands")?,
    })
}

struct Wear {
    waf: f64,
    erases: u64,
    erase_max: u32,
    trims: u64,
    elapsed_s: f64,
    cancelled: u64,
    untrimmed: u64,
    unusable_mean_ms: f64,
    idle_gc_victims: u64,
    write_p99_us: f64,
}

/// The same churn on an SSD: age to 90 %, delete down to 50 %, then replace files (delete one,
/// write one) until twice the capacity has been written. fstrim.timer is weekly; the churn
/// lasts seconds, so the fstrim policy trims every 2 simulated seconds here.
/// `idle_gc` forces the drive's idle-time GC on (the preset's default) or off.
fn wear_config(policy: PolicyKind, idle_gc: bool, o: &Options) -> RunConfig {
    let mut host = ext4(policy);
    if policy == PolicyKind::Fstrim {
        host.discard = Some("fstrim:2s".into());
    }
    let files = |p: &mut PhaseSection, prefix: &str| {
        p.prefix = Some(prefix.into());
        p.stream = Some("churn".into());
        p.file_bytes_min = Some(ByteSize(1 << 20));
        p.file_bytes_max = Some(ByteSize(8 << 20));
        p.append_bytes = Some(ByteSize(1 << 20));
    };
    let keys = kind::file_churn::Keys {
        utilization: Some(0.5),
        file_bytes_min: Some(ByteSize(1 << 20)),
        file_bytes_max: Some(ByteSize(8 << 20)),
        append_bytes: Some(ByteSize(1 << 20)),
        prefix: Some("c".into()),
        stream: Some("churn".into()),
    };
    let churn = WorkloadConfig {
        writes: Volume::Bytes(2 * SSD_BYTES),
        ..WorkloadConfig::of_kind(WorkloadKind::FileChurn, &keys)
    };
    RunConfig {
        seed: Some(o.seed),
        seed_path: Some("discard-vs-fstrim/wear".into()),
        host,
        phases: vec![
            phase(PhaseKind::Fill, |p| {
                files(p, "a");
                p.utilization = Some(0.9);
            }),
            phase(PhaseKind::Delete, |p| {
                p.utilization = Some(0.5);
                p.stream = Some("churn".into());
            }),
            phase(PhaseKind::Measure, |_| {}),
            PhaseSection::workload(&churn),
        ],
        ..ssd("nvme-tlc", SSD_BYTES, None, Some(idle_gc))
    }
}

fn wear_run(policy: PolicyKind, idle_gc: bool, o: &Options) -> Result<Wear> {
    let m = point::metrics(o, &wear_config(policy, idle_gc, o))?;
    // TRIMs from the start of measurement to umount (async's are all given up at umount).
    let before: u64 =
        (1..4).map(|i| int(&m, &format!("/phases/{i}/device/trim_commands"))).sum::<Result<_>>()?;
    Ok(Wear {
        waf: num(&m, "/report/waf")?,
        erases: int(&m, "/report/nand_blocks_erased")?,
        erase_max: int(&m, "/report/erase_count/max")? as u32,
        trims: int(&m, "/host/device/trim_commands")? - before,
        elapsed_s: secs(int(&m, "/phases/4/elapsed_ns")?),
        cancelled: int(&m, "/host/policy/reuse_cancelled_blocks")?,
        untrimmed: int(&m, "/host/policy/untrimmed_blocks")?,
        unusable_mean_ms: num(&m, "/host/freed_unusable_mean_s")? * 1e3,
        idle_gc_victims: int(&m, "/report/gc/idle_victims")?,
        write_p99_us: num(&m, "/report/latency/write/p99_ns")? / 1e3,
    })
}

const WEAR_POLICIES: [PolicyKind; 4] =
    [PolicyKind::NoDiscard, PolicyKind::Discard, PolicyKind::Fstrim, PolicyKind::Async];

/// Every point this experiment runs, by name.
pub fn configs(o: &Options) -> Vec<(String, RunConfig)> {
    let mut v: Vec<(String, RunConfig)> = [false, true]
        .iter()
        .map(|&d| (format!("thin-{}", if d { "discard" } else { "nodiscard" }), thin_config(d, o)))
        .collect();
    v.extend(WEAR_POLICIES.iter().map(|&p| (format!("wear-{}", p.config_name()), wear_config(p, true, o))));
    // The sensitivity run: the same churn with idle-time GC off.
    v.extend(
        WEAR_POLICIES
            .iter()
            .map(|&p| (format!("wear-{}-no-idle-gc", p.config_name()), wear_config(p, false, o))),
    );
    v
}

const PROSE: Prose = Prose(include_str!("discard_vs_fstrim.md"));

pub fn run(o: &Options) -> Result<ExperimentReport> {
    let thin = try_parallel_map(o, &[false, true], "discard-vs-fstrim thin", |&d| thin_run(d, o))?;
    // The preset's default (idle-time GC on), then the same churn with it off.
    let wear_jobs: Vec<(PolicyKind, bool)> =
        [true, false].iter().flat_map(|&on| WEAR_POLICIES.iter().map(move |&p| (p, on))).collect();
    let mut wear = try_parallel_map(o, &wear_jobs, "discard-vs-fstrim wear", |&(p, on)| wear_run(p, on, o))?;
    let wear_no_idle_gc = wear.split_off(WEAR_POLICIES.len());
    let (nd, d) = (&thin[0], &thin[1]);
    Ok(ExperimentReport {
        name: "discard-vs-fstrim".into(),
        title: "Discard vs fstrim on ext4 (003)".into(),
        summary: PROSE.item(
            "summary",
            &[
                ("volume", &mib(volume_bytes(o))),
                ("shrink", &SHRINK),
                ("file", &mib(file_bytes(o))),
                ("wear_drive", &describe("nvme-tlc", SSD_BYTES)?),
            ],
        ),
        paper: PROSE.items("paper"),
        verdicts: verdicts(nd, d, &wear, &wear_no_idle_gc, o),
        notes: PROSE.items("notes"),
        tables: vec![
            thin_table(nd, d, size_ratio(o)),
            thin_details(nd, d),
            wear_table(&wear),
            idle_gc_table(&wear, &wear_no_idle_gc),
        ],
        plots: plots(nd, d, &wear, size_ratio(o)),
        params: vec![
            ("seed".into(), o.seed.to_string()),
            ("scale".into(), o.scale.to_string()),
            ("volume_bytes".into(), volume_bytes(o).to_string()),
            ("ssd_bytes".into(), SSD_BYTES.to_string()),
        ],
    })
}

/// 003's figures are for a 10 TB volume; ours is SHRINK x smaller at scale 1, so absolute
/// times compare after multiplying by this (time grows with the volume: mkfs and fstrim walk
/// it, rm and write move 64 files of a volume-proportional size).
fn size_ratio(o: &Options) -> f64 {
    (10u64 << 40) as f64 / volume_bytes(o) as f64
}

fn thin_table(nd: &Thin, d: &Thin, size_ratio: f64) -> Table {
    // An operation without and with discard, the same scaled to 003's 10 TB, their ratio, and
    // 003's three numbers.
    let row = |operation: &str, without: f64, with: f64, paper: [f64; 3]| {
        let [paper_without, paper_with, paper_ratio] = paper.map(Cell::Num);
        vec![
            Cell::from(operation),
            Cell::Num(without),
            Cell::Num(with),
            Cell::Num(without * size_ratio),
            Cell::Num(with * size_ratio),
            Cell::Num(with / without),
            paper_without,
            paper_with,
            paper_ratio,
        ]
    };
    let fstrim = vec![
        Cell::from("fstrim whole fs (after rm)"),
        Cell::Num(nd.fstrim_s),
        Cell::Num(d.fstrim_s),
        Cell::Num(nd.fstrim_s * size_ratio),
        Cell::Num(d.fstrim_s * size_ratio),
        Cell::Empty,
        Cell::Num(689.3),
        Cell::Empty,
        Cell::Empty,
    ];
    table(
        "thin_volume",
        "Thin volume: mkfs, bulk rm and fstrim times",
        &[
            "operation",
            "without_discard_s",
            "with_discard_s",
            "without_discard_at_10tb_s",
            "with_discard_at_10tb_s",
            "ratio",
            "paper_without_s",
            "paper_with_s",
            "paper_ratio",
        ],
        [
            row("mkfs", nd.mkfs_s, d.mkfs_s, [4.8, 152.0, 31.7]),
            row("rm of 64 files", nd.rm_s, d.rm_s, [16.4, 292.6, 17.8]),
            row("parallel write of 64 files", nd.write_s, d.write_s, [331.5, 331.5, 1.0]),
            fstrim,
        ],
    )
}

fn thin_details(nd: &Thin, d: &Thin) -> Table {
    table(
        "thin_details",
        "Thin volume details",
        &["mount", "rm_trim_commands", "allocated_after_rm_bytes", "fstrim_trimmed_bytes"],
        [("nodiscard", nd), ("discard", d)].map(|(label, r)| {
            [
                Cell::from(label),
                Cell::from(r.rm_trims),
                Cell::from(r.allocated_after_rm),
                Cell::from(r.fstrim_bytes),
            ]
        }),
    )
}

fn wear_table(wear: &[Wear]) -> Table {
    table(
        "ssd_wear",
        "The same churn on an SSD: WAF and wear by policy",
        &[
            "policy",
            "waf",
            "blocks_erased",
            "erase_count_max",
            "trim_commands",
            "churn_s",
            "reuse_cancelled_blocks",
            "untrimmed_blocks",
            "freed_unusable_mean_ms",
        ],
        WEAR_POLICIES.iter().zip(wear).map(|(p, w)| {
            [
                Cell::from(p.label()),
                Cell::Num(w.waf),
                Cell::from(w.erases),
                Cell::from(w.erase_max),
                Cell::from(w.trims),
                Cell::Num(w.elapsed_s),
                Cell::from(w.cancelled),
                Cell::from(w.untrimmed),
                Cell::Num(w.unusable_mean_ms),
            ]
        }),
    )
}

fn idle_gc_table(wear: &[Wear], wear_no_idle_gc: &[Wear]) -> Table {
    table(
        "ssd_wear_idle_gc",
        "The same churn with idle-time GC on (the nvme-tlc default) and off",
        &[
            "policy",
            "waf_on",
            "waf_off",
            "erases_on",
            "erases_off",
            "idle_gc_victims",
            "churn_s_on",
            "churn_s_off",
            "write_p99_us_on",
            "write_p99_us_off",
        ],
        WEAR_POLICIES.iter().zip(wear).zip(wear_no_idle_gc).map(|((p, on), off)| {
            [
                Cell::from(p.label()),
                Cell::Num(on.waf),
                Cell::Num(off.waf),
                Cell::from(on.erases),
                Cell::from(off.erases),
                Cell::from(on.idle_gc_victims),
                Cell::Num(on.elapsed_s),
                Cell::Num(off.elapsed_s),
                Cell::Num(on.write_p99_us),
                Cell::Num(off.write_p99_us),
            ]
        }),
    )
}

fn verdicts(nd: &Thin, d: &Thin, wear: &[Wear], wear_no_idle_gc: &[Wear], o: &Options) -> Vec<Verdict> {
    // 003's figures are for a 10 TB volume; ours is SHRINK x smaller at scale 1, so absolute times
    // are compared after multiplying by the size ratio, and ratios directly.
    let size_ratio = size_ratio(o);
    let idle_victims: u64 = wear.iter().map(|w| w.idle_gc_victims).sum();
    let (off, on) = (wear_no_idle_gc, wear);
    // An operation many times slower with discard than without: the direction is the shape,
    // the ratio against 003's the band.
    let slower = |claim: &str, band: &str, (with, without): (f64, f64), paper_ratio: f64| {
        let detail = format!("{with:.3} s vs {without:.3} s ({:.1}x)", with / without);
        bands::band(claim, band, with > without, bands::within_2x(with / without, paper_ratio), detail)
    };
    vec![
        slower(
            "mkfs with discard is many times slower than without on a thin volume (003: 152 s vs 4.8 s, 31.7x)",
            "ratio within 2x of 31.7x",
            (d.mkfs_s, nd.mkfs_s),
            152.0 / 4.8,
        ),
        slower(
            "rm with -o discard is many times slower than without (003: 292 s vs 16 s, 18.3x)",
            "ratio within 2x of 18.3x",
            (d.rm_s, nd.rm_s),
            292.0 / 16.0,
        ),
        bands::band(
            "fstrim of the whole file system takes minutes at 10 TB (003: 11.5 min)",
            "time x (10 TB / volume) within 2x of 690 s",
            nd.fstrim_bytes > 0,
            bands::within_2x(nd.fstrim_s * size_ratio, 690.0),
            format!("{:.3} s for {} ({:.0} s at 10 TB)", nd.fstrim_s, mib(volume_bytes(o)), nd.fstrim_s * size_ratio),
        ),
        bands::shape(
            "without discard the thin volume keeps the deleted files' space until fstrim returns it",
            nd.allocated_after_rm > d.allocated_after_rm && nd.fstrim_bytes > 0,
            format!(
                "allocated after rm: {} without vs {} with discard",
                mib(nd.allocated_after_rm),
                mib(d.allocated_after_rm)
            ),
        ),
        bands::shape(
            "idle-time GC (trimlab's, not 003's) does not change the verdict: nodiscard still costs WAF and wear with it off",
            off[0].waf > off[1].waf && off[0].erases > off[1].erases,
            format!(
                "idle GC off: WAF nodiscard {:.3} vs discard {:.3}; on: {:.3} vs {:.3}; idle GC victims with it on: {idle_victims} (table ssd_wear_idle_gc)",
                off[0].waf, off[1].waf, on[0].waf, on[1].waf
            ),
        ),
        bands::shape(
            "never trimming costs write amplification and wear on an SSD (003's comment thread; no number given)",
            on[0].waf > on[1].waf && on[0].erases > on[1].erases,
            format!(
                "WAF nodiscard {:.3} vs discard {:.3}; erases {} vs {}",
                on[0].waf, on[1].waf, on[0].erases, on[1].erases
            ),
        ),
    ]
}

fn plots(nd: &Thin, d: &Thin, wear: &[Wear], size_ratio: f64) -> Vec<Plot> {
    let bars = |name: &str, title: &str, y_label: &str, log_y: bool, series: Vec<(String, Vec<f64>)>| Plot {
        name: name.into(),
        title: title.into(),
        x_label: "operation".into(),
        y_label: y_label.into(),
        log_y,
        log_x: false,
        symlog_y: false,
        kind: PlotKind::Bars { categories: vec!["mkfs".into(), "rm".into()], series },
    };
    vec![
        bars(
            "thin_times",
            "mkfs and rm on a thin volume, with and without discard, at 003's 10 TB",
            &format!("time at 10 TB (s; ours x {size_ratio:.0})"),
            true,
            vec![
                ("trimlab without discard".into(), vec![nd.mkfs_s * size_ratio, nd.rm_s * size_ratio]),
                ("paper without discard".into(), vec![4.8, 16.4]),
                ("trimlab with discard".into(), vec![d.mkfs_s * size_ratio, d.rm_s * size_ratio]),
                ("paper with discard".into(), vec![152.0, 292.6]),
            ],
        ),
        bars(
            "thin_slowdown",
            "Slowdown with discard on a thin volume (with / without)",
            "times slower with discard",
            false,
            vec![
                ("trimlab".into(), vec![d.mkfs_s / nd.mkfs_s, d.rm_s / nd.rm_s]),
                ("paper".into(), vec![152.0 / 4.8, 292.6 / 16.4]),
            ],
        ),
        Plot {
            name: "ssd_waf".into(),
            title: "WAF of the same churn by TRIM policy".into(),
            x_label: "policy".into(),
            y_label: "WAF".into(),
            log_y: false,
            log_x: false,
            symlog_y: false,
            kind: PlotKind::Bars {
                categories: WEAR_POLICIES.iter().map(|p| p.label()).collect(),
                series: vec![("trimlab".into(), wear.iter().map(|w| w.waf).collect())],
            },
        },
    ]
}
