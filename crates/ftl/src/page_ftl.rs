//! The page-mapping FTL (004 §4): any logical page may live in any physical page. Host writes
//! are striped over planes; each plane has a host open block and a GC open block; when a plane's
//! free blocks fall below the threshold, GC reclaims victims there by copying their valid pages
//! into the GC open block (same die) and erasing them.
//!
//! The FTL maps pages (4 KiB mapping units); the NAND reads and programs flash pages that hold
//! several of them (`Geometry::pages_per_flash_page`). Host pages fill one plane's open flash
//! page before the stripe moves on; a full flash page is programmed at once, or, with
//! multi-plane programs, when a flash page is full on every plane of its die (one tPROG for
//! all). Until then its pages sit in the controller's page buffer and reads are served from
//! there. `sync` (the host's FLUSH) pads partly filled host flash pages and programs everything
//! waiting. GC reads each victim flash page once for all its valid pages and fills whole
//! destination flash pages.

use crate::block_pool::{BlockPool, BlockState};
use crate::lpn::Lpn;
use crate::map_agreement::{forward_pairs, forward_pairs_by_block, Pairs};
use crate::page_map::{PageMap, NONE};
use crate::variant::{BackwardUpdate, StripeUnit, VariantStats};
use crate::victim::VictimPolicy;
use crate::wear_levelling::{StaticWearLevelling, WearLevellingStats};
use prefetch_index::prefetch_index;
use serde::Serialize;
use trimlab_nand::{BlockId, FlashArray, Geometry, Ppa, Timing};
use trimlab_sim::SimTime;

/// How far ahead of GC's copy loop the forward entries of the victim's pages are prefetched, in
/// slots (see `PageFtl::reclaim`).
const GC_PREFETCH_SLOTS: u32 = 16;

#[derive(Clone, Debug, PartialEq)]
pub struct FtlConfig {
    pub logical_pages: u32,
    /// GC starts in a plane when its free blocks fall below this, and stops when they reach it.
    pub gc_free_blocks_min: u32,
    pub victim: VictimPolicy,
    /// Keep a 64-bit data tag per physical page so reads can be checked against a reference
    /// (tests and the emulator); costs 8 bytes per physical page, so benchmarks leave it off.
    pub track_data: bool,
    /// Program a flash page on every plane of a die with one tPROG (multi-plane programs) and
    /// stripe host pages so that a die's planes fill together.
    pub multi_plane: bool,
}

/// What the FTL has done since it was built.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FtlStats {
    pub host_pages_programmed: u64,
    pub gc_pages_copied: u64,
    pub gc_invocations: u64,
    pub gc_victims: u64,
    /// Sum over GC invocations of the time from the start of its first operation to the end of
    /// its last erase, on the plane's die.
    pub gc_busy_ns: u64,
    /// GC found no victim with an invalid page: the plane is full of valid data.
    pub gc_stalls: u64,
    /// Mapped pages invalidated by TRIM (pages already unmapped are not counted).
    pub trimmed_mapped_pages: u64,
    /// Victims reclaimed and pages copied by idle-time GC (also counted in the GC totals).
    pub idle_gc_victims: u64,
    pub idle_gc_pages_copied: u64,
    /// Empty slots programmed to pad partly filled host flash pages at a sync (FLUSH).
    pub pages_padded: u64,
}

/// One GC invocation's result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GcOutcome {
    pub victims: u32,
    pub pages_copied: u32,
    pub done: SimTime,
}

#[derive(Clone, Copy, Debug)]
struct OpenBlock {
    block: BlockId,
    next_page: u32,
}

/// A page's content as far as the host can tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageData {
    /// Never written, or trimmed: reads return zeros.
    Unmapped,
    /// Mapped; the tag is the data's identity when `track_data` is on, else 0.
    Mapped(u64),
}

pub struct PageFtl {
    geometry: Geometry,
    config: FtlConfig,
    flash: FlashArray,
    map: PageMap,
    pool: BlockPool,
    host_open: Vec<Option<OpenBlock>>,
    gc_open: Vec<Option<OpenBlock>>,
    stripe: Vec<usize>,
    stripe_cursor: usize,
    /// The plane whose open host flash page is partly filled: host pages go there until it is
    /// full, so a flash page holds consecutive host pages.
    filling_plane: Option<usize>,
    /// Pages (mapping units) per flash page.
    units: u32,
    /// Per die: first slots of full host flash pages waiting for the die's other planes (a
    /// multi-plane program), at most one per plane.
    staged: Vec<Vec<Ppa>>,
    /// Per plane: whether `staged` holds a flash page of it.
    plane_staged: Vec<bool>,
    /// Per plane: its die, looked up (a 64-bit division per host flash page before).
    die_of_plane: Vec<u32>,
    /// Per plane: when the data copied so far into the GC open flash page is in the controller.
    gc_page_ready: Vec<SimTime>,
    /// Valid slots of the victim flash page being copied, with their logical pages (reused, no
    /// allocation per page).
    scratch_slots: Vec<(u32, u32)>,
    tags: Option<Vec<u64>>,
    gc_requests: Vec<usize>,
    gc_requested: Vec<bool>,
    host_sequence: u64,
    stats: FtlStats,
    /// When the full check runs after a GC (tests; see `crate::verify`).
    verify_cadence: crate::verify::Cadence,
    // 004 options (crate::variant); the defaults leave the FTL as the device uses it.
    stripe_unit: StripeUnit,
    /// Planes of each channel in striping order, and a round-robin cursor per channel.
    channel_planes: Vec<Vec<usize>>,
    channel_cursor: Vec<usize>,
    backward_update: BackwardUpdate,
    /// Lazy mode: the stale backward entries per block (their count, and their pairs as a
    /// fingerprint, so the full check can tell them from broken entries without a random read
    /// per page: map_agreement.rs), and PPAs trimmed since the last reconcile.
    stale: Vec<Pairs>,
    pending_stale: Vec<u32>,
    erase_when_invalid: bool,
    gc_gain_blocks_max: Option<u32>,
    variant: VariantStats,
    /// GC invocations run by a host write that found no plane with room (not in any report).
    host_write_gc_invocations: u64,
    /// Static wear levelling (`[ftl] static_wl`), when on.
    wear_levelling: Option<StaticWearLevelling>,
    /// A static wear-levelling move is copying: a GC open block it opens is the plane's
    /// most-worn free block.
    wl_moving: bool,
}

impl PageFtl {
    /// Builds an FTL over an erased array. `geometry` must be validated and `config` checked by
    /// [`PageFtl::check_config`].
    pub fn new(geometry: Geometry, timing: Timing, config: FtlConfig) -> Self {
        let planes = geometry.plane_count();
        PageFtl {
            flash: FlashArray::new(geometry.clone(), timing),
            map: PageMap::new(config.logical_pages as usize, geometry.physical_pages()),
            pool: BlockPool::new(&geometry, config.victim),
            host_open: vec![None; planes],
            gc_open: vec![None; planes],
            stripe: if config.multi_plane {
                geometry.multi_plane_striping_order()
            } else {
                geometry.striping_order()
            },
            stripe_cursor: 0,
            filling_plane: None,
            units: geometry.pages_per_flash_page(),
            staged: vec![Vec::new(); geometry.die_count()],
            plane_staged: vec![false; planes],
            die_of_plane: (0..planes).map(|p| geometry.die_of_plane(p) as u32).collect(),
            gc_page_ready: vec![SimTime::ZERO; planes],
            scratch_slots: Vec::new(),
            tags: config.track_data.then(|| vec![0; geometry.physical_pages()]),
            gc_requests: Vec::new(),
            gc_requested: vec![false; planes],
            host_sequence: 0,
            stats: FtlStats::default(),
            verify_cadence: crate::verify::Cadence::default(),
            stripe_unit: StripeUnit::Page,
            channel_planes: Vec::new(),
            channel_cursor: Vec::new(),
            backward_update: BackwardUpdate::Eager,
            stale: Vec::new(),
            pending_stale: Vec::new(),
            erase_when_invalid: false,
            gc_gain_blocks_max: None,
            variant: VariantStats::default(),
            host_write_gc_invocations: 0,
            wear_levelling: None,
            wl_moving: false,
            geometry,
            config,
        }
    }

