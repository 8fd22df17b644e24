//! The FAST hybrid FTL (Lee et al., "A log buffer-based flash translation layer using fully-
//! associative sector translation", TECS 2007) as 004 §3 runs it on a multi-channel SSD.
//!
//! Data blocks are block-mapped: page `i` of logical block `lbn` lives at page `i` of the data
//! block of `lbn`. Updates go to log blocks, which are page-mapped. Each chip (die) has
//! `sequential_logs` sequential-write (SW) log blocks and `random_logs` random-write (RW) log
//! blocks (004: 1 and 4):
//! - A write to offset 0 of a logical block starts a sequential run in an SW log of its chip
//!   (merging that chip's oldest SW log first when all are in use). A write to the next offset
//!   of a run appends to it. Everything else goes to the chip's current RW log.
//! - An SW log whose pages are all in place and still current is *switched* (it becomes the data
//!   block, one erase) when full, or *partially merged* (the missing tail is copied in from the
//!   data block and RW logs, then it becomes the data block) when it must give way. An SW log
//!   with a superseded page needs a *full merge*.
//! - When a chip needs a new RW log and all its RW logs are in use, the oldest one is the victim
//!   (FAST's round-robin choice): every logical block with a valid page in it is *fully merged*
//!   (its newest pages, wherever they are, are copied into a new data block and the old data
//!   block, and any SW log of that block, are erased), and then the victim is erased.
//!
//! Striping (004 §3.1): with block-level striping a logical block's pages all go to the logs of
//! one chip (`lbn % chips`); with page-level striping consecutive pages go to consecutive chips
//! (`lpn % chips`), so one logical block's updates spread over the RW logs of every chip and a
//! full merge gathers them from many blocks: the "associativity" the paper warns about, measured
//! here as source blocks read per full merge.
//!
//! TRIM (004 §3.2): with a trimmed-range list, TRIM only records ranges ([`TrimmedRangeList`]).
//! Reads of a trimmed page return zeros. Merges consult the list and neither copy trimmed pages
//! nor merge a logical block whose only valid pages in a victim are trimmed; once a merge has
//! dropped a logical block's trimmed pages its ranges leave the list. A write removes its page.

use crate::hbl::TrimmedRangeList;
use serde::Serialize;
use std::collections::VecDeque;
use trimlab_ftl::{FtlDetail, FtlMeasures, FtlStats, HybridStats, Lpn, PageData, TrimmedListDetail};
use trimlab_nand::{BlockId, FlashArray, Geometry, Ppa, Timing};
use trimlab_sim::SimTime;

const NONE: u32 = u32::MAX;

/// How host pages are spread over chips (004 Fig. 1 and Fig. 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Striping {
    /// Consecutive logical pages go to consecutive chips.
    Page,
    /// A logical block's pages all go to one chip; consecutive blocks to consecutive chips.
    Block,
}

#[derive(Clone, Debug, PartialEq)]
pub struct HybridConfig {
    pub logical_pages: u32,
    pub sequential_logs: u32,
    pub random_logs: u32,
    pub striping: Striping,
    /// Hash groups of the trimmed-range list; `None`: no list, a TRIM unmaps its pages at once
    /// (a drive that ignores TRIM is the `none` TRIM engine in front of the FTL).
    pub trim_groups: Option<u32>,
    /// Keep a data tag per physical page so reads can be checked against a reference.
    pub track_data: bool,
}

