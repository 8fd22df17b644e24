//! Tests of src/trim_bitmap.rs (moved out of the lib so the crate compiles once).

use rand::{Rng, SeedableRng};
use std::collections::BTreeSet;
use trimlab_trim::trim_bitmap::*;

#[test]
fn full_and_partial_agree_with_a_set() {
    for seed in 0..20u64 {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
        // Up to 40 of the full layout's 512-page summary groups, ranges crossing them.
        let logical = rng.gen_range(1..20_000u32);
        let mut full = TrimBitmap::new(BitmapKind::Full, logical, 128);
        let mut partial = TrimBitmap::new(BitmapKind::Partial, logical, 128);
        let mut reference = BTreeSet::new();
        for _ in 0..500 {
            if rng.gen_bool(0.3) {
                let start = rng.gen_range(0..logical);
                let count = rng.gen_range(1..=(logical - start).min(6000));
                let expect = (start..start + count).filter(|p| !reference.contains(p)).count() as u64;
                assert_eq!(full.set_range(start, count).0, expect, "seed {seed}");
                assert_eq!(partial.set_range(start, count).0, expect, "seed {seed}");
                reference.extend(start..start + count);
            } else {
                let page = rng.gen_range(0..logical);
                let was = reference.remove(&page);
                assert_eq!(full.clear(page), was, "seed {seed}");
                assert_eq!(partial.clear(page), was, "seed {seed}");
            }
            assert_eq!(full.set_count(), reference.len() as u64);
            assert_eq!(partial.set_count(), reference.len() as u64);
            full.check().unwrap();
        }
        let expect: Vec<u32> = reference.iter().copied().collect();
        assert_eq!(full.pending_pages(), expect);
        assert_eq!(partial.pending_pages(), expect);
        full.check().unwrap();
        partial.check().unwrap();
    }
}

#[test]
fn partial_frees_drained_regions() {
    let mut b = TrimBitmap::new(BitmapKind::Partial, 1 << 20, 4096);
    let empty = b.heap_bytes();
    b.set_range(10_000, 3);
    assert_eq!(b.heap_bytes(), empty + 512);
    for p in 10_000..10_003 {
        assert!(b.clear(p));
    }
    assert_eq!(b.heap_bytes(), empty);
    b.check().unwrap();
}

#[test]
fn full_bitmap_cost_per_terabyte() {
    // 002: "approximately 8 MB per 1 TB SSD" with DaisyPlus's 16 KiB pages.
    assert_eq!(full_bitmap_bytes(1 << 40, 16 << 10), 8 << 20);
    assert_eq!(full_bitmap_bytes(1 << 40, 4 << 10), 32 << 20);
}
