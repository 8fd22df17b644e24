//! Block groups' block bitmaps and the goal-directed allocator.
//!
//! Two bits per block: `used` is the on-disk bitmap (a block belongs to a file or to static
//! metadata), `avail` is the allocator's view. A freed block has `used` clear but stays
//! unavailable until the commit and the TRIM policy release it (ext4's "busy" extents).

/// Allocation state of every block, grouped as ext4 block groups.
#[derive(Clone, Debug)]
pub struct BlockBitmap {
    used: Vec<u64>,
    avail: Vec<u64>,
    blocks: u64,
    blocks_per_group: u64,
    avail_per_group: Vec<u64>,
    used_count: u64,
    avail_count: u64,
}

#[inline]
fn get(bits: &[u64], b: u64) -> bool {
    bits[(b / 64) as usize] >> (b % 64) & 1 == 1
}

/// The words of run `[start, start + len)`, each with the mask of the run's bits in it: runs
/// are marked a word at a time, not a block at a time.
fn word_masks(start: u64, len: u64) -> impl Iterator<Item = (usize, u64)> {
    let (mut b, end) = (start, start + len);
    std::iter::from_fn(move || {
        if b >= end {
            return None;
        }
        let (w, low) = (b / 64, b % 64);
        let high = (end - w * 64).min(64);
        let mask = match high - low {
            64 => u64::MAX,
            n => ((1u64 << n) - 1) << low,
        };
        b = w * 64 + high;
        Some((w as usize, mask))
    })
}

/// The first block of word `w` whose bit is set in `bits` (for a panic's message).
fn first_bit(w: usize, bits: u64) -> u64 {
    w as u64 * 64 + bits.trailing_zeros() as u64
}

impl BlockBitmap {
    /// All blocks free and available.
    pub fn new(blocks: u64, blocks_per_group: u64) -> Self {
        let words = blocks.div_ceil(64) as usize;
        let mut avail = vec![u64::MAX; words];
        if !blocks.is_multiple_of(64) {
            avail[words - 1] = (1u64 << (blocks % 64)) - 1;
        }
        let groups = blocks.div_ceil(blocks_per_group);
        let avail_per_group =
            (0..groups).map(|g| (blocks - g * blocks_per_group).min(blocks_per_group)).collect();
        BlockBitmap {
            used: vec![0; words],
            avail,
            blocks,
            blocks_per_group,
            avail_per_group,
            used_count: 0,
            avail_count: blocks,
        }
    }

    pub fn blocks(&self) -> u64 {
        self.blocks
    }
    pub fn groups(&self) -> u64 {
        self.avail_per_group.len() as u64
    }
    pub fn blocks_per_group(&self) -> u64 {
        self.blocks_per_group
    }
    pub fn used_count(&self) -> u64 {
        self.used_count
    }
    pub fn avail_count(&self) -> u64 {
        self.avail_count
    }
    /// The on-disk bitmap's words, block `b` at bit `b % 64` of word `b / 64` (free-space
    /// statistics read it a word at a time: free_space.rs).
    pub fn used_words(&self) -> &[u64] {
        &self.used
    }
    pub fn is_used(&self, b: u64) -> bool {
        get(&self.used, b)
    }
    pub fn is_avail(&self, b: u64) -> bool {
        get(&self.avail, b)
    }
    pub fn group_of(&self, b: u64) -> u64 {
        b / self.blocks_per_group
    }

    /// Marks an available run used (allocation, or static metadata at mkfs).
    pub fn take(&mut self, start: u64, len: u64) {
        for (w, m) in word_masks(start, len) {
            let bad = (!self.avail[w] | self.used[w]) & m;
            assert!(bad == 0, "bitmap: taking block {} that is not available", first_bit(w, bad));
            self.avail[w] &= !m;
            self.used[w] |= m;
        }
        self.count_groups(start, len, false);
        self.avail_count -= len;
        self.used_count += len;
    }

    /// Marks a run that is free but held (a queued TRIM) used again, cancelling the hold.
    pub fn take_held(&mut self, start: u64, len: u64) {
        for (w, m) in word_masks(start, len) {
            let bad = (self.avail[w] | self.used[w]) & m;
            assert!(bad == 0, "bitmap: reusing block {} that is not held", first_bit(w, bad));
            self.used[w] |= m;
        }
        self.used_count += len;
    }

    /// Frees a used run; it stays unavailable (held) until [`BlockBitmap::release`].
    pub fn free(&mut self, start: u64, len: u64) {
        for (w, m) in word_masks(start, len) {
            let bad = !self.used[w] & m;
            assert!(bad == 0, "bitmap: freeing block {} that is not used", first_bit(w, bad));
            self.used[w] &= !m;
        }
        self.used_count -= len;
    }

