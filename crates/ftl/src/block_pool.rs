//! The block pool: every erase block's state and valid-page count, each plane's free blocks,
//! and an index of full blocks by valid count so greedy GC finds its victim without a scan.

use crate::victim::VictimPolicy;
use std::collections::VecDeque;
use trimlab_nand::{BlockId, Geometry};

const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum BlockState {
    /// Erased, in its plane's free list.
    Free,
    /// Being programmed (a host or GC open block).
    Open,
    /// Every page programmed; a GC candidate, in the victim index.
    Full,
}

/// A block's state, valid count and links in the victim index, side by side: a host write that
/// invalidates a page of a full block reads its state and moves it between buckets, reading and
/// writing all of them, and in one entry they share a cache line (separate arrays were a miss
/// each per write; the block is a random one, so the pool's lines are rarely cached under the
/// maps' traffic). 16-byte aligned, so no entry straddles two lines (at 12 bytes one in five
/// did).
#[derive(Clone, Copy, Debug)]
#[repr(C, align(16))]
struct Entry {
    valid: u32,
    // Intrusive doubly-linked lists of full blocks, one per (plane, valid count).
    next: u32,
    prev: u32,
    state: BlockState,
}

pub struct BlockPool {
    pages_per_block: u32,
    blocks_per_plane: u32,
    /// `blocks_per_plane` as a multiply-and-shift: every move in the victim index finds the
    /// block's plane, and the division it replaced was a sixth of `remove_valid`'s time.
    plane_divisor: Divisor,
    entries: Vec<Entry>,
    /// Host-write sequence number when the block was closed (its age for cost-benefit).
    closed_at: Vec<u64>,
    free: Vec<VecDeque<BlockId>>,
    bucket_head: Vec<u32>,
    /// Full blocks per plane in the order they were closed, for FIFO victims.
    closed_order: Vec<VecDeque<BlockId>>,
    track_closed_order: bool,
}

impl BlockPool {
    pub fn new(geometry: &Geometry, policy: VictimPolicy) -> Self {
        let blocks = geometry.block_count();
        let planes = geometry.plane_count();
        let free = (0..planes)
            .map(|p| {
                let first = geometry.first_block_of_plane(p).0;
                (first..first + geometry.blocks_per_plane).map(BlockId).collect()
            })
            .collect();
        BlockPool {
            pages_per_block: geometry.pages_per_block,
            blocks_per_plane: geometry.blocks_per_plane,
            plane_divisor: Divisor::new(geometry.blocks_per_plane),
            entries: vec![Entry { valid: 0, next: NONE, prev: NONE, state: BlockState::Free }; blocks],
            closed_at: vec![0; blocks],
            free,
            bucket_head: vec![NONE; planes * (geometry.pages_per_block as usize + 1)],
            closed_order: vec![VecDeque::new(); if policy == VictimPolicy::Fifo { planes } else { 0 }],
            track_closed_order: policy == VictimPolicy::Fifo,
        }
    }

    #[inline]
    pub fn state(&self, block: BlockId) -> BlockState {
        self.entries[block.index()].state
    }

    #[inline]
    pub fn valid(&self, block: BlockId) -> u32 {
        self.entries[block.index()].valid
    }

    /// Valid pages over all blocks.
    pub fn valid_total(&self) -> u64 {
        self.entries.iter().map(|e| e.valid as u64).sum()
    }

    pub fn free_count(&self, plane: usize) -> usize {
        self.free[plane].len()
    }

