//! Model tests of both FTL kinds through the one `Ftl` seam the device drives: the hybrid
//! FAST FTL (both stripings, with the trimmed-range list and with TRIM applied at once) and the
//! page-mapping FTL with 004's options (block striping, lazy backward map, erase-when-invalid,
//! bounded GC).
//!
//! Strategy: each case draws a small geometry and a stream of page operations mixing
//! sequential runs that start at a logical block's first page (to exercise sequential logs,
//! switches and partial merges), random single pages biased to a hot region (RW logs, full
//! merges, GC), multi-page TRIMs and reads. GC requests are served after each write, as the
//! device does.
//!
//! Invariants: a read returns the last data written to each page, or zeros if it was never
//! written or trimmed since; `valid_pages` counts exactly the pages holding data; the hybrid
//! FTL's full check (forward/backward maps, data blocks at their offsets, log-block lists, free
//! lists, the trimmed-range list) holds after every merge (`set_verify`) and the page FTL's
//! after every GC (`verify::enable()`) and at the end.
//!
//! Replay a failure: TRIMLAB_SEED=<seed printed in the panic> cargo test -p trimlab-hybrid --test hybrid model::

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::BTreeMap;
use trimlab_ftl::{BackwardUpdate, Ftl, FtlConfig, Lpn, PageData, PageFtl, StripeUnit, VictimPolicy};
use trimlab_hybrid::{HybridConfig, HybridFtl, Striping};
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
        // Flash pages of one, two or four pages (mapping units).
        flash_page_bytes: PAGE as u32 * [1u32, 2, 4][rng.gen_range(0..3)],
    };
    g.validate().expect("test geometry is valid");
    g
}

/// Runs random page operations against `ftl` and a reference.
fn exercise(seed: u64, ftl: &mut dyn Ftl, rng: &mut impl Rng, ppb: u32) {
    let pages = ftl.logical_pages();
    let hot = (pages / 3).max(1);
    let mut reference: BTreeMap<u32, u64> = BTreeMap::new();
    let mut now = SimTime::ZERO;
    let mut tag = 1u64;
    let replay = format!("replay: TRIMLAB_SEED={seed} cargo test -p trimlab-hybrid --test hybrid model::");
    for step in 0..1500 {
        let mut done = now;
        if rng.gen_range(0..100) < 4 {
            // The host's FLUSH: partly filled flash pages are padded and programmed.
            done = done.max(ftl.sync(now));
            while let Some(plane) = ftl.take_gc_request() {
                ftl.collect_garbage(now, plane);
            }
        }
        let mut write = |ftl: &mut dyn Ftl, first: u32, count: u32, reference: &mut BTreeMap<u32, u64>| {
            for lpn in first..first + count {
                done = done.max(ftl.write(now, Lpn(lpn), tag));
                while let Some(plane) = ftl.take_gc_request() {
                    ftl.collect_garbage(now, plane);
                }
                reference.insert(lpn, tag);
                tag += 1;
            }
        };
        match rng.gen_range(0..100) {
            0..=24 => {
                // A sequential run from the first page of a logical block.
                let first = rng.gen_range(0..pages.div_ceil(ppb)) * ppb;
                write(ftl, first, rng.gen_range(1..=ppb).min(pages - first), &mut reference);
            }
            25..=64 => {
                let lpn = if rng.gen_bool(0.7) { rng.gen_range(0..hot) } else { rng.gen_range(0..pages) };
                write(ftl, lpn, rng.gen_range(1..=3).min(pages - lpn), &mut reference);
            }
            65..=79 => {
                let lpn = rng.gen_range(0..pages);
                let count = rng.gen_range(1..=(2 * ppb)).min(pages - lpn);
                let live = (lpn..lpn + count).filter(|l| reference.contains_key(l)).count() as u64;
                let held = ftl.trim(now, Lpn(lpn), count);
                assert_eq!(held, live, "seed {seed} step {step}: TRIM of {count} at {lpn} found {held} live pages, expected {live} ({replay})");
                for l in lpn..lpn + count {
                    reference.remove(&l);
                }
            }
            _ => {
                let lpn = rng.gen_range(0..pages);
                for l in lpn..(lpn + 4).min(pages) {
                    let (data, t) = ftl.read(now, Lpn(l));
                    done = done.max(t);
                    let got = match data {
                        PageData::Unmapped => 0,
                        PageData::Mapped(tag) => tag,
                    };
                    let want = reference.get(&l).copied().unwrap_or(0);
                    assert_eq!(
                        got, want,
                        "seed {seed} step {step}: lpn {l} read {got}, expected {want} ({replay})"
                    );
                    assert_eq!(
                        ftl.is_mapped(Lpn(l)),
                        want != 0,
                        "seed {seed} step {step}: is_mapped({l}) ({replay})"
                    );
                }
            }
        }
        assert!(done >= now, "seed {seed} step {step}: completion before arrival");
        if step % 50 == 0 {
            ftl.check().unwrap_or_else(|e| panic!("seed {seed} step {step}: {e} ({replay})"));
            let planes = ftl.geometry().plane_count();
            let per_plane: u64 = (0..planes).map(|p| ftl.free_blocks_in_plane(p)).sum();
            assert_eq!(
                per_plane,
                ftl.free_blocks(),
                "seed {seed} step {step}: free blocks per plane ({replay})"
            );
        }
        now = done.after(rng.gen_range(0..50_000));
    }
    assert_eq!(ftl.valid_pages(), reference.len() as u64, "seed {seed}: valid pages ({replay})");
    ftl.check().unwrap_or_else(|e| panic!("seed {seed}: final check: {e}"));
}

#[test]
fn hybrid_ftl_matches_reference() {
    trimlab_ftl::verify::enable();
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
        let ppb = g.pages_per_block;
        let mut ftl = HybridFtl::new(g, Timing::k9lag08u0m(), config);
        ftl.set_verify(true);
        exercise(seed, &mut ftl, &mut rng, ppb);
        let s = ftl.stats();
        assert!(
            s.full_merges + s.partial_merges + s.switch_merges > 0,
            "seed {seed}: the case never merged: {s:?}"
        );
    }
}

#[test]
fn page_ftl_options_match_reference() {
    trimlab_ftl::verify::enable();
    for seed in seeds() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x5eed);
        let g = geometry(&mut rng);
        let usable = (g.block_count() as u32 - 4 * g.plane_count() as u32) * g.pages_per_block;
        let config = FtlConfig {
            logical_pages: usable * rng.gen_range(60..95) / 100,
            gc_free_blocks_min: rng.gen_range(2..=4),
            victim: [VictimPolicy::Greedy, VictimPolicy::CostBenefit][rng.gen_range(0..2)],
            track_data: true,
            multi_plane: rng.gen_bool(0.5),
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
        exercise(seed, &mut ftl, &mut rng, ppb);
    }
}

#[test]
#[ignore = "diagnostic: prints merge and lazy-map counters of a few cases"]
fn print_counters() {
    trimlab_ftl::verify::enable();
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
        let mut ftl = HybridFtl::new(g, Timing::k9lag08u0m(), config);
        exercise(seed, &mut ftl, &mut rng, ppb);
        println!("{:?}", ftl.stats());
    }
}
