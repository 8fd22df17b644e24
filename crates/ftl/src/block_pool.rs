//! The block pool: every erase block's state and valid-page count, each plane's free blocks,
//! and the greedy victim index (a stamp per block, per-chunk summaries of the fewest valid
//! count) so greedy GC finds its victim without scanning the plane.

use crate::victim::VictimPolicy;
use std::collections::VecDeque;
use trimlab_nand::{BlockId, Geometry};

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

/// A block's state and valid count in one word: the count in the low bits, the state above
/// them, a full block's state bits zero. So a full block's word is its valid count and any
/// other block's word is above every count: the fewest valid pages of a plane's full blocks
/// is the least word of the plane (see `BlockPool::greedy_victim`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
struct Word(u32);

/// The state bits' place in a `Word`: above any valid count (geometry allows at most 65 536
/// pages per block).
const STATE_SHIFT: u32 = 30;
const VALID_MASK: u32 = (1 << STATE_SHIFT) - 1;

/// Blocks per chunk of the greedy victim search's summaries (`BlockPool::chunk_fewest`).
const CHUNK_BLOCKS: usize = 64;

impl Word {
    #[inline]
    fn new(state: BlockState, valid: u32) -> Self {
        let bits = match state {
            BlockState::Full => 0,
            BlockState::Open => 1,
            BlockState::Free => 2,
        };
        Word(bits << STATE_SHIFT | valid)
    }

    #[inline]
    fn valid(self) -> u32 {
        self.0 & VALID_MASK
    }

    #[inline]
    fn state(self) -> BlockState {
        match self.0 >> STATE_SHIFT {
            0 => BlockState::Full,
            1 => BlockState::Open,
            _ => BlockState::Free,
        }
    }
}

pub struct BlockPool {
    pages_per_block: u32,
    blocks_per_plane: u32,
    /// `blocks_per_plane` as a multiply-and-shift: the block's plane for its chunk bound (every
    /// invalidation), its free list and FIFO's bookkeeping (a division per invalidation was a
    /// sixth of the old victim index's time).
    plane_divisor: Divisor,
    /// Per block: state and valid count (`Word`). 4 bytes a block, so the pool is 16 entries a
    /// line and mostly cached (a host write reads its old block's, a random one).
    words: Vec<Word>,
    /// The greedy victim index: per block, the stamp (the next value of `stamp_counter`) it was
    /// given when it last took a valid count as a full block: when it was closed or one of its
    /// pages was invalidated. Greedy GC takes the full block of the plane with the fewest valid
    /// pages and, among those, the latest stamp: the block that came down to that count last,
    /// which is the tie order of the per-(plane, valid count) doubly-linked lists this replaced
    /// (they pushed at their heads and GC took the head). The lists made every such
    /// invalidation store into three random block entries (both neighbours in the old list, the
    /// new list's head; profiled: `remove_valid`'s stalls were there, and a TRIM waited on them
    /// behind its forward-map and pool misses); a stamp is one store, never read on that path.
    /// The price is a search per victim, which `chunk_fewest` keeps short.
    stamps: Vec<u64>,
    stamp_counter: u64,
    /// Per chunk of `CHUNK_BLOCKS` consecutive blocks of a plane (a plane's last chunk may be
    /// shorter): the fewest valid pages of its full blocks (`u32::MAX`: no full block) and,
    /// in `chunk_best`, the block with that count and the latest stamp. Both are exact at
    /// every step: a full block only takes a count when it is stamped (closed, or a page
    /// invalidated), so it is then the latest of its count and replaces the chunk's best when
    /// its count is at or below the fewest; only a block leaving the index (a victim) can raise
    /// the fewest, and then its one chunk is read again. Greedy GC reads the plane's
    /// `blocks_per_plane / 64` summaries and nothing else: a first version kept lower bounds
    /// and re-read chunks whose bound had gone stale, which made a one-plane drive of 18 000
    /// blocks 1.6-2.2x slower than the linked lists (a plane of a 1 TB drive with 512 KiB
    /// blocks has 35 000).
    chunk_fewest: Vec<u32>,
    chunk_best: Vec<u32>,
    chunks_per_plane: usize,
    /// Host-write sequence number when the block was closed (its age for cost-benefit).
    closed_at: Vec<u64>,
    free: Vec<VecDeque<BlockId>>,
    /// Full blocks per plane in the order they were closed, for FIFO victims.
    closed_order: Vec<VecDeque<BlockId>>,
    track_closed_order: bool,
}

