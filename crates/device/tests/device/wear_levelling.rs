//! Static wear levelling (`[ftl] static_wl`, docs/lifetime.md) through the device: the FTL's
//! invariants hold with it on, and on a hot/cold block workload it lowers the erase spread and
//! lengthens the most-worn block's projected life.
//!
//! Strategy (the property test): proptest draws a small geometry (planes, blocks per plane,
//! pages per block, 4 KiB or 16 KiB flash pages, multi-plane or not, spare factor, GC
//! threshold), a victim policy (greedy or cost-benefit: FIFO refuses static wear levelling), a
//! low threshold (1 to 6 erases, so that moves are frequent), idle GC, erase-when-invalid, a
//! lazy or eager backward map, a write buffer, a TRIM engine and a WRITE / TRIM / READ / FLUSH
//! mix skewed to a hot region; the command stream comes from the case's seed.
//!
//! Invariants: the full consistency check (I1-I8: maps, valid counts, block pool, and the wear
//! index against the flash's erase counts) holds after every GC and TRIM (the `verify` switch),
//! every 64 commands and at the end; the last tag written to each page reads back; a case that
//! moved nothing does not count towards the minimum of cases with moves.
//!
//! Replay a failure: the runner's random stream is fixed (no persisted regressions), so a
//! failure repeats on every `cargo test -p trimlab-device --test device wear_levelling::`; its message
//! gives the shrunk parameters, the command-stream seed among them.

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use rand::Rng;
use std::cell::Cell;
use std::collections::BTreeMap;
use trimlab_device::config::GcThreshold;
use trimlab_device::{
    BackwardMap, ByteRange, Command, DeviceReport, DeviceSection, FtlSection, Ssd, SsdConfig, TrimSection,
};
use trimlab_ftl::VictimPolicy;
use trimlab_sim::{ByteSize, SeedTree, SimTime};
use trimlab_trim::EngineKind;

const PAGE: u64 = 4096;

#[derive(Clone, Debug)]
struct Params {
    seed: u64,
    planes: u32,
    blocks_per_plane: u32,
    pages_per_block: u32,
    flash_page_units: u32,
    multi_plane: bool,
    spare_factor: f64,
    gc_free_blocks: u32,
    victim: VictimPolicy,
    threshold: u32,
    idle_gc: bool,
    erase_when_invalid: bool,
    lazy: bool,
    buffer_pages: u64,
    engine: EngineKind,
    trim_percent: u32,
}

fn params() -> impl Strategy<Value = Params> {
    (
        (any::<u64>(), 1..=4u32, 16..=40u32, prop::sample::select(vec![4u32, 8, 16, 32])),
        (prop::sample::select(vec![1u32, 4]), any::<bool>(), 0.15..0.4f64, 2..=4u32),
        (prop::sample::select(vec![VictimPolicy::Greedy, VictimPolicy::CostBenefit]), 1..=6u32),
        (any::<bool>(), any::<bool>(), any::<bool>(), prop::sample::select(vec![0u64, 16, 64])),
        (prop::sample::select(vec![EngineKind::Immediate, EngineKind::Delayed, EngineKind::None]), 0..=20u32),
    )
        .prop_map(
            |(
                (seed, planes, blocks_per_plane, pages_per_block),
                (flash_page_units, multi_plane, spare_factor, gc_free_blocks),
                (victim, threshold),
                (idle_gc, erase_when_invalid, lazy, buffer_pages),
                (engine, trim_percent),
            )| Params {
                seed,
                planes,
                blocks_per_plane,
                pages_per_block,
                flash_page_units,
                multi_plane,
                spare_factor,
                gc_free_blocks,
                victim,
                threshold,
                idle_gc,
                erase_when_invalid,
                lazy,
                buffer_pages,
                engine,
                trim_percent,
            },
        )
}

