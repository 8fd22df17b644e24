//! The SSD: the host interface's queueing rules in front of the controller (firmware time,
//! write buffer, TRIM engine, FTL).
//!
//! A command is served when it is submitted: every resource it needs (a queue slot, the
//! controller CPU, buffer slots, dies and channels) is reserved at the earliest instant it is
//! free, and the completion time comes back. The caller submits in non-decreasing arrival order
//! (the workload runner's event queue guarantees it), so first come is first served everywhere.

use crate::command::{ByteRange, Command, CommandError, CommandKind};
use crate::config::SsdConfig;
use crate::host_page_tags::{HostPageTags, UnitData};
use crate::lifetime::{self, Lifetime, Wear};
use crate::metrics::{
    self, Baseline, DeviceReport, EraseSummary, FtlReport, HostCounters, Latencies, LatencyReport, TrimReport,
};
use crate::outstanding::Outstanding;
use crate::timeseries::{self as ts, DeviceCounters, Row, Timeseries};
use trimlab_ftl::{Ftl, Lpn, PageData, WearLevellingStats, WriteBuffer};
use trimlab_sim::{ByteUnit, SimTime};
use trimlab_trim::{Controller, PageRange, TrimEngine};

/// When a command started service and when it completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    pub start: SimTime,
    pub done: SimTime,
}

pub struct Ssd {
    config: SsdConfig,
    ftl: Box<dyn Ftl>,
    buffer: WriteBuffer,
    engine: Box<dyn TrimEngine + Send>,
    /// The controller firmware is one resource: TRIM processing delays the commands behind it.
    cpu_free: SimTime,
    /// The host link in each direction (PCIe, SATA and UFS links are full duplex) is one
    /// resource: write data crosses it in submission order, read data in the order reads
    /// finish on flash (first reserved, first served), so the link caps bandwidth.
    link_to_device_free: SimTime,
    link_to_host_free: SimTime,
    /// Completion times of the commands in the queue.
    outstanding: Outstanding,
    /// A non-queued TRIM holds the queue until it completes.
    blocked_until: SimTime,
    /// The latest completion of any host command: the device is idle after it.
    commands_done_at: SimTime,
    /// Idle time up to here has been offered to the TRIM engine already.
    idle_offered_until: SimTime,
    host: HostCounters,
    latencies: Latencies,
    baseline: Baseline,
    measure_start: SimTime,
    scratch_ranges: Vec<PageRange>,
    scratch_batch: Vec<(Lpn, u64)>,
    /// When the full check runs after a TRIM (tests; see `trimlab_ftl::verify`).
    verify_cadence: trimlab_ftl::verify::Cadence,
    /// Per-interval samples, when enabled (see the last `impl Ssd` block).
    timeseries: Option<Timeseries>,
    /// Device pages per mapping unit (`SsdConfig::pages_per_unit`), read on every page written.
    pages_per_unit: u64,
    /// The sector and the mapping unit as divisors, made once: made per command (an out-of-line
    /// call each) they were 1.4 % of a trace replay's simulation thread (issue 27).
    sector_unit: ByteUnit,
    page_unit: ByteUnit,
    /// One data tag per host page, once a host asks for them (`Ssd::use_tag_bytes`).
    pub(crate) host_page_tags: Option<HostPageTags>,
    /// Host bytes written before the measured phase started (its counters restart there), so
    /// that [`Ssd::wear`] counts since the device was built.
    host_bytes_before_measure: u64,
    /// `run --record` of a block workload: every command as it arrives (a file system's
    /// commands are recorded by `Metered`, above the file system's device, instead).
    pub recording: Option<crate::recording::Recording>,
}

impl Ssd {
    pub fn new(config: SsdConfig) -> Self {
        let ftl = config.build_ftl();
        let buffer = WriteBuffer::new(config.write_buffer_pages as usize, config.flush_batch_pages());
        let engine = config.trim_engine.build(
            config.trim_cost.clone(),
            config.trim_keys.of(config.trim_engine),
            config.logical_pages,
            config.geometry.page_bytes as u64,
        );
        Ssd {
            ftl,
            buffer,
            engine,
            cpu_free: SimTime::ZERO,
            link_to_device_free: SimTime::ZERO,
            link_to_host_free: SimTime::ZERO,
            outstanding: Outstanding::default(),
            blocked_until: SimTime::ZERO,
            commands_done_at: SimTime::ZERO,
            idle_offered_until: SimTime::ZERO,
            host: HostCounters::default(),
            latencies: Latencies::new(),
            baseline: Baseline::default(),
            measure_start: SimTime::ZERO,
            scratch_ranges: Vec::new(),
            scratch_batch: Vec::new(),
            verify_cadence: Default::default(),
            timeseries: None,
            pages_per_unit: config.pages_per_unit(),
            sector_unit: ByteUnit::new(config.sector_bytes),
            page_unit: ByteUnit::new(config.geometry.page_bytes as u64),
            host_page_tags: None,
            host_bytes_before_measure: 0,
            recording: None,
            config,
        }
    }

