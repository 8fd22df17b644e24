//! Tests of src/ext4_free_data.rs (moved out of the lib so the crate compiles once).

use trimlab_discard::ext4_free_data::*;
use trimlab_discard::{FreedRun, Run};
use trimlab_sim::SimTime;

fn runs(frees: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let freed: Vec<FreedRun> =
        frees.iter().map(|&(s, n)| FreedRun { run: Run::new(s, n), freed_at: SimTime::ZERO }).collect();
    ext4_freed_entries(&freed, 32768).iter().map(|f| (f.run.start, f.run.len)).collect()
}

#[test]
fn in_block_order_everything_merges_into_the_first_entry() {
    let frees: Vec<(u64, u64)> = (0..50).map(|i| (1000 + 6 * i, 6)).collect();
    assert_eq!(runs(&frees), vec![(1000, 300)]);
}

#[test]
fn a_neighbour_that_is_not_the_would_be_parent_is_not_merged() {
    // 30 links right of 10; 20 stops at 30, which it touches: merged into it, and 30 (now
    // 20..40) with its predecessor 10.
    assert_eq!(runs(&[(10, 10), (30, 10), (20, 10)]), vec![(10, 30)]);
    // 100 links left of 120; 110 stops at 100 (its right is empty), merges into it, and
    // 100..120 with its successor 120: one entry.
    assert_eq!(runs(&[(120, 10), (100, 10), (110, 10)]), vec![(100, 30)]);
    // 130 (root), 100 (left), 160 (right), 90 (stops at 100, merged: 90..110), then 120:
    // it stops at 90..110, which it does not touch, and is linked as an entry of its own
    // although it touches 130, an ancestor.
    assert_eq!(
        runs(&[(130, 10), (100, 10), (160, 10), (90, 10), (120, 10)]),
        vec![(130, 10), (90, 20), (160, 10), (120, 10)]
    );
}

/// The kernel's own frees and discards (tests/realclient/trace-ext4-rm-dir.sh, Linux
/// 6.18: `rm -rf` of 50 files of 24 KiB): the entries, in list order, start where the
/// discard worker's TRIMs start, one TRIM per entry.
#[test]
fn the_entries_are_the_kernels_on_three_traces() {
    let traces = [
        include_str!("../../../../tests/data/discard-patterns/ext4-rm-dir-1.txt"),
        include_str!("../../../../tests/data/discard-patterns/ext4-rm-dir-2.txt"),
        include_str!("../../../../tests/data/discard-patterns/ext4-rm-dir-3.txt"),
    ];
    for (i, text) in traces.iter().enumerate() {
        let (mut frees, mut trims) = (Vec::new(), Vec::new());
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let f: Vec<u64> = line.split_whitespace().skip(2).map(|x| x.parse().unwrap()).collect();
            let block = |g: u64, s: u64| g * 32768 + s;
            match line.split_whitespace().next() {
                Some("free") => frees.push((block(f[0], f[1]), f[2])),
                Some("trim") => {
                    let g: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
                    let s: u64 = line.split_whitespace().nth(2).unwrap().parse().unwrap();
                    trims.push(block(g, s));
                }
                _ => unreachable!("{line}"),
            }
        }
        let starts: Vec<u64> = runs(&frees).iter().map(|r| r.0).collect();
        assert_eq!(starts, trims, "trace {}", i + 1);
        assert!(trims.len() >= 11, "trace {}: {} TRIMs", i + 1, trims.len());
    }
}

#[test]
fn a_run_across_groups_is_freed_per_group() {
    assert_eq!(runs(&[(32760, 16)]), vec![(32760, 8), (32768, 8)]);
}