    /// Chooses page- or block-level striping (004 Fig. 1 / Fig. 2). Call before the first write.
    pub fn set_stripe_unit(&mut self, unit: StripeUnit) {
        self.stripe_unit = unit;
        let channels = self.geometry.channels as usize;
        self.channel_planes = vec![Vec::new(); channels];
        for &plane in &self.stripe {
            let channel = self.geometry.channel_of_die(self.geometry.die_of_plane(plane));
            self.channel_planes[channel].push(plane);
        }
        self.channel_cursor = vec![0; channels];
    }

    /// Chooses when TRIM updates the backward map (004 §4.1). Call before the first TRIM.
    pub fn set_backward_update(&mut self, update: BackwardUpdate) {
        self.backward_update = update;
        if matches!(update, BackwardUpdate::Lazy { .. }) {
            self.stale = vec![Pairs::default(); self.geometry.block_count()];
        }
    }

    /// Erase a full block as soon as its last valid page is invalidated (004 §4: "when all
    /// pages in a block is invalidated, corresponding blocks are erased"), at the time of the
    /// write or TRIM that did it. Not available with FIFO victims, whose log order it would
    /// break; ignored then.
    pub fn set_erase_when_invalid(&mut self, on: bool) {
        self.erase_when_invalid = on && self.config.victim != VictimPolicy::Fifo;
    }

    /// Incremental GC: an invocation also stops once its plane has gained `blocks` free blocks
    /// (`None`: only the threshold stops it, the default). When live data leaves less free
    /// space than the threshold asks for (004's "below 30 % free"), an unbounded invocation
    /// compacts the whole plane every time a block is opened; a bounded one reclaims about what
    /// the host consumes, as a controller that interleaves GC with host writes does.
    pub fn set_gc_gain_blocks_max(&mut self, blocks: Option<u32>) {
        self.gc_gain_blocks_max = blocks.map(|b| b.max(1));
    }

    /// Static wear levelling at `threshold` erases of spread per plane (`None`: off, the
    /// default; crate::wear_levelling). Not available with FIFO victims, whose GC cycles every
    /// block in log order and so levels wear itself, and whose log order a move would break;
    /// ignored then (the config refuses the pair). Call before the first write.
    pub fn set_static_wear_levelling(&mut self, threshold: Option<u32>) {
        self.wear_levelling = threshold.filter(|_| self.config.victim != VictimPolicy::Fifo).map(|t| {
            StaticWearLevelling::new(t, self.geometry.plane_count(), self.geometry.blocks_per_plane)
        });
    }

    /// What static wear levelling did (`None` when it is off).
    pub fn wear_levelling_stats(&self) -> Option<&WearLevellingStats> {
        self.wear_levelling.as_ref().map(|w| &w.stats)
    }

    pub fn variant_stats(&self) -> &VariantStats {
        &self.variant
    }

    /// GC invocations a host write ran because no plane had room for it (see `write`).
    pub fn host_write_gc_invocations(&self) -> u64 {
        self.host_write_gc_invocations
    }

    /// Erased blocks ready for writing, over all planes (the device's time series samples it).
    pub fn free_blocks(&self) -> u64 {
        (0..self.geometry.plane_count()).map(|p| self.pool.free_count(p) as u64).sum()
    }

    /// Blocks holding at least one live page: 004's N_vb. O(logical pages).
    pub fn live_blocks(&self) -> u64 {
        let mut seen = vec![false; self.geometry.block_count()];
        for &raw in self.map.forward_raw() {
            if raw != NONE {
                seen[self.geometry.block_of(Ppa(raw)).index()] = true;
            }
        }
        seen.iter().filter(|&&s| s).count() as u64
    }

    /// The relations between geometry and FTL settings that must hold for GC to always make
    /// progress. Returns a message naming the setting and the accepted range.
    pub fn check_config(geometry: &Geometry, config: &FtlConfig) -> Result<(), String> {
        let bpp = geometry.blocks_per_plane;
        if config.gc_free_blocks_min < 2 || config.gc_free_blocks_min > bpp / 2 {
            return Err(format!(
                "ftl.gc_free_blocks = {} blocks per plane (must be 2..={} for {} blocks per plane)",
                config.gc_free_blocks_min,
                bpp / 2,
                bpp
            ));
        }
        // Each plane always keeps one free block for GC to copy into and has a host and a GC
        // open block, plus one block of slack for partly written open blocks. The logical space
        // must fit in the rest, or GC could find no invalid page to reclaim. The GC threshold
        // itself is a target: when live data leaves less free space than it asks for, GC
        // reclaims what it can and counts a stall (004's "GC below 30 % free" regime).
        let reserved_blocks = 4 * geometry.plane_count() as u64;
        let usable_pages =
            (geometry.block_count() as u64).saturating_sub(reserved_blocks) * geometry.pages_per_block as u64;
        if config.logical_pages == 0 || config.logical_pages as u64 >= usable_pages {
            return Err(format!(
                "logical capacity of {} pages does not fit: {} physical pages minus a reserve of 4 blocks per plane leaves {} (raise spare_factor or blocks_per_plane)",
                config.logical_pages,
                geometry.physical_pages(),
                usable_pages
            ));
        }
        Ok(())
    }

    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    pub fn config(&self) -> &FtlConfig {
        &self.config
    }

    pub fn flash(&self) -> &FlashArray {
        &self.flash
    }

    pub fn stats(&self) -> &FtlStats {
        &self.stats
    }

    pub fn logical_pages(&self) -> u32 {
        self.config.logical_pages
    }

    /// Free (erased, unallocated) blocks in `plane`.
    pub fn free_blocks_in_plane(&self, plane: usize) -> usize {
        self.pool.free_count(plane)
    }

    /// Pages holding data. Under a lazy backward map, trimmed pages stay in the valid counts
    /// until they are reconciled; they are not data, so they do not count here.
    pub fn valid_pages(&self) -> u64 {
        self.pool.valid_total() - self.stale_pages()
    }

    /// Trimmed pages a lazy backward map still counts as valid (0 when the map is eager).
    pub fn stale_pages(&self) -> u64 {
        self.stale.iter().map(Pairs::count).sum()
    }

    pub fn is_mapped(&self, lpn: Lpn) -> bool {
        self.map.lookup(lpn).is_some()
    }

    /// Bytes of heap this FTL holds: maps, per-block state, data tags.
    pub fn heap_bytes(&self) -> usize {
        let blocks = self.geometry.block_count();
        self.map.heap_bytes()
            // Block pool: state and valid count (4), victim-index stamp (8), free-list slot (4);
            // closed_at (8). (The same 24 as the 16-byte entries of the linked-list index it
            // replaced, whose free lists were not counted.)
            + blocks * (16 + 8)
            + blocks * (4 + 4) // next_page, erase_count (flash)
            + self.tags.as_ref().map_or(0, |t| t.capacity() * 8)
            + self.wear_levelling.as_ref().map_or(0, StaticWearLevelling::heap_bytes)
    }