    pub fn config(&self) -> &SsdConfig {
        &self.config
    }

    pub fn ftl(&self) -> &dyn Ftl {
        self.ftl.as_ref()
    }

    pub fn engine(&self) -> &dyn TrimEngine {
        self.engine.as_ref()
    }

    pub fn capacity_bytes(&self) -> u64 {
        self.config.logical_bytes()
    }

    /// The mapping unit: what a logical page number addresses (not the flash page).
    pub fn page_bytes(&self) -> u64 {
        self.config.geometry.page_bytes as u64
    }

    /// The latest completion of any command submitted so far.
    pub fn commands_done_at(&self) -> SimTime {
        self.commands_done_at
    }

    /// Bytes of heap the model holds (maps, block state, buffer); excludes allocator overhead.
    pub fn heap_bytes(&self) -> usize {
        self.ftl.heap_bytes()
            + self.buffer.capacity_pages() * 32
            + self.engine.heap_bytes()
            + self.host_page_tags.as_ref().map_or(0, HostPageTags::heap_bytes)
    }

    /// Starts the measured phase at `now`: counters restart, device state stays.
    pub fn start_measurement(&mut self, now: SimTime) {
        let wear = self.wear(now);
        self.host_bytes_before_measure = wear.host_bytes_written;
        self.baseline = Baseline {
            flash: self.ftl.flash().counters().clone(),
            ftl: self.ftl.stats(),
            trim: self.engine.stats().clone(),
            trim_figures: self.engine.figures(),
            wear,
            wear_levelling: self.ftl.wear_levelling(),
        };
        self.host = HostCounters::default();
        self.latencies = Latencies::new();
        self.measure_start = now;
        self.timeseries_restart(now);
    }

    /// Serves one command arriving at `arrival`. Reads put one data tag per page in `read_out`
    /// (0 for zeros) when it is given.
    pub fn submit(
        &mut self,
        arrival: SimTime,
        command: &Command,
        read_out: Option<&mut Vec<u64>>,
    ) -> Result<Completion, CommandError> {
        self.validate(command)?;
        if let Some(r) = self.recording.as_mut() {
            r.command(arrival, command);
        }
        self.timeseries_advance(arrival);
        let waited = self.outstanding.admit(arrival, self.config.queue_depth as usize);
        let mut start = arrival.max(self.blocked_until);
        if let Some(t) = waited {
            start = start.max(t);
        }
        let non_queued_trim = matches!(command, Command::Trim { .. }) && !self.config.trim_queued;
        if non_queued_trim {
            // A non-queued command waits for the queue to drain (ATA: not an NCQ command).
            if let Some(drained) = self.outstanding.drain() {
                start = start.max(drained);
            }
        }
        start = self.offer_idle_time(start);

        let done = match command {
            Command::Read { offset, bytes } => self.read(start, *offset, *bytes, read_out),
            Command::Write { offset, bytes, tag } => self.write(start, *offset, *bytes, *tag),
            Command::Trim { ranges } => self.trim(start, ranges),
            Command::Flush => self.flush(start),
        };

        self.outstanding.push(done);
        self.commands_done_at = self.commands_done_at.max(done);
        if non_queued_trim {
            self.blocked_until = done;
        }
        self.latencies.record(command.kind(), done.since(arrival));
        self.timeseries_record(command, done.since(arrival));
        Ok(Completion { start, done })
    }

