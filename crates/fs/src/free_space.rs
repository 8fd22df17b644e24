//! Free-space fragmentation and file layout, measured on a mounted file system: the free
//! extents of its on-disk block bitmap as e2freefrag and `xfs_db -c freesp` histogram them,
//! and Smith & Seltzer's layout score of its files' extents (Smith and Seltzer, "File System
//! Aging — Increasing the Relevance of File System Benchmarks", SIGMETRICS 1997), the measure
//! Impressions (Agrawal et al., FAST 2009) and Geriatrix (Kadekodi et al., ATC 2018) age to.
//!
//! Free means clear in the on-disk bitmap (`used`): blocks freed but held for a queued TRIM
//! are free to e2freefrag too. An extent is a maximal run of free blocks; runs are not cut at
//! block-group ends (ext4's flex_bg puts the groups' metadata together, so a free run crosses
//! groups on a real disk as well).

use crate::bitmap::BlockBitmap;
use crate::extent::ExtentMap;
use serde::Serialize;

/// Histogram buckets: extents of `2^i ..= 2^(i+1) - 1` blocks in bucket `i`, as e2freefrag's
/// "HISTOGRAM OF FREE EXTENT SIZES" (4K...8K-, 8K...16K-, ...). 40 buckets reach 2^40 blocks.
const BUCKETS: usize = 40;

/// One bucket of the free-extent histogram.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FreeBucket {
    /// Smallest extent of the bucket, in blocks (a power of two).
    pub min_blocks: u64,
    pub extents: u64,
    pub blocks: u64,
}

/// The free space of a file system, measured from its block bitmap.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FreeSpace {
    pub block_bytes: u64,
    pub free_blocks: u64,
    pub free_extents: u64,
    pub largest_extent_blocks: u64,
    /// Free blocks / free extents.
    pub mean_extent_blocks: f64,
    /// Half the free blocks lie in extents of at least this many blocks (a block-weighted
    /// median: what a large allocation or a large TRIM finds).
    pub median_extent_blocks_by_blocks: u64,
    /// Smith & Seltzer's layout score of the free space seen as one file: of the free blocks
    /// after the first, the share whose predecessor is free too (1: one extent; 0: every free
    /// block alone).
    pub layout_score: f64,
    /// Non-empty buckets only, smallest first.
    pub histogram: Vec<FreeBucket>,
}

/// Smith & Seltzer's layout score of the files: of every file block after a file's first,
/// the share placed right after the file's previous block.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Layout {
    /// Files (and directories) with at least one block.
    pub files: u64,
    pub blocks: u64,
    /// Physically contiguous runs of the files (extents that continue the previous one on
    /// disk count as one).
    pub fragments: u64,
    /// (blocks − fragments) / (blocks − files); 1.0 when no file has a second block.
    pub layout_score: f64,
}

/// The free extents of `bitmap`'s blocks, whole words at a time (a 1 TiB file system of
/// 4 KiB blocks is four million words).
pub fn free_space(bitmap: &BlockBitmap, block_bytes: u64) -> FreeSpace {
    let mut buckets = [(0u64, 0u64); BUCKETS];
    let (mut free_blocks, mut extents, mut largest) = (0u64, 0u64, 0u64);
    let mut add = |len: u64| {
        let b = (63 - len.leading_zeros() as usize).min(BUCKETS - 1);
        buckets[b].0 += 1;
        buckets[b].1 += len;
        free_blocks += len;
        extents += 1;
        largest = largest.max(len);
    };
    let (used, blocks) = (bitmap.used_words(), bitmap.blocks());
    let mut run = 0u64;
    for (w, &word) in used.iter().enumerate() {
        let base = w as u64 * 64;
        let valid = (blocks - base).min(64);
        // Free bits of this word, the tail past the last block counted as used.
        let mut free = !word;
        if valid < 64 {
            free &= (1u64 << valid) - 1;
        }
        if free == u64::MAX {
            run += 64;
            continue;
        }
        let mut bit = 0u64;
        while bit < 64 {
            let rest = free >> bit;
            if rest == 0 {
                break;
            }
            let zeros = rest.trailing_zeros() as u64;
            if zeros > 0 {
                // A used block ends the run in progress.
                if run > 0 {
                    add(run);
                    run = 0;
                }
                bit += zeros;
            }
            let ones = (free >> bit).trailing_ones() as u64;
            run += ones;
            bit += ones;
        }
        if bit < 64 && run > 0 {
            add(run);
            run = 0;
        }
    }
    if run > 0 {
        add(run);
    }
    let histogram: Vec<FreeBucket> = buckets
        .iter()
        .enumerate()
        .filter(|(_, (n, _))| *n > 0)
        .map(|(i, &(n, b))| FreeBucket { min_blocks: 1 << i, extents: n, blocks: b })
        .collect();
    FreeSpace {
        block_bytes,
        free_blocks,
        free_extents: extents,
        largest_extent_blocks: largest,
        mean_extent_blocks: if extents == 0 { 0.0 } else { free_blocks as f64 / extents as f64 },
        median_extent_blocks_by_blocks: block_median(&histogram, free_blocks),
        layout_score: score(free_blocks, extents, 1),
        histogram,
    }
}