    /// Touches the map entries of pages about to be written so their cache misses overlap:
    /// each page's forward entry, then the backward entry of where it lives now, which its
    /// write clears, and that block's pool entry. That clear is a store to a random line of the backward map; uncached, such
    /// stores filled the store buffer and stalled the writes (profiled: the stalls showed at the
    /// pushes of the functions after them). The loads here are independent of each other, so
    /// the CPU overlaps their misses.
    pub fn warm(&self, pages: &[(Lpn, u64)]) {
        let forward = self.map.forward_raw();
        let backward = self.map.backward_raw();
        let mut acc = 0u32;
        for &(lpn, _) in pages {
            acc ^= forward[lpn.index()];
        }
        // An unmapped page (`NONE`) reads the last entry instead: no branch to mispredict.
        let last = backward.len() - 1;
        for &(lpn, _) in pages {
            let old = (forward[lpn.index()] as usize).min(last);
            // And the old block's pool entry, whose valid count the write decrements.
            acc ^= backward[old] ^ self.pool.valid(self.geometry.block_of(Ppa(old as u32)));
        }
        std::hint::black_box(acc);
    }

    /// Prefetches the forward entry of `lpn` (see [`crate::Ftl::prefetch_map`]).
    #[inline]
    pub fn prefetch_map(&self, lpn: Lpn) {
        prefetch_index(self.map.forward_raw(), lpn.index());
    }

    /// Prefetches the forward entries of the victim's pages in `slots` (raw physical pages)
    /// ahead of the copy loop, which rewrites them. Branch-free (an invalid slot, `NONE`,
    /// fetches the map's last entry): a branch on validity mispredicts about one slot in five.
    #[inline]
    fn prefetch_owners(&self, slots: std::ops::Range<u32>) {
        let forward = self.map.forward_raw();
        let last = forward.len() - 1;
        for &owner in self.map.owners_of(Ppa(slots.start), slots.len()) {
            prefetch_index(forward, (owner as usize).min(last));
        }
    }

    /// Reads one logical page: the NAND read if mapped, nothing if not.
    pub fn read(&mut self, now: SimTime, lpn: Lpn) -> (PageData, SimTime) {
        match self.map.lookup(lpn) {
            None => (PageData::Unmapped, now),
            Some(ppa) => {
                // A page whose flash page is not programmed yet is still in the controller.
                let done = if self.flash.is_programmed(ppa) { self.flash.read(now, ppa) } else { now };
                let tag = self.tags.as_ref().map_or(0, |t| t[ppa.index()]);
                (PageData::Mapped(tag), done)
            }
        }
    }

    /// Places one host page at `now` in the open flash page of the next plane. Returns when the
    /// flash page program this page started ends, or `now` when the page waits in the
    /// controller's page buffer for the rest of its flash page (or, with multi-plane programs,
    /// for the die's other planes): [`PageFtl::program_ready`] and [`PageFtl::sync`] program
    /// those. May queue a GC request for the plane it used: the caller runs
    /// [`PageFtl::take_gc_request`] / [`PageFtl::collect_garbage`].
    pub fn write(&mut self, now: SimTime, lpn: Lpn, tag: u64) -> SimTime {
        let plane = match self.next_host_plane(lpn) {
            Some(plane) => plane,
            None => {
                // Every plane is down to GC's last free block: the caller wrote more pages
                // since GC last ran than the reserve holds (a write buffer drained at once).
                // GC runs here, in the write's foreground, before the write needs a block.
                self.collect_for_host_write(now);
                self.next_host_plane(lpn).unwrap_or_else(|| {
                    unreachable!(
                        "page_ftl: no plane can take a host write even after GC (free blocks per plane: {:?}); check_config should have refused this geometry",
                        (0..self.stripe.len()).map(|p| self.pool.free_count(p)).collect::<Vec<_>>()
                    )
                })
            }
        };
        let open = match self.host_open[plane] {
            Some(open) => open,
            None => {
                let block = self.pool.take_free(plane).unwrap_or_else(|| {
                    unreachable!("page_ftl: plane {plane} chosen for a host write has no free block")
                });
                self.variant.blocks_opened += 1;
                self.request_gc_if_low(plane);
                OpenBlock { block, next_page: 0 }
            }
        };
        if let Some(old) = self.map.unbind(lpn) {
            let block = self.geometry.block_of(old);
            self.pool.remove_valid(block);
            self.erase_if_empty(now, block);
        }
        let ppa = Ppa(self.geometry.first_page(open.block).0 + open.next_page);
        self.map.bind(lpn, ppa);
        self.pool.add_valid(open.block);
        if let Some(tags) = self.tags.as_mut() {
            tags[ppa.index()] = tag;
        }
        self.host_sequence += 1;
        self.stats.host_pages_programmed += 1;
        let next_page = open.next_page + 1;
        self.host_open[plane] = if next_page == self.geometry.pages_per_block {
            self.pool.close(open.block, self.host_sequence);
            None
        } else {
            Some(OpenBlock { block: open.block, next_page })
        };
        // Pages per flash page is a power of two: a mask, not a division, on the hot path.
        if next_page & (self.units - 1) == 0 {
            self.filling_plane = None;
            self.host_flash_page_full(now, plane, Ppa(ppa.0 + 1 - self.units))
        } else {
            self.filling_plane = Some(plane);
            now
        }
    }

    /// A host flash page of `plane` starting at slot `first` is full: program it, or stage it
    /// until its die's other planes have one (multi-plane). Returns when any program it started
    /// ends (`now` if none).
    fn host_flash_page_full(&mut self, now: SimTime, plane: usize, first: Ppa) -> SimTime {
        if !self.config.multi_plane || self.geometry.planes_per_die == 1 {
            return self.flash.program_flash_pages(now, &[first]);
        }
        let die = self.die_of_plane[plane] as usize;
        let mut done = now;
        // A plane that comes round again before its siblings filled (a sibling was skipped for
        // want of free blocks) programs what its die has first: flash pages of one plane are
        // programmed in order.
        if self.plane_staged[plane] {
            done = self.program_staged_die(now, die);
        }
        self.plane_staged[plane] = true;
        self.staged[die].push(first);
        if self.staged[die].len() == self.geometry.planes_per_die as usize {
            done = done.max(self.program_staged_die(now, die));
        }
        done
    }

    /// Programs the host flash pages staged on `die` (one multi-plane program). Returns when it
    /// ends, `now` if nothing was staged.
    fn program_staged_die(&mut self, now: SimTime, die: usize) -> SimTime {
        if self.staged[die].is_empty() {
            return now;
        }
        let group = std::mem::take(&mut self.staged[die]);
        let planes = self.geometry.planes_per_die as usize;
        self.plane_staged[die * planes..(die + 1) * planes].fill(false);
        let done = self.flash.program_flash_pages(now, &group);
        self.staged[die] = group;
        self.staged[die].clear();
        done
    }

    /// Programs every full host flash page still waiting for its die's other planes (fewer
    /// planes in one tPROG). Partly filled flash pages stay open. Returns when the last program
    /// ends (`now` if none).
    pub fn program_ready(&mut self, now: SimTime) -> SimTime {
        let mut done = now;
        for die in 0..self.staged.len() {
            if !self.staged[die].is_empty() {
                done = done.max(self.program_staged_die(now, die));
            }
        }
        done
    }