    fn validate(&self, command: &Command) -> Result<(), CommandError> {
        let check = |kind: &'static str, offset: u64, bytes: u64, max: u64| {
            let sector = self.config.sector_bytes;
            if bytes == 0 {
                return Err(CommandError::Empty { kind, offset });
            }
            let unit = self.sector_unit;
            if !unit.divides(offset) || !unit.divides(bytes) {
                return Err(CommandError::Misaligned { kind, offset, bytes, sector_bytes: sector });
            }
            let capacity = self.capacity_bytes();
            if offset.checked_add(bytes).is_none_or(|end| end > capacity) {
                return Err(CommandError::OutOfRange { kind, offset, bytes, capacity_bytes: capacity });
            }
            if bytes > max {
                return Err(CommandError::TooLarge { kind, bytes, max_bytes: max });
            }
            Ok(())
        };
        match command {
            Command::Read { offset, bytes } => check("read", *offset, *bytes, self.config.max_transfer_bytes),
            Command::Write { offset, bytes, .. } => {
                check("write", *offset, *bytes, self.config.max_transfer_bytes)
            }
            Command::Trim { ranges } => {
                if ranges.is_empty() || ranges.len() > self.config.trim_max_ranges as usize {
                    return Err(CommandError::TooManyRanges {
                        ranges: ranges.len(),
                        max_ranges: self.config.trim_max_ranges as usize,
                    });
                }
                let mut total = 0u64;
                for r in ranges {
                    check("trim", r.offset, r.bytes, self.config.trim_max_bytes)?;
                    total += r.bytes;
                }
                if total > self.config.trim_max_bytes {
                    return Err(CommandError::TooLarge {
                        kind: "trim",
                        bytes: total,
                        max_bytes: self.config.trim_max_bytes,
                    });
                }
                Ok(())
            }
            Command::Flush => Ok(()),
        }
    }

    /// Gives the TRIM engine the idle time before a command that arrives after a long gap.
    /// Returns when the command can start (deferred work in progress finishes its chunk).
    /// The test inline, the work out of line: every command asks, few find the device idle, and
    /// called for the test alone it cost a call per command (issue 27).
    #[inline]
    fn offer_idle_time(&mut self, start: SimTime) -> SimTime {
        let idle_from =
            self.commands_done_at.after(self.config.idle_threshold_ns).max(self.idle_offered_until);
        if start <= idle_from {
            return start;
        }
        self.use_idle_time(idle_from, start)
    }

    #[inline(never)]
    fn use_idle_time(&mut self, idle_from: SimTime, start: SimTime) -> SimTime {
        let ctl = Controller { ftl: self.ftl.as_mut(), buffer: &mut self.buffer, now: idle_from };
        let end = self.engine.on_idle(idle_from, start, ctl);
        self.cpu_free = self.cpu_free.max(end);
        self.idle_offered_until = start.max(end);
        self.idle_gc(idle_from.max(end), start);
        start.max(end)
    }

    /// Idle-time GC between `from` and `until`: planes take turns, one victim each, while their
    /// die is free before `until` and they are under the target. A victim started before `until`
    /// finishes on its die, so a host command arriving then waits at most one victim there.
    fn idle_gc(&mut self, from: SimTime, until: SimTime) {
        let target = self.config.idle_gc_free_blocks;
        if target == 0 {
            return;
        }
        let planes = self.config.geometry.plane_count();
        let mut busy = true;
        while busy {
            busy = false;
            for plane in 0..planes {
                let block = self.config.geometry.first_block_of_plane(plane);
                let at = from.max(self.ftl.flash().die_free_at(block));
                if at < until && self.ftl.collect_idle(at, plane, target).is_some() {
                    busy = true;
                }
            }
        }
    }

    /// Tells the device the host stays idle until `until` (end of a trace, an idle phase).
    pub fn idle_until(&mut self, until: SimTime) {
        self.offer_idle_time(until);
    }

    #[inline]
    fn firmware(&mut self, start: SimTime, busy_ns: u64) -> SimTime {
        self.cpu_free = start.max(self.cpu_free).after(busy_ns);
        self.cpu_free
    }

    #[inline]
    fn host_transfer_ns(&self, bytes: u64) -> u64 {
        (bytes * self.config.host_transfer_ps_per_byte).div_ceil(1000)
    }

    #[inline]
    fn pages_of(&self, offset: u64, bytes: u64) -> (u32, u32) {
        let page = self.page_unit;
        let end = offset + bytes;
        (page.divide(offset) as u32, page.count_ceil(end) as u32)
    }

    fn read(&mut self, start: SimTime, offset: u64, bytes: u64, mut out: Option<&mut Vec<u64>>) -> SimTime {
        self.host.read_commands += 1;
        let t0 = self.firmware(start, self.config.firmware_ns);
        if let Some(out) = out.as_deref_mut() {
            out.clear();
        }
        let (first, end) = self.pages_of(offset, bytes);
        let mut done = t0;
        for lpn in (first..end).map(Lpn) {
            self.host.pages_read += 1;
            let tag = if self.engine.reads_as_trimmed(lpn) {
                self.host.pages_read_unmapped += 1;
                0
            } else if let Some(tag) = self.buffer.lookup(lpn) {
                self.host.pages_read_from_buffer += 1;
                tag
            } else {
                match self.ftl.read(t0, lpn) {
                    (PageData::Unmapped, _) => {
                        self.host.pages_read_unmapped += 1;
                        0
                    }
                    (PageData::Mapped(tag), t) => {
                        done = done.max(t);
                        tag
                    }
                }
            };
            if let Some(out) = out.as_deref_mut() {
                out.push(tag);
            }
        }
        if let (Some(tags), Some(out)) = (&mut self.host_page_tags, out) {
            tags.read(offset, bytes, UnitData::new(&*self.engine, &self.buffer, &*self.ftl), out);
        }
        let link = done.max(self.link_to_host_free);
        self.link_to_host_free = link.after(self.host_transfer_ns(bytes));
        self.link_to_host_free
    }

    fn write(&mut self, start: SimTime, offset: u64, bytes: u64, tag: u64) -> SimTime {
        self.host.write_commands += 1;
        let page = self.page_bytes();
        let link = self.firmware(start, self.config.firmware_ns).max(self.link_to_device_free);
        self.link_to_device_free = link.after(self.host_transfer_ns(bytes));
        let t0 = self.link_to_device_free;
        let (first, end) = self.pages_of(offset, bytes);
        if let Some(tags) = &mut self.host_page_tags {
            tags.write(offset, bytes, tag, UnitData::new(&*self.engine, &self.buffer, &*self.ftl));
        }
        let mut done = t0;
        for (i, lpn) in (first..end).map(Lpn).enumerate() {
            self.host.pages_written += 1;
            let page_start = lpn.0 as u64 * page;
            let partial = offset > page_start || offset + bytes < page_start + page;
            // A page whose TRIM is still pending reads as zeros: nothing to merge from flash.
            let pending_trim = partial && self.engine.reads_as_trimmed(lpn);
            self.engine.on_write(lpn);
            let mut ready = t0;
            if partial && !pending_trim && self.buffer.lookup(lpn).is_none() && self.ftl.is_mapped(lpn) {
                // The rest of the page must come from flash before the page is rewritten whole.
                self.host.read_modify_writes += 1;
                ready = self.ftl.read(t0, lpn).1;
            }
            if self.pages_per_unit > 1 {
                self.host.unit_pages_filled += self.unit_pages_uncovered(page_start, offset, bytes);
            }
            let page_tag = tag.wrapping_add(i as u64);
            let page_done = if self.buffer.is_enabled() {
                self.buffer_write(ready, lpn, page_tag)
            } else {
                self.program(ready, lpn, page_tag)
            };
            done = done.max(page_done);
        }
        done
    }

    /// Device pages of the unit at `unit_start` that a write of `bytes` at `offset` leaves
    /// uncovered: the read-modify-write programs them again (a device page the write touches
    /// in part counts as covered, as a sub-page write counts as a page without units).
    fn unit_pages_uncovered(&self, unit_start: u64, offset: u64, bytes: u64) -> u64 {
        let page = self.config.host_page_bytes as u64;
        let from = offset.max(unit_start);
        let to = (offset + bytes).min(unit_start + self.page_bytes());
        self.pages_per_unit - (to.div_ceil(page) - from / page)
    }

    /// Puts a page in the write buffer, flushing the oldest pages and waiting for a slot when it
    /// is full. Returns when the page is in DRAM.
    fn buffer_write(&mut self, mut now: SimTime, lpn: Lpn, tag: u64) -> SimTime {
        if self.buffer.overwrite(lpn, tag) {
            self.host.pages_coalesced_in_buffer += 1;
            return now;
        }
        while !self.buffer.has_free_slot(now) {
            if self.buffer.dirty_pages() > 0 {
                self.flush_oldest(now, self.buffer.flush_batch_pages());
            } else if let Some(t) = self.buffer.next_release() {
                now = now.max(t);
            } else {
                unreachable!("ssd: write buffer full with nothing dirty or in flight");
            }
        }
        self.buffer.admit(lpn, tag);
        now
    }

    fn flush_oldest(&mut self, now: SimTime, pages: usize) {
        let mut batch = std::mem::take(&mut self.scratch_batch);
        self.buffer.take_oldest(pages, &mut batch);
        self.ftl.warm(&batch);
        let mut done = now;
        for &(lpn, tag) in &batch {
            done = done.max(self.ftl.write(now, lpn, tag));
        }
        // The batch's full flash pages are programmed now, whatever planes the die still lacks;
        // its slots free when the last program ends. A partly filled flash page (a short batch)
        // stays in the controller's page buffer until more pages or a FLUSH fill it.
        done = done.max(self.ftl.program_ready(now));
        self.buffer.programmed_pages(done, batch.len() as u32);
        // GC (and the TRIM work it forces first) waits for the whole batch: a deferred TRIM
        // applied while a page is between the buffer and flash would be undone by its program.
        self.run_gc(now);
        self.scratch_batch = batch;
    }

    /// Programs one page and runs any GC it triggered.
    #[inline]
    fn program(&mut self, now: SimTime, lpn: Lpn, tag: u64) -> SimTime {
        let done = self.ftl.write(now, lpn, tag);
        self.run_gc(now);
        done
    }

    /// Runs the GC the FTL asked for, after the TRIM engine's pre-GC work.
    fn run_gc(&mut self, now: SimTime) {
        while let Some(plane) = self.ftl.take_gc_request() {
            // Pre-GC TRIM work runs on the controller CPU after what it is already doing; GC
            // waits for it, and starts at once when there is none.
            let cpu_at = now.max(self.cpu_free);
            let ctl = Controller { ftl: self.ftl.as_mut(), buffer: &mut self.buffer, now: cpu_at };
            let ready = self.engine.before_gc(cpu_at, ctl);
            let gc_start = if ready > cpu_at {
                self.cpu_free = ready;
                ready
            } else {
                now
            };
            self.ftl.collect_garbage(gc_start, plane);
        }
    }

    fn trim(&mut self, start: SimTime, ranges: &[ByteRange]) -> SimTime {
        self.host.trim_commands += 1;
        let page = self.page_bytes();
        let granule = self.config.trim_granularity_bytes;
        let mut page_ranges = std::mem::take(&mut self.scratch_ranges);
        page_ranges.clear();
        for r in ranges {
            self.host.pages_trim_requested += r.bytes / page;
            // Only whole granules are deallocated; the partial edges keep their data, as drives do.
            let first = r.offset.div_ceil(granule) * granule;
            let end = (r.offset + r.bytes) / granule * granule;
            if end > first {
                page_ranges.push(PageRange {
                    start: Lpn((first / page) as u32),
                    count: ((end - first) / page) as u32,
                });
            }
            if self.pages_per_unit > 1 {
                // The partial units at the ends stay mapped: that part of the TRIM buys nothing.
                self.host.trim_bytes_ineffective += r.bytes - end.saturating_sub(first);
                self.host.trim_bytes_with_unit += r.bytes;
            }
        }
        let ctl = Controller { ftl: self.ftl.as_mut(), buffer: &mut self.buffer, now: start };
        let steps = self.engine.trim(&page_ranges, ctl);
        self.scratch_ranges = page_ranges;
        if trimlab_ftl::verify::enabled() {
            let trimmed: u64 = self.scratch_ranges.iter().map(|r| r.count as u64).sum();
            if self.verify_cadence.due(trimmed.max(1), self.ftl.geometry().physical_pages() as u64) {
                self.ftl.check().unwrap_or_else(|e| panic!("after TRIM: {e}"));
            }
        }
        self.firmware(start, steps.total_ns())
    }

    fn flush(&mut self, start: SimTime) -> SimTime {
        self.host.flush_commands += 1;
        let t0 = self.firmware(start, self.config.firmware_ns);
        let dirty = self.buffer.dirty_pages();
        if dirty > 0 {
            self.flush_oldest(t0, dirty);
        }
        // Partly filled flash pages are padded and programmed: a FLUSH makes every write durable.
        let synced = self.ftl.sync(t0);
        self.run_gc(t0);
        self.buffer.drained_at(t0).max(synced)
    }

    /// The full consistency check of FTL and TRIM engine.
    pub fn check(&self) -> Result<(), String> {
        self.ftl.check()?;
        self.engine.check(self.ftl.as_ref())
    }

    /// NAND bytes programmed per host byte written, in device pages: with a mapping unit of
    /// several pages, a unit programmed counts its pages and a sub-unit write only the pages
    /// it covered, so the read-modify-write's extra programs raise the WAF as on a real drive.
    fn waf(&self, units_programmed: u64) -> f64 {
        let per_unit = self.pages_per_unit;
        let host_pages = self.host.pages_written * per_unit - self.host.unit_pages_filled;
        if host_pages == 0 {
            0.0
        } else {
            (units_programmed * per_unit) as f64 / host_pages as f64
        }
    }

    /// The wear counters at `now`, cumulative since the device was built: what a caller
    /// subtracts to get a round's host and NAND bytes and erases (crate::lifetime). Counters,
    /// and one pass over the blocks' erase counts for the maximum.
    pub fn wear(&self, now: SimTime) -> Wear {
        let flash = self.ftl.flash();
        let host_pages = self.host.pages_written * self.pages_per_unit - self.host.unit_pages_filled;
        Wear {
            at_ns: now.ns(),
            host_bytes_written: self.host_bytes_before_measure
                + host_pages * self.config.host_page_bytes as u64,
            nand_bytes_programmed: flash.counters().pages_programmed * self.config.geometry.page_bytes as u64,
            blocks_erased: flash.counters().blocks_erased,
            erase_count_max: flash.erase_counts().iter().copied().max().unwrap_or(0),
        }
    }

    /// Every erase block's erase count now (block order).
    pub fn erase_counts(&self) -> &[u32] {
        self.ftl.flash().erase_counts()
    }

    /// The lifetime projection over the measured span ending at `end` (`None` without a rated
    /// P/E count or host writes; crate::lifetime).
    fn lifetime(&self, end: SimTime) -> Option<Lifetime> {
        let c = &self.config;
        let blocks = c.geometry.block_count() as u64;
        lifetime::project(&c.rating, blocks, c.logical_bytes(), &self.baseline.wear, &self.wear(end))
    }

    /// Static wear levelling's work over the measured span (`None` when it is off).
    fn wear_levelling_since(&self) -> Option<WearLevellingStats> {
        let now = self.ftl.wear_levelling()?;
        let base = self.baseline.wear_levelling.clone().unwrap_or_default();
        Some(WearLevellingStats {
            moves: now.moves - base.moves,
            pages_copied: now.pages_copied - base.pages_copied,
            fruitless_searches: now.fruitless_searches - base.fruitless_searches,
        })
    }

    /// The measures of the run so far (since [`Ssd::start_measurement`]), ending at `end`.
    pub fn report(&self, end: SimTime) -> DeviceReport {
        let flash = self.ftl.flash().counters();
        let base = &self.baseline;
        let programmed = flash.pages_programmed - base.flash.pages_programmed;
        let sim_time_ns = end.since(self.measure_start);
        DeviceReport {
            sim_time_ns,
            nand_pages_programmed: programmed,
            nand_pages_read: flash.pages_read - base.flash.pages_read,
            nand_blocks_erased: flash.blocks_erased - base.flash.blocks_erased,
            nand_flash_pages_read: flash.flash_pages_read - base.flash.flash_pages_read,
            nand_flash_pages_programmed: flash.flash_pages_programmed - base.flash.flash_pages_programmed,
            nand_program_operations: flash.program_operations - base.flash.program_operations,
            nand_pages_padded: self.ftl.stats().pages_padded - base.ftl.pages_padded,
            waf: self.waf(programmed),
            gc: metrics::gc_report(&self.ftl.stats(), &base.ftl),
            trim: TrimReport {
                trim_bytes_ineffective: self.host.trim_bytes_ineffective,
                ..metrics::trim_report(self.engine.as_ref(), base)
            },
            latency: LatencyReport {
                read: self.latencies.summary(CommandKind::Read),
                write: self.latencies.summary(CommandKind::Write),
                trim: self.latencies.summary(CommandKind::Trim),
                flush: self.latencies.summary(CommandKind::Flush),
            },
            erase_count: EraseSummary::of(self.ftl.flash().erase_counts()),
            wear_levelling: self.wear_levelling_since(),
            lifetime: self.lifetime(end),
            valid_pages: self.ftl.valid_pages(),
            spare_factor: self.config.spare_factor,
            spare_factor_seen_by_gc: self.config.spare_factor_seen_by_gc(),
            logical_pages: self.config.logical_pages as u64,
            physical_pages: self.config.geometry.physical_pages() as u64,
            host_pages_written_per_sim_s: if sim_time_ns == 0 {
                0.0
            } else {
                self.host.pages_written as f64 * 1e9 / sim_time_ns as f64
            },
            host: self.host.clone(),
            ftl: FtlReport {
                kind: self.ftl.kind().to_string(),
                measures: self.ftl.measures(),
                detail: Some(self.ftl.detail()),
            },
        }
    }
}

