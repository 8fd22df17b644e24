//! The one seam between the device and any flash translation layer: what the controller asks of
//! an FTL (read, write, unmap, garbage collection when asked, checks and measures). The
//! page-mapping FTL implements it here; the hybrid FAST FTL in `trimlab-hybrid`. The device holds
//! whichever `[ftl] kind` names as a `Box<dyn Ftl>`.

use crate::detail::FtlDetail;
use crate::lpn::Lpn;
use crate::page_ftl::{FtlStats, PageData, PageFtl};
use crate::wear_levelling::WearLevellingStats;
use serde::Serialize;
use trimlab_nand::{FlashArray, Geometry};
use trimlab_sim::SimTime;

/// 004's measures of an FTL after a run (§5.2), defined for every kind.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FtlMeasures {
    /// N_pb: erased blocks taken for programming.
    pub blocks_programmed: u64,
    pub blocks_total: u64,
    pub erases_total: u64,
    /// N_vb: blocks holding live data at the end.
    pub valid_blocks: u64,
    pub host_pages_programmed: u64,
    pub nand_pages_programmed: u64,
}

impl FtlMeasures {
    /// N_eb: average erases per block.
    pub fn erases_per_block(&self) -> f64 {
        self.erases_total as f64 / self.blocks_total.max(1) as f64
    }

    /// E_ftl = N_vb / (N_pb × N_eb) (004 Eq. 1); infinite when nothing was erased.
    pub fn e_ftl(&self) -> f64 {
        self.valid_blocks as f64 / (self.blocks_programmed as f64 * self.erases_per_block())
    }

    /// The measures of the span since `before` was taken: counts of what happened are
    /// differences, states at the end (blocks total, valid blocks) are `self`'s.
    pub fn since(&self, before: &FtlMeasures) -> FtlMeasures {
        FtlMeasures {
            blocks_programmed: self.blocks_programmed - before.blocks_programmed,
            blocks_total: self.blocks_total,
            erases_total: self.erases_total - before.erases_total,
            valid_blocks: self.valid_blocks,
            host_pages_programmed: self.host_pages_programmed - before.host_pages_programmed,
            nand_pages_programmed: self.nand_pages_programmed - before.nand_pages_programmed,
        }
    }

    /// NAND pages programmed per host page.
    pub fn waf(&self) -> f64 {
        self.nand_pages_programmed as f64 / self.host_pages_programmed.max(1) as f64
    }
}

/// A flash translation layer as the controller drives it. Times are simulated instants; an
/// operation reserves dies and channels on the FTL's `FlashArray` and returns when it ends.
pub trait Ftl: Send {
    /// The `[ftl] kind` name: "page" or "hybrid".
    fn kind(&self) -> &'static str;
    fn geometry(&self) -> &Geometry;
    fn flash(&self) -> &FlashArray;
    fn logical_pages(&self) -> u32;
    /// Pages whose data the FTL keeps (mapped and not trimmed).
    fn valid_pages(&self) -> u64;
    /// Whether `lpn` holds data a read would return.
    fn is_mapped(&self, lpn: Lpn) -> bool;
    fn read(&mut self, now: SimTime, lpn: Lpn) -> (PageData, SimTime);
    /// Writes one host page at `now`; returns when the program it started ends, or `now` when
    /// the page waits in the controller for the rest of its flash page (see `program_ready` and
    /// `sync`). Work the FTL must do first to make room (a hybrid FTL's merges) runs inside; GC
    /// is requested, not run.
    fn write(&mut self, now: SimTime, lpn: Lpn, tag: u64) -> SimTime;
    /// Programs every full flash page still waiting for its multi-plane group; partly filled
    /// flash pages stay open. Returns when the last program ends (`now` if none).
    fn program_ready(&mut self, now: SimTime) -> SimTime {
        now
    }
    /// Makes every host page written so far durable (FLUSH): pads partly filled flash pages and
    /// programs everything waiting. Returns when the last program ends.
    fn sync(&mut self, now: SimTime) -> SimTime {
        now
    }
    /// TRIM step 3 for `count` pages from `start` at `now`: their data is dropped. Returns how
    /// many of them held data.
    fn trim(&mut self, now: SimTime, start: Lpn, count: u32) -> u64;
    /// Touches the map entries of pages about to be written (with their data tags, as the
    /// write buffer hands them over) so their cache misses overlap.
    fn warm(&self, _pages: &[(Lpn, u64)]) {}
    /// A hint that `lpn` is about to be trimmed: start fetching its map entry, so that the
    /// miss overlaps what the caller does first (a TRIM engine's write-buffer lookup, the
    /// pages before it in a drain). Changes nothing the model holds.
    fn prefetch_map(&self, _lpn: Lpn) {}
    /// The next plane that asked for garbage collection since the last call.
    fn take_gc_request(&mut self) -> Option<usize> {
        None
    }
    /// Garbage-collects `plane` from `now` (only after `take_gc_request` named it).
    fn collect_garbage(&mut self, _now: SimTime, _plane: usize) {}
    /// Idle-time GC: reclaims one victim in `plane` if it is under `target` free blocks and has
    /// something to reclaim; returns when its die is done (`None`: nothing done). Kinds without
    /// idle-time GC do nothing.
    fn collect_idle(&mut self, _now: SimTime, _plane: usize, _target: u32) -> Option<SimTime> {
        None
    }
    /// Counters in the device report's terms (for a hybrid FTL, merges are its GC).
    fn stats(&self) -> FtlStats;
    /// Erased blocks ready for writing, over the whole drive (the device's time series samples it).
    fn free_blocks(&self) -> u64;
    /// Erased blocks ready for writing in `plane` (what idle-time GC fills up to its target).
    fn free_blocks_in_plane(&self, plane: usize) -> u64;
    /// 004's measures (N_pb, N_eb, N_vb, E_ftl).
    fn measures(&self) -> FtlMeasures;
    /// Counters only this kind has, typed (the report's `ftl.detail`, 004's tables).
    fn detail(&self) -> FtlDetail;
    /// What static wear levelling did (`None`: the kind has none, or it is off).
    fn wear_levelling(&self) -> Option<WearLevellingStats> {
        None
    }
    /// Bytes of heap the FTL holds.
    fn heap_bytes(&self) -> usize;
    /// The full consistency check (tests call it after every step that matters).
    fn check(&self) -> Result<(), String>;
}

