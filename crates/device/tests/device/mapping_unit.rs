//! `[ftl] mapping_unit` (an indirection unit larger than the 4 KiB page), on both FTL kinds:
//! a sub-unit TRIM deallocates nothing and is counted as ineffective, a whole-unit TRIM
//! deallocates, a sub-unit write of a mapped unit is a read-modify-write (one NAND read of the
//! unit, the unit programmed whole, WAF in host bytes), and the default unit changes nothing.
//!
//! Strategy (the model test): random sub-unit WRITE / TRIM / READ / FLUSH sequences at 4 KiB
//! granularity on small drives with units of 8 to 64 KiB, without a write buffer and with the
//! immediate engine so every counter has an exact expected value, checked against a reference
//! that holds one tag per unit.
//!
//! Invariants: a read of a unit returns the tag of the last write that touched it, or zeros
//! when a TRIM covered it whole since; `read_modify_writes`, `unit_pages_filled` and
//! `trim_bytes_ineffective` equal the reference's counts; the FTL check holds after every TRIM.
//!
//! Replay a failure: TRIMLAB_SEED=<seed> cargo test --release -p trimlab-device --test mapping_unit

use crate::common;

use rand::Rng;
use std::collections::BTreeMap;
use trimlab_device::{ByteRange, Command, DeviceSection, FtlKind, FtlSection, Ssd, SsdConfig, TrimSection};
use trimlab_sim::{ByteSize, SeedTree, SimTime};
use trimlab_trim::EngineKind;

const KIB: u64 = 1024;

fn config(kind: FtlKind, unit: Option<u64>, write_buffer_bytes: u64) -> SsdConfig {
    let device = common::small_device(write_buffer_bytes);
    let ftl = FtlSection {
        kind: Some(kind),
        track_data: Some(true),
        mapping_unit: unit.map(ByteSize),
        idle_gc: Some(false),
        ..Default::default()
    };
    let trim = TrimSection { engine: Some(EngineKind::Immediate), ..Default::default() };
    SsdConfig::resolve(&device, &ftl, &trim).unwrap_or_else(|e| panic!("{kind:?} {unit:?}: {e}"))
}

fn submit(ssd: &mut Ssd, now: SimTime, command: Command) -> Vec<u64> {
    let mut out = Vec::new();
    ssd.submit(now, &command, Some(&mut out)).unwrap_or_else(|e| panic!("{command:?}: {e}"));
    out
}

fn trim(offset: u64, bytes: u64) -> Command {
    Command::Trim { ranges: vec![ByteRange { offset, bytes }] }
}

