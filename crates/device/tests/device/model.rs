//! Model test of the whole device: random READ / WRITE / TRIM / FLUSH sequences on small
//! geometries, checked against a `BTreeMap` reference.
//!
//! Strategy: each case draws a device shape (channels, planes, blocks, pages per block, spare
//! factor, write buffer size, FTL kind (page with a victim policy, or hybrid FAST with a
//! striping, log blocks and the trimmed-range list or TRIM at once), TRIM engine, queued or not) and a stream of commands
//! biased to a hot region so GC runs often and victims hold valid pages. Arrival times advance
//! irregularly so the queue, the buffer and idle gaps all vary.
//!
//! Invariants: a read returns the last data written to each page, or zeros if it was never
//! written or was trimmed since (with engine "none", trims change nothing); the full FTL check
//! (forward/backward maps agree, valid counts, block pool) holds after every GC (`verify::enable()`)
//! and after every TRIM, and with the delayed engine also every few commands (its bitmap and
//! trim buffer agree: every pending page has an entry to drain it); completions never precede
//! arrivals. A delayed-engine case runs twice, with the full and the partial trim bitmap, and
//! both runs must give identical completions, reads and reports.
//!
//! Replay a failure: TRIMLAB_SEED=<seed printed in the panic> cargo test -p trimlab-device --test device model::

use rand::Rng;
use std::collections::BTreeMap;
use trimlab_device::{
    ByteRange, Command, DeviceSection, FtlKind, FtlSection, Ssd, SsdConfig, StripingChoice, TrimSection,
};
use trimlab_ftl::VictimPolicy;
use trimlab_sim::{ByteSize, SeedTree, SimTime};
use trimlab_trim::{BeforeGcCap, BitmapKind, DelayedConfig, EngineKind};

struct Case {
    seed: u64,
    ops: usize,
}

fn device_for(rng: &mut impl Rng, bitmap: BitmapKind) -> SsdConfig {
    let page_bytes = 4096u32;
    let pages_per_block = [4u32, 8, 16][rng.gen_range(0..3)];
    let device = DeviceSection {
        channels: Some(rng.gen_range(1..=2)),
        chips_per_channel: Some(1),
        dies_per_chip: Some(rng.gen_range(1..=2)),
        planes_per_die: Some(rng.gen_range(1..=2)),
        blocks_per_plane: Some(rng.gen_range(24..=40)),
        pages_per_block: Some(pages_per_block),
        page_bytes: Some(page_bytes),
        spare_factor: Some(rng.gen_range(0.35..0.5)),
        write_buffer_bytes: Some(ByteSize(page_bytes as u64 * [0u64, 1, 3, 8][rng.gen_range(0..4)])),
        trim_queued: Some(rng.gen_bool(0.5)),
        queue_depth: Some(rng.gen_range(1..=8)),
        trim_max_ranges: Some(8),
        idle_threshold: Some(trimlab_sim::DurationNs(rng.gen_range(10_000..10_000_000))),
        ..Default::default()
    };
    let mut ftl = FtlSection {
        gc_free_blocks: Some(trimlab_device::config::GcThreshold::Blocks(rng.gen_range(2..=4))),
        gc_victim: Some(
            [VictimPolicy::Greedy, VictimPolicy::CostBenefit, VictimPolicy::Fifo][rng.gen_range(0..3)],
        ),
        track_data: Some(true),
        // Idle-time GC at its default target, half of the cases: the model checks every read.
        idle_gc: Some(rng.gen_bool(0.5)),
        idle_gc_free_blocks: None,
        ..Default::default()
    };
    // A quarter of the cases run the hybrid FAST FTL behind the same front end.
    if rng.gen_bool(0.25) {
        ftl = FtlSection {
            kind: Some(FtlKind::Hybrid),
            track_data: Some(true),
            striping: Some([StripingChoice::Page, StripingChoice::Block][rng.gen_range(0..2)]),
            log_blocks_sequential: Some(rng.gen_range(1..=2)),
            log_blocks_random: Some(rng.gen_range(1..=3)),
            trimmed_list: Some(rng.gen_bool(0.7)),
            trimmed_list_groups: Some(rng.gen_range(1..=64)),
            ..Default::default()
        };
    }
    let engine = match rng.gen_range(0..20) {
        0..=8 => EngineKind::Immediate,
        9..=10 => EngineKind::None,
        _ => EngineKind::Delayed,
    };
    let delayed = DelayedConfig {
        bitmap,
        partial_region_pages: [64u32, 128, 1024][rng.gen_range(0..3)],
        trim_buffer_entries: rng.gen_range(8..=64),
        before_gc: [BeforeGcCap::All, BeforeGcCap::Bytes(0), BeforeGcCap::Bytes(page_bytes as u64 * 16)]
            [rng.gen_range(0..3)],
        idle_chunk_pages: rng.gen_range(1..=32),
    };
    let trim = TrimSection {
        engine: Some(engine),
        cost: None,
        engines: TrimSection::keys_of(EngineKind::Delayed, Some(&delayed)),
    };
    SsdConfig::resolve(&device, &ftl, &trim).expect("model test geometry must resolve")
}

