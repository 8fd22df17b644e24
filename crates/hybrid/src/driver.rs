//! A small host-command driver over any FTL model, with 004's measures.
//!
//! `trimlab-device`'s `Ssd` drives only the page-mapping FTL with its own configuration; 004
//! compares two FTLs (and options of the page FTL that the device does not expose), so this
//! module serves the same command shapes (READ / WRITE / TRIM / FLUSH with byte offsets) on
//! anything that implements [`FtlModel`]. It is deliberately smaller than the device: one
//! command at a time (the callers run closed loops at queue depth 1, as an OS install or
//! IOZone issues synchronous requests), whole pages only, no write buffer (004 disables it),
//! one firmware CPU timeline and a host link. The pages of one command are issued together,
//! so striping over channels shows in its latency. Later the device could hold a
//! `Box<dyn FtlModel>` behind its queueing front end instead of a `PageFtl`.

use crate::fast::HybridFtl;
use serde::Serialize;
use trimlab_ftl::page_ftl::PageData;
use trimlab_ftl::{Lpn, PageFtl};
use trimlab_nand::FlashArray;
use trimlab_sim::SimTime;

/// Controller time per command (parsing, scheduling). 004 gives none; 2 us keeps it far below
/// one NAND program (800 us) so it cannot decide any comparison.
pub const FIRMWARE_NS: u64 = 2_000;
/// Controller time to update one forward/backward map entry in DRAM on TRIM.
pub const MAP_UPDATE_NS: u64 = 50;
/// Controller time per node visited in a trimmed-range list walk.
pub const LIST_STEP_NS: u64 = 20;

/// 004's measures of an FTL after a run (§5.2).
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

    /// NAND pages programmed per host page.
    pub fn waf(&self) -> f64 {
        self.nand_pages_programmed as f64 / self.host_pages_programmed.max(1) as f64
    }
}

/// What a driver needs from an FTL. Times are simulated instants; logical pages are `u32`.
pub trait FtlModel {
    fn logical_pages(&self) -> u32;
    /// Programs one host page; returns when it is durable.
    fn write_page(&mut self, now: SimTime, lpn: u32, tag: u64) -> SimTime;
    /// Reads one page: its tag (0 for zeros) and when the data is in controller memory.
    fn read_page(&mut self, now: SimTime, lpn: u32) -> (u64, SimTime);
    /// Trims `[start, start + count)`; returns the controller time it took.
    fn trim_pages(&mut self, now: SimTime, start: u32, count: u32) -> u64;
    fn flash(&self) -> &FlashArray;
    fn measures(&self) -> FtlMeasures;
    fn check(&self) -> Result<(), String>;
}

impl FtlModel for HybridFtl {
    fn logical_pages(&self) -> u32 {
        HybridFtl::logical_pages(self)
    }

    fn write_page(&mut self, now: SimTime, lpn: u32, tag: u64) -> SimTime {
        self.write(now, lpn, tag)
    }

    fn read_page(&mut self, now: SimTime, lpn: u32) -> (u64, SimTime) {
        self.read(now, lpn)
    }

    fn trim_pages(&mut self, _now: SimTime, start: u32, count: u32) -> u64 {
        self.trim(start, count) * LIST_STEP_NS
    }

    fn flash(&self) -> &FlashArray {
        HybridFtl::flash(self)
    }

    fn measures(&self) -> FtlMeasures {
        let flash = HybridFtl::flash(self);
        FtlMeasures {
            blocks_programmed: self.stats().blocks_opened,
            blocks_total: self.geometry().block_count() as u64,
            erases_total: flash.counters().blocks_erased,
            valid_blocks: self.valid_blocks(),
            host_pages_programmed: self.stats().host_pages_programmed,
            nand_pages_programmed: flash.counters().pages_programmed,
        }
    }

    fn check(&self) -> Result<(), String> {
        HybridFtl::check(self)
    }
}

/// The page-mapping FTL as a model: GC requests are served right after the write that raised
/// them, on die timelines only (as `trimlab-device` does). `trim` = false ignores TRIM.
pub struct PageFtlModel {
    pub ftl: PageFtl,
    pub trim: bool,
}

impl FtlModel for PageFtlModel {
    fn logical_pages(&self) -> u32 {
        self.ftl.logical_pages()
    }

    fn write_page(&mut self, now: SimTime, lpn: u32, tag: u64) -> SimTime {
        let done = self.ftl.write(now, Lpn(lpn), tag);
        while let Some(plane) = self.ftl.take_gc_request() {
            self.ftl.collect(now, plane);
        }
        done
    }

    fn read_page(&mut self, now: SimTime, lpn: u32) -> (u64, SimTime) {
        match self.ftl.read(now, Lpn(lpn)) {
            (PageData::Unmapped, t) => (0, t),
            (PageData::Mapped(tag), t) => (tag.max(u64::from(!self.ftl.config().track_data)), t),
        }
    }

    fn trim_pages(&mut self, now: SimTime, start: u32, count: u32) -> u64 {
        if !self.trim {
            return 0;
        }
        for lpn in start..start + count {
            self.ftl.trim_at(now, Lpn(lpn));
        }
        count as u64 * MAP_UPDATE_NS
    }

    fn flash(&self) -> &FlashArray {
        self.ftl.flash()
    }