/// The scenario the issue names, on one FTL kind with 16 KiB units.
fn sub_unit_trim_and_write(kind: FtlKind) {
    let unit = 16 * KIB;
    let mut ssd = Ssd::new(config(kind, Some(unit), 0));
    assert_eq!(ssd.page_bytes(), unit, "{kind:?}: the FTL maps units");
    let t = SimTime::ZERO;
    submit(&mut ssd, t, Command::Write { offset: 0, bytes: 4 * unit, tag: 100 });
    submit(&mut ssd, t, Command::Flush);
    ssd.start_measurement(t);

    // A 4 KiB TRIM inside unit 0: nothing deallocated, all 4 KiB ineffective.
    submit(&mut ssd, t, trim(4 * KIB, 4 * KIB));
    let r = ssd.report(t);
    assert_eq!((r.trim.pages_unmapped, r.trim.trim_bytes_ineffective), (0, 4 * KIB), "{kind:?}");
    assert_eq!(submit(&mut ssd, t, Command::Read { offset: 4 * KIB, bytes: 4 * KIB }), [100], "{kind:?}");

    // 8 KiB .. 40 KiB: unit 1 whole (deallocated), the 8 KiB ends in units 0 and 2 stay mapped.
    submit(&mut ssd, t, trim(8 * KIB, 32 * KIB));
    let r = ssd.report(t);
    assert_eq!((r.trim.pages_unmapped, r.trim.trim_bytes_ineffective), (1, 20 * KIB), "{kind:?}");
    let read = submit(&mut ssd, t, Command::Read { offset: 0, bytes: 4 * unit });
    assert_eq!(read, [100, 0, 102, 103], "{kind:?}: only the whole unit reads as zeros");
    ssd.check().unwrap_or_else(|e| panic!("{kind:?}: {e}"));

    // A 4 KiB write into mapped unit 3: read the unit, program it whole.
    ssd.start_measurement(t);
    submit(&mut ssd, t, Command::Write { offset: 3 * unit + 8 * KIB, bytes: 4 * KIB, tag: 7 });
    submit(&mut ssd, t, Command::Flush);
    let r = ssd.report(t);
    assert_eq!((r.host.read_modify_writes, r.host.unit_pages_filled), (1, 3), "{kind:?}");
    assert_eq!(r.nand_pages_read, 1, "{kind:?}: one NAND read of the unit");
    assert!(r.nand_pages_programmed >= 1, "{kind:?}");
    // WAF in host bytes: the 4 KiB write cost a 16 KiB program (and whatever merges cost).
    assert_eq!(r.waf, r.nand_pages_programmed as f64 * 4.0, "{kind:?}");
    assert!(r.waf >= 4.0, "{kind:?}: {}", r.waf);
    let json = serde_json::to_string(&r).unwrap();
    assert!(json.contains("\"unit_pages_filled\":3"), "{json}");

    // A write into an unmapped unit merges zeros: no read.
    ssd.start_measurement(t);
    submit(&mut ssd, t, Command::Write { offset: unit, bytes: 4 * KIB, tag: 9 });
    let r = ssd.report(t);
    assert_eq!(
        (r.host.read_modify_writes, r.host.unit_pages_filled, r.nand_pages_read),
        (0, 3, 0),
        "{kind:?}"
    );
    ssd.check().unwrap_or_else(|e| panic!("{kind:?}: {e}"));
}

#[test]
fn page_ftl_sub_unit_trim_is_ineffective_and_sub_unit_write_is_rmw() {
    sub_unit_trim_and_write(FtlKind::Page);
}

#[test]
fn hybrid_ftl_sub_unit_trim_is_ineffective_and_sub_unit_write_is_rmw() {
    sub_unit_trim_and_write(FtlKind::Hybrid);
}

#[test]
fn the_default_unit_changes_nothing() {
    for kind in [FtlKind::Page, FtlKind::Hybrid] {
        let base = config(kind, None, 16 * KIB);
        assert_eq!(config(kind, Some(4 * KIB), 16 * KIB), base, "{kind:?}: 4KiB is the page");
        let mut ssd = Ssd::new(base);
        let t = SimTime::ZERO;
        submit(&mut ssd, t, Command::Write { offset: 0, bytes: 64 * KIB, tag: 1 });
        submit(&mut ssd, t, trim(2 * KIB, 10 * KIB));
        let json = serde_json::to_string(&ssd.report(t)).unwrap();
        assert!(!json.contains("ineffective") && !json.contains("unit_pages_filled"), "{json}");
    }
}

#[test]
fn bad_units_are_refused_by_key() {
    for (unit, why) in [(12 * KIB, "\"4KiB\""), (128 * KIB, "\"64KiB\""), (2 * KIB, "\"8KiB\"")] {
        let ftl = FtlSection { mapping_unit: Some(ByteSize(unit)), ..Default::default() };
        let e = SsdConfig::resolve(&DeviceSection::default(), &ftl, &TrimSection::default()).unwrap_err();
        assert_eq!(e.key, "ftl.mapping_unit", "{e}");
        assert!(e.accepted.contains(why), "{e}");
    }
    // The unit must divide the block: 3 pages of 4 KiB hold no whole 8 KiB unit.
    let device =
        DeviceSection { pages_per_block: Some(3), flash_page_bytes: Some(4096), ..Default::default() };
    let ftl = FtlSection { mapping_unit: Some(ByteSize(8 * KIB)), ..Default::default() };
    let e = SsdConfig::resolve(&device, &ftl, &TrimSection::default()).unwrap_err();
    assert!(e.key == "ftl.mapping_unit" && e.accepted.contains("erase block"), "{e}");
}

