//! Data tags per host page on a drive that maps larger units (issue 27). A QLC drive of 16 or
//! 64 KiB indirection units takes 4 KiB writes and merges each into its unit by a
//! read-modify-write, so a host that checks its data per 4 KiB block (the file-system model:
//! no block reads back another's data, no write is lost to a stale TRIM) must read one tag
//! per 4 KiB page back. The FTL keeps one tag per unit (what its page holds); this keeps one
//! per host page beside it, only once a host asks for it ([`BlockDevice::use_tag_bytes`]):
//! raw-device runs and the large drives never pay for it, and a drive that does not track data
//! (`[ftl] track_data` off, every read 0) allocates nothing.
//!
//! What a host page reads:
//! - A write stores `tag + k` in its k-th host page. The rest of a unit that read as zeros
//!   before the write (never written, deallocated by a TRIM, or trimmed in the engine and not
//!   yet applied) is zeroed, as the read-modify-write merged zeros there.
//! - A read returns each host page's tag, or 0 for every page of a unit that reads as zeros.
//! - A TRIM needs no step of its own: a unit it deallocates reads as zeros from then on (its
//!   pages read 0, the next write zeroes those it leaves), and a partial unit stays mapped and
//!   keeps its pages (counted as `trim_bytes_ineffective` by the device). Clearing the tags at
//!   the TRIM would be wrong where the data survives it: the `none` engine ignores the TRIM,
//!   and a delayed TRIM lost at a power cut leaves the unit readable.
//!
//! Whether a unit reads as zeros is asked of the same state the device's read path asks (the
//! engine's pending TRIMs, the write buffer, the FTL's map), so the two cannot disagree.
//! Assumption: power cuts (`Ssd::power_cut`, only `serve` cuts power, and it keeps its own
//! copy of the data) do not revert host-page tags: a lost buffered write's pages keep its tags.
//!
//! [`BlockDevice::use_tag_bytes`]: crate::BlockDevice::use_tag_bytes

use crate::config::SsdConfig;
use trimlab_ftl::{Ftl, Lpn, WriteBuffer};
use trimlab_trim::TrimEngine;

/// One tag per host page of the logical space, beside the FTL's tag per unit.
pub struct HostPageTags {
    page_bytes: u64,
    pages_per_unit: u64,
    /// Indexed by host page; empty when the drive does not track data.
    tags: Tags,
    /// A read's unit tags while they are expanded to pages.
    scratch: Vec<u64>,
}

/// The tags, 4 bytes each while every tag fits (a host numbers its blocks written from 1, so
/// 2^32 of them is 16 TiB written in 4 KiB blocks), widened to 8 bytes in place the first time
/// one does not: exact either way, half the memory on the drives it is asked of (a 1 TiB
/// drive has 2^28 host pages: 1 GiB narrow instead of 2).
enum Tags {
    Narrow(Vec<u32>),
    Wide(Vec<u64>),
}

impl Tags {
    fn is_empty(&self) -> bool {
        match self {
            Tags::Narrow(t) => t.is_empty(),
            Tags::Wide(t) => t.is_empty(),
        }
    }

    fn get(&self, page: usize) -> u64 {
        match self {
            Tags::Narrow(t) => u64::from(t[page]),
            Tags::Wide(t) => t[page],
        }
    }

    fn heap_bytes(&self) -> usize {
        match self {
            Tags::Narrow(t) => t.capacity() * std::mem::size_of::<u32>(),
            Tags::Wide(t) => t.capacity() * std::mem::size_of::<u64>(),
        }
    }

    fn zero(&mut self, pages: std::ops::Range<usize>) {
        match self {
            Tags::Narrow(t) => t[pages].fill(0),
            Tags::Wide(t) => t[pages].fill(0),
        }
    }

    /// Page `first + k` gets `tag + k` for each page of `pages`.
    fn number(&mut self, pages: std::ops::Range<usize>, tag: u64) {
        let last = tag.wrapping_add(pages.len().saturating_sub(1) as u64);
        if let Tags::Narrow(t) = self {
            if last >= tag && u32::try_from(last).is_ok() {
                for (k, page) in pages.enumerate() {
                    t[page] = tag as u32 + k as u32;
                }
                return;
            }
            *self = Tags::Wide(t.iter().map(|&x| u64::from(x)).collect());
        }
        if let Tags::Wide(t) = self {
            for (k, page) in pages.enumerate() {
                t[page] = tag.wrapping_add(k as u64);
            }
        }
    }
}