    pub fn free_blocks(&self, plane: usize) -> impl Iterator<Item = BlockId> + '_ {
        self.free[plane].iter().copied()
    }

    /// Takes the least recently erased free block of `plane` (FIFO spreads wear).
    pub fn take_free(&mut self, plane: usize) -> Option<BlockId> {
        let block = self.free[plane].pop_front()?;
        debug_assert_eq!(self.entries[block.index()].state, BlockState::Free);
        self.entries[block.index()].state = BlockState::Open;
        Some(block)
    }

    /// An open block became full: it joins the victim index.
    pub fn close(&mut self, block: BlockId, sequence: u64) {
        debug_assert_eq!(self.entries[block.index()].state, BlockState::Open);
        self.entries[block.index()].state = BlockState::Full;
        self.closed_at[block.index()] = sequence;
        self.link(block);
        if self.track_closed_order {
            let plane = self.plane(block);
            self.closed_order[plane].push_back(block);
        }
    }

    /// A page of `block` was programmed with valid data.
    #[inline]
    pub fn add_valid(&mut self, block: BlockId) {
        // Only open blocks are programmed, so the victim index does not move.
        debug_assert_eq!(self.entries[block.index()].state, BlockState::Open);
        self.entries[block.index()].valid += 1;
    }

    /// `pages` pages of `block`, which is open (a GC destination), were programmed with valid
    /// data: one addition for a flash page's worth of copies.
    #[inline]
    pub fn add_valid_open(&mut self, block: BlockId, pages: u32) {
        debug_assert_eq!(self.entries[block.index()].state, BlockState::Open);
        self.entries[block.index()].valid += pages;
    }

    /// `pages` pages of `block`, which is open (a GC victim being copied), stopped being
    /// valid: no victim index to update, one subtraction for a flash page's worth.
    #[inline]
    pub fn remove_valid_open(&mut self, block: BlockId, pages: u32) {
        debug_assert_eq!(self.entries[block.index()].state, BlockState::Open);
        debug_assert!(
            self.entries[block.index()].valid >= pages,
            "block_pool: {block:?} has too few valid pages"
        );
        self.entries[block.index()].valid -= pages;
    }

    /// A page of `block` stopped being valid (overwritten, trimmed or moved by GC).
    #[inline]
    pub fn remove_valid(&mut self, block: BlockId) {
        let full = self.entries[block.index()].state == BlockState::Full;
        if full {
            self.unlink(block);
        }
        debug_assert!(self.entries[block.index()].valid > 0, "block_pool: {block:?} has no valid page");
        self.entries[block.index()].valid -= 1;
        if full {
            self.link(block);
        }
    }

    /// Removes a victim from the index before GC moves its pages.
    pub fn begin_collect(&mut self, block: BlockId) {
        debug_assert_eq!(self.entries[block.index()].state, BlockState::Full);
        self.unlink(block);
        self.entries[block.index()].state = BlockState::Open;
        if self.track_closed_order {
            let plane = self.plane(block);
            let front = self.closed_order[plane].pop_front();
            debug_assert_eq!(front, Some(block), "block_pool: FIFO victim out of order");
        }
    }

    /// The victim was erased and returns to its plane's free list.
    pub fn release(&mut self, block: BlockId) {
        assert_eq!(self.entries[block.index()].valid, 0, "block_pool: erasing {block:?} with valid pages");
        self.entries[block.index()].state = BlockState::Free;
        let plane = self.plane(block);
        self.free[plane].push_back(block);
    }

    /// Chooses a victim in `plane` under `policy`; `now_sequence` is the current host-write count.
    pub fn select_victim(&self, plane: usize, policy: VictimPolicy, now_sequence: u64) -> Option<BlockId> {
        match policy {
            VictimPolicy::Greedy => {
                let base = plane * (self.pages_per_block as usize + 1);
                self.bucket_head[base..base + self.pages_per_block as usize + 1]
                    .iter()
                    .find(|&&head| head != NONE)
                    .map(|&head| BlockId(head))
            }
            VictimPolicy::Fifo => self.closed_order[plane].front().copied(),
            VictimPolicy::CostBenefit => {
                let first = plane as u32 * self.blocks_per_plane;
                let ppb = self.pages_per_block as f64;
                let mut best: Option<(f64, BlockId)> = None;
                for b in first..first + self.blocks_per_plane {
                    let block = BlockId(b);
                    if self.entries[block.index()].state != BlockState::Full {
                        continue;
                    }
                    let u = self.entries[block.index()].valid as f64 / ppb;
                    let age = (now_sequence - self.closed_at[block.index()]) as f64 + 1.0;
                    let score = (1.0 - u) * age / (1.0 + u);
                    // Strict '>' keeps the lowest-numbered block on ties: deterministic.
                    if best.is_none_or(|(s, _)| score > s) {
                        best = Some((score, block));
                    }
                }
                best.map(|(_, b)| b)
            }
        }
    }

    #[inline]
    fn plane(&self, block: BlockId) -> usize {
        self.plane_divisor.divide(block.0) as usize
    }

    #[inline]
    fn bucket(&self, block: BlockId) -> usize {
        self.plane(block) * (self.pages_per_block as usize + 1) + self.entries[block.index()].valid as usize
    }

    #[inline]
    fn link(&mut self, block: BlockId) {
        let bucket = self.bucket(block);
        let head = self.bucket_head[bucket];
        let entry = &mut self.entries[block.index()];
        entry.next = head;
        entry.prev = NONE;
        if head != NONE {
            self.entries[head as usize].prev = block.0;
        }
        self.bucket_head[bucket] = block.0;
    }

    #[inline]
    fn unlink(&mut self, block: BlockId) {
        let Entry { prev, next, .. } = self.entries[block.index()];
        if prev != NONE {
            self.entries[prev as usize].next = next;
        } else {
            let bucket = self.bucket(block);
            debug_assert_eq!(self.bucket_head[bucket], block.0);
            self.bucket_head[bucket] = next;
        }
        if next != NONE {
            self.entries[next as usize].prev = prev;
        }
    }

    /// Full check of the index against the block states (used by `PageFtl::check`).
    pub fn check(&self) -> Result<(), String> {
        let mut listed = vec![false; self.entries.len()];
        let planes = self.free.len();
        for plane in 0..planes {
            for valid in 0..=self.pages_per_block as usize {
                let mut cursor = self.bucket_head[plane * (self.pages_per_block as usize + 1) + valid];
                let mut prev = NONE;
                while cursor != NONE {
                    let b = cursor as usize;
                    if listed[b] {
                        return Err(format!("block_pool: block {b} listed twice"));
                    }
                    listed[b] = true;
                    let entry = self.entries[b];
                    if self.entries[b].state != BlockState::Full
                        || entry.valid as usize != valid
                        || self.plane(BlockId(cursor)) != plane
                        || entry.prev != prev
                    {
                        return Err(format!(
                            "block_pool: block {b} in bucket (plane {plane}, valid {valid}) but has state {:?}, valid {}",
                            self.entries[b].state, entry.valid
                        ));
                    }
                    prev = cursor;
                    cursor = entry.next;
                }
            }
            for block in &self.free[plane] {
                if self.entries[block.index()].state != BlockState::Free
                    || self.entries[block.index()].valid != 0
                {
                    return Err(format!("block_pool: free list holds non-free {block:?}"));
                }
            }
        }
        for (b, state) in self.entries.iter().map(|e| &e.state).enumerate() {
            if (*state == BlockState::Full) != listed[b] {
                return Err(format!("block_pool: block {b} state {state:?} but listed={}", listed[b]));
            }
        }
        let free_total: usize = self.free.iter().map(|f| f.len()).sum();
        let free_states = self.entries.iter().filter(|e| e.state == BlockState::Free).count();
        if free_total != free_states {
            return Err(format!("block_pool: {free_states} free blocks but {free_total} in free lists"));
        }
        Ok(())
    }
}

