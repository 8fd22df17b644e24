//! `ftl-trim`'s tables: 004's Tables 2, 3 and 4 and E_ftl beside ours, every run's measures, and
//! the two FTLs' internals (the hybrid FTL's merges and trimmed-range list, the page FTL's GC
//! and lazy backward map).

use super::{
    pct, seconds, Ftl, Results, Workload, PAPER_T3_MIN, PAPER_T3_N_PB, PAPER_T4, PAPER_T4_GC, TABLE2_RUNS,
};
use crate::table::table;
use trimlab_device::metrics::{FtlDetail, FtlMeasures};
use trimlab_report::{Cell, Table};

pub(super) fn tables(r: &Results) -> Vec<Table> {
    vec![table2(r), e_ftl(r), table3(r), table4(r), runs(r), hybrid_merges(r), page_gc(r)]
}

/// Table 2: N_pb, N_eb, N_vb and E_ftl of both FTLs with and without TRIM, beside 004's.
fn table2(r: &Results) -> Table {
    use Workload::{Iozone, OsInstall};
    let row = |name: &str, w: Workload, ours: fn(&FtlMeasures) -> Cell, paper: [Cell; 4]| {
        let mut row = vec![Cell::from(name)];
        row.extend(TABLE2_RUNS.map(|(ftl, trim)| ours(&r.find(w, ftl, trim).measures)));
        row.extend(paper);
        row
    };
    let n_pb = |m: &FtlMeasures| Cell::Num(m.blocks_programmed as f64);
    let n_eb = |m: &FtlMeasures| Cell::Num(m.erases_per_block());
    let n_vb = |m: &FtlMeasures| Cell::from(m.valid_blocks);
    let e_ftl = |m: &FtlMeasures| Cell::Num(m.e_ftl());
    let none = || [(); 4].map(|_| Cell::Empty);
    table(
        "table2",
        "Table 2: effect of TRIM, hybrid vs page mapping (ours beside 004's)",
        &[
            "measure",
            "hybrid_trim",
            "hybrid_no_trim",
            "page_trim",
            "page_no_trim",
            "paper_hybrid_trim",
            "paper_hybrid_no_trim",
            "paper_page_trim",
            "paper_page_no_trim",
        ],
        [
            row("N_pb OS", OsInstall, n_pb, [53119.0, 53655.0, 23512.0, 23480.0].map(Cell::Num)),
            row("N_pb IOZone", Iozone, n_pb, [32479.0, 32221.0, 2920.0, 2112.0].map(Cell::Num)),
            row("N_eb OS", OsInstall, n_eb, [1085.0, 1102.0, 20.0, 23.0].map(Cell::Num)),
            row("N_eb IOZone", Iozone, n_eb, [1223.0, 1247.0, 103.0, 92.0].map(Cell::Num)),
            row("N_vb OS", OsInstall, n_vb, none()),
            row("N_vb IOZone", Iozone, n_vb, none()),
            row("E_ftl OS", OsInstall, e_ftl, [Some(53.0), Some(51.9), None, None].map(Cell::from)),
            row("E_ftl IOZone", Iozone, e_ftl, [Some(79.3), Some(78.5), None, None].map(Cell::from)),
        ],
    )
}

/// E_ftl with and without TRIM, and TRIM's change beside 004's.
fn e_ftl(r: &Results) -> Table {
    let paper_os_hybrid = pct(53.0, 51.9);
    let paper_iozone_hybrid = pct(79.3, 78.5);
    table(
        "e_ftl",
        "E_ftl = N_vb / (N_pb x N_eb): change with TRIM",
        &["workload", "ftl", "e_ftl_trim", "e_ftl_no_trim", "change_pct", "paper_change_pct"],
        [
            (Workload::OsInstall, Ftl::HYBRID, Some(paper_os_hybrid)),
            (Workload::OsInstall, Ftl::PAGE, Some(13.0)),
            (Workload::Iozone, Ftl::HYBRID, Some(paper_iozone_hybrid)),
            (Workload::Iozone, Ftl::PAGE, None),
        ]
        .map(|(w, ftl, paper)| {
            [
                Cell::from(w.name()),
                Cell::from(ftl.label()),
                Cell::Num(r.find(w, ftl, true).measures.e_ftl()),
                Cell::Num(r.find(w, ftl, false).measures.e_ftl()),
                Cell::Num(r.e_change(w, ftl)),
                Cell::from(paper),
            ]
        }),
    )
}