/// Time series and latency histograms (fio's `log_avg_msec` and `log_hist_msec`): one seam for
/// `run`, `replay` and `serve`, which only enable it and write what it collected.
impl Ssd {
    /// Samples the device every `interval_ns` of simulated time from `now` on (see
    /// [`crate::timeseries`]). `interval_ns` must be positive.
    pub fn enable_timeseries(&mut self, interval_ns: u64, now: SimTime) {
        self.timeseries =
            Some(Timeseries::new(interval_ns, now, self.device_counters(), self.pages_per_unit));
    }

    pub fn timeseries_enabled(&self) -> bool {
        self.timeseries.is_some()
    }

    /// The measured phase starts: the series restarts with it, so its sums match the report.
    fn timeseries_restart(&mut self, now: SimTime) {
        if let Some(interval_ns) = self.timeseries.as_ref().map(Timeseries::interval_ns) {
            self.enable_timeseries(interval_ns, now);
        }
    }

    /// Host pages in the write buffer not yet programmed to flash.
    pub fn buffered_pages(&self) -> u64 {
        self.buffer.dirty_pages() as u64
    }

    /// Programs every buffered page at `now`, as a drive does when the host goes idle or shuts
    /// down, without counting a host FLUSH. Returns the pages and when they are on flash.
    pub fn drain_write_buffer(&mut self, now: SimTime) -> (u64, SimTime) {
        let dirty = self.buffer.dirty_pages();
        if dirty > 0 {
            self.flush_oldest(now, dirty);
        }
        let synced = self.ftl.sync(now);
        self.run_gc(now);
        (dirty as u64, self.buffer.drained_at(now).max(synced))
    }