/// Division of a `u32` by a divisor fixed at construction, without a `div` instruction: by a
/// shift for a power of two, else by the high half of a 64x64-bit multiply with
/// `ceil(2^64 / d)` (Lemire, Kaser and Kurz, "Faster remainder by direct computation", 2019,
/// Theorem 1: exact for every 32-bit dividend when the multiplier has 64 bits).
#[derive(Clone, Copy, Debug)]
struct Divisor {
    /// `ceil(2^64 / d)`, or 0 when `d` is a power of two (then `shift` divides).
    multiplier: u64,
    shift: u32,
}

impl Divisor {
    fn new(d: u32) -> Self {
        assert!(d > 0, "block_pool: division by zero blocks per plane");
        match d.is_power_of_two() {
            true => Divisor { multiplier: 0, shift: d.trailing_zeros() },
            false => Divisor { multiplier: u64::MAX / d as u64 + 1, shift: 0 },
        }
    }

    #[inline]
    fn divide(self, n: u32) -> u32 {
        match self.multiplier {
            0 => n >> self.shift,
            m => ((m as u128 * n as u128) >> 64) as u32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Divisor;

    /// The multiply-and-shift must equal `/` for every divisor shape (powers of two, odd, even,
    /// near 2^32) at the dividends where an off-by-one would show: multiples of the divisor, one
    /// below them, and the ends of the range.
    #[test]
    fn divisor_matches_division() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u32
        };
        let divisors =
            [1, 2, 3, 5, 7, 64, 100, 143, 1000, 4576, 18_304, 65_535, 1 << 24, u32::MAX - 1, u32::MAX];
        let mut random_divisors = Vec::new();
        for _ in 0..2_000 {
            let (value, shift) = (next(), next() % 32);
            random_divisors.push((value >> shift).max(1));
        }
        for d in divisors.into_iter().chain(random_divisors) {
            let div = Divisor::new(d);
            let mut dividends = vec![
                0,
                1,
                d - 1,
                d,
                u32::MAX,
                u32::MAX - 1,
                u32::MAX / d * d,
                (u32::MAX / d * d).wrapping_sub(1),
            ];
            dividends.extend((0..200).map(|_| next()));
            for n in dividends {
                assert_eq!(div.divide(n), n / d, "{n} / {d}");
            }
        }
    }
}
