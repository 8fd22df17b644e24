//! Model tests of the FTL models behind the driver: the hybrid FAST FTL (both stripings, with
//! and without the trimmed-range list) and the page-mapping FTL with 004's options (block
//! striping, lazy backward map, erase-when-invalid).
//!
//! Strategy: each case draws a small geometry and a stream of host commands mixing sequential
//! runs that start at a logical block's first page (to exercise sequential logs, switches and
//! partial merges), random single pages biased to a hot region (RW logs, full merges, GC),
//! multi-page TRIMs and reads.
//!
//! Invariants: a read returns the last data written to each page, or zeros if it was never
//! written or trimmed since (an FTL without TRIM support keeps the data); the hybrid FTL's full
//! check (forward/backward maps, data blocks at their offsets, log-block lists, free lists, the
//! trimmed-range list) holds after every merge (`set_verify`) and the page FTL's after every
//! GC (verify feature) and at the end.
//!
//! Replay a failure: TRIMLAB_SEED=<seed printed in the panic> cargo test -p trimlab-hybrid --test model

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::BTreeMap;
use trimlab_ftl::{BackwardUpdate, FtlConfig, PageFtl, StripeUnit, VictimPolicy};
use trimlab_hybrid::{Driver, FtlModel, HostCommand, HybridConfig, HybridFtl, PageFtlModel, Striping};
use trimlab_nand::{Geometry, Timing};
use trimlab_sim::SimTime;

const PAGE: u64 = 2048;

fn seeds() -> Vec<u64> {
    match std::env::var("TRIMLAB_SEED") {
        Ok(s) => vec![s.parse().expect("TRIMLAB_SEED must be an integer")],
        Err(_) => (1..=24).collect(),
    }
}

fn geometry(rng: &mut impl Rng) -> Geometry {
    let g = Geometry {
        channels: rng.gen_range(1..=3),
        chips_per_channel: 1,
        dies_per_chip: 1,
        planes_per_die: rng.gen_range(1..=2),
        blocks_per_plane: rng.gen_range(24..=40),
        pages_per_block: [4u32, 8, 16][rng.gen_range(0..3)],
        page_bytes: PAGE as u32,
    };
    g.validate().expect("test geometry is valid");
    g
}

/// Runs random commands against `driver` and a reference; `trims` says whether TRIM is honoured.
fn exercise<F: FtlModel>(seed: u64, driver: &mut Driver<F>, rng: &mut impl Rng, trims: bool, ppb: u32) {
    let pages = driver.ftl().logical_pages();
    let hot = (pages / 3).max(1);
    let mut reference: BTreeMap<u32, u64> = BTreeMap::new();
    let mut now = SimTime::ZERO;
    let mut tag = 1u64;
    let mut out = Vec::new();
    for step in 0..1500 {
        let command = match rng.gen_range(0..100) {
            0..=24 => {
                // A sequential run from the first page of a logical block.
                let lbn = rng.gen_range(0..pages.div_ceil(ppb));
                let first = lbn * ppb;
                let count = rng.gen_range(1..=ppb).min(pages - first);
                HostCommand::Write { offset: first as u64 * PAGE, bytes: count as u64 * PAGE, tag }
            }
            25..=64 => {
                let lpn = if rng.gen_bool(0.7) { rng.gen_range(0..hot) } else { rng.gen_range(0..pages) };
                let count = rng.gen_range(1..=3).min(pages - lpn);
                HostCommand::Write { offset: lpn as u64 * PAGE, bytes: count as u64 * PAGE, tag }
            }
            65..=79 => {
                let lpn = rng.gen_range(0..pages);
                let count = rng.gen_range(1..=(2 * ppb)).min(pages - lpn);
                // Byte ranges that may cut pages: only whole pages are trimmed.
                let cut = if rng.gen_bool(0.3) { 512 } else { 0 };
                HostCommand::Trim { ranges: vec![(lpn as u64 * PAGE + cut, count as u64 * PAGE - cut)] }
            }
            80..=97 => {
                let lpn = rng.gen_range(0..pages);
                let count = rng.gen_range(1..=4).min(pages - lpn);
                HostCommand::Read { offset: lpn as u64 * PAGE, bytes: count as u64 * PAGE }
            }
            _ => HostCommand::Flush,
        };
        out.clear();
        let done = driver
            .submit(now, &command, Some(&mut out))
            .unwrap_or_else(|e| panic!("seed {seed} step {step}: {command:?} refused: {e}"))
            .done;
        assert!(done >= now, "seed {seed} step {step}: completion before arrival");
        match &command {
            HostCommand::Write { offset, bytes, tag: t } => {
                for i in 0..(bytes / PAGE) as u32 {
                    reference.insert((offset / PAGE) as u32 + i, t + i as u64);
                }
                tag += bytes / PAGE;
            }
            HostCommand::Trim { ranges } => {
                if trims {
                    for &(offset, bytes) in ranges {
                        for lpn in offset.div_ceil(PAGE)..(offset + bytes) / PAGE {
                            reference.remove(&(lpn as u32));
                        }
                    }
                }
            }
            HostCommand::Read { offset, .. } => {
                for (i, &got) in out.iter().enumerate() {
                    let lpn = (offset / PAGE) as u32 + i as u32;
                    let want = reference.get(&lpn).copied().unwrap_or(0);
                    assert_eq!(
                        got, want,
                        "seed {seed} step {step}: lpn {lpn} read {got}, expected {want} (replay: TRIMLAB_SEED={seed} cargo test -p trimlab-hybrid --test model)"
                    );
                }
            }
            HostCommand::Flush => {}
        }
        now = done.after(rng.gen_range(0..50_000));
    }
    driver.ftl().check().unwrap_or_else(|e| panic!("seed {seed}: final check: {e}"));
}