/// The smallest bucket bound at which the buckets from the largest down hold half the free
/// blocks.
fn block_median(histogram: &[FreeBucket], free_blocks: u64) -> u64 {
    let mut seen = 0;
    for b in histogram.iter().rev() {
        seen += b.blocks;
        if 2 * seen >= free_blocks {
            return b.min_blocks;
        }
    }
    0
}

/// (blocks − fragments) / (blocks − files), 1.0 when there is nothing after a first block.
fn score(blocks: u64, fragments: u64, files: u64) -> f64 {
    let fragments = fragments.max(files.min(blocks));
    if blocks <= files {
        return 1.0;
    }
    (blocks - fragments) as f64 / (blocks - files) as f64
}

/// The layout score of `files`' extent maps.
pub fn layout<'a>(files: impl Iterator<Item = &'a ExtentMap>) -> Layout {
    let mut out = Layout::default();
    for map in files {
        let mut end = None;
        let mut any = false;
        for e in map.iter() {
            any = true;
            out.blocks += e.len;
            if end != Some(e.physical) {
                out.fragments += 1;
            }
            end = Some(e.physical + e.len);
        }
        out.files += u64::from(any);
    }
    out.layout_score = score(out.blocks, out.fragments, out.files);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference: free runs found block by block.
    fn runs_by_block(bm: &BlockBitmap) -> Vec<u64> {
        let mut out = Vec::new();
        let mut run = 0;
        for b in 0..bm.blocks() {
            if bm.is_used(b) {
                if run > 0 {
                    out.push(run);
                }
                run = 0;
            } else {
                run += 1;
            }
        }
        if run > 0 {
            out.push(run);
        }
        out
    }

    #[test]
    fn free_extents_match_a_block_by_block_count() {
        let seed = std::env::var("TRIMLAB_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(7u64);
        let mut x = seed;
        for blocks in [1u64, 63, 64, 65, 200, 1000, 4099] {
            let mut bm = BlockBitmap::new(blocks, 128);
            for b in 0..blocks {
                // xorshift: some long runs, some isolated blocks.
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                if (b / 97).is_multiple_of(2) && x.is_multiple_of(3) || x.is_multiple_of(11) {
                    bm.take(b, 1);
                }
            }
            let want = runs_by_block(&bm);
            let got = free_space(&bm, 4096);
            assert_eq!(got.free_extents, want.len() as u64, "extents, {blocks} blocks, TRIMLAB_SEED={seed}");
            assert_eq!(got.free_blocks, want.iter().sum::<u64>(), "blocks, TRIMLAB_SEED={seed}");
            assert_eq!(got.largest_extent_blocks, want.iter().copied().max().unwrap_or(0));
            assert_eq!(got.histogram.iter().map(|b| b.extents).sum::<u64>(), got.free_extents);
        }
    }

    #[test]
    fn one_free_run_scores_one_and_isolated_blocks_zero() {
        let bm = BlockBitmap::new(1000, 128);
        let f = free_space(&bm, 4096);
        assert_eq!((f.free_extents, f.layout_score), (1, 1.0));
        let mut bm = BlockBitmap::new(1000, 128);
        for b in (0..1000).step_by(2) {
            bm.take(b, 1);
        }
        let f = free_space(&bm, 4096);
        assert_eq!((f.free_extents, f.free_blocks, f.layout_score), (500, 500, 0.0));
        assert_eq!(f.histogram, vec![FreeBucket { min_blocks: 1, extents: 500, blocks: 500 }]);
    }

    #[test]
    fn layout_counts_contiguous_extents_as_one_fragment() {
        let mut a = ExtentMap::new(4);
        a.insert(0, 100, 4);
        a.insert(4, 104, 4); // continues on disk
        let mut b = ExtentMap::new(1 << 15);
        b.insert(0, 10, 2);
        b.insert(2, 50, 2); // a jump
        let l = layout([&a, &b].into_iter());
        assert_eq!((l.files, l.blocks, l.fragments), (2, 12, 3));
        assert!((l.layout_score - 9.0 / 10.0).abs() < 1e-12, "{l:?}");
    }
}