    /// Makes every host page durable (the host's FLUSH): a partly filled host flash page is
    /// padded (its empty slots are programmed without data and stay invalid until the block is
    /// erased: MLC and TLC NAND allow one program per page, so they cannot be filled later; this
    /// is what a drive without power-loss protection does at a FLUSH) and everything waiting
    /// is programmed. GC's open flash page is not host data and stays open. Returns when the
    /// last program ends.
    pub fn sync(&mut self, now: SimTime) -> SimTime {
        let mut done = now;
        for plane in 0..self.host_open.len() {
            let Some(open) = self.host_open[plane] else { continue };
            if open.next_page.is_multiple_of(self.units) {
                continue;
            }
            let next_page = open.next_page.next_multiple_of(self.units);
            self.stats.pages_padded += (next_page - open.next_page) as u64;
            self.host_open[plane] = if next_page == self.geometry.pages_per_block {
                self.pool.close(open.block, self.host_sequence);
                None
            } else {
                Some(OpenBlock { block: open.block, next_page })
            };
            let first = Ppa(self.geometry.first_page(open.block).0 + next_page - self.units);
            done = done.max(self.host_flash_page_full(now, plane, first));
        }
        self.filling_plane = None;
        done.max(self.program_ready(now))
    }

    /// Programs what is staged on the die of `block` before an operation there that must follow
    /// it (GC reading or erasing the block). Returns when that program ends.
    fn program_staged_before(&mut self, now: SimTime, block: BlockId) -> SimTime {
        let die = self.geometry.die_of_plane(self.geometry.plane_of(block));
        self.program_staged_die(now, die)
    }

    /// Invalidates `lpn` in both maps (step 3 of a TRIM). True if it was mapped.
    pub fn trim(&mut self, lpn: Lpn) -> bool {
        self.trim_at(SimTime::ZERO, lpn).0
    }

    /// As [`PageFtl::trim`] at `now`. In lazy mode only the forward entry is cleared. Returns
    /// whether `lpn` was mapped and when any erase the TRIM caused (erase-when-invalid) ends.
    pub fn trim_at(&mut self, now: SimTime, lpn: Lpn) -> (bool, SimTime) {
        let lazy = match self.backward_update {
            BackwardUpdate::Eager => None,
            BackwardUpdate::Lazy { reconcile_every_pages } => Some(reconcile_every_pages),
        };
        let mut done = now;
        let Some(old) = (if lazy.is_some() { self.map.clear_forward(lpn) } else { self.map.unbind(lpn) })
        else {
            return (false, done);
        };
        self.stats.trimmed_mapped_pages += 1;
        let block = self.geometry.block_of(old);
        match lazy {
            None => {
                self.pool.remove_valid(block);
                done = done.max(self.erase_if_empty(now, block));
            }
            Some(every) => {
                self.variant.lazy_trims += 1;
                self.stale[block.index()].add(lpn.0, old.0);
                self.pending_stale.push(old.0);
                if every > 0 && self.pending_stale.len() >= every as usize {
                    done = done.max(self.reconcile_pending(now, false));
                }
            }
        }
        (true, done)
    }

    /// Brings the backward map and valid counts up to date with every lazy TRIM so far.
    /// Returns when any erase it caused ends.
    pub fn reconcile_pending(&mut self, now: SimTime, forced: bool) -> SimTime {
        let mut done = now;
        let pending = std::mem::take(&mut self.pending_stale);
        for raw in &pending {
            let ppa = Ppa(*raw);
            // GC may have reconciled (and erased) the block since: only stale entries count.
            if self.map.is_stale(ppa) {
                let block = self.clear_stale(ppa, self.map.owners_of(ppa, 1)[0]);
                if forced {
                    self.variant.forced_reconciles += 1;
                } else {
                    self.variant.reconciled_periodic += 1;
                }
                done = done.max(self.erase_if_empty(now, block));
            }
        }
        self.pending_stale = pending;
        self.pending_stale.clear();
        done
    }

    /// Reconciles the stale backward entry at `ppa` (its logical page `owner` lives elsewhere or
    /// nowhere): the entry cleared, its block's valid and stale counts down. Returns the block.
    fn clear_stale(&mut self, ppa: Ppa, owner: u32) -> BlockId {
        self.map.clear_backward(ppa);
        let block = self.geometry.block_of(ppa);
        self.pool.remove_valid(block);
        self.stale[block.index()].remove(owner, ppa.0);
        block
    }

    /// With erase-when-invalid, erases a full block that holds no valid page any more. The
    /// test is inlined into every write and TRIM; the erase is not.
    #[inline]
    fn erase_if_empty(&mut self, now: SimTime, block: BlockId) -> SimTime {
        if !self.erase_when_invalid
            || self.pool.state(block) != BlockState::Full
            || self.pool.valid(block) != 0
        {
            return now;
        }
        self.erase_emptied(now, block)
    }

    /// Erases `block`, full and without a valid page (erase-when-invalid).
    #[inline(never)]
    fn erase_emptied(&mut self, now: SimTime, block: BlockId) -> SimTime {
        self.program_staged_before(now, block);
        self.pool.begin_collect(block);
        let done = self.flash.erase(now, block);
        self.note_erase(block);
        self.pool.release(block);
        self.variant.eager_erases += 1;
        done
    }

    /// The next plane that has asked for GC since the last call.
    #[inline]
    pub fn take_gc_request(&mut self) -> Option<usize> {
        let plane = self.gc_requests.pop()?;
        self.gc_requested[plane] = false;
        Some(plane)
    }

    /// Whether any plane is waiting for GC.
    #[inline]
    pub fn gc_pending(&self) -> bool {
        !self.gc_requests.is_empty()
    }

    /// Reclaims blocks in `plane` until it has `gc_free_blocks_min` free blocks again, or until
    /// no block has an invalid page left.
    pub fn collect_garbage(&mut self, now: SimTime, plane: usize) -> GcOutcome {
        let ppb = self.geometry.pages_per_block;
        // Host flash pages staged on this die are programmed first: GC may pick their block.
        self.program_staged_before(now, self.geometry.first_block_of_plane(plane));
        let start = now.max(self.flash.die_free_at(self.geometry.first_block_of_plane(plane)));
        let mut outcome = GcOutcome { victims: 0, pages_copied: 0, done: start };
        // FIFO may meet fully valid blocks on its way round the log; it moves them and goes on,
        // but a whole lap without a gain means the plane holds nothing reclaimable.
        let mut fruitless_victims = 0u32;
        let free_at_start = self.pool.free_count(plane);
        let stop_at = self.gc_gain_blocks_max.map_or(usize::MAX, |g| free_at_start + g as usize);
        while self.pool.free_count(plane) < (self.config.gc_free_blocks_min as usize).min(stop_at) {
            let Some(victim) = self.pool.select_victim(plane, self.config.victim, self.host_sequence) else {
                self.stats.gc_stalls += 1;
                break;
            };
            if self.pool.valid(victim) == ppb
                && !self.pending_stale.is_empty()
                && self.backward_update != BackwardUpdate::Eager
            {
                // Stale counts make every block look full: reconcile everything and look again.
                outcome.done = outcome.done.max(self.reconcile_pending(now, true));
                continue;
            }
            if self.backward_update != BackwardUpdate::Eager {
                self.judge_victim(plane, victim);
            }
            if self.pool.valid(victim) == ppb {
                fruitless_victims += 1;
                if self.config.victim != VictimPolicy::Fifo
                    || fruitless_victims > self.geometry.blocks_per_plane
                {
                    // Copying a fully valid block frees nothing: the plane is full of live data.
                    self.stats.gc_stalls += 1;
                    break;
                }
            }
            let (copied, done) = self.reclaim(now, plane, victim);
            outcome.pages_copied += copied;
            outcome.done = done;
            outcome.victims += 1;
        }
        self.level_wear(now, plane);
        self.stats.gc_invocations += 1;
        self.stats.gc_victims += outcome.victims as u64;
        self.stats.gc_pages_copied += outcome.pages_copied as u64;
        self.stats.gc_busy_ns += outcome.done.since(start);
        let work =
            outcome.pages_copied as u64 + outcome.victims as u64 * self.geometry.pages_per_block as u64;
        if self.verify_cadence.due(work, self.geometry.physical_pages() as u64) {
            self.check().unwrap_or_else(|e| panic!("after GC on plane {plane}: {e}"));
        }
        outcome
    }

