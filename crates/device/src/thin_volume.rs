//! A thin-provisioned volume (the array of 003): space is allocated in chunks on first write and
//! released by a TRIM that covers whole chunks. Commands run on a few parallel service lanes;
//! a TRIM costs a per-command time, a per-byte time for the address range it walks and a
//! per-byte time for the allocated space it releases, and carries at most `trim_max_bytes`.

use crate::block_device::{BlockDevice, Limits, Served};
use crate::command::{Command, CommandError};
use crate::ssd::Completion;
use serde::Serialize;
use std::collections::BTreeMap;
use trimlab_sim::SimTime;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ThinConfig {
    pub capacity_bytes: u64,
    /// Allocation unit of the array.
    pub chunk_bytes: u64,
    /// Commands the array serves at once.
    pub lanes: usize,
    pub io_command_ns: u64,
    pub io_ps_per_byte: u64,
    pub trim_command_ns: u64,
    /// Walking the address range of a TRIM (allocated or not).
    pub trim_ps_per_byte: u64,
    /// Releasing allocated space.
    pub unmap_ps_per_byte: u64,
    pub trim_max_bytes: u64,
    pub max_transfer_bytes: u64,
    pub flush_ns: u64,
}

impl ThinConfig {
    /// Where [`ThinConfig::xtremio_like`]'s TRIM costs come from, for `trimlab presets`.
    pub const TRIM_SOURCE: &'static str = "003 (the XtremIO post): the ~72 GB/s of range walk the array showed while mkfs discarded a fresh 10 TB volume; the per-command and release costs are assumptions";