    /// The rows closed so far; call [`Ssd::finish_timeseries`] first to include the last one.
    pub fn timeseries(&self) -> &[Row] {
        self.timeseries.as_ref().map_or(&[], |t| t.rows())
    }

    /// Closes the last, possibly partial, interval at `end` (the end of the run).
    pub fn finish_timeseries(&mut self, end: SimTime) {
        let (now, free) = (self.device_counters(), self.ftl.free_blocks());
        if let Some(t) = &mut self.timeseries {
            t.finish(end, now, free);
        }
    }

    /// Every command kind's latencies since the measurement started (copies): `run --fio`
    /// takes them where each of its groups starts and ends, for fio's per-group report.
    pub fn latency_histograms(&self) -> crate::metrics::LatencyHistograms {
        CommandKind::ALL.map(|kind| self.latencies.histogram(kind).into_owned())
    }

    /// A phase boundary: the latencies of the commands since the last one (or the start of the
    /// measurement), each kind summarized; `workload` counts them in [`Ssd::workload_latency`].
    pub fn end_phase_latency(&mut self, workload: bool) -> crate::metrics::LatencyReport {
        self.latencies.end_phase(workload)
    }

    /// The latencies of the phases [`Ssd::end_phase_latency`] counted as the workload's, since
    /// the measurement started (`None`: none yet).
    pub fn workload_latency(&self) -> Option<crate::metrics::LatencyReport> {
        self.latencies.workload()
    }

