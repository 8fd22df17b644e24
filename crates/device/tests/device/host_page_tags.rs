//! Data tags per 4 KiB host page on drives of 8 to 64 KiB mapping units
//! (crates/device/src/host_page_tags.rs), on both FTL kinds, under the three TRIM engines,
//! with and without a write buffer.
//!
//! Strategy (the model test): random sector-aligned WRITE / TRIM / READ / FLUSH sequences and
//! idle gaps against a reference that holds one tag per host page and whether each unit holds
//! data.
//!
//! Invariants: every read returns, per host page, the tag of the last write that covered it,
//! or 0 when its unit reads as zeros: never written, deallocated whole by a TRIM since (the
//! immediate and delayed engines; `none` keeps the data), or rewritten in part since then (the
//! read-modify-write merged zeros into the rest); a partial-unit TRIM changes nothing a read
//! sees; the device's full check holds after every TRIM.
//!
//! Replay a failure: TRIMLAB_SEED=<seed> cargo test --release -p trimlab-device --test device host_page_tags::

use crate::common;

use rand::Rng;
use std::collections::{BTreeMap, BTreeSet};
use trimlab_device::{
    BlockDevice, ByteRange, Command, DeviceSection, FtlKind, FtlSection, Ssd, SsdConfig, TrimSection,
};
use trimlab_sim::{ByteSize, SeedTree, SimTime};
use trimlab_trim::EngineKind;

const PAGE: u64 = 4096;

fn drive(kind: FtlKind, unit: u64, engine: EngineKind, write_buffer_bytes: u64) -> Ssd {
    let device = common::small_device(write_buffer_bytes);
    let ftl = FtlSection {
        kind: Some(kind),
        track_data: Some(true),
        mapping_unit: Some(ByteSize(unit)),
        ..Default::default()
    };
    let trim = TrimSection { engine: Some(engine), ..Default::default() };
    let config = SsdConfig::resolve(&device, &ftl, &trim).unwrap_or_else(|e| panic!("{kind:?} {unit}: {e}"));
    let mut ssd = Ssd::new(config);
    ssd.use_tag_bytes(PAGE).expect("a fresh drive takes tags per page");
    assert_eq!(ssd.limits().tag_bytes, PAGE);
    ssd
}

/// One tag per host page, and the units that hold data.
#[derive(Default)]
struct Reference {
    pages: BTreeMap<u64, u64>,
    units_with_data: BTreeSet<u64>,
}

impl Reference {
    fn write(&mut self, first: u64, end: u64, tag: u64, per_unit: u64) {
        for unit in first / per_unit..end.div_ceil(per_unit) {
            if self.units_with_data.insert(unit) {
                // The read-modify-write of a unit that read as zeros merged zeros.
                for page in unit * per_unit..(unit + 1) * per_unit {
                    self.pages.remove(&page);
                }
            }
        }
        for (k, page) in (first..end).enumerate() {
            self.pages.insert(page, tag + k as u64);
        }
    }

    /// A TRIM of `[offset, offset + bytes)` deallocates the whole units inside it.
    fn trim(&mut self, offset: u64, bytes: u64, unit: u64) {
        for u in offset.div_ceil(unit)..(offset + bytes) / unit {
            self.units_with_data.remove(&u);
        }
    }

    fn read(&self, first: u64, end: u64, per_unit: u64) -> Vec<u64> {
        let tag = |p: u64| match self.units_with_data.contains(&(p / per_unit)) {
            true => self.pages.get(&p).copied().unwrap_or(0),
            false => 0,
        };
        (first..end).map(tag).collect()
    }
}