impl BlockPool {
    pub fn new(geometry: &Geometry, policy: VictimPolicy) -> Self {
        let blocks = geometry.block_count();
        let planes = geometry.plane_count();
        assert!(geometry.pages_per_block <= VALID_MASK, "block_pool: pages per block beyond a word's count");
        let chunks_per_plane = (geometry.blocks_per_plane as usize).div_ceil(CHUNK_BLOCKS);
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
            words: vec![Word::new(BlockState::Free, 0); blocks],
            stamps: vec![0; blocks],
            stamp_counter: 0,
            chunk_fewest: vec![u32::MAX; planes * chunks_per_plane],
            chunk_best: vec![u32::MAX; planes * chunks_per_plane],
            chunks_per_plane,
            closed_at: vec![0; blocks],
            free,
            closed_order: vec![VecDeque::new(); if policy == VictimPolicy::Fifo { planes } else { 0 }],
            track_closed_order: policy == VictimPolicy::Fifo,
        }
    }

    #[inline]
    pub fn state(&self, block: BlockId) -> BlockState {
        self.words[block.index()].state()
    }

    #[inline]
    pub fn valid(&self, block: BlockId) -> u32 {
        self.words[block.index()].valid()
    }

    #[inline]
    fn set_state(&mut self, block: BlockId, state: BlockState) {
        let word = &mut self.words[block.index()];
        *word = Word::new(state, word.valid());
    }

    /// Valid pages over all blocks.
    pub fn valid_total(&self) -> u64 {
        self.words.iter().map(|w| w.valid() as u64).sum()
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
        debug_assert_eq!(self.state(block), BlockState::Free);
        self.set_state(block, BlockState::Open);
        Some(block)
    }

    /// Takes the free block of `plane` with the most erases in `erase_counts` (the first in
    /// the list among equals): where static wear levelling puts cold data. O(free blocks).
    pub fn take_free_most_worn(&mut self, plane: usize, erase_counts: &[u32]) -> Option<BlockId> {
        let free = &mut self.free[plane];
        let at = (0..free.len()).rev().max_by_key(|&i| erase_counts[free[i].index()])?;
        let block = free.remove(at)?;
        debug_assert_eq!(self.state(block), BlockState::Free);
        self.set_state(block, BlockState::Open);
        Some(block)
    }

    /// An open block became full: it joins the victim index.
    pub fn close(&mut self, block: BlockId, sequence: u64) {
        debug_assert_eq!(self.state(block), BlockState::Open);
        self.set_state(block, BlockState::Full);
        self.stamps[block.index()] = self.next_stamp();
        self.enter_chunk(block);
        self.closed_at[block.index()] = sequence;
        if self.track_closed_order {
            let plane = self.plane(block);
            self.closed_order[plane].push_back(block);
        }
    }

    /// A page of `block` was programmed with valid data.
    #[inline]
    pub fn add_valid(&mut self, block: BlockId) {
        // Only open blocks are programmed, so the victim index does not move.
        debug_assert_eq!(self.state(block), BlockState::Open);
        self.words[block.index()].0 += 1;
    }

    /// `pages` pages of `block`, which is open (a GC destination), were programmed with valid
    /// data: one addition for a flash page's worth of copies.
    #[inline]
    pub fn add_valid_open(&mut self, block: BlockId, pages: u32) {
        debug_assert_eq!(self.state(block), BlockState::Open);
        self.words[block.index()].0 += pages;
    }

    /// `pages` pages of `block`, which is open (a GC victim being copied), stopped being
    /// valid: no victim index to update, one subtraction for a flash page's worth.
    #[inline]
    pub fn remove_valid_open(&mut self, block: BlockId, pages: u32) {
        debug_assert_eq!(self.state(block), BlockState::Open);
        debug_assert!(self.valid(block) >= pages, "block_pool: {block:?} has too few valid pages");
        self.words[block.index()].0 -= pages;
    }

    /// A page of `block` stopped being valid (overwritten, trimmed or moved by GC).
    #[inline]
    pub fn remove_valid(&mut self, block: BlockId) {
        debug_assert!(self.valid(block) > 0, "block_pool: {block:?} has no valid page");
        self.words[block.index()].0 -= 1;
        // Stamped whatever the state (no branch): only a full block's stamp is read, and an
        // open block is stamped again when it closes.
        let stamp = self.next_stamp();
        self.stamps[block.index()] = stamp;
        if self.words[block.index()].0 <= VALID_MASK {
            self.enter_chunk(block);
        }
    }

    /// `block`, full and just stamped (so the latest of its count), enters its chunk's summary.
    #[inline]
    fn enter_chunk(&mut self, block: BlockId) {
        let chunk = self.chunk_of(block);
        let valid = self.words[block.index()].0;
        if valid <= self.chunk_fewest[chunk] {
            self.chunk_fewest[chunk] = valid;
            self.chunk_best[chunk] = block.0;
        }
    }

    /// The index of `block`'s chunk in `chunk_fewest` / `chunk_best`.
    #[inline]
    fn chunk_of(&self, block: BlockId) -> usize {
        let plane = self.plane(block);
        let local = block.index() - plane * self.blocks_per_plane as usize;
        plane * self.chunks_per_plane + local / CHUNK_BLOCKS
    }

    /// Chunk `chunk`'s summary from its blocks: (fewest valid pages of its full blocks, the
    /// latest stamped of them), or `(u32::MAX, u32::MAX)` without a full block.
    fn chunk_summary(&self, chunk: usize) -> (u32, u32) {
        let (plane, offset) = (chunk / self.chunks_per_plane, chunk % self.chunks_per_plane);
        let first = plane * self.blocks_per_plane as usize + offset * CHUNK_BLOCKS;
        let words = self.chunk_words(plane, offset);
        let fewest = words.iter().map(|w| w.0).min().unwrap_or(u32::MAX);
        if fewest > VALID_MASK {
            return (u32::MAX, u32::MAX);
        }
        let best = (first..first + words.len())
            .filter(|&b| self.words[b].0 == fewest)
            .max_by_key(|&b| self.stamps[b])
            .expect("a block has the fewest count");
        (fewest, best as u32)
    }

    /// Removes a victim from the index before GC moves its pages.
    pub fn begin_collect(&mut self, block: BlockId) {
        debug_assert_eq!(self.state(block), BlockState::Full);
        self.set_state(block, BlockState::Open);
        let chunk = self.chunk_of(block);
        if self.chunk_best[chunk] == block.0 {
            (self.chunk_fewest[chunk], self.chunk_best[chunk]) = self.chunk_summary(chunk);
        }
        if self.track_closed_order {
            let plane = self.plane(block);
            let front = self.closed_order[plane].pop_front();
            debug_assert_eq!(front, Some(block), "block_pool: FIFO victim out of order");
        }
    }

    /// The victim was erased and returns to its plane's free list.
    pub fn release(&mut self, block: BlockId) {
        assert_eq!(self.valid(block), 0, "block_pool: erasing {block:?} with valid pages");
        self.set_state(block, BlockState::Free);
        let plane = self.plane(block);
        self.free[plane].push_back(block);
    }

    /// Chooses a victim in `plane` under `policy`; `now_sequence` is the current host-write count.
    pub fn select_victim(&self, plane: usize, policy: VictimPolicy, now_sequence: u64) -> Option<BlockId> {
        match policy {
            VictimPolicy::Greedy => self.greedy_victim(plane),
            VictimPolicy::Fifo => self.closed_order[plane].front().copied(),
            VictimPolicy::CostBenefit => self.cost_benefit_victim(plane, now_sequence),
        }
    }

    /// The full block of `plane` with the fewest valid pages, the latest stamped among equals
    /// (stamps are distinct: no ties), from the plane's chunk summaries.
    fn greedy_victim(&self, plane: usize) -> Option<BlockId> {
        let chunks = plane * self.chunks_per_plane..(plane + 1) * self.chunks_per_plane;
        let fewest = *self.chunk_fewest[chunks.clone()].iter().min()?;
        if fewest == u32::MAX {
            return None;
        }
        let best = (self.chunk_fewest[chunks.clone()].iter().zip(&self.chunk_best[chunks]))
            .filter(|&(&count, _)| count == fewest)
            .map(|(_, &best)| best)
            .max_by_key(|&best| self.stamps[best as usize])?;
        Some(BlockId(best))
    }

    /// The words of chunk `offset` of `plane`.
    #[inline]
    fn chunk_words(&self, plane: usize, offset: usize) -> &[Word] {
        let plane_first = plane * self.blocks_per_plane as usize;
        let first = plane_first + offset * CHUNK_BLOCKS;
        let end = (first + CHUNK_BLOCKS).min(plane_first + self.blocks_per_plane as usize);
        &self.words[first..end]
    }

    fn cost_benefit_victim(&self, plane: usize, now_sequence: u64) -> Option<BlockId> {
        let first = plane as u32 * self.blocks_per_plane;
        let ppb = self.pages_per_block as f64;
        let mut best: Option<(f64, BlockId)> = None;
        for b in first..first + self.blocks_per_plane {
            let block = BlockId(b);
            if self.state(block) != BlockState::Full {
                continue;
            }
            let u = self.valid(block) as f64 / ppb;
            let age = (now_sequence - self.closed_at[block.index()]) as f64 + 1.0;
            let score = (1.0 - u) * age / (1.0 + u);
            // Strict '>' keeps the lowest-numbered block on ties: deterministic.
            if best.is_none_or(|(s, _)| score > s) {
                best = Some((score, block));
            }
        }
        best.map(|(_, b)| b)
    }

    #[inline]
    fn next_stamp(&mut self) -> u64 {
        self.stamp_counter += 1;
        self.stamp_counter
    }

    #[inline]
    fn plane(&self, block: BlockId) -> usize {
        self.plane_divisor.divide(block.0) as usize
    }

    /// Full check of the index against the block states (used by `PageFtl::check`).
    pub fn check(&self) -> Result<(), String> {
        // The victim index: full blocks' stamps distinct (the greedy choice has no ties) and
        // taken (not beyond the counter); valid counts within a block.
        let mut stamps = Vec::new();
        for (b, (word, &stamp)) in self.words.iter().zip(&self.stamps).enumerate() {
            if word.valid() > self.pages_per_block || word.0 >> STATE_SHIFT > 2 {
                return Err(format!("block_pool: block {b} has word {:#x}", word.0));
            }
            if word.state() == BlockState::Full {
                if stamp == 0 || stamp > self.stamp_counter {
                    return Err(format!(
                        "block_pool: full block {b} has stamp {stamp} of {}",
                        self.stamp_counter
                    ));
                }
                stamps.push(stamp);
            }
        }
        stamps.sort_unstable();
        if let Some(pair) = stamps.windows(2).find(|pair| pair[0] == pair[1]) {
            return Err(format!("block_pool: two full blocks have stamp {}", pair[0]));
        }
        for chunk in 0..self.chunk_fewest.len() {
            let held = (self.chunk_fewest[chunk], self.chunk_best[chunk]);
            let exact = self.chunk_summary(chunk);
            if held != exact {
                return Err(format!(
                    "block_pool: chunk {chunk} holds (fewest, best) {held:?}, its blocks give {exact:?}"
                ));
            }
        }
        for plane in 0..self.free.len() {
            for &block in &self.free[plane] {
                if self.state(block) != BlockState::Free
                    || self.valid(block) != 0
                    || self.plane(block) != plane
                {
                    return Err(format!(
                        "block_pool: free list of plane {plane} holds {block:?}, not free there"
                    ));
                }
            }
        }
        let free_total: usize = self.free.iter().map(|f| f.len()).sum();
        let free_states = self.words.iter().filter(|w| w.state() == BlockState::Free).count();
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
    use super::{BlockPool, BlockState, Divisor};
    use crate::victim::VictimPolicy;
    use rand::Rng;
    use trimlab_nand::{BlockId, Geometry};
    use trimlab_sim::SeedTree;

    /// Greedy's choice must be exactly the doubly-linked lists' it replaced, ties included: the
    /// reference keeps one list per (plane, valid count), pushes a block at the head when it
    /// enters (closed, or a page invalidated) and takes the head of the lowest non-empty list.
    /// Random closes (with pages invalidated while open), invalidations and collections over
    /// a small pool (three chunks of summaries per plane, the last one short), so buckets
    /// fill with ties and empty again; the check runs throughout.
    #[test]
    fn greedy_victim_matches_linked_lists() {
        let geometry = Geometry {
            channels: 1,
            chips_per_channel: 1,
            dies_per_chip: 1,
            planes_per_die: 3,
            blocks_per_plane: 150,
            pages_per_block: 8,
            page_bytes: 4096,
            flash_page_bytes: 4096,
        };
        let (ppb, planes, bpp) = (8u32, 3usize, 150u32);
        let mut pool = BlockPool::new(&geometry, VictimPolicy::Greedy);
        // lists[plane][valid]: blocks in order of entry, head (latest) last.
        let mut lists = vec![vec![Vec::<u32>::new(); ppb as usize + 1]; planes];
        let mut rng = SeedTree::new(1).fork("block_pool.greedy");
        let mut next = |n: u64| rng.gen_range(0..n);
        let (mut chosen, mut tied) = (0, 0);
        for step in 0..200_000 {
            let plane = next(planes as u64) as usize;
            match next(10) {
                0..=2 => {
                    let Some(block) = pool.take_free(plane) else { continue };
                    let pages = next(ppb as u64 + 1) as u32;
                    for _ in 0..pages {
                        pool.add_valid(block);
                    }
                    for _ in 0..next(pages as u64 + 1) {
                        pool.remove_valid(block);
                    }
                    pool.close(block, step);
                    lists[plane][pool.valid(block) as usize].push(block.0);
                }
                3..=7 => {
                    let block = BlockId(plane as u32 * bpp + next(bpp as u64) as u32);
                    if pool.state(block) != BlockState::Full || pool.valid(block) == 0 {
                        continue;
                    }
                    let valid = pool.valid(block) as usize;
                    lists[plane][valid].retain(|&b| b != block.0);
                    pool.remove_valid(block);
                    lists[plane][valid - 1].push(block.0);
                }
                _ => {
                    let expected = lists[plane].iter().find_map(|list| list.last().copied()).map(BlockId);
                    let victim = pool.select_victim(plane, VictimPolicy::Greedy, step);
                    assert_eq!(victim, expected, "step {step}, plane {plane}");
                    let Some(victim) = victim else { continue };
                    let list = &mut lists[plane][pool.valid(victim) as usize];
                    tied += (list.len() > 1) as u32;
                    chosen += 1;
                    list.retain(|&b| b != victim.0);
                    pool.begin_collect(victim);
                    pool.remove_valid_open(victim, pool.valid(victim));
                    pool.release(victim);
                }
            }
            if step % 1000 == 0 {
                pool.check().unwrap_or_else(|e| panic!("step {step}: {e}"));
            }
        }
        // The test must have exercised ties, or it could not tell the orders apart.
        assert!(chosen > 10_000 && tied > 1_000, "{chosen} victims, {tied} among ties");
    }

    /// The multiply-and-shift must equal `/` for every divisor shape (powers of two, odd, even,
    /// near 2^32) at the dividends where an off-by-one would show: multiples of the divisor, one
    /// below them, and the ends of the range.
    #[test]
    fn divisor_matches_division() {
        let mut rng = SeedTree::new(1).fork("block_pool.divisor");
        let mut next = || rng.gen::<u32>();
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