#[test]
fn hybrid_ftl_matches_reference() {
    for seed in seeds() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let g = geometry(&mut rng);
        let chips = g.die_count() as u32;
        let sequential_logs = rng.gen_range(1..=2);
        let random_logs = rng.gen_range(1..=4);
        let reserve = chips * (sequential_logs + random_logs + 2);
        let data_blocks = g.block_count() as u32 - reserve - rng.gen_range(0..4);
        let config = HybridConfig {
            logical_pages: data_blocks * g.pages_per_block - rng.gen_range(0..g.pages_per_block),
            sequential_logs,
            random_logs,
            striping: if rng.gen_bool(0.5) { Striping::Page } else { Striping::Block },
            trim_groups: if rng.gen_bool(0.8) { Some(rng.gen_range(1..64)) } else { None },
            track_data: true,
        };
        HybridFtl::check_config(&g, &config).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let trims = config.trim_groups.is_some();
        let ppb = g.pages_per_block;
        let mut ftl = HybridFtl::new(g, Timing::k9lag08u0m(), config);
        ftl.set_verify(true);
        let mut driver = Driver::new(ftl, PAGE as u32, 3333);
        exercise(seed, &mut driver, &mut rng, trims, ppb);
        let s = driver.ftl().stats();
        assert!(
            s.full_merges + s.partial_merges + s.switch_merges > 0,
            "seed {seed}: the case never merged: {s:?}"
        );
    }
}

#[test]
fn page_ftl_options_match_reference() {
    for seed in seeds() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x5eed);
        let g = geometry(&mut rng);
        let usable = (g.block_count() as u32 - 4 * g.plane_count() as u32) * g.pages_per_block;
        let config = FtlConfig {
            logical_pages: usable * rng.gen_range(60..95) / 100,
            gc_free_blocks_min: rng.gen_range(2..=4),
            victim: [VictimPolicy::Greedy, VictimPolicy::CostBenefit][rng.gen_range(0..2)],
            track_data: true,
        };
        PageFtl::check_config(&g, &config).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let ppb = g.pages_per_block;
        let mut ftl = PageFtl::new(g, Timing::k9lag08u0m(), config);
        ftl.set_stripe_unit(if rng.gen_bool(0.5) { StripeUnit::Page } else { StripeUnit::Block });
        if rng.gen_bool(0.6) {
            ftl.set_backward_update(BackwardUpdate::Lazy { reconcile_every_pages: rng.gen_range(0..40) });
        }
        ftl.set_erase_when_invalid(rng.gen_bool(0.5));
        ftl.set_gc_gain_blocks_max([None, Some(1), Some(2)][rng.gen_range(0..3)]);
        let trims = rng.gen_bool(0.85);
        let mut driver = Driver::new(PageFtlModel { ftl, trim: trims }, PAGE as u32, 3333);
        exercise(seed, &mut driver, &mut rng, trims, ppb);
    }
}

#[test]
fn driver_refuses_bad_commands_without_changing_state() {
    let g = Geometry {
        channels: 1,
        chips_per_channel: 1,
        dies_per_chip: 1,
        planes_per_die: 1,
        blocks_per_plane: 32,
        pages_per_block: 8,
        page_bytes: 2048,
    };
    let mut driver =
        Driver::new(HybridFtl::new(g, Timing::k9lag08u0m(), HybridConfig::paper(128)), 2048, 3333);
    let e = driver.submit(SimTime::ZERO, &HostCommand::Write { offset: 512, bytes: 2048, tag: 1 }, None);
    assert!(e.unwrap_err().0.contains("multiples of the 2048-byte page"));
    let e = driver.submit(SimTime::ZERO, &HostCommand::Read { offset: 0, bytes: 129 * 2048 }, None);
    assert!(e.unwrap_err().0.contains("beyond the capacity"));
    assert_eq!(driver.ftl().stats().host_pages_programmed, 0);
}

#[test]
#[ignore = "diagnostic: prints merge and lazy-map counters of a few cases"]
fn print_counters() {
    for seed in 1..=4 {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let g = geometry(&mut rng);
        let chips = g.die_count() as u32;
        let data_blocks = g.block_count() as u32 - chips * 7;
        let config = HybridConfig {
            logical_pages: data_blocks * g.pages_per_block,
            track_data: true,
            ..HybridConfig::paper(0)
        };
        let ppb = g.pages_per_block;
        let mut driver = Driver::new(HybridFtl::new(g, Timing::k9lag08u0m(), config), PAGE as u32, 3333);
        exercise(seed, &mut driver, &mut rng, true, ppb);
        println!("{:?}", driver.ftl().stats());
    }
}