fn random_case(seed: u64, ops: usize) {
    let mut rng = SeedTree::new(seed).fork("model.host_page_tags");
    let kind = [FtlKind::Page, FtlKind::Hybrid][rng.gen_range(0..2)];
    let unit = [8, 16, 32, 64][rng.gen_range(0..4)] * 1024;
    let engine = [EngineKind::Immediate, EngineKind::Delayed, EngineKind::None][rng.gen_range(0..3)];
    let buffer = [0, 256 << 10][rng.gen_range(0..2)];
    let mut ssd = drive(kind, unit, engine, buffer);
    let per_unit = unit / PAGE;
    let sectors = ssd.capacity_bytes() / 512;
    let hot = sectors / 4;
    let mut reference = Reference::default();
    let (mut now, mut tag) = (SimTime::ZERO, 1u64);
    let context = format!(
        "seed {seed}, {kind:?}, unit {unit}, {engine:?}, buffer {buffer} (replay: TRIMLAB_SEED={seed})"
    );
    for op in 0..ops {
        // Mostly short gaps; now and then one long enough for the delayed engine's idle drain.
        now = now.after(if rng.gen_bool(0.02) { 50_000_000 } else { rng.gen_range(0..50_000) });
        // Sector-aligned: a write may cover part of a host page, a TRIM part of a unit.
        let first = if rng.gen_bool(0.8) { rng.gen_range(0..hot) } else { rng.gen_range(0..sectors) };
        let count = rng.gen_range(1..=3 * unit / 512).min(sectors - first);
        let (offset, bytes) = (first * 512, count * 512);
        let (first_page, end_page) = (offset / PAGE, (offset + bytes).div_ceil(PAGE));
        let mut out = Vec::new();
        let command = match rng.gen_range(0..100) {
            0..=49 => {
                reference.write(first_page, end_page, tag, per_unit);
                tag += end_page - first_page;
                Command::Write { offset, bytes, tag: tag - (end_page - first_page) }
            }
            50..=69 => {
                if engine != EngineKind::None {
                    reference.trim(offset, bytes, unit);
                }
                Command::Trim { ranges: vec![ByteRange { offset, bytes }] }
            }
            70..=97 => Command::Read { offset, bytes },
            _ => Command::Flush,
        };
        ssd.submit(now, &command, Some(&mut out)).unwrap_or_else(|e| panic!("op {op}: {e}; {context}"));
        match command {
            Command::Read { .. } => {
                let want = reference.read(first_page, end_page, per_unit);
                assert_eq!(out, want, "op {op}: read of {bytes} bytes at {offset}; {context}");
            }
            Command::Trim { .. } => ssd.check().unwrap_or_else(|e| panic!("op {op}: {e}; {context}")),
            _ => {}
        }
    }
    ssd.check().unwrap_or_else(|e| panic!("end: {e}; {context}"));
}

#[test]
fn random_sequences_read_back_each_host_page() {
    trimlab_device::verify::enable();
    if let Ok(seed) = std::env::var("TRIMLAB_SEED") {
        random_case(seed.parse().expect("TRIMLAB_SEED must be an integer"), 20_000);
        return;
    }
    for seed in 0..24u64 {
        random_case(seed, 2_000);
    }
}

/// The case the file system depends on, spelled out on a 16 KiB unit: 4 KiB blocks written one
/// by one read back one by one; a partial-unit TRIM keeps them; a whole-unit TRIM zeroes the
/// unit, and a block written into it afterwards leaves its neighbours zero.
#[test]
fn four_kib_blocks_on_a_16_kib_unit() {
    let mut ssd = drive(FtlKind::Page, 16 << 10, EngineKind::Immediate, 0);
    let t = SimTime::ZERO;
    let read = |ssd: &mut Ssd| {
        let mut out = Vec::new();
        ssd.submit(t, &Command::Read { offset: 0, bytes: 32 << 10 }, Some(&mut out)).unwrap();
        out
    };
    for (block, tag) in [(0, 10), (1, 11), (2, 12), (5, 15)] {
        ssd.submit(t, &Command::Write { offset: block * PAGE, bytes: PAGE, tag }, None).unwrap();
    }
    assert_eq!(read(&mut ssd), [10, 11, 12, 0, 0, 15, 0, 0]);
    let trim = |offset, bytes| Command::Trim { ranges: vec![ByteRange { offset, bytes }] };
    ssd.submit(t, &trim(4096, 8192), None).unwrap();
    assert_eq!(read(&mut ssd), [10, 11, 12, 0, 0, 15, 0, 0], "a partial-unit TRIM unmaps nothing");
    ssd.submit(t, &trim(16 << 10, 16 << 10), None).unwrap();
    assert_eq!(read(&mut ssd), [10, 11, 12, 0, 0, 0, 0, 0], "the whole unit 1 reads as zeros");
    ssd.submit(t, &Command::Write { offset: 6 * PAGE, bytes: PAGE, tag: 16 }, None).unwrap();
    assert_eq!(read(&mut ssd), [10, 11, 12, 0, 0, 0, 16, 0], "block 5's old tag does not come back");
    ssd.check().unwrap();
}