fn device(p: &Params) -> Option<SsdConfig> {
    let device = DeviceSection {
        channels: Some(1),
        chips_per_channel: Some(1),
        dies_per_chip: Some(p.planes.div_ceil(2)),
        planes_per_die: Some(if p.planes == 1 { 1 } else { 2 }),
        blocks_per_plane: Some(p.blocks_per_plane),
        pages_per_block: Some(p.pages_per_block),
        page_bytes: Some(PAGE as u32),
        flash_page_bytes: Some(PAGE as u32 * p.flash_page_units),
        multi_plane: Some(p.multi_plane),
        spare_factor: Some(p.spare_factor),
        write_buffer_bytes: Some(ByteSize(p.buffer_pages * PAGE)),
        max_transfer_bytes: Some(ByteSize(64 * PAGE)),
        trim_max_ranges: Some(8),
        ..Default::default()
    };
    let ftl = FtlSection {
        gc_free_blocks: Some(GcThreshold::Blocks(p.gc_free_blocks)),
        gc_victim: Some(p.victim),
        idle_gc: Some(p.idle_gc),
        erase_when_invalid: Some(p.erase_when_invalid),
        backward_map: Some(if p.lazy { BackwardMap::Lazy } else { BackwardMap::Eager }),
        reconcile_every_pages: p.lazy.then_some(64),
        static_wl: Some(true),
        static_wl_threshold: Some(p.threshold),
        track_data: Some(true),
        ..Default::default()
    };
    let trim = TrimSection { engine: Some(p.engine), ..Default::default() };
    SsdConfig::resolve(&device, &ftl, &trim).ok()
}

/// Runs `ops` commands of `p`; returns the moves made, or `None` when the geometry was refused.
fn run(p: &Params, ops: u64) -> Result<Option<u64>, TestCaseError> {
    let Some(config) = device(p) else { return Ok(None) };
    let mut ssd = Ssd::new(config.clone());
    let mut rng = SeedTree::new(p.seed).fork("wear_levelling.commands");
    let pages = config.logical_pages as u64;
    let hot = (pages / 8).max(1);
    let mut expected: BTreeMap<u64, u64> = BTreeMap::new();
    let check = |ssd: &Ssd, op: u64| -> Result<(), TestCaseError> {
        ssd.check().map_err(|e| TestCaseError::fail(format!("op {op}: {e}; {p:?}")))
    };
    let mut now = SimTime::ZERO;
    let mut tag = 1u64;
    // Every page written once (cold data), then the mix, mostly on the hot eighth.
    for start in (0..pages).step_by(16) {
        let count = 16.min(pages - start);
        tag += 1;
        let w = Command::Write { offset: start * PAGE, bytes: count * PAGE, tag };
        now = ssd.submit(now, &w, None).map_err(|e| TestCaseError::fail(format!("fill: {e}")))?.done;
        (start..start + count).for_each(|l| _ = expected.insert(l, tag + l - start));
    }
    for op in 0..ops {
        let gap = if rng.gen_range(0..50) == 0 { 500_000_000 } else { 20_000 };
        now = now.after(rng.gen_range(0..gap));
        let count = rng.gen_range(1..=4u64).min(hot);
        let start = if rng.gen_range(0..10) < 9 {
            rng.gen_range(0..=hot - count)
        } else {
            rng.gen_range(0..=pages - count)
        };
        let kind = rng.gen_range(0..100);
        let command = if kind < 3 {
            Command::Flush
        } else if kind < 3 + p.trim_percent {
            // The "none" engine ignores TRIM: the data stays.
            if p.engine != EngineKind::None {
                (start..start + count).for_each(|l| _ = expected.remove(&l));
            }
            Command::Trim { ranges: vec![ByteRange { offset: start * PAGE, bytes: count * PAGE }] }
        } else if kind < 13 + p.trim_percent {
            Command::Read { offset: start * PAGE, bytes: count * PAGE }
        } else {
            tag += count;
            (start..start + count).for_each(|l| _ = expected.insert(l, tag + l - start));
            Command::Write { offset: start * PAGE, bytes: count * PAGE, tag }
        };
        now = ssd
            .submit(now, &command, None)
            .map_err(|e| TestCaseError::fail(format!("op {op}: {e}; {p:?}")))?
            .done;
        if command == Command::Flush {
            ssd.flush_completed();
        }
        if op.is_multiple_of(64) {
            check(&ssd, op)?;
        }
    }
    ssd.drain_write_buffer(now);
    ssd.idle_until(now.after(1_000_000_000_000));
    check(&ssd, ops)?;
    let mut out = Vec::new();
    for lpn in 0..pages {
        let read = Command::Read { offset: lpn * PAGE, bytes: PAGE };
        out.clear();
        now = ssd.submit(now, &read, Some(&mut out)).map_err(|e| TestCaseError::fail(format!("{e}")))?.done;
        let want = expected.get(&lpn).copied().unwrap_or(0);
        prop_assert_eq!(out[0], want, "lpn {} read back; {:?}", lpn, p);
    }
    Ok(Some(ssd.report(now).wear_levelling.map_or(0, |w| w.moves)))
}