/// What a run observed: every completion and every page read, in order, and the final report.
#[derive(PartialEq, Debug)]
struct Observed {
    completions: Vec<(u64, u64)>,
    reads: Vec<u64>,
    report: String,
}

fn run_case(case: &Case) {
    let full = run_once(case, BitmapKind::Full);
    if let Some(full) = full {
        let partial = run_once(case, BitmapKind::Partial).expect("same seed, same engine");
        assert!(
            full == partial,
            "seed {}: full and partial trim bitmaps diverged (replay: TRIMLAB_SEED={} cargo test -p \
             trimlab-device --test device model::)",
            case.seed,
            case.seed
        );
    }
}

/// Runs one case; returns what it observed when the engine was the delayed one.
fn run_once(case: &Case, bitmap: BitmapKind) -> Option<Observed> {
    let seeds = SeedTree::new(case.seed);
    let mut rng = seeds.fork("model.device");
    let config = device_for(&mut rng, bitmap);
    let engine = config.trim_engine;
    let mut observed = Observed { completions: Vec::new(), reads: Vec::new(), report: String::new() };
    let mut ssd = Ssd::new(config.clone());
    let page = ssd.page_bytes();
    let pages = config.logical_pages as u64;
    let hot = (pages / 4).max(1);
    let mut reference: BTreeMap<u64, u64> = BTreeMap::new();
    let mut now = SimTime::ZERO;
    let mut next_tag = 1u64;
    let mut out = Vec::new();
    let context = || {
        format!(
            "seed {} (replay: TRIMLAB_SEED={} cargo test -p trimlab-device --test device model::)",
            case.seed, case.seed
        )
    };
    for op in 0..case.ops {
        now = now.after(match rng.gen_range(0..10) {
            0 => rng.gen_range(0..50_000_000),
            _ => rng.gen_range(0..20_000),
        });
        let start = if rng.gen_bool(0.7) { rng.gen_range(0..hot) } else { rng.gen_range(0..pages) };
        let count = rng.gen_range(1..=4).min(pages - start);
        let choice = rng.gen_range(0..100);
        let command = if choice < 55 {
            let tag = next_tag;
            next_tag += count;
            for i in 0..count {
                reference.insert(start + i, tag + i);
            }
            Command::Write { offset: start * page, bytes: count * page, tag }
        } else if choice < 80 {
            Command::Read { offset: start * page, bytes: count * page }
        } else if choice < 97 {
            let mut ranges = Vec::new();
            for _ in 0..rng.gen_range(1..=3) {
                let s = rng.gen_range(0..pages);
                let c = rng.gen_range(1..=6).min(pages - s);
                if engine != EngineKind::None {
                    for p in s..s + c {
                        reference.remove(&p);
                    }
                }
                ranges.push(ByteRange { offset: s * page, bytes: c * page });
            }
            Command::Trim { ranges }
        } else {
            Command::Flush
        };
        let done = ssd
            .submit(now, &command, Some(&mut out))
            .unwrap_or_else(|e| panic!("op {op}: device refused {command:?}: {e}; {}", context()));
        assert!(done.done >= now, "op {op}: completion before arrival; {}", context());
        observed.completions.push((done.start.0, done.done.0));
        if engine == EngineKind::Delayed && op % 64 == 0 {
            ssd.check().unwrap_or_else(|e| panic!("op {op}: {e}; {}", context()));
        }
        match &command {
            Command::Read { .. } => {
                observed.reads.extend_from_slice(&out);
                for (i, got) in out.iter().enumerate() {
                    let lpn = start + i as u64;
                    let want = reference.get(&lpn).copied().unwrap_or(0);
                    assert_eq!(
                        *got,
                        want,
                        "op {op}: read of page {lpn} returned tag {got}, expected {want}; {}",
                        context()
                    );
                }
            }
            Command::Trim { .. } => {
                ssd.check().unwrap_or_else(|e| panic!("op {op}: after TRIM: {e}; {}", context()));
            }
            _ => {}
        }
    }
    ssd.check().unwrap_or_else(|e| panic!("end: {e}; {}", context()));
    // Every page reads back as the reference says, whatever its history.
    for lpn in 0..pages {
        ssd.submit(now, &Command::Read { offset: lpn * page, bytes: page }, Some(&mut out)).unwrap();
        let want = reference.get(&lpn).copied().unwrap_or(0);
        assert_eq!(out[0], want, "final read of page {lpn}; {}", context());
    }
    // Pending TRIMs drain in a long idle period and nothing changes for the host.
    now = now.after(1_000_000_000_000);
    ssd.idle_until(now);
    ssd.check().unwrap_or_else(|e| panic!("after the final idle drain: {e}; {}", context()));
    if engine == EngineKind::Delayed {
        let pending = ssd.engine().figure("pages_pending").unwrap_or(0);
        assert_eq!(pending, 0, "pages still pending after a long idle period; {}", context());
    }
    for lpn in 0..pages {
        ssd.submit(now, &Command::Read { offset: lpn * page, bytes: page }, Some(&mut out)).unwrap();
        let want = reference.get(&lpn).copied().unwrap_or(0);
        assert_eq!(out[0], want, "read of page {lpn} after the idle drain; {}", context());
    }
    if engine != EngineKind::Delayed {
        return None;
    }
    let mut report = serde_json::to_value(ssd.report(now)).expect("report serializes");
    // The bitmaps' memory is the one thing allowed to differ between the two layouts.
    for key in ["bitmap_bytes", "bitmap_bytes_max"] {
        report["trim"][key] = serde_json::Value::Null;
    }
    observed.report = report.to_string();
    Some(observed)
}