/// What the reference expects of one random case.
#[derive(Default)]
struct Expected {
    units: BTreeMap<u64, u64>,
    read_modify_writes: u64,
    unit_pages_filled: u64,
    trim_bytes_ineffective: u64,
}

impl Expected {
    fn write(&mut self, first_page: u64, pages: u64, tag: u64, per_unit: u64) {
        let (first, last) = (first_page / per_unit, (first_page + pages - 1) / per_unit);
        for (i, u) in (first..=last).enumerate() {
            let covered = (first_page + pages).min((u + 1) * per_unit) - first_page.max(u * per_unit);
            if covered < per_unit && self.units.contains_key(&u) {
                self.read_modify_writes += 1;
            }
            self.unit_pages_filled += per_unit - covered;
            self.units.insert(u, tag + i as u64);
        }
    }

    fn trim(&mut self, first_page: u64, pages: u64, per_unit: u64) {
        let (first, end) = (first_page.div_ceil(per_unit), (first_page + pages) / per_unit);
        for u in first..end.max(first) {
            self.units.remove(&u);
        }
        self.trim_bytes_ineffective += (pages - end.saturating_sub(first) * per_unit) * 4 * KIB;
    }
}

fn random_case(seed: u64, ops: usize) {
    let mut rng = SeedTree::new(seed).fork("model.mapping_unit");
    let kind = [FtlKind::Page, FtlKind::Hybrid][rng.gen_range(0..2)];
    let unit = [8, 16, 32, 64][rng.gen_range(0..4)] * KIB;
    let mut ssd = Ssd::new(config(kind, Some(unit), 0));
    let per_unit = unit / (4 * KIB);
    let pages = ssd.capacity_bytes() / (4 * KIB);
    let hot = pages / 4;
    let mut expected = Expected::default();
    let (mut now, mut tag) = (SimTime::ZERO, 1u64);
    let context = format!("seed {seed}, {kind:?}, unit {unit} (replay: TRIMLAB_SEED={seed})");
    for op in 0..ops {
        now = now.after(rng.gen_range(0..50_000));
        let first = if rng.gen_bool(0.8) { rng.gen_range(0..hot) } else { rng.gen_range(0..pages) };
        let count = rng.gen_range(1..=2 * per_unit).min(pages - first);
        let (offset, bytes) = (first * 4 * KIB, count * 4 * KIB);
        match rng.gen_range(0..100) {
            0..=59 => {
                expected.write(first, count, tag, per_unit);
                submit(&mut ssd, now, Command::Write { offset, bytes, tag });
                tag += count;
            }
            60..=84 => {
                expected.trim(first, count, per_unit);
                submit(&mut ssd, now, trim(offset, bytes));
                ssd.check().unwrap_or_else(|e| panic!("op {op}: {e}; {context}"));
            }
            85..=97 => {
                let got = submit(&mut ssd, now, Command::Read { offset, bytes });
                let units = first / per_unit..=(first + count - 1) / per_unit;
                let want: Vec<u64> = units.map(|u| expected.units.get(&u).copied().unwrap_or(0)).collect();
                assert_eq!(got, want, "op {op}: read of pages {first}+{count}; {context}");
            }
            _ => {
                submit(&mut ssd, now, Command::Flush);
            }
        }
    }
    ssd.check().unwrap_or_else(|e| panic!("end: {e}; {context}"));
    let r = ssd.report(now);
    let got = (r.host.read_modify_writes, r.host.unit_pages_filled, r.trim.trim_bytes_ineffective);
    let want = (expected.read_modify_writes, expected.unit_pages_filled, expected.trim_bytes_ineffective);
    assert_eq!(got, want, "(read_modify_writes, unit_pages_filled, trim_bytes_ineffective); {context}");
}

#[test]
fn random_sub_unit_sequences_match_the_reference() {
    trimlab_device::verify::enable();
    if let Ok(seed) = std::env::var("TRIMLAB_SEED") {
        random_case(seed.parse().expect("TRIMLAB_SEED must be an integer"), 20_000);
        return;
    }
    for seed in 0..12u64 {
        random_case(seed, 4_000);
    }
}