#[test]
fn the_ftl_invariants_hold_with_static_wear_levelling_on() {
    trimlab_device::verify::enable();
    let (ran, moved) = (Cell::new(0u32), Cell::new(0u32));
    let config = Config { cases: 64, failure_persistence: None, max_shrink_iters: 64, ..Config::default() };
    let mut runner = TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &[39; 32]));
    let result = runner.run(&params(), |p| {
        if let Some(moves) = run(&p, 3_000)? {
            ran.set(ran.get() + 1);
            moved.set(moved.get() + (moves > 0) as u32);
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    eprintln!("wear_levelling: {} geometries ran, {} made moves", ran.get(), moved.get());
    assert!(ran.get() >= 32 && moved.get() >= ran.get() / 2, "ran {}, moved in {}", ran.get(), moved.get());
}

/// An nvme-tlc-shaped drive of 64 MiB: a hot sixteenth rewritten at random after every page is
/// written once; the report of the rewrites.
fn hot_cold(static_wl: bool) -> DeviceReport {
    // A given daily volume: the projections compare wear per host byte, not the two runs'
    // simulated rates (moves take die time, so the measured rate differs).
    let device = DeviceSection {
        logical_bytes: Some(ByteSize(64 << 20)),
        daily_host_bytes: Some(ByteSize(64 << 20)),
        ..Default::default()
    };
    let ftl = FtlSection {
        static_wl: static_wl.then_some(true),
        static_wl_threshold: static_wl.then_some(16),
        ..Default::default()
    };
    let config = SsdConfig::resolve(&device, &ftl, &TrimSection::default()).unwrap();
    let pages = config.logical_pages as u64;
    let mut ssd = Ssd::new(config);
    let mut now = SimTime::ZERO;
    for start in (0..pages).step_by(64) {
        let w = Command::Write { offset: start * PAGE, bytes: 64 * PAGE, tag: 0 };
        now = ssd.submit(now, &w, None).unwrap().done;
    }
    ssd.start_measurement(now);
    let mut rng = SeedTree::new(7).fork("wear_levelling.hot_cold");
    for _ in 0..30 * pages {
        let lpn = rng.gen_range(0..pages / 16);
        now =
            ssd.submit(now, &Command::Write { offset: lpn * PAGE, bytes: PAGE, tag: 0 }, None).unwrap().done;
    }
    ssd.check().unwrap();
    ssd.report(now)
}

#[test]
fn static_wear_levelling_evens_a_hot_cold_drive_and_lengthens_its_worst_block_life() {
    let (off, on) = (hot_cold(false), hot_cold(true));
    let (e_off, e_on) = (&off.erase_count, &on.erase_count);
    eprintln!("hot/cold erase counts: off {e_off:?}\non {e_on:?}\nwear levelling {:?}", on.wear_levelling);
    assert!(off.wear_levelling.is_none() && on.wear_levelling.as_ref().is_some_and(|w| w.moves > 0));
    assert!(
        e_on.max_over_mean < e_off.max_over_mean,
        "max/mean {} on, {} off",
        e_on.max_over_mean,
        e_off.max_over_mean
    );
    assert!(e_on.max - e_on.min < e_off.max - e_off.min);
    // The moves cost programs and erases: the WAF rises, and the mean block wears faster.
    assert!(on.waf > off.waf && e_on.mean > e_off.mean);
    let (l_off, l_on) = (off.lifetime.unwrap(), on.lifetime.unwrap());
    eprintln!(
        "years most worn: off {:?} on {:?}; mean off {:?} on {:?}",
        l_off.years_most_worn, l_on.years_most_worn, l_off.years_mean, l_on.years_mean
    );
    assert!(l_on.years_most_worn > l_off.years_most_worn, "the most-worn block lives longer");
    assert!(l_on.years_mean < l_off.years_mean, "the moves' erases shorten the average life");
}