    /// `plane`'s GC open block, opened on a free block when it has none.
    #[inline]
    fn gc_open_block(&mut self, plane: usize) -> OpenBlock {
        match self.gc_open[plane] {
            Some(open) => open,
            None => {
                let block = match self.wl_moving {
                    false => self.pool.take_free(plane),
                    true => self.pool.take_free_most_worn(plane, self.flash.erase_counts()),
                };
                let block = block.unwrap_or_else(|| {
                    unreachable!("page_ftl: GC in plane {plane} found no free block to copy into")
                });
                self.variant.blocks_opened += 1;
                OpenBlock { block, next_page: 0 }
            }
        }
    }

    /// Lazy mode: counts a victim chosen on stale counts that holds more truly valid pages than
    /// the best full block of its plane. O(blocks per plane), lazy mode only.
    fn judge_victim(&mut self, plane: usize, victim: BlockId) {
        let true_valid = |ftl: &Self, b: BlockId| ftl.pool.valid(b) - ftl.stale[b.index()].count() as u32;
        let first = self.geometry.first_block_of_plane(plane).0;
        let best = (first..first + self.geometry.blocks_per_plane)
            .map(BlockId)
            .filter(|&b| self.pool.state(b) == BlockState::Full)
            .map(|b| true_valid(self, b))
            .min()
            .unwrap_or(0);
        let chosen = true_valid(self, victim);
        if chosen > best {
            self.variant.victims_misjudged += 1;
            self.variant.misjudged_extra_pages += (chosen - best) as u64;
        }
    }

    /// The plane for a host write of `lpn` under the stripe unit; `None` when no plane has an
    /// open host block or a free block besides the one kept for GC.
    fn next_host_plane(&mut self, lpn: Lpn) -> Option<usize> {
        if let Some(plane) = self.filling_plane {
            return Some(plane);
        }
        if self.stripe_unit == StripeUnit::Block {
            let channel = (lpn.0 / self.geometry.pages_per_block) as usize % self.channel_planes.len();
            let planes = self.channel_planes[channel].len();
            for _ in 0..planes {
                let plane = self.channel_planes[channel][self.channel_cursor[channel]];
                self.channel_cursor[channel] = (self.channel_cursor[channel] + 1) % planes;
                if self.host_open[plane].is_some() || self.pool.free_count(plane) > 1 {
                    return Some(plane);
                }
            }
            // The channel is out of room: any plane will do.
        }
        self.next_striped_plane()
    }

    /// Round-robin over planes in striping order, skipping a plane that has no open block and
    /// only its last free block left (kept so GC can always copy). `None` after a whole lap
    /// without one (the cursor is back where it started).
    fn next_striped_plane(&mut self) -> Option<usize> {
        let planes = self.stripe.len();
        for _ in 0..planes {
            let plane = self.stripe[self.stripe_cursor];
            self.stripe_cursor += 1;
            if self.stripe_cursor == planes {
                self.stripe_cursor = 0;
            }
            if self.host_open[plane].is_some() || self.pool.free_count(plane) > 1 {
                return Some(plane);
            }
        }
        None
    }

    /// GC for a host write that found no plane with room (issue 26): each plane without an open
    /// host block and with at most GC's last free block is collected at `now`, in plane order,
    /// and its queued GC request is dropped (it is served here). The TRIM engine's pre-GC work
    /// does not run: the caller may be between taking pages out of its write buffer and
    /// programming them, and a deferred TRIM applied now would be undone by their programs. GC
    /// only waited for the caller before; runs that never got here are unchanged.
    fn collect_for_host_write(&mut self, now: SimTime) {
        for plane in 0..self.stripe.len() {
            if self.host_open[plane].is_some() || self.pool.free_count(plane) > 1 {
                continue;
            }
            if self.gc_requested[plane] {
                self.gc_requested[plane] = false;
                self.gc_requests.retain(|&p| p != plane);
            }
            self.host_write_gc_invocations += 1;
            self.collect_garbage(now, plane);
        }
    }

    /// Copies `victim`'s valid pages into the plane's GC open block, erases it and frees it.
    /// Each victim flash page holding valid pages is read once (one tR, its valid pages cross
    /// the channel); the copies fill the GC open flash page, which is programmed when full. GC
    /// works plane by plane here; with multi-plane programs, each GC flash page is charged its
    /// plane's share of one multi-plane tPROG, as when firmware collects across the planes of a
    /// die (superblocks) and programs the copies together (an assumption). A partly filled GC flash page stays in the controller
    /// until the next GC fills it; the victim is erased at once (assumption: a controller would
    /// keep the victim until its copies are programmed; only the order of two operations on the
    /// die differs). Returns the pages copied and when the die is done.
    fn reclaim(&mut self, now: SimTime, plane: usize, victim: BlockId) -> (u32, SimTime) {
        let ppb = self.geometry.pages_per_block;
        let units = self.units;
        let mut copied = 0u32;
        self.pool.begin_collect(victim);
        let first = self.geometry.first_page(victim);
        // The forward entries of the pages to copy are random misses, one per copy. They are
        // prefetched `GC_PREFETCH_SLOTS` slots ahead of the copy loop: far enough that a line
        // arrives before its copy, near enough that the CPU's miss buffers hold them (loading
        // all 128 up front stalled GC until the last arrived; prefetching all 128 at once lost
        // most of them).
        let end = first.0 + ppb;
        // The victim's backward entries first (its slots' owners, 16 to a cache line): the
        // victim is the block least recently written, so they are rarely cached, and the
        // forward prefetches below wait on them.
        let backward = self.map.backward_raw();
        for slot in (first.0..end).step_by(16) {
            prefetch_index(backward, slot as usize);
        }
        let ahead = GC_PREFETCH_SLOTS.min(ppb);
        self.prefetch_owners(first.0..first.0 + ahead);
        let mut valid = std::mem::take(&mut self.scratch_slots);
        valid.resize(units as usize, (0, NONE));
        let mut base = first.0;
        while base < end {
            let next = base + ahead;
            if next < end {
                self.prefetch_owners(next..(next + units).min(end));
            }
            let count = self.valid_slots(base, &mut valid);
            if count > 0 {
                let pages = &valid[..count];
                let read_done = self.flash.read_pages(now, Ppa(base + pages[0].0), count as u32);
                // The victim is open (out of the victim index) while it is copied: its count
                // drops by the flash page's copies at once.
                self.pool.remove_valid_open(victim, count as u32);
                let mut rest = pages;
                while !rest.is_empty() {
                    rest = self.copy_gc_pages(plane, base, rest, read_done);
                }
                copied += count as u32;
            }
            base += units;
        }
        self.scratch_slots = valid;
        let done = self.flash.erase(now, victim);
        self.note_erase(victim);
        self.pool.release(victim);
        (copied, done)
    }

    /// The valid slots of the victim flash page at `base`, with their logical pages, into the
    /// front of `valid` (one entry per slot of a flash page); returns how many. Under a lazy
    /// backward map a stale slot (a lazy TRIM) is reconciled here instead of copied.
    #[inline]
    fn valid_slots(&mut self, base: u32, valid: &mut [(u32, u32)]) -> usize {
        let owners = self.map.owners_of(Ppa(base), self.units as usize);
        let mut count = 0;
        if self.backward_update == BackwardUpdate::Eager {
            // Eager: a backward entry is never stale; one pass over the slots, no map lookups.
            // Branch-free: every slot is written at the next place and kept only if valid (about
            // one slot in five of a GC-steady victim is invalid, at random, which a branch would
            // mispredict).
            for ((slot, &owner), place) in (0..).zip(owners).zip(0..valid.len()) {
                valid[count.min(place)] = (slot, owner);
                count += (owner != NONE) as usize;
            }
            return count;
        }
        for slot in 0..self.units {
            let src = Ppa(base + slot);
            let owner = self.map.owners_of(src, 1)[0];
            if owner == NONE {
                continue;
            }
            if self.map.is_stale(src) {
                // A lazy TRIM: GC examining the block reconciles it instead of copying.
                self.clear_stale(src, owner);
                self.variant.reconciled_at_gc += 1;
                continue;
            }
            valid[count] = (slot, owner);
            count += 1;
        }
        count
    }

