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

pub struct BlockPool {
    pages_per_block: u32,
    blocks_per_plane: u32,
    state: Vec<BlockState>,
    valid: Vec<u32>,
    /// Host-write sequence number when the block was closed (its age for cost-benefit).
    closed_at: Vec<u64>,
    free: Vec<VecDeque<BlockId>>,
    // Intrusive doubly-linked lists of full blocks, one per (plane, valid count).
    bucket_head: Vec<u32>,
    next: Vec<u32>,
    prev: Vec<u32>,
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
            state: vec![BlockState::Free; blocks],
            valid: vec![0; blocks],
            closed_at: vec![0; blocks],
            free,
            bucket_head: vec![NONE; planes * (geometry.pages_per_block as usize + 1)],
            next: vec![NONE; blocks],
            prev: vec![NONE; blocks],
            closed_order: vec![VecDeque::new(); if policy == VictimPolicy::Fifo { planes } else { 0 }],
            track_closed_order: policy == VictimPolicy::Fifo,
        }
    }

    #[inline]
    pub fn state(&self, block: BlockId) -> BlockState {
        self.state[block.index()]
    }

    #[inline]
    pub fn valid(&self, block: BlockId) -> u32 {
        self.valid[block.index()]
    }

    pub fn valid_counts(&self) -> &[u32] {
        &self.valid
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
        debug_assert_eq!(self.state[block.index()], BlockState::Free);
        self.state[block.index()] = BlockState::Open;
        Some(block)
    }

    /// An open block became full: it joins the victim index.
    pub fn close(&mut self, block: BlockId, sequence: u64) {
        debug_assert_eq!(self.state[block.index()], BlockState::Open);
        self.state[block.index()] = BlockState::Full;
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
        debug_assert_eq!(self.state[block.index()], BlockState::Open);
        self.valid[block.index()] += 1;
    }

    /// A page of `block` stopped being valid (overwritten, trimmed or moved by GC).
    #[inline]
    pub fn remove_valid(&mut self, block: BlockId) {
        let full = self.state[block.index()] == BlockState::Full;
        if full {
            self.unlink(block);
        }
        debug_assert!(self.valid[block.index()] > 0, "block_pool: {block:?} has no valid page");
        self.valid[block.index()] -= 1;
        if full {
            self.link(block);
        }
    }

    /// Removes a victim from the index before GC moves its pages.
    pub fn begin_collect(&mut self, block: BlockId) {
        debug_assert_eq!(self.state[block.index()], BlockState::Full);
        self.unlink(block);
        self.state[block.index()] = BlockState::Open;
        if self.track_closed_order {
            let plane = self.plane(block);
            let front = self.closed_order[plane].pop_front();
            debug_assert_eq!(front, Some(block), "block_pool: FIFO victim out of order");
        }
    }

    /// The victim was erased and returns to its plane's free list.
    pub fn release(&mut self, block: BlockId) {
        assert_eq!(self.valid[block.index()], 0, "block_pool: erasing {block:?} with valid pages");
        self.state[block.index()] = BlockState::Free;
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
                    if self.state[block.index()] != BlockState::Full {
                        continue;
                    }
                    let u = self.valid[block.index()] as f64 / ppb;
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
        (block.0 / self.blocks_per_plane) as usize
    }

    #[inline]
    fn bucket(&self, block: BlockId) -> usize {
        self.plane(block) * (self.pages_per_block as usize + 1) + self.valid[block.index()] as usize
    }

    #[inline]
    fn link(&mut self, block: BlockId) {
        let bucket = self.bucket(block);
        let head = self.bucket_head[bucket];
        self.next[block.index()] = head;
        self.prev[block.index()] = NONE;
        if head != NONE {
            self.prev[head as usize] = block.0;
        }
        self.bucket_head[bucket] = block.0;
    }

    #[inline]
    fn unlink(&mut self, block: BlockId) {
        let (prev, next) = (self.prev[block.index()], self.next[block.index()]);
        if prev != NONE {
            self.next[prev as usize] = next;
        } else {
            let bucket = self.bucket(block);
            debug_assert_eq!(self.bucket_head[bucket], block.0);
            self.bucket_head[bucket] = next;
        }
        if next != NONE {
            self.prev[next as usize] = prev;
        }
    }

    /// Full check of the index against the block states (used by `PageFtl::check`).
    pub fn check(&self) -> Result<(), String> {
        let mut listed = vec![false; self.state.len()];
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
                    if self.state[b] != BlockState::Full
                        || self.valid[b] as usize != valid
                        || self.plane(BlockId(cursor)) != plane
                        || self.prev[b] != prev
                    {
                        return Err(format!(
                            "block_pool: block {b} in bucket (plane {plane}, valid {valid}) but has state {:?}, valid {}",
                            self.state[b], self.valid[b]
                        ));
                    }
                    prev = cursor;
                    cursor = self.next[b];
                }
            }
            for block in &self.free[plane] {
                if self.state[block.index()] != BlockState::Free || self.valid[block.index()] != 0 {
                    return Err(format!("block_pool: free list holds non-free {block:?}"));
                }
            }
        }
        for (b, state) in self.state.iter().enumerate() {
            if (*state == BlockState::Full) != listed[b] {
                return Err(format!("block_pool: block {b} state {state:?} but listed={}", listed[b]));
            }
        }
        let free_total: usize = self.free.iter().map(|f| f.len()).sum();
        let free_states = self.state.iter().filter(|s| **s == BlockState::Free).count();
        if free_total != free_states {
            return Err(format!("block_pool: {free_states} free blocks but {free_total} in free lists"));
        }
        Ok(())
    }
}
