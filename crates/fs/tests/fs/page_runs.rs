//! Model test of the page cache's run map (`trimlab_fs::fs::page_runs`).
//!
//! Strategy: seeded random buffered writes (tags consecutive across calls, as the file
//! system hands them out, so runs join), partial-page rewrites, truncates, punched holes,
//! write-back of one file or of all (taken pages go to a write-back set) and the end of an
//! earlier write-back (its pages leave the set unless written back again since), each
//! applied to the run map and to the per-page `BTreeMap` the page cache kept before.
//! Invariants: both sets hold the same (inode, block) -> tag pages after every step; the page
//! count is the reference's length; runs never overlap, are never empty, and are listed in
//! (inode, block) order; taken runs are the taken pages in key order; every lookup
//! (`get`, `contains`, `runs_in`) agrees.
//! Replay one case: `TRIMLAB_SEED=<n> cargo test --release --workspace --test fs page_runs::`.

use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use trimlab_fs::fs::page_runs::{PageRun, PageRuns};
use trimlab_fs::Ino;
use trimlab_sim::SimRng;

type Pages = BTreeMap<(Ino, u64), u64>;

fn pages_of(runs: impl Iterator<Item = PageRun>) -> Vec<((Ino, u64), u64)> {
    runs.flat_map(|r| (0..r.len).map(move |i| ((r.ino, r.first + i), r.tag.wrapping_add(i)))).collect()
}

fn check(map: &PageRuns, reference: &Pages, what: &str) {
    let runs: Vec<PageRun> = map.iter().collect();
    for w in runs.windows(2) {
        assert!(
            (w[0].ino, w[0].end()) <= (w[1].ino, w[1].first),
            "{what}: runs overlap or out of order: {w:?}"
        );
    }
    assert!(runs.iter().all(|r| r.len > 0), "{what}: an empty run");
    let got = pages_of(runs.into_iter());
    let want: Vec<_> = reference.iter().map(|(&k, &v)| (k, v)).collect();
    assert_eq!(got, want, "{what}: pages differ");
    assert_eq!(map.len(), reference.len() as u64, "{what}: page count");
}

/// The old page cache's end of write-back: a page leaves if it still holds the tag.
fn end_reference(set: &mut Pages, taken: &[((Ino, u64), u64)]) {
    for (k, tag) in taken {
        if set.get(k) == Some(tag) {
            set.remove(k);
        }
    }
}

fn run_case(seed: u64, ops: usize) {
    let mut rng = SimRng::seed_from_u64(seed);
    let (mut dirty, mut writeback) = (PageRuns::new(), PageRuns::new());
    let (mut dirty_ref, mut writeback_ref) = (Pages::new(), Pages::new());
    // Write-backs taken and not ended yet (a commit's data in flight).
    let mut in_flight: Vec<Vec<PageRun>> = Vec::new();
    let mut next_tag = u64::MAX - 500; // tags wrap within the case
    for op in 0..ops {
        let what = format!("seed {seed} op {op} (replay: TRIMLAB_SEED={seed})");
        let ino: Ino = rng.gen_range(0..4);
        let first: u64 = rng.gen_range(0..96);
        match rng.gen_range(0..100) {
            0..=44 => {
                let len = match rng.gen_bool(0.2) {
                    true => 1,
                    false => rng.gen_range(1..24),
                };
                dirty.insert(PageRun { ino, first, len, tag: next_tag });
                for i in 0..len {
                    dirty_ref.insert((ino, first + i), next_tag.wrapping_add(i));
                }
                next_tag = next_tag.wrapping_add(len);
            }
            45..=54 => {
                // Truncate (to the end) or punch a hole.
                let stop = match rng.gen_bool(0.5) {
                    true => u64::MAX,
                    false => first + rng.gen_range(0..20),
                };
                dirty.remove(ino, first, stop);
                writeback.remove(ino, first, stop);
                for set in [&mut dirty_ref, &mut writeback_ref] {
                    set.retain(|&(i, b), _| i != ino || b < first || b >= stop);
                }
            }
            55..=74 => {
                let all = rng.gen_bool(0.3);
                let taken = match all {
                    true => dirty.take_all(),
                    false => dirty.take_file(ino),
                };
                let taken_ref: Vec<_> = match all {
                    true => std::mem::take(&mut dirty_ref).into_iter().collect(),
                    false => dirty_ref.extract_if((ino, 0)..=(ino, u64::MAX), |_, _| true).collect(),
                };
                assert_eq!(pages_of(taken.iter().copied()), taken_ref, "{what}: taken pages");
                for r in &taken {
                    writeback.insert(*r);
                }
                writeback_ref.extend(taken_ref);
                in_flight.push(taken);
            }
            75..=89 if !in_flight.is_empty() => {
                let done = in_flight.remove(rng.gen_range(0..in_flight.len()));
                for r in &done {
                    writeback.remove_matching(r);
                }
                end_reference(&mut writeback_ref, &pages_of(done.into_iter()));
            }
            _ => {
                let b = first + rng.gen_range(0..8);
                assert_eq!(dirty.get(ino, b), dirty_ref.get(&(ino, b)).copied(), "{what}: get");
                assert_eq!(
                    writeback.contains(ino, b),
                    writeback_ref.contains_key(&(ino, b)),
                    "{what}: contains"
                );
                let to = b + rng.gen_range(0..30);
                let want: Vec<_> = dirty_ref.range((ino, b)..(ino, to)).map(|(&k, &v)| (k, v)).collect();
                assert_eq!(pages_of(dirty.runs_in(ino, b, to)), want, "{what}: runs_in({ino}, {b}, {to})");
            }
        }
        check(&dirty, &dirty_ref, &format!("{what}: dirty"));
        check(&writeback, &writeback_ref, &format!("{what}: write-back"));
    }
}

fn seeds() -> Vec<u64> {
    match std::env::var("TRIMLAB_SEED") {
        Ok(s) => vec![s.parse().expect("TRIMLAB_SEED must be an integer")],
        Err(_) => (1..=20).collect(),
    }
}

#[test]
fn the_run_map_holds_what_a_map_per_page_holds() {
    for seed in seeds() {
        run_case(seed, 600);
    }
}

#[test]
fn one_write_is_one_run_and_consecutive_writes_join() {
    let mut map = PageRuns::new();
    map.insert(PageRun { ino: 7, first: 0, len: 256, tag: 1000 });
    map.insert(PageRun { ino: 7, first: 256, len: 256, tag: 1256 });
    assert_eq!(map.iter().count(), 1, "a 2 MiB file written in two calls is one run");
    assert_eq!(map.len(), 512);
    // A rewrite of a page in the middle splits it in three.
    map.insert(PageRun { ino: 7, first: 100, len: 1, tag: 5 });
    assert_eq!(map.iter().count(), 3);
    assert_eq!((map.get(7, 99), map.get(7, 100), map.get(7, 101)), (Some(1099), Some(5), Some(1101)));
    assert_eq!(map.len(), 512);
}