#[test]
fn random_command_sequences_match_the_reference() {
    trimlab_device::verify::enable();
    if let Ok(seed) = std::env::var("TRIMLAB_SEED") {
        let seed = seed.parse().expect("TRIMLAB_SEED must be an integer");
        run_case(&Case { seed, ops: 20_000 });
        return;
    }
    // 60 devices x 20 000 commands = 1.2 million operations in the default run.
    for seed in 0..60u64 {
        run_case(&Case { seed, ops: 20_000 });
    }
}

#[test]
fn writes_after_trim_survive_gc() {
    trimlab_device::verify::enable();
    // A focused case: fill, trim everything, rewrite half, force GC by churning the other half.
    let device = DeviceSection {
        channels: Some(1),
        chips_per_channel: Some(1),
        dies_per_chip: Some(1),
        planes_per_die: Some(1),
        blocks_per_plane: Some(32),
        pages_per_block: Some(8),
        spare_factor: Some(0.4),
        write_buffer_bytes: Some(ByteSize(0)),
        ..Default::default()
    };
    let ftl = FtlSection { track_data: Some(true), ..Default::default() };
    let config = SsdConfig::resolve(&device, &ftl, &TrimSection::default()).unwrap();
    let mut ssd = Ssd::new(config.clone());
    let pages = config.logical_pages as u64;
    let page = ssd.page_bytes();
    let mut t = SimTime::ZERO;
    for lpn in 0..pages {
        t = ssd
            .submit(t, &Command::Write { offset: lpn * page, bytes: page, tag: 1000 + lpn }, None)
            .unwrap()
            .done;
    }
    t = ssd
        .submit(t, &Command::Trim { ranges: vec![ByteRange { offset: 0, bytes: pages * page }] }, None)
        .unwrap()
        .done;
    assert_eq!(ssd.ftl().valid_pages(), 0);
    for lpn in 0..pages / 2 {
        t = ssd
            .submit(t, &Command::Write { offset: lpn * page, bytes: page, tag: 5000 + lpn }, None)
            .unwrap()
            .done;
    }
    for round in 0..20u64 {
        for lpn in pages / 2..pages {
            t = ssd
                .submit(t, &Command::Write { offset: lpn * page, bytes: page, tag: round }, None)
                .unwrap()
                .done;
        }
    }
    assert!(ssd.ftl().stats().gc_victims > 0, "GC must have run");
    let mut out = Vec::new();
    for lpn in 0..pages / 2 {
        ssd.submit(t, &Command::Read { offset: lpn * page, bytes: page }, Some(&mut out)).unwrap();
        assert_eq!(out, vec![5000 + lpn]);
    }
    ssd.check().unwrap();
}