/// The device state that says whether a unit holds data (borrowed from the `Ssd`).
pub struct UnitData<'a> {
    engine: &'a dyn TrimEngine,
    buffer: &'a WriteBuffer,
    ftl: &'a dyn Ftl,
}

impl<'a> UnitData<'a> {
    pub fn new(engine: &'a dyn TrimEngine, buffer: &'a WriteBuffer, ftl: &'a dyn Ftl) -> Self {
        UnitData { engine, buffer, ftl }
    }

    /// Whether `unit` reads as zeros, in the order the device's read path asks: a TRIM pending
    /// in the engine, else the write buffer, else the FTL's map.
    fn reads_as_zeros(&self, unit: Lpn) -> bool {
        self.engine.reads_as_trimmed(unit)
            || (self.buffer.lookup(unit).is_none() && !self.ftl.is_mapped(unit))
    }
}

impl HostPageTags {
    pub(crate) fn new(config: &SsdConfig) -> Self {
        let pages_per_unit = config.pages_per_unit();
        let pages =
            if config.track_data { config.logical_pages as usize * pages_per_unit as usize } else { 0 };
        HostPageTags {
            page_bytes: config.host_page_bytes as u64,
            pages_per_unit,
            tags: Tags::Narrow(vec![0; pages]),
            scratch: Vec::new(),
        }
    }

    /// The host page each tag covers.
    pub fn page_bytes(&self) -> u64 {
        self.page_bytes
    }

    pub fn heap_bytes(&self) -> usize {
        self.tags.heap_bytes() + self.scratch.capacity() * std::mem::size_of::<u64>()
    }

    /// The host pages `[first, end)` a command of `bytes` at `offset` touches.
    fn pages_of(&self, offset: u64, bytes: u64) -> (u64, u64) {
        (offset / self.page_bytes, (offset + bytes).div_ceil(self.page_bytes))
    }

    /// A write of `bytes` at `offset` carrying `tag`, before the device changes any state for
    /// it (so `data` still says what the units held).
    pub fn write(&mut self, offset: u64, bytes: u64, tag: u64, data: UnitData) {
        if self.tags.is_empty() {
            return;
        }
        let (first, end) = self.pages_of(offset, bytes);
        let ppu = self.pages_per_unit;
        // Only the end units can be covered in part; a unit covered whole is overwritten below.
        for unit in [first / ppu, (end - 1) / ppu] {
            let pages = unit * ppu..(unit + 1) * ppu;
            let whole = first <= pages.start && end >= pages.end;
            if !whole && data.reads_as_zeros(Lpn(unit as u32)) {
                self.tags.zero(pages.start as usize..pages.end as usize);
            }
        }
        self.tags.number(first as usize..end as usize, tag);
    }

    /// Turns a read's tags in `out`, one per unit of the command, into one per host page.
    pub fn read(&mut self, offset: u64, bytes: u64, data: UnitData, out: &mut Vec<u64>) {
        std::mem::swap(&mut self.scratch, out);
        out.clear();
        let (first, end) = self.pages_of(offset, bytes);
        let ppu = self.pages_per_unit;
        let first_unit = first / ppu;
        let mut unit = u64::MAX;
        let mut zeros = true;
        for page in first..end {
            if page / ppu != unit {
                unit = page / ppu;
                zeros = self.tags.is_empty() || data.reads_as_zeros(Lpn(unit as u32));
                // The device's read path asked the same state: a tag there is a bug here.
                let device_tag = self.scratch[(unit - first_unit) as usize];
                assert!(
                    !zeros || self.tags.is_empty() || device_tag == 0,
                    "host_page_tags H1: unit {unit} reads as zeros here but the device read tag {device_tag}"
                );
            }
            out.push(if zeros { 0 } else { self.tags.get(page as usize) });
        }
    }
}