impl HybridConfig {
    /// 004's setup: one SW and four RW log blocks per chip, block-level striping, TRIM on.
    pub fn paper(logical_pages: u32) -> Self {
        HybridConfig {
            logical_pages,
            sequential_logs: 1,
            random_logs: 4,
            striping: Striping::Block,
            trim_groups: Some(1024),
            track_data: false,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Free,
    Data,
    Sequential,
    Random,
}

#[derive(Clone, Copy, Debug)]
struct SeqLog {
    block: BlockId,
    lbn: u32,
    next: u32,
}

#[derive(Clone, Copy, Debug)]
struct OpenLog {
    block: BlockId,
    next: u32,
}

struct Chip {
    free: VecDeque<BlockId>,
    /// Oldest first: the next to be merged when all are in use.
    sequential: VecDeque<SeqLog>,
    /// Full RW logs, oldest first: FAST's round-robin victim is the front.
    random_full: VecDeque<BlockId>,
    random_open: Option<OpenLog>,
}

pub struct HybridFtl {
    geometry: Geometry,
    config: HybridConfig,
    ppb: u32,
    flash: FlashArray,
    forward: Vec<u32>,
    backward: Vec<u32>,
    valid: Vec<u32>,
    role: Vec<Role>,
    /// Owner of a data block or SW log.
    block_lbn: Vec<u32>,
    data_block: Vec<u32>,
    die_of_block: Vec<u32>,
    chips: Vec<Chip>,
    hbl: Option<TrimmedRangeList>,
    tags: Option<Vec<u64>>,
    verify: bool,
    stats: HybridStats,
}

impl HybridFtl {
    /// Checks that the logical space, the log blocks of every chip and a reserve of two free
    /// blocks per chip fit in the flash. Returns a message naming the setting.
    pub fn check_config(geometry: &Geometry, config: &HybridConfig) -> Result<(), String> {
        if config.sequential_logs == 0 || config.random_logs == 0 {
            return Err(format!(
                "hybrid: sequential_logs = {}, random_logs = {} (each must be at least 1)",
                config.sequential_logs, config.random_logs
            ));
        }
        if config.trim_groups == Some(0) {
            return Err("hybrid: trim_groups = 0 (must be at least 1)".into());
        }
        let chips = geometry.die_count() as u64;
        let logical_blocks = (config.logical_pages as u64).div_ceil(geometry.pages_per_block as u64);
        let needed = logical_blocks + chips * (config.sequential_logs as u64 + config.random_logs as u64 + 2);
        if config.logical_pages == 0 || needed > geometry.block_count() as u64 {
            return Err(format!(
                "hybrid: {} logical pages need {logical_blocks} data blocks plus {} log and reserve blocks per chip; the flash has {} blocks",
                config.logical_pages,
                config.sequential_logs + config.random_logs + 2,
                geometry.block_count()
            ));
        }
        Ok(())
    }

    /// `geometry` must be validated and `config` pass [`HybridFtl::check_config`].
    pub fn new(geometry: Geometry, timing: Timing, config: HybridConfig) -> Self {
        let blocks = geometry.block_count();
        let planes_per_die = geometry.planes_per_die as usize;
        let chips = (0..geometry.die_count())
            .map(|die| {
                // Interleave the die's planes so consecutive allocations use different planes.
                let mut free = VecDeque::with_capacity(planes_per_die * geometry.blocks_per_plane as usize);
                for i in 0..geometry.blocks_per_plane {
                    for p in 0..planes_per_die {
                        free.push_back(BlockId(
                            geometry.first_block_of_plane(die * planes_per_die + p).0 + i,
                        ));
                    }
                }
                Chip { free, sequential: VecDeque::new(), random_full: VecDeque::new(), random_open: None }
            })
            .collect();
        let die_of_block =
            (0..blocks).map(|b| geometry.die_of_plane(geometry.plane_of(BlockId(b as u32))) as u32).collect();
        let logical_blocks = config.logical_pages.div_ceil(geometry.pages_per_block) as usize;
        HybridFtl {
            ppb: geometry.pages_per_block,
            flash: FlashArray::new(geometry.clone(), timing),
            forward: vec![NONE; config.logical_pages as usize],
            backward: vec![NONE; geometry.physical_pages()],
            valid: vec![0; blocks],
            role: vec![Role::Free; blocks],
            block_lbn: vec![NONE; blocks],
            data_block: vec![NONE; logical_blocks],
            die_of_block,
            chips,
            hbl: config.trim_groups.map(|g| TrimmedRangeList::new(config.logical_pages, g)),
            tags: config.track_data.then(|| vec![0; geometry.physical_pages()]),
            verify: false,
            stats: HybridStats::default(),
            geometry,
            config,
        }
    }

    /// Runs [`HybridFtl::check`] after every merge and panics on a violation (tests).
    pub fn set_verify(&mut self, on: bool) {
        self.verify = on;
    }

    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    pub fn config(&self) -> &HybridConfig {
        &self.config
    }

    pub fn flash(&self) -> &FlashArray {
        &self.flash
    }

    pub fn stats(&self) -> &HybridStats {
        &self.stats
    }

    pub fn trim_list(&self) -> Option<&TrimmedRangeList> {
        self.hbl.as_ref()
    }

    pub fn logical_pages(&self) -> u32 {
        self.config.logical_pages
    }

    /// Bytes of heap the model holds.
    pub fn heap_bytes(&self) -> usize {
        (self.forward.capacity() + self.backward.capacity()) * 4
            + self.valid.capacity() * (4 + 1 + 4 + 4 + 8)
            + self.data_block.capacity() * 4
            + self.tags.as_ref().map_or(0, |t| t.capacity() * 8)
    }

    /// Blocks holding at least one page of live (mapped, not trimmed) data: 004's N_vb.
    pub fn valid_blocks(&self) -> u64 {
        let mut seen = vec![false; self.geometry.block_count()];
        for (lpn, &ppa) in self.forward.iter().enumerate() {
            if ppa != NONE && !self.hbl.as_ref().is_some_and(|h| h.any_in(lpn as u32, 1)) {
                seen[self.geometry.block_of(Ppa(ppa)).index()] = true;
            }
        }
        seen.iter().filter(|&&s| s).count() as u64
    }

    #[inline]
    fn chips(&self) -> u32 {
        self.chips.len() as u32
    }

    /// The chip whose logs take `lpn` under the configured striping.
    #[inline]
    fn log_chip(&self, lpn: u32) -> usize {
        match self.config.striping {
            Striping::Page => (lpn % self.chips()) as usize,
            Striping::Block => ((lpn / self.ppb) % self.chips()) as usize,
        }
    }

    #[inline]
    fn trimmed(&mut self, lpn: u32) -> bool {
        match self.hbl.as_mut() {
            Some(h) => h.contains(lpn),
            None => false,
        }
    }

    /// Reads one logical page: zeros (tag 0) without NAND access if it is unmapped or trimmed.
    pub fn read(&mut self, now: SimTime, lpn: u32) -> (u64, SimTime) {
        if self.trimmed(lpn) {
            return (0, now);
        }
        match self.forward[lpn as usize] {
            NONE => (0, now),
            ppa => {
                let done = self.flash.read(now, Ppa(ppa));
                (self.tags.as_ref().map_or(1, |t| t[ppa as usize]), done)
            }
        }
    }

    /// TRIM of `[start, start + count)`. With the trimmed-range list the range is recorded and
    /// merges drop its pages later; without it the pages are unmapped at once (both maps, valid
    /// counts). Returns how many of the pages held data.
    pub fn trim(&mut self, start: u32, count: u32) -> u64 {
        let count = count.min(self.config.logical_pages.saturating_sub(start));
        self.stats.trim_commands += 1;
        self.stats.trimmed_pages_requested += count as u64;
        let mut live = 0;
        for lpn in start..start + count {
            if self.forward[lpn as usize] != NONE && !self.hbl.as_ref().is_some_and(|h| h.any_in(lpn, 1)) {
                live += 1;
                if self.hbl.is_none() {
                    self.unmap(lpn);
                }
            }
        }
        if let Some(hbl) = self.hbl.as_mut() {
            hbl.insert(start, count);
        }
        live
    }

    /// Programs one host page; merges needed to make room run first, in the foreground.
    /// Returns when the page is durable.
    pub fn write(&mut self, now: SimTime, lpn: u32, tag: u64) -> SimTime {
        debug_assert!(lpn < self.config.logical_pages);
        if let Some(h) = self.hbl.as_mut() {
            h.remove(lpn, 1);
        }
        let lbn = lpn / self.ppb;
        let offset = lpn % self.ppb;
        let chip = self.log_chip(lpn);
        let mut t = now;
        if offset == 0 {
            // A new sequential run. A run of the same block, or the oldest when all SW logs are
            // busy, gives way first.
            let same = self.chips[chip].sequential.iter().position(|s| s.lbn == lbn);
            let victim = same.or_else(|| {
                (self.chips[chip].sequential.len() >= self.config.sequential_logs as usize).then_some(0)
            });
            if let Some(i) = victim {
                t = self.merge_sequential(t, chip, i);
            }
            let block = self.take_free(chip);
            self.role[block.index()] = Role::Sequential;
            self.block_lbn[block.index()] = lbn;
            self.chips[chip].sequential.push_back(SeqLog { block, lbn, next: 1 });
            return self.program_host(t, self.geometry.first_page(block), lpn, tag);
        }
        if let Some(i) = self.chips[chip].sequential.iter().position(|s| s.lbn == lbn && s.next == offset) {
            let log = &mut self.chips[chip].sequential[i];
            log.next += 1;
            let (block, full) = (log.block, log.next == self.ppb);
            let done = self.program_host(t, Ppa(self.geometry.first_page(block).0 + offset), lpn, tag);
            if full {
                // The run is complete: switch it in now, so the old data block is freed early.
                self.merge_sequential(done, chip, i);
            }
            return done;
        }
        let (ppa, t) = self.random_page(t, chip);
        self.program_host(t, ppa, lpn, tag)
    }

    fn program_host(&mut self, now: SimTime, ppa: Ppa, lpn: u32, tag: u64) -> SimTime {
        self.unmap(lpn);
        let done = self.flash.program(now, ppa);
        self.map(lpn, ppa);
        if let Some(tags) = self.tags.as_mut() {
            tags[ppa.index()] = tag;
        }
        self.stats.host_pages_programmed += 1;
        done
    }

    /// The next page of `chip`'s open RW log, after reclaiming the oldest RW log if a new one
    /// is needed and all are in use. Returns the page and when it may be programmed.
    fn random_page(&mut self, now: SimTime, chip: usize) -> (Ppa, SimTime) {
        let mut t = now;
        let open = match self.chips[chip].random_open {
            Some(open) => open,
            None => {
                if self.chips[chip].random_full.len() >= self.config.random_logs as usize {
                    t = self.reclaim_random(t, chip);
                }
                let block = self.take_free(chip);
                self.role[block.index()] = Role::Random;
                OpenLog { block, next: 0 }
            }
        };
        let ppa = Ppa(self.geometry.first_page(open.block).0 + open.next);
        let next = open.next + 1;
        if next == self.ppb {
            self.chips[chip].random_full.push_back(open.block);
            self.chips[chip].random_open = None;
        } else {
            self.chips[chip].random_open = Some(OpenLog { block: open.block, next });
        }
        (ppa, t)
    }

    /// FAST's RW-log reclamation: the oldest RW log of `chip` is the victim; every logical
    /// block with a live page in it is fully merged, then the victim is erased.
    fn reclaim_random(&mut self, now: SimTime, chip: usize) -> SimTime {
        let victim = self.chips[chip]
            .random_full
            .pop_front()
            .unwrap_or_else(|| unreachable!("hybrid: chip {chip} reclaims a RW log but has none full"));
        self.stats.rw_victims += 1;
        let first = self.geometry.first_page(victim).0;
        let mut done = now;
        for page in 0..self.ppb {
            let owner = self.backward[(first + page) as usize];
            if owner == NONE {
                continue;
            }
            if self.trimmed(owner) {
                // Trimmed: the page needs no merge, only to stop being valid.
                self.unmap(owner);
                self.stats.trimmed_pages_dropped += 1;
                self.stats.victim_pages_trimmed += 1;
                continue;
            }
            done = done.max(self.full_merge(now, owner / self.ppb));
        }
        self.erase_block(now, victim, &mut done);
        self.stats.merge_busy_ns += done.since(now);
        self.after_merge("RW-log reclamation");
        done
    }

    /// Gives way to the `index`-th SW log of `chip`: switch, partial merge or full merge.
    fn merge_sequential(&mut self, now: SimTime, chip: usize, index: usize) -> SimTime {
        let log = self.chips[chip].sequential[index];
        let base = log.lbn * self.ppb;
        let first = self.geometry.first_page(log.block).0;
        // In place and current: each written offset is still newest here, unmapped, or trimmed.
        let mut clean = true;
        for i in 0..log.next {
            let lpn = base + i;
            let f = self.forward[lpn as usize];
            if f != first + i && f != NONE && !self.trimmed(lpn) {
                clean = false;
                break;
            }
        }
        let mut done = now;
        if !clean {
            // full_merge also erases the SW logs of the block, this one included.
            done = self.full_merge(now, log.lbn);
        } else {
            self.chips[chip].sequential.remove(index);
            let last = self.last_offset(log.lbn);
            for i in 0..log.next {
                // A trimmed page is dropped wherever its newest copy is: the list forgets the
                // block's ranges below.
                let lpn = base + i;
                if self.forward[lpn as usize] != NONE && self.trimmed(lpn) {
                    self.unmap(lpn);
                    self.stats.trimmed_pages_dropped += 1;
                }
            }
            if log.next > last {
                self.stats.switch_merges += 1;
            } else {
                self.stats.partial_merges += 1;
                for offset in log.next..=last {
                    let lpn = base + offset;
                    if self.trimmed(lpn) {
                        if self.forward[lpn as usize] != NONE {
                            self.unmap(lpn);
                            self.stats.trimmed_pages_dropped += 1;
                        }
                        continue;
                    }
                    let src = self.forward[lpn as usize];
                    if src != NONE {
                        done = done.max(self.move_page(now, lpn, Ppa(src), Ppa(first + offset)));
                    }
                }
            }
            if let Some(h) = self.hbl.as_mut() {
                h.remove(base, self.ppb);
            }
            let old = self.data_block[log.lbn as usize];
            self.role[log.block.index()] = Role::Data;
            self.data_block[log.lbn as usize] = log.block.0;
            if old != NONE {
                self.erase_block(now, BlockId(old), &mut done);
            }
        }
        self.stats.merge_busy_ns += done.since(now);
        self.after_merge("SW-log merge");
        done
    }

    /// The last offset of `lbn` inside the logical space.
    fn last_offset(&self, lbn: u32) -> u32 {
        (self.config.logical_pages - lbn * self.ppb).min(self.ppb) - 1
    }

    /// Copies the newest live version of each page of `lbn` into a new data block (skipping
    /// trimmed pages), then erases the old data block and any SW log of `lbn`.
    fn full_merge(&mut self, now: SimTime, lbn: u32) -> SimTime {
        let base = lbn * self.ppb;
        let mut live: Vec<(u32, u32)> = Vec::with_capacity(self.ppb as usize);
        for offset in 0..=self.last_offset(lbn) {
            let lpn = base + offset;
            let src = self.forward[lpn as usize];
            if self.trimmed(lpn) {
                if src != NONE {
                    self.unmap(lpn);
                    self.stats.trimmed_pages_dropped += 1;
                }
                continue;
            }
            if src != NONE {
                live.push((offset, src));
            }
        }
        if let Some(h) = self.hbl.as_mut() {
            h.remove(base, self.ppb);
        }
        let old = self.data_block[lbn as usize];
        let mut done = now;
        if live.is_empty() {
            self.stats.full_merges_empty += 1;
            self.data_block[lbn as usize] = NONE;
        } else {
            self.stats.full_merges += 1;
            let home = (lbn % self.chips()) as usize;
            let block = self.take_free(home);
            let first = self.geometry.first_page(block).0;
            let mut sources: Vec<u32> = live.iter().map(|&(_, src)| src / self.ppb).collect();
            sources.sort_unstable();
            sources.dedup();
            self.stats.full_merge_source_blocks += sources.len() as u64;
            self.role[block.index()] = Role::Data;
            self.block_lbn[block.index()] = lbn;
            for (offset, src) in live {
                done = done.max(self.move_page(now, base + offset, Ppa(src), Ppa(first + offset)));
            }
            self.data_block[lbn as usize] = block.0;
        }
        if old != NONE {
            self.erase_block(now, BlockId(old), &mut done);
        }
        // The block's sequential runs hold nothing live any more.
        for chip in 0..self.chips.len() {
            while let Some(i) = self.chips[chip].sequential.iter().position(|s| s.lbn == lbn) {
                let log = self.chips[chip].sequential.remove(i).expect("position is in range");
                self.erase_block(now, log.block, &mut done);
            }
        }
        done
    }

    /// Moves live page `lpn` from `src` to `dst` (which may skip pages of its block).
    fn move_page(&mut self, now: SimTime, lpn: u32, src: Ppa, dst: Ppa) -> SimTime {
        let read = self.flash.read(now, src);
        let done = self.flash.program_skipping(read, dst);
        self.unmap(lpn);
        self.map(lpn, dst);
        if let Some(tags) = self.tags.as_mut() {
            tags[dst.index()] = tags[src.index()];
        }
        self.stats.merge_pages_copied += 1;
        done
    }

    fn erase_block(&mut self, now: SimTime, block: BlockId, done: &mut SimTime) {
        assert_eq!(
            self.valid[block.index()],
            0,
            "hybrid: erasing {block:?} ({:?}) with valid pages",
            self.role[block.index()]
        );
        if self.role[block.index()] == Role::Data {
            let lbn = self.block_lbn[block.index()];
            if self.data_block[lbn as usize] == block.0 {
                self.data_block[lbn as usize] = NONE;
            }
        }
        *done = (*done).max(self.flash.erase(now, block));
        self.role[block.index()] = Role::Free;
        self.block_lbn[block.index()] = NONE;
        let chip = self.die_of_block[block.index()] as usize;
        self.chips[chip].free.push_back(block);
    }

    /// An erased block of `chip`, or of the chip with the most free blocks if it has none.
    fn take_free(&mut self, chip: usize) -> BlockId {
        self.stats.blocks_opened += 1;
        if let Some(b) = self.chips[chip].free.pop_front() {
            return b;
        }
        let richest = (0..self.chips.len()).max_by_key(|&c| (self.chips[c].free.len(), usize::MAX - c));
        match richest.and_then(|c| self.chips[c].free.pop_front()) {
            Some(b) => {
                self.stats.spilled_allocations += 1;
                b
            }
            None => unreachable!("hybrid: no free block on any chip; check_config keeps a reserve"),
        }
    }

    #[inline]
    fn unmap(&mut self, lpn: u32) {
        let old = std::mem::replace(&mut self.forward[lpn as usize], NONE);
        if old != NONE {
            self.backward[old as usize] = NONE;
            self.valid[self.geometry.block_of(Ppa(old)).index()] -= 1;
        }
    }

    #[inline]
    fn map(&mut self, lpn: u32, ppa: Ppa) {
        debug_assert_eq!(self.backward[ppa.index()], NONE);
        self.forward[lpn as usize] = ppa.0;
        self.backward[ppa.index()] = lpn;
        self.valid[self.geometry.block_of(ppa).index()] += 1;
    }

    fn after_merge(&self, what: &str) {
        if self.verify {
            if let Err(e) = self.check() {
                panic!("after {what}: {e}");
            }
        }
    }

    /// Full consistency check of the data-block and log-block maps. O(physical pages).
    pub fn check(&self) -> Result<(), String> {
        let ppb = self.ppb;
        for (lpn, &ppa) in self.forward.iter().enumerate() {
            if ppa != NONE && self.backward[ppa as usize] != lpn as u32 {
                return Err(format!(
                    "H1 forward/backward: lpn {lpn} -> ppa {ppa} -> {}",
                    self.backward[ppa as usize]
                ));
            }
        }
        for b in 0..self.geometry.block_count() {
            let block = BlockId(b as u32);
            let first = self.geometry.first_page(block).0;
            let programmed = self.flash.programmed_pages(block);
            let role = self.role[b];
            let mut valid = 0;
            for i in 0..ppb {
                let owner = self.backward[(first + i) as usize];
                if owner == NONE {
                    continue;
                }
                valid += 1;
                if self.forward[owner as usize] != first + i {
                    return Err(format!(
                        "H1 backward/forward: ppa {} -> lpn {owner}, which maps elsewhere",
                        first + i
                    ));
                }
                if i >= programmed {
                    return Err(format!("H7 valid page {} above the write pointer of block {b}", first + i));
                }
                match role {
                    Role::Free => return Err(format!("H2 free block {b} holds valid lpn {owner}")),
                    Role::Data | Role::Sequential if owner != self.block_lbn[b] * ppb + i => {
                        return Err(format!(
                            "H2 {role:?} block {b} of lbn {} holds lpn {owner} at page {i}: block-mapped pages must sit at their offset",
                            self.block_lbn[b]
                        ));
                    }
                    _ => {}
                }
            }
            if valid != self.valid[b] {
                return Err(format!("H3 valid count: block {b} counts {} but holds {valid}", self.valid[b]));
            }
            if role == Role::Data && self.data_block[self.block_lbn[b] as usize] != b as u32 {
                return Err(format!(
                    "H4 data block {b} claims lbn {} which maps elsewhere",
                    self.block_lbn[b]
                ));
            }
            if role == Role::Free && programmed != 0 {
                return Err(format!("H6 free block {b} has {programmed} programmed pages"));
            }
        }
        for (lbn, &block) in self.data_block.iter().enumerate() {
            if block != NONE
                && (self.role[block as usize] != Role::Data || self.block_lbn[block as usize] != lbn as u32)
            {
                return Err(format!(
                    "H4 lbn {lbn} -> data block {block} with role {:?}",
                    self.role[block as usize]
                ));
            }
        }
        let mut listed = vec![false; self.geometry.block_count()];
        let mut claim = |block: BlockId, role: Role, what: &str| -> Result<(), String> {
            if std::mem::replace(&mut listed[block.index()], true) || self.role[block.index()] != role {
                return Err(format!(
                    "H5 {what} {block:?} listed twice or has role {:?}",
                    self.role[block.index()]
                ));
            }
            Ok(())
        };
        for (c, chip) in self.chips.iter().enumerate() {
            if chip.sequential.len() > self.config.sequential_logs as usize {
                return Err(format!("H5 chip {c} has {} SW logs", chip.sequential.len()));
            }
            let random = chip.random_full.len() + chip.random_open.is_some() as usize;
            if random > self.config.random_logs as usize {
                return Err(format!("H5 chip {c} has {random} RW logs"));
            }
            for log in &chip.sequential {
                claim(log.block, Role::Sequential, "SW log")?;
                if self.block_lbn[log.block.index()] != log.lbn
                    || self.flash.programmed_pages(log.block) != log.next
                {
                    return Err(format!(
                        "H5 SW log {:?} of lbn {} write pointer {} vs {}",
                        log.block,
                        log.lbn,
                        self.flash.programmed_pages(log.block),
                        log.next
                    ));
                }
            }
            for &block in &chip.random_full {
                claim(block, Role::Random, "full RW log")?;
                if self.flash.programmed_pages(block) != ppb {
                    return Err(format!("H5 full RW log {block:?} is not fully programmed"));
                }
            }
            if let Some(open) = chip.random_open {
                claim(open.block, Role::Random, "open RW log")?;
                if self.flash.programmed_pages(open.block) != open.next {
                    return Err(format!("H5 open RW log {:?} write pointer mismatch", open.block));
                }
            }
            for &block in &chip.free {
                claim(block, Role::Free, "free")?;
                if self.die_of_block[block.index()] as usize != c {
                    return Err(format!("H6 free list of chip {c} holds {block:?} of another chip"));
                }
            }
        }
        for (b, &role) in self.role.iter().enumerate() {
            if (role == Role::Data) == listed[b] {
                return Err(format!(
                    "H5 block {b} with role {role:?} is {}listed",
                    if listed[b] { "" } else { "not " }
                ));
            }
        }
        if let Some(h) = &self.hbl {
            h.check()?;
        }
        Ok(())
    }
}

impl trimlab_ftl::Ftl for HybridFtl {
    fn kind(&self) -> &'static str {
        "hybrid"
    }
    fn geometry(&self) -> &Geometry {
        &self.geometry
    }
    fn flash(&self) -> &FlashArray {
        &self.flash
    }
    fn logical_pages(&self) -> u32 {
        self.config.logical_pages
    }
    fn valid_pages(&self) -> u64 {
        let listed = self.hbl.as_ref().map_or(0, |h| {
            (0..self.config.logical_pages)
                .filter(|&l| self.forward[l as usize] != NONE && h.any_in(l, 1))
                .count()
        });
        self.valid.iter().map(|&v| v as u64).sum::<u64>() - listed as u64
    }
    fn is_mapped(&self, lpn: Lpn) -> bool {
        self.forward[lpn.index()] != NONE && !self.hbl.as_ref().is_some_and(|h| h.any_in(lpn.0, 1))
    }
    fn read(&mut self, now: SimTime, lpn: Lpn) -> (PageData, SimTime) {
        if !trimlab_ftl::Ftl::is_mapped(self, lpn) {
            return (PageData::Unmapped, now);
        }
        let (tag, done) = HybridFtl::read(self, now, lpn.0);
        (PageData::Mapped(if self.tags.is_some() { tag } else { 0 }), done)
    }
    fn write(&mut self, now: SimTime, lpn: Lpn, tag: u64) -> SimTime {
        HybridFtl::write(self, now, lpn.0, tag)
    }
    fn trim(&mut self, _now: SimTime, start: Lpn, count: u32) -> u64 {
        HybridFtl::trim(self, start.0, count)
    }
    fn stats(&self) -> FtlStats {
        let s = &self.stats;
        FtlStats {
            host_pages_programmed: s.host_pages_programmed,
            gc_pages_copied: s.merge_pages_copied,
            gc_invocations: s.switch_merges + s.partial_merges + s.full_merges,
            gc_victims: s.rw_victims,
            gc_busy_ns: s.merge_busy_ns,
            gc_stalls: 0,
            trimmed_mapped_pages: s.trimmed_pages_dropped,
            ..FtlStats::default()
        }
    }
    fn free_blocks(&self) -> u64 {
        self.chips.iter().map(|c| c.free.len() as u64).sum()
    }
    fn free_blocks_in_plane(&self, plane: usize) -> u64 {
        let g = &self.geometry;
        self.chips.iter().flat_map(|c| &c.free).filter(|&&b| g.plane_of(b) == plane).count() as u64
    }
    fn measures(&self) -> FtlMeasures {
        FtlMeasures {
            blocks_programmed: self.stats.blocks_opened,
            blocks_total: self.geometry.block_count() as u64,
            erases_total: self.flash.counters().blocks_erased,
            valid_blocks: self.valid_blocks(),
            host_pages_programmed: self.stats.host_pages_programmed,
            nand_pages_programmed: self.flash.counters().pages_programmed,
        }
    }
    fn detail(&self) -> FtlDetail {
        FtlDetail::Hybrid {
            merges: self.stats.clone(),
            trimmed_range_list: self.hbl.as_ref().map(|h| TrimmedListDetail {
                ranges: h.range_count(),
                pages: h.page_count(),
                memory_bytes: h.memory_bytes(),
                walks: h.stats().clone(),
            }),
        }
    }
    fn heap_bytes(&self) -> usize {
        HybridFtl::heap_bytes(self)
    }
    fn check(&self) -> Result<(), String> {
        HybridFtl::check(self)
    }
}