    /// Makes a held run available to the allocator.
    pub fn release(&mut self, start: u64, len: u64) {
        for (w, m) in word_masks(start, len) {
            let bad = (self.used[w] | self.avail[w]) & m;
            assert!(bad == 0, "bitmap: releasing block {} that is not held", first_bit(w, bad));
            self.avail[w] |= m;
        }
        self.count_groups(start, len, true);
        self.avail_count += len;
    }

    /// Holds an available run (fstrim and async discard keep a range out of the allocator
    /// while its TRIM is in flight).
    pub fn hold(&mut self, start: u64, len: u64) {
        for (w, m) in word_masks(start, len) {
            let bad = !self.avail[w] & m;
            assert!(bad == 0, "bitmap: holding block {} that is not available", first_bit(w, bad));
            self.avail[w] &= !m;
        }
        self.count_groups(start, len, false);
        self.avail_count -= len;
    }

    /// Adds (or takes) a run's blocks to (from) the available counts of the groups it spans.
    fn count_groups(&mut self, start: u64, len: u64, add: bool) {
        let (mut b, end) = (start, start + len);
        while b < end {
            let g = b / self.blocks_per_group;
            let stop = ((g + 1) * self.blocks_per_group).min(end);
            let count = &mut self.avail_per_group[g as usize];
            match add {
                true => *count += stop - b,
                false => *count -= stop - b,
            }
            b = stop;
        }
    }

    /// The first available block at or after `from` and before `end`.
    fn next_avail(&self, from: u64, end: u64) -> Option<u64> {
        let mut b = from;
        while b < end {
            let w = self.avail[(b / 64) as usize] >> (b % 64);
            if w != 0 {
                let found = b + w.trailing_zeros() as u64;
                return (found < end).then_some(found);
            }
            b = (b / 64 + 1) * 64;
        }
        None
    }

    /// The available run starting at `start`, at most `max` long.
    fn avail_run_len(&self, start: u64, max: u64) -> u64 {
        let end = start.saturating_add(max).min(self.blocks);
        let mut b = start;
        // A word at a time: the available bits from `b` on, up to the first clear one.
        while b < end {
            let offset = b % 64;
            let ones = (self.avail[(b / 64) as usize] >> offset).trailing_ones() as u64;
            let to_word_end = 64 - offset;
            b += ones.min(to_word_end);
            if ones < to_word_end {
                break;
            }
        }
        b.min(end).saturating_sub(start)
    }

    /// Goal-directed allocation (ext4 mballoc, simplified): the run at the goal if the goal is
    /// free, else the first free run after the goal in its group, else the first free run of
    /// the following groups (wrapping). Returns up to `want` blocks, marked used.
    pub fn allocate(&mut self, goal: u64, want: u64) -> Option<Run> {
        if self.avail_count == 0 || want == 0 {
            return None;
        }
        let goal = goal.min(self.blocks - 1);
        let g0 = self.group_of(goal);
        let groups = self.groups();
        for i in 0..=groups {
            let g = (g0 + i) % groups;
            if self.avail_per_group[g as usize] == 0 {
                continue;
            }
            let group_start = g * self.blocks_per_group;
            let group_end = (group_start + self.blocks_per_group).min(self.blocks);
            let from = if i == 0 { goal } else { group_start };
            let found = self.next_avail(from, group_end).or_else(|| {
                // The goal's group below the goal, on the wrap-around pass.
                (i == groups).then(|| self.next_avail(group_start, group_end)).flatten()
            });
            if let Some(start) = found {
                let len = self.avail_run_len(start, want.min(group_end - start));
                self.take(start, len);
                return Some(Run::new(start, len));
            }
        }
        None
    }

    /// Available runs of at least `minlen` blocks inside `[start, end)`, clipped to groups.
    pub fn avail_runs(&self, start: u64, end: u64, minlen: u64) -> Vec<Run> {
        let mut out = Vec::new();
        let mut b = start;
        while let Some(s) = self.next_avail(b, end) {
            let group_end = ((self.group_of(s) + 1) * self.blocks_per_group).min(end);
            let len = self.avail_run_len(s, group_end - s);
            if len >= minlen.max(1) {
                out.push(Run::new(s, len));
            }
            b = s + len;
        }
        out
    }

    /// What ext4_try_to_trim_range(start, end - 1, minblocks = 1) trims since Linux 6.8: each
    /// available run that starts inside `[start, end)`, extended past `end` to the end of its
    /// free run in its group (commit 68da4c44b994 "fix inconsistent between segment fstrim
    /// and full fstrim").
    pub fn avail_runs_extended(&self, start: u64, end: u64) -> Vec<Run> {
        let mut out = Vec::new();
        let mut b = start;
        while let Some(s) = self.next_avail(b, end.min(self.blocks)) {
            let group_end = ((self.group_of(s) + 1) * self.blocks_per_group).min(self.blocks);
            let len = self.avail_run_len(s, group_end - s);
            out.push(Run::new(s, len));
            b = s + len;
        }
        out
    }

