//! Tests of src/fast.rs (moved out of the lib so the crate compiles once).

use trimlab_hybrid::fast::*;
use trimlab_nand::{Geometry, Timing};
use trimlab_sim::SimTime;

/// One chip, one plane, 8 pages per block, 32 blocks, 8 logical blocks.
fn ftl(trim: bool) -> HybridFtl {
    let g = Geometry {
        channels: 1,
        chips_per_channel: 1,
        dies_per_chip: 1,
        planes_per_die: 1,
        blocks_per_plane: 32,
        pages_per_block: 8,
        page_bytes: 2048,
        flash_page_bytes: 2048,
    };
    let config = HybridConfig {
        logical_pages: 64,
        sequential_logs: 1,
        random_logs: 2,
        striping: Striping::Block,
        trim_groups: trim.then_some(4),
        track_data: true,
    };
    HybridFtl::check_config(&g, &config).unwrap();
    let mut f = HybridFtl::new(g, Timing::k9lag08u0m(), config);
    f.set_verify(true);
    f
}

#[test]
fn a_complete_sequential_run_is_switched_without_copies() {
    let mut f = ftl(false);
    for round in 0..2 {
        for lpn in 0..8 {
            f.write(SimTime::ZERO, lpn, 10 * round + lpn as u64 + 1);
        }
    }
    let s = f.stats();
    assert_eq!((s.switch_merges, s.partial_merges, s.full_merges, s.merge_pages_copied), (2, 0, 0, 0));
    // The second switch erased the first data block.
    assert_eq!(f.flash().counters().blocks_erased, 1);
    assert_eq!(f.read(SimTime::ZERO, 3).0, 14);
}

#[test]
fn an_interrupted_run_is_partially_merged_copying_the_tail() {
    let mut f = ftl(false);
    for lpn in 0..8 {
        f.write(SimTime::ZERO, lpn, 1);
    }
    for lpn in 0..3 {
        f.write(SimTime::ZERO, lpn, 2);
    }
    // A new run of another block makes the SW log of block 0 give way.
    f.write(SimTime::ZERO, 8, 3);
    let s = f.stats();
    assert_eq!((s.switch_merges, s.partial_merges, s.merge_pages_copied), (1, 1, 5));
    assert_eq!(f.read(SimTime::ZERO, 2).0, 2);
    assert_eq!(f.read(SimTime::ZERO, 7).0, 1);
}

#[test]
fn random_log_victims_are_fully_merged_and_trimmed_pages_are_not_copied() {
    // With the trimmed-range list the merge drops the listed pages; without it the TRIM
    // unmapped them at once. Either way they are not copied.
    for list in [false, true] {
        let mut f = ftl(list);
        for lpn in 0..16 {
            f.write(SimTime::ZERO, lpn, 1);
        }
        assert_eq!(f.trim(1, 6), 6, "list {list}: six live pages trimmed");
        // The first RW log takes updates of blocks 0 and 1, the second pages of block 2; the
        // next random write reclaims the first (the oldest) and fully merges blocks 0 and 1.
        for lpn in [7, 9, 10, 11, 12, 13, 14, 15, 17, 18, 19, 20, 21, 22, 23, 25, 26] {
            f.write(SimTime::ZERO, lpn, 2);
        }
        let s = f.stats().clone();
        assert_eq!(s.rw_victims, 1);
        assert_eq!(s.full_merges, 2, "list {list}");
        // Block 0 holds 8 pages of which only 0 and 7 are live; block 1 holds 8.
        assert_eq!(s.merge_pages_copied, 2 + 8, "list {list}");
        assert_eq!(s.trimmed_pages_dropped, if list { 6 } else { 0 }, "list {list}");
        assert_eq!(f.read(SimTime::ZERO, 3).0, 0);
    }
}