    /// Costs of an all-flash thin array like the XtremIO of 003: 8 KiB chunks, 8 lanes,
    /// 100 us per I/O command plus 1 GB/s per lane, 200 us per TRIM command plus 9 GB/s of
    /// range walk per lane (8 lanes: the ~72 GB/s of "throughput" 003's array showed while
    /// mkfs discarded the fresh volume) plus 4 GB/s of release, 32 MiB per TRIM command.
    /// Everything but the walk rate is trimlab's assumption.
    pub fn xtremio_like(capacity_bytes: u64) -> Self {
        ThinConfig {
            capacity_bytes,
            chunk_bytes: 8192,
            lanes: 8,
            io_command_ns: 100_000,
            io_ps_per_byte: 1_000,
            trim_command_ns: 200_000,
            trim_ps_per_byte: 111,
            unmap_ps_per_byte: 250,
            trim_max_bytes: 32 << 20,
            max_transfer_bytes: 2 << 20,
            flush_ns: 50_000,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ThinStats {
    pub writes: u64,
    pub reads: u64,
    pub trims: u64,
    pub flushes: u64,
    pub bytes_written: u64,
    pub bytes_trimmed: u64,
    pub chunks_released: u64,
}

pub struct ThinVolume {
    config: ThinConfig,
    tag_bytes: u64,
    /// start block -> (blocks, first tag): what each written block holds.
    tags: BTreeMap<u64, (u64, u64)>,
    allocated: Vec<u64>,
    allocated_chunks: u64,
    lanes: Vec<SimTime>,
    last_arrival: SimTime,
    stats: ThinStats,
}

impl ThinVolume {
    pub fn new(config: ThinConfig) -> Result<Self, String> {
        let tag_bytes = 4096;
        if config.chunk_bytes == 0 || !config.chunk_bytes.is_multiple_of(tag_bytes) {
            return Err(format!(
                "thin: chunk_bytes = {} (must be a positive multiple of 4096)",
                config.chunk_bytes
            ));
        }
        if config.capacity_bytes == 0 || !config.capacity_bytes.is_multiple_of(config.chunk_bytes) {
            return Err(format!(
                "thin: capacity_bytes = {} (must be a positive multiple of chunk_bytes)",
                config.capacity_bytes
            ));
        }
        if config.lanes == 0 || config.trim_max_bytes < tag_bytes {
            return Err("thin: lanes must be >= 1 and trim_max_bytes >= 4096".into());
        }
        // Issue 26: bounds that keep every cost a u64 of nanoseconds and the lanes allocatable.
        if config.lanes > 65_536 {
            return Err(format!("thin: lanes = {} (must be 1..=65536)", config.lanes));
        }
        for (key, ps) in [
            ("io_ps_per_byte", config.io_ps_per_byte),
            ("trim_ps_per_byte", config.trim_ps_per_byte),
            ("unmap_ps_per_byte", config.unmap_ps_per_byte),
        ] {
            if ps > crate::config::PS_PER_BYTE_MAX {
                return Err(format!(
                    "thin: {key} = {ps} (must be at most {}: 1 us per byte)",
                    crate::config::PS_PER_BYTE_MAX
                ));
            }
        }
        if config.max_transfer_bytes == 0 || config.max_transfer_bytes > 1 << 30 {
            return Err(format!(
                "thin: max_transfer_bytes = {} (must be 1 byte to 1 GiB)",
                config.max_transfer_bytes
            ));
        }
        let chunks = config.capacity_bytes / config.chunk_bytes;
        Ok(ThinVolume {
            allocated: vec![0; chunks.div_ceil(64) as usize],
            allocated_chunks: 0,
            lanes: vec![SimTime::ZERO; config.lanes],
            last_arrival: SimTime::ZERO,
            tag_bytes,
            tags: BTreeMap::new(),
            stats: ThinStats::default(),
            config,
        })
    }

    pub fn allocated_bytes(&self) -> u64 {
        self.allocated_chunks * self.config.chunk_bytes
    }

    pub fn stats(&self) -> &ThinStats {
        &self.stats
    }

    /// Serves a command of `cost_ns` on the lane that frees first.
    fn serve(&mut self, at: SimTime, cost_ns: u64) -> Completion {
        let (i, free) =
            self.lanes.iter().enumerate().min_by_key(|(_, t)| **t).map(|(i, t)| (i, *t)).unwrap_or((0, at));
        let start = at.max(free);
        let done = start.after(cost_ns);
        self.lanes[i] = done;
        Completion { start, done }
    }

    /// The range must be non-empty, 4096-aligned, inside the volume and at most `max` bytes.
    fn check_range(&self, kind: &'static str, offset: u64, bytes: u64, max: u64) -> Result<(), CommandError> {
        let tb = self.tag_bytes;
        if bytes == 0 {
            return Err(CommandError::Empty { kind, offset });
        }
        if !offset.is_multiple_of(tb) || !bytes.is_multiple_of(tb) {
            return Err(CommandError::Misaligned { kind, offset, bytes, sector_bytes: tb });
        }
        let capacity_bytes = self.config.capacity_bytes;
        if offset.checked_add(bytes).is_none_or(|end| end > capacity_bytes) {
            return Err(CommandError::OutOfRange { kind, offset, bytes, capacity_bytes });
        }
        if bytes > max {
            return Err(CommandError::TooLarge { kind, bytes, max_bytes: max });
        }
        Ok(())
    }

    /// Drops the data of `[offset, offset + bytes)` and releases the chunks it covers whole;
    /// returns how many were allocated.
    fn release(&mut self, offset: u64, bytes: u64) -> u64 {
        let (tb, chunk) = (self.tag_bytes, self.config.chunk_bytes);
        self.cut_tags(offset / tb, (offset + bytes) / tb);
        let mut released = 0;
        for c in offset.div_ceil(chunk)..(offset + bytes) / chunk {
            if self.chunk_bit(c) {
                self.set_chunk(c, false);
                released += 1;
            }
        }
        self.stats.chunks_released += released;
        released
    }

    /// Removes tags of blocks in [start, end).
    fn cut_tags(&mut self, start: u64, end: u64) {
        let hits: Vec<(u64, (u64, u64))> = self
            .tags
            .range(..end)
            .rev()
            .take_while(|(&s, &(len, _))| s + len > start || s >= start)
            .filter(|(&s, &(len, _))| s + len > start)
            .map(|(&s, &v)| (s, v))
            .collect();
        for (s, (len, tag)) in hits {
            self.tags.remove(&s);
            if s < start {
                self.tags.insert(s, (start - s, tag));
            }
            if s + len > end {
                self.tags.insert(end, (s + len - end, tag + (end - s)));
            }
        }
    }

    fn chunk_bit(&self, c: u64) -> bool {
        self.allocated[(c / 64) as usize] >> (c % 64) & 1 == 1
    }

    fn set_chunk(&mut self, c: u64, on: bool) {
        let was = self.chunk_bit(c);
        let w = &mut self.allocated[(c / 64) as usize];
        if on {
            *w |= 1 << (c % 64);
        } else {
            *w &= !(1 << (c % 64));
        }
        match (was, on) {
            (false, true) => self.allocated_chunks += 1,
            (true, false) => self.allocated_chunks -= 1,
            _ => {}
        }
    }
}

impl BlockDevice for ThinVolume {
    fn limits(&self) -> Limits {
        Limits {
            capacity_bytes: self.config.capacity_bytes,
            // Commands address whole blocks (`check_range`).
            sector_bytes: self.tag_bytes,
            tag_bytes: self.tag_bytes,
            max_transfer_bytes: self.config.max_transfer_bytes,
            trim_max_bytes: self.config.trim_max_bytes,
            // The array bounds a TRIM's bytes, not how many ranges carry them.
            trim_max_ranges: usize::MAX,
        }
    }

    fn commands_done_at(&self) -> SimTime {
        self.lanes.iter().copied().max().unwrap_or(SimTime::ZERO)
    }

    fn submit(&mut self, at: SimTime, command: &Command, read_out: Option<&mut Vec<u64>>) -> Served {
        if at < self.last_arrival {
            return Err(CommandError::OutOfOrder {
                arrival_ns: at.ns(),
                previous_ns: self.last_arrival.ns(),
            });
        }
        self.last_arrival = at;
        let c = self.config.clone();
        let kind = command.kind().name();
        match command {
            Command::Read { offset, bytes } => {
                let (offset, bytes) = (*offset, *bytes);
                self.check_range(kind, offset, bytes, c.max_transfer_bytes)?;
                self.stats.reads += 1;
                if let Some(out) = read_out {
                    out.clear();
                    let tb = self.tag_bytes;
                    for b in offset / tb..(offset + bytes) / tb {
                        let tag = match self.tags.range(..=b).next_back() {
                            Some((&s, &(len, tag))) if b < s + len => tag + (b - s),
                            _ => 0,
                        };
                        out.push(tag);
                    }
                }
                Ok(self.serve(at, c.io_command_ns + (bytes * c.io_ps_per_byte).div_ceil(1000)))
            }
            Command::Write { offset, bytes, tag } => {
                let (offset, bytes) = (*offset, *bytes);
                self.check_range(kind, offset, bytes, c.max_transfer_bytes)?;
                self.stats.writes += 1;
                self.stats.bytes_written += bytes;
                let tb = self.tag_bytes;
                let (start, end) = (offset / tb, (offset + bytes) / tb);
                self.cut_tags(start, end);
                self.tags.insert(start, (end - start, *tag));
                for chunk in offset / c.chunk_bytes..(offset + bytes).div_ceil(c.chunk_bytes) {
                    self.set_chunk(chunk, true);
                }
                Ok(self.serve(at, c.io_command_ns + (bytes * c.io_ps_per_byte).div_ceil(1000)))
            }
            Command::Trim { ranges } => {
                let total: u64 = ranges.iter().map(|r| r.bytes).sum();
                if total > c.trim_max_bytes {
                    return Err(CommandError::TooLarge { kind, bytes: total, max_bytes: c.trim_max_bytes });
                }
                for r in ranges {
                    self.check_range(kind, r.offset, r.bytes, c.trim_max_bytes)?;
                }
                self.stats.trims += 1;
                let mut cost = c.trim_command_ns;
                for r in ranges {
                    self.stats.bytes_trimmed += r.bytes;
                    let released = self.release(r.offset, r.bytes);
                    // u128: a whole-volume range at the slowest rate passes 2^64 picoseconds.
                    let ns = |ps: u128| u64::try_from(ps.div_ceil(1000)).unwrap_or(u64::MAX);
                    cost =
                        cost.saturating_add(ns(r.bytes as u128 * c.trim_ps_per_byte as u128)).saturating_add(
                            ns(released as u128 * c.chunk_bytes as u128 * c.unmap_ps_per_byte as u128),
                        );
                }
                Ok(self.serve(at, cost))
            }
            Command::Flush => {
                self.stats.flushes += 1;
                Ok(self.serve(at, c.flush_ns))
            }
        }
    }

    fn check(&self) -> Result<(), String> {
        let mut prev_end = 0;
        for (&s, &(len, _)) in &self.tags {
            if s < prev_end || len == 0 {
                return Err(format!("thin: tag runs overlap or are empty at block {s}"));
            }
            prev_end = s + len;
            let (c0, c1) = (
                s * self.tag_bytes / self.config.chunk_bytes,
                ((s + len) * self.tag_bytes).div_ceil(self.config.chunk_bytes),
            );
            if (c0..c1).any(|c| !self.chunk_bit(c)) {
                return Err(format!("thin: written block run at {s} lies in an unallocated chunk"));
            }
        }
        let counted: u64 = self.allocated.iter().map(|w| w.count_ones() as u64).sum();
        if counted != self.allocated_chunks {
            return Err(format!("thin: allocated chunk count {} != bitmap {counted}", self.allocated_chunks));
        }
        Ok(())
    }
}