    /// The available run around block `b` inside its group (both directions), or None if `b`
    /// is not available: btrfs' free-space entry after a freed extent merged with its
    /// neighbours.
    pub fn avail_run_around(&self, b: u64) -> Option<Run> {
        if b >= self.blocks || !self.is_avail(b) {
            return None;
        }
        let group_start = self.group_of(b) * self.blocks_per_group;
        let mut s = b;
        while s > group_start && self.is_avail(s - 1) {
            s -= 1;
        }
        let group_end = (group_start + self.blocks_per_group).min(self.blocks);
        Some(Run::new(s, self.avail_run_len(s, group_end - s)))
    }

    pub fn group_avail(&self, g: u64) -> u64 {
        self.avail_per_group[g as usize]
    }

    /// Recounts everything from the bits.
    pub fn check(&self) -> Result<(), String> {
        let mut used = 0;
        let mut avail = 0;
        let mut per_group = vec![0u64; self.avail_per_group.len()];
        for b in 0..self.blocks {
            let u = get(&self.used, b);
            let a = get(&self.avail, b);
            if u && a {
                return Err(format!("bitmap: block {b} is both used and available"));
            }
            used += u as u64;
            if a {
                avail += 1;
                per_group[(b / self.blocks_per_group) as usize] += 1;
            }
        }
        if used != self.used_count || avail != self.avail_count || per_group != self.avail_per_group {
            return Err(format!(
                "bitmap: counts disagree (used {used} vs {}, avail {avail} vs {})",
                self.used_count, self.avail_count
            ));
        }
        Ok(())
    }
}

use crate::extent::Run;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goal_then_group_then_others() {
        let mut bm = BlockBitmap::new(256, 64);
        bm.take(0, 10);
        assert_eq!(bm.allocate(5, 4), Some(Run::new(10, 4)));
        assert_eq!(bm.allocate(100, 4), Some(Run::new(100, 4)));
        bm.take(14, 50);
        // group 0 full after the goal: next group
        assert_eq!(bm.allocate(20, 2), Some(Run::new(64, 2)));
        bm.free(10, 4);
        assert_eq!(bm.allocate(10, 1), Some(Run::new(66, 1)), "freed blocks are held until released");
        bm.release(10, 4);
        assert_eq!(bm.allocate(10, 8), Some(Run::new(10, 4)));
        bm.check().unwrap();
    }

    /// The word-at-a-time marking against the bits set one by one: runs across word and
    /// group ends, in both directions, with the counts recounted from the bits after each.
    #[test]
    fn runs_marked_by_words_match_block_by_block() {
        let seed = std::env::var("TRIMLAB_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(11u64);
        let mut x = seed;
        let mut next = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let blocks = 1000;
        let mut bm = BlockBitmap::new(blocks, 96);
        let (mut used, mut avail) = (vec![false; blocks as usize], vec![true; blocks as usize]);
        for step in 0..4000 {
            let start = next(blocks);
            let want = 1 + next(200);
            let run = bm.avail_run_len(start, want);
            let reference =
                (start..blocks.min(start + want)).take_while(|&b| avail[b as usize]).count() as u64;
            assert_eq!(run, reference, "step {step}: run at {start}, TRIMLAB_SEED={seed}");
            let r = start as usize..(start + run) as usize;
            match next(3) {
                0 if run > 0 => {
                    bm.take(start, run);
                    used[r.clone()].fill(true);
                    avail[r].fill(false);
                }
                1 => {
                    // Free and release a used run found from `start`.
                    let len = (start..blocks).take_while(|&b| used[b as usize]).count() as u64;
                    let r = start as usize..(start + len) as usize;
                    bm.free(start, len);
                    used[r.clone()].fill(false);
                    if next(2) == 0 {
                        bm.release(start, len);
                        avail[r].fill(true);
                    } else {
                        bm.take_held(start, len);
                        used[r].fill(true);
                    }
                }
                _ if run > 0 => {
                    bm.hold(start, run);
                    avail[r.clone()].fill(false);
                    bm.release(start, run);
                    avail[r].fill(true);
                }
                _ => {}
            }
            bm.check().unwrap_or_else(|e| panic!("step {step}: {e}, TRIMLAB_SEED={seed}"));
            for b in 0..blocks {
                assert_eq!(
                    (bm.is_used(b), bm.is_avail(b)),
                    (used[b as usize], avail[b as usize]),
                    "block {b}"
                );
            }
        }
    }
}