    /// The measured phase's latencies as CSV buckets ([`ts::HISTOGRAM_CSV_HEADER`]).
    pub fn latency_histogram_csv(&self) -> String {
        let mut out = format!("{}\n", ts::HISTOGRAM_CSV_HEADER);
        for kind in CommandKind::ALL {
            ts::histogram_csv_rows(kind.name(), &self.latencies.histogram(kind), &mut out);
        }
        out
    }

    fn device_counters(&self) -> DeviceCounters {
        let flash = self.ftl.flash().counters();
        let stats = self.ftl.stats();
        DeviceCounters {
            nand_pages_programmed: flash.pages_programmed,
            nand_blocks_erased: flash.blocks_erased,
            gc_pages_copied: stats.gc_pages_copied,
            gc_busy_ns: stats.gc_busy_ns,
            trim_pages_unmapped: self.engine.stats().pages_unmapped,
            unit_pages_filled: self.host.unit_pages_filled,
        }
    }

    /// Before a command runs: close the interval it leaves behind.
    #[inline]
    fn timeseries_advance(&mut self, arrival: SimTime) {
        if self.timeseries.as_ref().is_some_and(|t| t.due(arrival)) {
            let (now, free) = (self.device_counters(), self.ftl.free_blocks());
            if let Some(t) = &mut self.timeseries {
                t.advance(arrival, now, free);
            }
        }
    }