/// The host's choice of tag unit, at the block interface.
fn unit_drive(unit: u64, track_data: bool) -> Ssd {
    let device = DeviceSection {
        logical_bytes: Some(ByteSize(16 << 20)),
        pages_per_block: Some(64),
        ..Default::default()
    };
    let ftl =
        FtlSection { mapping_unit: Some(ByteSize(unit)), track_data: Some(track_data), ..Default::default() };
    Ssd::new(SsdConfig::resolve(&device, &ftl, &TrimSection::default()).unwrap())
}

#[test]
fn tags_per_page_cost_nothing_until_asked_and_only_with_data_tracked() {
    let mut ssd = unit_drive(16 << 10, true);
    let before = ssd.heap_bytes();
    assert_eq!(ssd.limits().tag_bytes, 16 << 10);
    ssd.use_tag_bytes(16 << 10).unwrap();
    assert_eq!(ssd.heap_bytes(), before, "the unit itself allocates nothing");
    let e = ssd.use_tag_bytes(8192).unwrap_err();
    assert!(e.contains("accepted: 16384, its mapping unit, or 4096, its page"), "{e}");
    ssd.use_tag_bytes(4096).unwrap();
    assert_eq!(ssd.limits().tag_bytes, 4096);
    assert_eq!(ssd.heap_bytes(), before + (16 << 20) / 4096 * 4, "4 bytes a page while tags fit");
    let mut untracked = unit_drive(16 << 10, false);
    let before = untracked.heap_bytes();
    untracked.use_tag_bytes(4096).unwrap();
    assert_eq!(untracked.heap_bytes(), before);
    let mut out = Vec::new();
    untracked.submit(SimTime(0), &Command::Write { offset: 4096, bytes: 8192, tag: 7 }, None).unwrap();
    untracked.submit(SimTime(0), &Command::Read { offset: 0, bytes: 32768 }, Some(&mut out)).unwrap();
    assert_eq!(out, [0; 8], "an untracked drive reads 0, one per page");
}

#[test]
fn asking_after_a_write_is_refused() {
    let mut ssd = unit_drive(64 << 10, true);
    ssd.submit(SimTime(0), &Command::Write { offset: 0, bytes: 4096, tag: 1 }, None).unwrap();
    let e = ssd.use_tag_bytes(4096).unwrap_err();
    assert!(e.contains("after data was written"), "{e}");
}

/// Tags past 2^32 (a host that wrote more than 16 TiB in 4 KiB blocks) widen the per-page
/// store in place: every page keeps its tag, the new ones read back whole.
#[test]
fn tags_past_four_bytes_read_back_whole() {
    let mut ssd = unit_drive(16 << 10, true);
    ssd.use_tag_bytes(4096).unwrap();
    let t = SimTime(0);
    let mut out = Vec::new();
    ssd.submit(t, &Command::Write { offset: 0, bytes: 8192, tag: 7 }, None).unwrap();
    ssd.submit(t, &Command::Read { offset: 0, bytes: 16384 }, Some(&mut out)).unwrap();
    assert_eq!(out, [7, 8, 0, 0]);
    // Measured after a read of the same size: the read's own buffer has grown by then.
    let narrow = ssd.heap_bytes();
    let big = (1u64 << 32) - 1;
    ssd.submit(t, &Command::Write { offset: 8192, bytes: 8192, tag: big }, None).unwrap();
    ssd.submit(t, &Command::Read { offset: 0, bytes: 16384 }, Some(&mut out)).unwrap();
    assert_eq!(out, [7, 8, big, big + 1]);
    assert_eq!(ssd.heap_bytes(), narrow + (16 << 20) / 4096 * 4, "widened to 8 bytes a page");
}