    fn measures(&self) -> FtlMeasures {
        let flash = self.ftl.flash();
        FtlMeasures {
            blocks_programmed: self.ftl.variant_stats().blocks_opened,
            blocks_total: self.ftl.geometry().block_count() as u64,
            erases_total: flash.counters().blocks_erased,
            valid_blocks: self.ftl.live_blocks(),
            host_pages_programmed: self.ftl.stats().host_pages_programmed,
            nand_pages_programmed: flash.counters().pages_programmed,
        }
    }

    fn check(&self) -> Result<(), String> {
        self.ftl.check()
    }
}

/// A host command, in bytes, as `trimlab-device`'s `Command`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostCommand {
    Read {
        offset: u64,
        bytes: u64,
    },
    /// Page `i` of the write carries data tag `tag + i`.
    Write {
        offset: u64,
        bytes: u64,
        tag: u64,
    },
    /// `(offset, bytes)` ranges; only whole pages inside a range are trimmed.
    Trim {
        ranges: Vec<(u64, u64)>,
    },
    Flush,
}

/// Why a command was refused; the driver's state is unchanged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriveError(pub String);

impl std::fmt::Display for DriveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DriveError {}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    pub start: SimTime,
    pub done: SimTime,
}

pub struct Driver<F> {
    ftl: F,
    page_bytes: u64,
    host_ps_per_byte: u64,
    cpu_free: SimTime,
}

impl<F: FtlModel> Driver<F> {
    /// `host_ps_per_byte`: the host link (SATA II, 300 MB/s: 3333).
    pub fn new(ftl: F, page_bytes: u32, host_ps_per_byte: u64) -> Self {
        Driver { ftl, page_bytes: page_bytes as u64, host_ps_per_byte, cpu_free: SimTime::ZERO }
    }

    pub fn ftl(&self) -> &F {
        &self.ftl
    }

    pub fn ftl_mut(&mut self) -> &mut F {
        &mut self.ftl
    }

    pub fn capacity_bytes(&self) -> u64 {
        self.ftl.logical_pages() as u64 * self.page_bytes
    }

    fn pages(&self, offset: u64, bytes: u64) -> Result<(u32, u32), DriveError> {
        if bytes == 0 || !offset.is_multiple_of(self.page_bytes) || !bytes.is_multiple_of(self.page_bytes) {
            return Err(DriveError(format!(
                "offset {offset} / length {bytes}: must be non-empty multiples of the {}-byte page",
                self.page_bytes
            )));
        }
        if offset.checked_add(bytes).is_none_or(|end| end > self.capacity_bytes()) {
            return Err(DriveError(format!(
                "offset {offset} + length {bytes} beyond the capacity of {} bytes",
                self.capacity_bytes()
            )));
        }
        Ok(((offset / self.page_bytes) as u32, (bytes / self.page_bytes) as u32))
    }

    /// Serves `command` arriving at `arrival`. Reads append one tag per page to `read_out`.
    pub fn submit(
        &mut self,
        arrival: SimTime,
        command: &HostCommand,
        read_out: Option<&mut Vec<u64>>,
    ) -> Result<Completion, DriveError> {
        let start = arrival.max(self.cpu_free);
        let fw = start.after(FIRMWARE_NS);
        let done = match command {
            HostCommand::Write { offset, bytes, tag } => {
                let (first, count) = self.pages(*offset, *bytes)?;
                self.cpu_free = fw;
                let arrived = fw.after((*bytes * self.host_ps_per_byte).div_ceil(1000));
                let mut done = arrived;
                for i in 0..count {
                    done = done.max(self.ftl.write_page(arrived, first + i, tag.wrapping_add(i as u64)));
                }
                done
            }
            HostCommand::Read { offset, bytes } => {
                let (first, count) = self.pages(*offset, *bytes)?;
                self.cpu_free = fw;
                let mut done = fw;
                let mut out = read_out;
                for i in 0..count {
                    let (tag, t) = self.ftl.read_page(fw, first + i);
                    done = done.max(t);
                    if let Some(out) = out.as_mut() {
                        out.push(tag);
                    }
                }
                done.after((*bytes * self.host_ps_per_byte).div_ceil(1000))
            }
            HostCommand::Trim { ranges } => {
                let mut pages = Vec::with_capacity(ranges.len());
                for &(offset, bytes) in ranges {
                    if offset.checked_add(bytes).is_none_or(|end| end > self.capacity_bytes()) {
                        return Err(DriveError(format!(
                            "TRIM range {offset} + {bytes} beyond the capacity of {} bytes",
                            self.capacity_bytes()
                        )));
                    }
                    // Whole pages inside the range; partial edges keep their data.
                    let first = offset.div_ceil(self.page_bytes);
                    let end = (offset + bytes) / self.page_bytes;
                    if end > first {
                        pages.push((first as u32, (end - first) as u32));
                    }
                }
                let mut cpu_ns = 0;
                for (first, count) in pages {
                    cpu_ns += self.ftl.trim_pages(fw, first, count);
                }
                self.cpu_free = fw.after(cpu_ns);
                self.cpu_free
            }
            HostCommand::Flush => {
                // No write buffer: every acknowledged write is already durable.
                self.cpu_free = fw;
                fw
            }
        };
        Ok(Completion { start, done })
    }
}