impl Ftl for PageFtl {
    fn kind(&self) -> &'static str {
        "page"
    }
    fn geometry(&self) -> &Geometry {
        PageFtl::geometry(self)
    }
    fn flash(&self) -> &FlashArray {
        PageFtl::flash(self)
    }
    fn logical_pages(&self) -> u32 {
        PageFtl::logical_pages(self)
    }
    fn valid_pages(&self) -> u64 {
        PageFtl::valid_pages(self)
    }
    #[inline]
    fn is_mapped(&self, lpn: Lpn) -> bool {
        PageFtl::is_mapped(self, lpn)
    }
    #[inline]
    fn read(&mut self, now: SimTime, lpn: Lpn) -> (PageData, SimTime) {
        PageFtl::read(self, now, lpn)
    }
    #[inline]
    fn write(&mut self, now: SimTime, lpn: Lpn, tag: u64) -> SimTime {
        PageFtl::write(self, now, lpn, tag)
    }
    fn program_ready(&mut self, now: SimTime) -> SimTime {
        PageFtl::program_ready(self, now)
    }
    fn sync(&mut self, now: SimTime) -> SimTime {
        PageFtl::sync(self, now)
    }
    fn trim(&mut self, now: SimTime, start: Lpn, count: u32) -> u64 {
        (start.0..start.0 + count).filter(|&lpn| self.trim_at(now, Lpn(lpn)).0).count() as u64
    }
    fn warm(&self, pages: &[(Lpn, u64)]) {
        PageFtl::warm(self, pages)
    }
    #[inline]
    fn prefetch_map(&self, lpn: Lpn) {
        PageFtl::prefetch_map(self, lpn)
    }
    #[inline]
    fn take_gc_request(&mut self) -> Option<usize> {
        PageFtl::take_gc_request(self)
    }
    fn collect_garbage(&mut self, now: SimTime, plane: usize) {
        PageFtl::collect_garbage(self, now, plane);
    }
    fn collect_idle(&mut self, now: SimTime, plane: usize, target: u32) -> Option<SimTime> {
        PageFtl::collect_idle_victim(self, now, plane, target)
    }
    fn stats(&self) -> FtlStats {
        PageFtl::stats(self).clone()
    }
    fn free_blocks(&self) -> u64 {
        PageFtl::free_blocks(self)
    }
    fn free_blocks_in_plane(&self, plane: usize) -> u64 {
        PageFtl::free_blocks_in_plane(self, plane) as u64
    }
    fn measures(&self) -> FtlMeasures {
        let flash = PageFtl::flash(self);
        FtlMeasures {
            blocks_programmed: self.variant_stats().blocks_opened,
            blocks_total: PageFtl::geometry(self).block_count() as u64,
            erases_total: flash.counters().blocks_erased,
            valid_blocks: self.live_blocks(),
            host_pages_programmed: PageFtl::stats(self).host_pages_programmed,
            nand_pages_programmed: flash.counters().pages_programmed,
        }
    }
    fn detail(&self) -> FtlDetail {
        FtlDetail::Page { stats: PageFtl::stats(self).clone(), variant: self.variant_stats().clone() }
    }
    fn wear_levelling(&self) -> Option<WearLevellingStats> {
        self.wear_levelling_stats().cloned()
    }
    fn heap_bytes(&self) -> usize {
        PageFtl::heap_bytes(self)
    }
    fn check(&self) -> Result<(), String> {
        PageFtl::check(self)
    }
}