    /// After a command ran: count it and its latency in its interval.
    #[inline]
    fn timeseries_record(&mut self, command: &Command, latency_ns: u64) {
        let Some(t) = &mut self.timeseries else { return };
        let page = self.config.geometry.page_bytes as u64;
        let pages = match command {
            Command::Read { offset, bytes } | Command::Write { offset, bytes, .. } => {
                (offset + bytes).div_ceil(page) - offset / page
            }
            Command::Trim { ranges } => ranges.iter().map(|r| r.bytes / page).sum(),
            Command::Flush => 0,
        };
        t.record(command.kind(), pages, latency_ns);
    }
}

/// Power loss (issue 13). What a real drive loses when power goes without warning: the dirty
/// pages of its DRAM write buffer and whatever its TRIM engine keeps in volatile memory and had
/// not persisted at the last FLUSH. Assumptions: the maps and the flash survive (a drive
/// journals its map updates), and programs already handed to the flash complete.
impl Ssd {
    /// The host's FLUSH (or a FUA command) completed: the TRIM engine persists its state.
    /// Callers that may cut power call this after every FLUSH they submit.
    pub fn flush_completed(&mut self) {
        self.engine.on_flush();
    }

    /// Whether logical page `lpn` sits dirty in the write buffer (lost on a power cut).
    pub fn is_buffered(&self, lpn: u64) -> bool {
        u32::try_from(lpn).is_ok_and(|l| self.buffer.lookup(Lpn(l)).is_some())
    }