/// Table 3: the OS install with TRIM, hybrid against page mapping.
fn table3(r: &Results) -> Table {
    let (hyb, page) = r.table3();
    let (npb_ratio, time_ratio) = r.table3_ratios();
    let [paper_npb_hyb, paper_npb_page] = PAPER_T3_N_PB;
    let [paper_min_hyb, paper_min_page] = PAPER_T3_MIN;
    table(
        "table3",
        "Table 3: hybrid vs page mapping, OS install with TRIM",
        &["mapping", "N_pb", "duration_s", "paper_N_pb", "paper_duration_minutes"],
        [
            [
                Cell::from("hybrid"),
                Cell::from(hyb.measures.blocks_programmed),
                Cell::Num(seconds(hyb)),
                Cell::Num(paper_npb_hyb),
                Cell::Num(paper_min_hyb),
            ],
            [
                Cell::from("page"),
                Cell::from(page.measures.blocks_programmed),
                Cell::Num(seconds(page)),
                Cell::Num(paper_npb_page),
                Cell::Num(paper_min_page),
            ],
            [
                Cell::from("hybrid / page"),
                Cell::Num(npb_ratio),
                Cell::Num(time_ratio),
                Cell::Num(paper_npb_hyb / paper_npb_page),
                Cell::Num(paper_min_hyb / paper_min_page),
            ],
        ],
    )
}

const TABLE4_COLUMNS: &[&str] = &[
    "regime",
    "phase",
    "trim_mb_s",
    "no_trim_mb_s",
    "improvement_pct",
    "paper_trim_mb_s",
    "paper_no_trim_mb_s",
    "paper_improvement_pct",
    "trim_free_pct_min",
    "trim_free_pct_max",
    "trim_at_gc_threshold_pct",
    "no_trim_free_pct_min",
    "no_trim_free_pct_max",
    "no_trim_at_gc_threshold_pct",
    "trim_gc_pages_copied",
    "no_trim_gc_pages_copied",
    "next_fit_trim_mb_s",
    "next_fit_no_trim_mb_s",
    "next_fit_improvement_pct",
];

/// Table 4 in both regimes, with free space per phase; next-fit hosts as the sensitivity run.
fn table4(r: &Results) -> Table {
    let free_pct = |x: Option<f64>| Cell::from(x.map(|v| v * 100.0));
    let mut rows = Vec::new();
    for (w, regime) in
        [(Workload::Iozone, "GC not running with TRIM"), (Workload::IozoneGc, "GC running (free < 30 %)")]
    {
        let [t, n, tf, nf] = r.table4_runs(w);
        let phases = t.phases.iter().zip(&n.phases).zip(&tf.phases).zip(&nf.phases);
        for (i, (((pt, pn), ptf), pnf)) in phases.enumerate() {
            let paper = match w {
                Workload::Iozone => [PAPER_T4[i].0, PAPER_T4[i].1, PAPER_T4[i].2].map(Cell::Num),
                _ => [Cell::Empty, Cell::Empty, Cell::Num(PAPER_T4_GC[i])],
            };
            let mut row = vec![
                Cell::from(regime),
                Cell::from(pt.name),
                Cell::Num(pt.throughput_mb_s()),
                Cell::Num(pn.throughput_mb_s()),
                Cell::Num(pct(pt.throughput_mb_s(), pn.throughput_mb_s())),
            ];
            row.extend(paper);
            row.extend([
                free_pct(pt.free_share_min),
                free_pct(pt.free_share_max),
                Cell::Num(pt.at_gc_threshold_share() * 100.0),
                free_pct(pn.free_share_min),
                free_pct(pn.free_share_max),
                Cell::Num(pn.at_gc_threshold_share() * 100.0),
                Cell::from(pt.gc_pages_copied),
                Cell::from(pn.gc_pages_copied),
                Cell::Num(ptf.throughput_mb_s()),
                Cell::Num(pnf.throughput_mb_s()),
                Cell::Num(pct(ptf.throughput_mb_s(), pnf.throughput_mb_s())),
            ]);
            rows.push(row);
        }
    }
    table(
        "table4",
        "Table 4: IOZone on page mapping, with vs without TRIM (MB/s of simulated time; free space per phase)",
        TABLE4_COLUMNS,
        rows,
    )
}