    /// Moves the first of `pages` (slots of the victim flash page at `base`, with their logical
    /// pages, read by `read_done`) that fit into the open flash page of `plane`'s GC open block,
    /// and programs that flash page when they fill it. Returns the pages left for the next flash
    /// page. Per destination flash page, not per page: the open block, its valid count and the
    /// flash page's ready time are read and written once for up to a flash page of copies.
    #[inline]
    fn copy_gc_pages<'a>(
        &mut self,
        plane: usize,
        base: u32,
        pages: &'a [(u32, u32)],
        read_done: SimTime,
    ) -> &'a [(u32, u32)] {
        let units = self.units;
        let open = self.gc_open_block(plane);
        // Blocks are whole flash pages, so the room left in the open flash page is all in the
        // open block.
        let room = units - (open.next_page & (units - 1));
        let (now_pages, rest) = pages.split_at(pages.len().min(room as usize));
        let dst_first = self.geometry.first_page(open.block).0 + open.next_page;
        for (dst, &(slot, owner)) in (dst_first..).zip(now_pages) {
            self.map.relocate(Lpn(owner), Ppa(base + slot), Ppa(dst));
        }
        if let Some(tags) = self.tags.as_mut() {
            for (dst, &(slot, _)) in (dst_first..).zip(now_pages) {
                tags[dst as usize] = tags[(base + slot) as usize];
            }
        }
        let moved = now_pages.len() as u32;
        self.pool.add_valid_open(open.block, moved);
        let next_page = open.next_page + moved;
        self.gc_open[plane] = if next_page == self.geometry.pages_per_block {
            self.pool.close(open.block, self.host_sequence);
            None
        } else {
            Some(OpenBlock { block: open.block, next_page })
        };
        let ready = self.gc_page_ready[plane].max(read_done);
        self.gc_page_ready[plane] = ready;
        if next_page & (units - 1) == 0 {
            // The erase after the copies runs on the same die after this program: it is the end.
            let first = Ppa(dst_first + moved - units);
            if self.config.multi_plane {
                self.flash.program_flash_page_share(ready, first, self.geometry.planes_per_die);
            } else {
                self.flash.program_flash_pages(ready, &[first]);
            }
            self.gc_page_ready[plane] = SimTime::ZERO;
        }
        rest
    }

    /// Idle-time GC: when `plane` has fewer than `target` free blocks and a block with an invalid
    /// page, reclaims the policy's victim and returns when its die is done; `None` when there is
    /// nothing worth doing. Runs on die timelines from `now` like [`PageFtl::collect_garbage`], and counts
    /// into `idle_gc_*` as well as the GC totals (the NAND work is the same).
    pub fn collect_idle_victim(&mut self, now: SimTime, plane: usize, target: u32) -> Option<SimTime> {
        if self.pool.free_count(plane) >= target as usize || !self.pending_stale.is_empty() {
            // Lazily reconciled backward maps (004's variant) keep GC in the foreground.
            return None;
        }
        let victim = self.pool.select_victim(plane, self.config.victim, self.host_sequence)?;
        if self.pool.valid(victim) == self.geometry.pages_per_block {
            return None;
        }
        self.program_staged_before(now, victim);
        let start = now.max(self.flash.die_free_at(self.geometry.first_block_of_plane(plane)));
        let (copied, done) = self.reclaim(start, plane, victim);
        self.stats.gc_victims += 1;
        self.stats.gc_pages_copied += copied as u64;
        self.stats.gc_busy_ns += done.since(start);
        self.stats.idle_gc_victims += 1;
        self.stats.idle_gc_pages_copied += copied as u64;
        Some(self.level_wear(done, plane).unwrap_or(done))
    }

    /// An erase of `block` happened: static wear levelling's index follows it.
    #[inline]
    fn note_erase(&mut self, block: BlockId) {
        if let Some(wl) = &mut self.wear_levelling {
            wl.erased(self.geometry.plane_of(block), self.flash.erase_counts()[block.index()] - 1);
        }
    }

    /// Static wear levelling after GC in `plane` at `now` (crate::wear_levelling): when the
    /// plane's erase-count spread is at the threshold, its coldest full block is moved like a
    /// GC victim into the most-worn free block and erased. Returns when the move's last
    /// operation ends (`None`: nothing moved). A move needs two free blocks (one to copy into,
    /// one kept for GC) and an up-to-date backward map.
    fn level_wear(&mut self, now: SimTime, plane: usize) -> Option<SimTime> {
        let wl = self.wear_levelling.as_ref()?;
        if !wl.due(plane) || self.pool.free_count(plane) < 2 || !self.pending_stale.is_empty() {
            return None;
        }
        let cold = self.coldest_full_block(plane).filter(|&b| {
            self.wear_levelling
                .as_ref()
                .is_some_and(|wl| wl.worth_moving(plane, self.flash.erase_counts()[b.index()]))
        });
        let Some(cold) = cold else {
            if let Some(wl) = self.wear_levelling.as_mut() {
                wl.quiet(plane);
            }
            return None;
        };
        self.program_staged_before(now, cold);
        self.wl_moving = true;
        let (copied, done) = self.reclaim(now, plane, cold);
        self.wl_moving = false;
        if let Some(wl) = self.wear_levelling.as_mut() {
            wl.stats.moves += 1;
            wl.stats.pages_copied += copied as u64;
        }
        Some(done)
    }

    /// The full block of `plane` with the fewest erases (the lowest-numbered among equals).
    /// O(blocks per plane): run only when a move is due.
    fn coldest_full_block(&self, plane: usize) -> Option<BlockId> {
        let first = self.geometry.first_block_of_plane(plane).0;
        let counts = self.flash.erase_counts();
        (first..first + self.geometry.blocks_per_plane)
            .map(BlockId)
            .filter(|&b| self.pool.state(b) == BlockState::Full)
            .min_by_key(|&b| (counts[b.index()], b.0))
    }

    fn request_gc_if_low(&mut self, plane: usize) {
        if self.pool.free_count(plane) < self.config.gc_free_blocks_min as usize && !self.gc_requested[plane]
        {
            self.gc_requested[plane] = true;
            self.gc_requests.push(plane);
        }
    }

    /// Full consistency check: forward and backward maps agree, valid counts match the backward
    /// map, only open or full blocks hold valid pages, open blocks match the NAND write pointers,
    /// and the block pool's index and free lists agree with block states. O(physical pages).
    pub fn check(&self) -> Result<(), String> {
        let ppb = self.geometry.pages_per_block as usize;
        let units = self.units;
        // Slots placed in each block (the host or GC open block's next slot; a whole block when
        // full), and slots of full host flash pages staged for a multi-plane program.
        let mut placed = vec![0u32; self.geometry.block_count()];
        let mut staged = vec![0u32; self.geometry.block_count()];
        for group in &self.staged {
            for &first in group {
                staged[self.geometry.block_of(first).index()] += units;
            }
        }
        for open in self.host_open.iter().chain(self.gc_open.iter()).flatten() {
            placed[open.block.index()] = open.next_page;
        }
        // The maps agree when the backward map holds exactly the forward map's pairs plus, under
        // a lazy map, the stale pairs the model has recorded: compared by fingerprint
        // (map_agreement.rs), over the whole drive when the map is eager and per block when it
        // is lazy; the exact walk runs only where they differ, to name the page.
        let physical = self.map.backward_raw().len();
        let (whole, by_block) = match !self.stale.is_empty() {
            false => (forward_pairs(self.map.forward_raw(), physical), None),
            true => (None, forward_pairs_by_block(self.map.forward_raw(), physical, ppb)),
        };
        if whole.is_none() && by_block.is_none() {
            self.check_forward_points_back()?;
        }
        let mut backward = Pairs::default();
        for block in 0..self.geometry.block_count() {
            let id = BlockId(block as u32);
            let owners = self.map.owners_of(self.geometry.first_page(id), ppb);
            let held = Pairs::of_owners(owners, (block * ppb) as u32);
            backward += held;
            if let Some(forward) = &by_block {
                if held != forward[block] + self.stale[block] {
                    return Err(self.name_disagreement(block..block + 1));
                }
            }
            let valid = held.count() as u32;
            let placed_here =
                if self.pool.state(id) == BlockState::Full { ppb as u32 } else { placed[block] };
            let top = placed_here.max(self.flash.programmed_pages(id)) as usize;
            if let Some(page) = owners.get(top..).and_then(|above| above.iter().position(|&o| o != NONE)) {
                let ppa = block * ppb + top + page;
                return Err(format!("I3 valid page {ppa} above the write pointer of block {block}"));
            }
            if valid != self.pool.valid(id) {
                return Err(format!(
                    "I4 valid count: block {block} counts {} but holds {valid} valid pages",
                    self.pool.valid(id)
                ));
            }
            let programmed = self.flash.programmed_pages(id) as usize;
            match self.pool.state(id) {
                BlockState::Free if programmed != 0 => {
                    return Err(format!("I5 free block {block} has {programmed} programmed pages"));
                }
                BlockState::Full if programmed + staged[block] as usize != ppb => {
                    return Err(format!(
                        "I5 full block {block} has {programmed} programmed pages and {} staged",
                        staged[block]
                    ));
                }
                _ => {}
            }
        }
        if whole.is_some_and(|f| f != backward) {
            return Err(self.name_disagreement(0..self.geometry.block_count()));
        }
        for (plane, open) in self.host_open.iter().chain(self.gc_open.iter()).enumerate() {
            if let Some(open) = open {
                // Whole flash pages below the next slot are programmed or staged; the partly
                // filled one waits in the controller.
                let programmed = self.flash.programmed_pages(open.block) + staged[open.block.index()];
                if self.pool.state(open.block) != BlockState::Open
                    || programmed != open.next_page / units * units
                {
                    return Err(format!(
                        "I6 open block {:?} (slot {plane}) state {:?}, write pointer {} (+{} staged) vs next slot {}",
                        open.block,
                        self.pool.state(open.block),
                        self.flash.programmed_pages(open.block),
                        staged[open.block.index()],
                        open.next_page
                    ));
                }
            }
        }
        self.pool.check()?;
        self.check_wear_index()
    }

    /// I8: static wear levelling's index agrees with the flash's erase counts (when it is on).
    fn check_wear_index(&self) -> Result<(), String> {
        let bpp = self.geometry.blocks_per_plane as usize;
        self.wear_levelling.as_ref().map_or(Ok(()), |wl| wl.check(self.flash.erase_counts().chunks(bpp)))
    }

    /// The first page whose map entries disagree, found the exact way (a random read per page)
    /// once the fingerprints say that they do: I1 over the whole forward map, then I2 and the
    /// stale count (I7) of each of `blocks`.
    fn name_disagreement(&self, blocks: std::ops::Range<usize>) -> String {
        let ppb = self.geometry.pages_per_block as usize;
        if let Err(e) = self.check_forward_points_back() {
            return e;
        }
        for block in blocks.clone() {
            let owners = self.map.owners_of(self.geometry.first_page(BlockId(block as u32)), ppb);
            let mut stale = 0;
            for (page, &owner) in owners.iter().enumerate().filter(|(_, &o)| o != NONE) {
                let ppa = block * ppb + page;
                if !self.stale.is_empty() && self.map.is_stale(Ppa(ppa as u32)) {
                    stale += 1;
                } else if let Err(e) = self.check_points_forward(ppa, owner) {
                    return e;
                }
            }
            match self.stale.get(block).map(Pairs::count) {
                Some(counted) if counted != stale => {
                    return format!("I7 lazy backward map: block {block} holds {stale} stale entries but counts {counted}");
                }
                _ => {}
            }
        }
        format!("I1/I2 blocks {blocks:?}: the maps' pair fingerprints differ, yet no page disagrees")
    }

    /// I1, exactly: every forward entry's physical page names it back.
    fn check_forward_points_back(&self) -> Result<(), String> {
        let backward = self.map.backward_raw();
        for (lpn, &raw) in self.map.forward_raw().iter().enumerate() {
            if raw != NONE && backward.get(raw as usize) != Some(&(lpn as u32)) {
                return Err(format!(
                    "I1 forward/backward: lpn {lpn} -> ppa {raw} but ppa {raw} -> {:?}",
                    backward.get(raw as usize)
                ));
            }
        }
        Ok(())
    }

    /// I2, exactly, for one page: the logical page that `ppa`'s backward entry names maps to it.
    fn check_points_forward(&self, ppa: usize, owner: u32) -> Result<(), String> {
        match self.map.forward_raw().get(owner as usize) == Some(&(ppa as u32)) {
            true => Ok(()),
            false => Err(format!("I2 backward/forward: ppa {ppa} -> lpn {owner}, which maps elsewhere")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ftl() -> PageFtl {
        let g = Geometry {
            channels: 2,
            chips_per_channel: 1,
            dies_per_chip: 1,
            planes_per_die: 2,
            blocks_per_plane: 16,
            pages_per_block: 4,
            page_bytes: 2048,
            flash_page_bytes: 2048,
        };
        let config = FtlConfig {
            logical_pages: 128,
            gc_free_blocks_min: 2,
            victim: VictimPolicy::Greedy,
            track_data: true,
            multi_plane: false,
        };
        PageFtl::check_config(&g, &config).unwrap();
        PageFtl::new(g, Timing::k9lag08u0m(), config)
    }

    fn channel_of(f: &PageFtl, lpn: u32) -> usize {
        let ppa = f.map.lookup(Lpn(lpn)).unwrap();
        let g = f.geometry();
        g.channel_of_die(g.die_of_plane(g.plane_of(g.block_of(ppa))))
    }

    #[test]
    fn block_striping_keeps_a_logical_block_on_one_channel() {
        let mut f = ftl();
        f.set_stripe_unit(StripeUnit::Block);
        for lpn in 0..16 {
            f.write(SimTime::ZERO, Lpn(lpn), 1);
        }
        for lpn in 0..16 {
            assert_eq!(channel_of(&f, lpn), (lpn as usize / 4) % 2, "lpn {lpn}");
        }
        let mut p = ftl();
        for lpn in 0..4 {
            p.write(SimTime::ZERO, Lpn(lpn), 1);
        }
        assert_ne!(channel_of(&p, 0), channel_of(&p, 1), "page striping alternates channels");
        f.check().unwrap();
    }

    /// One plane, 16 KiB flash pages of four 4 KiB pages, 8 pages (two flash pages) a block.
    fn tlc_ftl() -> PageFtl {
        let g = Geometry {
            channels: 1,
            chips_per_channel: 1,
            dies_per_chip: 1,
            planes_per_die: 1,
            blocks_per_plane: 16,
            pages_per_block: 8,
            page_bytes: 4096,
            flash_page_bytes: 16384,
        };
        let config = FtlConfig {
            logical_pages: 64,
            gc_free_blocks_min: 2,
            victim: VictimPolicy::Greedy,
            track_data: true,
            multi_plane: true,
        };
        PageFtl::check_config(&g, &config).unwrap();
        PageFtl::new(g, Timing::tlc_nvme(), config)
    }

    #[test]
    fn a_flash_page_is_programmed_once_when_full_and_a_sync_pads_the_rest() {
        let mut f = tlc_ftl();
        for lpn in 0..3 {
            assert_eq!(f.write(SimTime::ZERO, Lpn(lpn), lpn as u64 + 1), SimTime::ZERO, "staged");
        }
        assert_eq!(f.flash().counters().program_operations, 0);
        // A staged page reads from the controller, with no tR.
        assert_eq!(f.read(SimTime(5), Lpn(1)), (PageData::Mapped(2), SimTime(5)));
        let done = f.write(SimTime::ZERO, Lpn(3), 4);
        let t = Timing::tlc_nvme();
        assert_eq!(done.ns(), t.transfer_ns(16384) + t.program_ns);
        assert_eq!(f.flash().counters().pages_programmed, 4);
        f.write(done, Lpn(4), 5);
        f.check().unwrap();
        f.sync(done);
        assert_eq!(f.stats().pages_padded, 3);
        assert_eq!(f.flash().counters().program_operations, 2);
        f.check().unwrap();
    }

    #[test]
    fn gc_reads_each_victim_flash_page_once() {
        let mut f = tlc_ftl();
        let mut now = SimTime::ZERO;
        // Fill, then overwrite every other page until GC has run.
        for lpn in 0..64 {
            now = now.max(f.write(now, Lpn(lpn), 1));
        }
        let mut round = 0;
        let mut x = 2_463_534_242u32;
        while f.stats().gc_pages_copied < 64 && round < 200 {
            // Uniform random overwrites (xorshift: a fixed sequence).
            for _ in 0..40u32 {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                let lpn = x % 64;
                now = now.max(f.write(now, Lpn(lpn), 2 + round));
                while let Some(plane) = f.take_gc_request() {
                    f.collect_garbage(now, plane);
                }
            }
            round += 1;
        }
        let c = f.flash().counters();
        assert!(f.stats().gc_pages_copied > 0);
        // Every flash page read had valid pages to copy; two or more share one tR.
        assert_eq!(c.pages_read, f.stats().gc_pages_copied);
        assert!(c.flash_pages_read < c.pages_read, "{c:?}");
        f.check().unwrap();
    }

    /// Issue 26: a write buffer drained at once (a FLUSH) writes more blocks per plane than
    /// GC's reserve holds before the caller runs GC. Two planes, 8-page blocks, GC at 2 free
    /// blocks: 64 pages at once (4 blocks per plane) found every plane at its last free block
    /// and panicked "no plane can take a host write". GC now runs in the write that needs it.
    #[test]
    fn a_batch_larger_than_the_gc_reserve_runs_gc_in_the_write() {
        let g = Geometry {
            channels: 2,
            chips_per_channel: 1,
            dies_per_chip: 1,
            planes_per_die: 1,
            blocks_per_plane: 24,
            pages_per_block: 8,
            page_bytes: 4096,
            flash_page_bytes: 16384,
        };
        let config = FtlConfig {
            logical_pages: 256,
            gc_free_blocks_min: 2,
            victim: VictimPolicy::Greedy,
            track_data: true,
            multi_plane: true,
        };
        PageFtl::check_config(&g, &config).unwrap();
        let mut f = PageFtl::new(g, Timing::tlc_nvme(), config);
        let mut now = SimTime::ZERO;
        // Sequential passes over the logical space in batches of 64 pages; GC only after each
        // batch, as the device's `flush_oldest` does.
        for pass in 0..6u32 {
            for batch in 0..4u32 {
                for i in 0..64 {
                    let lpn = batch * 64 + i;
                    now = now.max(f.write(now, Lpn(lpn), (pass * 256 + lpn) as u64));
                }
                now = now.max(f.sync(now));
                while let Some(plane) = f.take_gc_request() {
                    now = now.max(f.collect_garbage(now, plane).done);
                }
                f.check().unwrap();
            }
        }
        assert!(f.host_write_gc_invocations() > 0, "the batch never needed GC: the test lost its point");
        for lpn in 0..256 {
            assert_eq!(f.read(now, Lpn(lpn)).0, PageData::Mapped((5 * 256 + lpn) as u64));
        }
    }

    #[test]
    fn lazy_trim_leaves_valid_counts_stale_until_reconciled() {
        let mut f = ftl();
        f.set_backward_update(BackwardUpdate::Lazy { reconcile_every_pages: 0 });
        f.set_erase_when_invalid(true);
        for lpn in 0..8 {
            f.write(SimTime::ZERO, Lpn(lpn), 1);
        }
        for lpn in 0..8 {
            assert!(f.trim_at(SimTime::ZERO, Lpn(lpn)).0);
        }
        assert_eq!(f.stale_pages(), 8, "the backward map still claims the trimmed pages");
        assert_eq!(f.valid_pages(), 0, "but they hold no data");
        assert!(!f.is_mapped(Lpn(3)));
        f.check().unwrap();
        f.reconcile_pending(SimTime::ZERO, false);
        assert_eq!((f.valid_pages(), f.stale_pages()), (0, 0));
        assert_eq!(f.variant_stats().reconciled_periodic, 8);
        f.check().unwrap();
    }

    /// The check must catch each way the maps can disagree, on an eager and on a lazy map.
    #[test]
    fn the_full_check_names_the_broken_invariant() {
        let broken = |lazy: bool, corrupt: &dyn Fn(&mut [u32], &mut [u32])| {
            let mut f = ftl();
            if lazy {
                f.set_backward_update(BackwardUpdate::Lazy { reconcile_every_pages: 0 });
            }
            for lpn in 0..40 {
                f.write(SimTime::ZERO, Lpn(lpn), 1);
            }
            f.check().unwrap();
            let (forward, backward) = f.map.raw_mut();
            corrupt(forward, backward);
            f.check().expect_err("a broken map passed the check")
        };
        // Which invariants may name each break: on a lazy map a forward entry that no longer
        // points back makes its old backward entry look stale, which I7 counts first.
        let named = |e: &str, lazy: bool, eager: &[&str]| {
            let ok = eager.iter().chain(if lazy { &["I7", "I1"][..] } else { &[] }).any(|p| e.starts_with(p));
            assert!(ok, "lazy {lazy}: {e}");
        };
        for lazy in [false, true] {
            // Two logical pages' forward entries swapped: counts per block unchanged.
            named(&broken(lazy, &|fw, _| fw.swap(3, 17)), lazy, &["I1"]);
            // A forward entry past the drive.
            named(&broken(lazy, &|fw, _| fw[5] = 1 << 20), lazy, &["I1"]);
            // A backward entry moved to a free slot of its block: the valid count still matches.
            let moved = |fw: &mut [u32], bw: &mut [u32]| {
                let ppa = fw[9] as usize;
                match (ppa / 4 * 4..ppa / 4 * 4 + 4).find(|&p| bw[p] == NONE) {
                    Some(free) => bw.swap(ppa, free),
                    None => bw[ppa] = 30, // a full block: name another page's owner instead
                }
            };
            named(&broken(lazy, &moved), lazy, &["I1", "I2", "I3"]);
            // A backward entry lost: the block's valid count no longer matches.
            named(&broken(lazy, &|fw, bw| bw[fw[11] as usize] = NONE), lazy, &["I1", "I4"]);
        }
    }
}
