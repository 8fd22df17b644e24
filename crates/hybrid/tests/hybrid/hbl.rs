//! Tests of src/hbl.rs (moved out of the lib so the crate compiles once).

use rand::{Rng, SeedableRng};
use std::collections::BTreeSet;
use trimlab_hybrid::hbl::*;

#[test]
fn boundary_crossing_range_is_split_and_neighbours_coalesce() {
    let mut l = TrimmedRangeList::new(100, 10);
    l.insert(5, 10); // [5, 15) crosses the boundary at 10
    assert_eq!(l.range_count(), 2);
    l.insert(15, 5); // touches [10, 15)
    assert_eq!(l.range_count(), 2);
    assert_eq!(l.page_count(), 15);
    assert!(l.contains(19) && !l.contains(20) && !l.contains(4));
    l.remove(12, 1);
    assert_eq!(l.range_count(), 3);
    assert!(!l.contains(12));
    l.check().unwrap();
}

/// Strategy: random inserts, removes and lookups over a small space with few groups, so
/// splits, merges and boundary cuts happen often. Invariant: the list agrees page by page
/// with a `BTreeSet` of trimmed pages, and `check()` holds after every operation.
/// Replay: TRIMLAB_SEED=<seed> cargo test -p trimlab-hybrid hbl_matches_interval_set
#[test]
fn hbl_matches_interval_set() {
    let seeds: Vec<u64> = match std::env::var("TRIMLAB_SEED") {
        Ok(s) => vec![s.parse().expect("TRIMLAB_SEED must be an integer")],
        Err(_) => (1..=40).collect(),
    };
    for seed in seeds {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
        let pages = rng.gen_range(1..300u32);
        let groups = rng.gen_range(1..20u32);
        let mut list = TrimmedRangeList::new(pages, groups);
        let mut set = BTreeSet::new();
        for step in 0..400 {
            let start = rng.gen_range(0..pages);
            let count = rng.gen_range(1..=(pages - start).min(40));
            match rng.gen_range(0..3) {
                0 => {
                    list.insert(start, count);
                    set.extend(start..start + count);
                }
                1 => {
                    list.remove(start, count);
                    for p in start..start + count {
                        set.remove(&p);
                    }
                }
                _ => {
                    assert_eq!(
                        list.any_in(start, count),
                        set.range(start..start + count).next().is_some(),
                        "seed {seed} step {step}: any_in({start}, {count})"
                    );
                }
            }
            list.check().unwrap_or_else(|e| panic!("seed {seed} step {step}: {e}"));
            assert_eq!(list.page_count(), set.len() as u64, "seed {seed} step {step}");
            for p in 0..pages {
                assert_eq!(list.contains(p), set.contains(&p), "seed {seed} step {step}: page {p}");
            }
        }
    }
}