/// Every run: 004's measures, WAF, duration and per-phase throughput.
fn runs(r: &Results) -> Table {
    table(
        "runs",
        "Every run: 004's measures, WAF, duration and per-phase throughput",
        &["run", "N_pb", "N_eb", "N_vb", "E_ftl", "erases", "waf", "duration_s", "phases_mb_s"],
        r.iter().map(|(p, o)| {
            let phases: Vec<String> =
                o.phases.iter().map(|m| format!("{} {:.3}", m.name, m.throughput_mb_s())).collect();
            [
                Cell::from(p.label()),
                Cell::from(o.measures.blocks_programmed),
                Cell::Num(o.measures.erases_per_block()),
                Cell::from(o.measures.valid_blocks),
                Cell::Num(o.measures.e_ftl()),
                Cell::from(o.measures.erases_total),
                Cell::Num(o.measures.waf()),
                Cell::Num(seconds(o)),
                Cell::from(phases.join("; ")),
            ]
        }),
    )
}

/// Hybrid internals: merges, associativity, trimmed-range list.
fn hybrid_merges(r: &Results) -> Table {
    table(
        "hybrid_merges",
        "Hybrid FTL: merges, associativity and the trimmed-range list",
        &[
            "run",
            "switch",
            "partial",
            "full",
            "full_empty",
            "source_blocks_per_full_merge",
            "rw_victims",
            "pages_copied",
            "merge_busy_s",
            "trimmed_pages_dropped",
            "hbl_ranges_end",
            "hbl_ranges_max",
            "hbl_memory_bytes",
            "hbl_steps_per_insert",
            "hbl_steps_per_lookup",
        ],
        r.iter().filter_map(|(p, o)| {
            let FtlDetail::Hybrid { merges: s, trimmed_range_list } = &o.detail else { return None };
            let mut row = vec![
                Cell::from(p.label()),
                Cell::from(s.switch_merges),
                Cell::from(s.partial_merges),
                Cell::from(s.full_merges),
                Cell::from(s.full_merges_empty),
                Cell::Num(s.source_blocks_per_full_merge()),
                Cell::from(s.rw_victims),
                Cell::from(s.merge_pages_copied),
                Cell::Num(s.merge_busy_ns as f64 / 1e9),
                Cell::from(s.trimmed_pages_dropped),
            ];
            match trimmed_range_list {
                Some(list) => row.extend([
                    Cell::from(list.ranges),
                    Cell::from(list.walks.ranges_max),
                    Cell::from(list.memory_bytes),
                    Cell::Num(list.walks.walk_steps_insert as f64 / list.walks.insert_pieces.max(1) as f64),
                    Cell::Num(list.walks.walk_steps_lookup as f64 / list.walks.lookups.max(1) as f64),
                ]),
                None => row.extend([(); 5].map(|_| Cell::Empty)),
            }
            Some(row)
        }),
    )
}

/// Page FTL internals: GC and the lazy backward map.
fn page_gc(r: &Results) -> Table {
    table(
        "page_gc",
        "Page-mapping FTL: GC, erase-when-invalid and the lazy backward map",
        &[
            "run",
            "gc_invocations",
            "gc_victims",
            "gc_pages_copied",
            "gc_stalls",
            "eager_erases",
            "reconciled_at_gc",
            "reconciled_periodic",
            "forced_reconciles",
            "victims_misjudged",
            "misjudged_extra_pages",
        ],
        r.iter().filter_map(|(p, o)| {
            let FtlDetail::Page { stats: s, variant: v } = &o.detail else { return None };
            Some([
                Cell::from(p.label()),
                Cell::from(s.gc_invocations),
                Cell::from(s.gc_victims),
                Cell::from(s.gc_pages_copied),
                Cell::from(s.gc_stalls),
                Cell::from(v.eager_erases),
                Cell::from(v.reconciled_at_gc),
                Cell::from(v.reconciled_periodic),
                Cell::from(v.forced_reconciles),
                Cell::from(v.victims_misjudged),
                Cell::from(v.misjudged_extra_pages),
            ])
        }),
    )
}