    /// Cuts power: drops the dirty write-buffer pages and the TRIM engine's unpersisted state.
    pub fn power_cut(&mut self) -> PowerCut {
        let lost_writes = self.buffer.drop_dirty().into_iter().map(|l| l.0 as u64).collect();
        let mut retrimmed = Vec::new();
        self.engine.power_cut(&mut retrimmed);
        let mut retrimmed: Vec<u64> = retrimmed.into_iter().map(|l| l.0 as u64).collect();
        retrimmed.sort_unstable();
        if trimlab_ftl::verify::enabled() {
            self.check().unwrap_or_else(|e| panic!("after a power cut: {e}"));
        }
        PowerCut { lost_writes, retrimmed }
    }
}

/// What a power cut took: logical pages, ascending.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PowerCut {
    /// Pages whose last write was still in the write buffer: they read as before that write.
    pub lost_writes: Vec<u64>,
    /// Pages whose unflushed rewrite was lost and whose flushed, still pending TRIM stands:
    /// they read as zeros.
    pub retrimmed: Vec<u64>,
}

/// The host's choice of tag unit (nbdkit-style negotiation at the block interface).
impl Ssd {
    /// The unit a read returns one tag for: the mapping unit, or the host page once asked.
    pub fn data_tag_bytes(&self) -> u64 {
        self.host_page_tags.as_ref().map_or(self.page_bytes(), HostPageTags::page_bytes)
    }

    /// Carry one data tag per `tag_bytes` from now on: the mapping unit (always), or the host
    /// page (`device.page_bytes`) on a drive whose unit is larger. Asked before anything is
    /// written, as the tags of what the drive already holds are per unit only.
    pub fn use_tag_bytes(&mut self, tag_bytes: u64) -> Result<(), String> {
        if tag_bytes == self.data_tag_bytes() {
            return Ok(());
        }
        let (unit, page) = (self.page_bytes(), self.config().host_page_bytes as u64);
        if tag_bytes != page {
            return Err(format!(
                "the device carries one data tag per {} bytes (accepted: {unit}, its mapping unit{})",
                self.data_tag_bytes(),
                if unit > page { format!(", or {page}, its page") } else { String::new() }
            ));
        }
        if self.ftl().valid_pages() > 0 || self.buffered_pages() > 0 {
            return Err(format!(
                "tags per {page}-byte page asked after data was written (the drive holds tags per {unit}-byte unit only): ask before the first write"
            ));
        }
        self.host_page_tags = Some(HostPageTags::new(self.config()));
        Ok(())
    }
}
