//! The emulated drive: the bytes (a [`Store`]) and the device model (`Ssd`) behind one
//! interface in simulated time. Every NBD command changes the store and is submitted to the
//! model at its arrival instant, so the FTL, GC and TRIM engine account for it; the model's
//! completion instant comes back for pacing. No clock is read here: the server passes arrivals.
//!
//! Mapping to model commands (the model carries a u64 tag per page, not bytes):
//! - READ / WRITE: split into pieces of at most `max_transfer_bytes`; each WRITE gets fresh tags.
//!   Sub-page writes are read-modify-write inside the model.
//! - TRIM: one model TRIM per piece of at most `trim_max_bytes` (granule-aligned). The store
//!   zeroes the exact byte range, so trimmed data reads back as zeros (ext4 relies on it).
//! - WRITE_ZEROES with NO_HOLE: a model WRITE (the area stays provisioned). Without NO_HOLE:
//!   the whole TRIM granules inside the range are a model TRIM and the partial edges are
//!   WRITEs, as a drive that deallocates for "write zeroes" would do.
//! - FLUSH: a model FLUSH and an `fdatasync` of a backing file. FUA on a command: the command,
//!   then the same as a FLUSH (the model has no per-command FUA, so this over-approximates its
//!   cost by draining the whole buffer; the backing file is synced whole for the same reason).
//!
//! Power loss ([`Drive::power_cut`], when tracked): the model says which pages a real drive
//! would lose (dirty in its write buffer, or re-trimmed by a Delayed TRIM engine going back to
//! its last persisted state), and the store follows: lost pages get back the bytes they held
//! before their unflushed writes (an undo copy kept only for pages that may be lost), re-trimmed
//! pages read zeros.
//! - CACHE: a hint; counted, not modelled.

use crate::payload::Payload;
use crate::request::Refusal;
use crate::store::Store;
use crate::wire::{EIO, ENOSPC, STATE_HOLE, STATE_ZERO};
use rustc_hash::FxHashMap;
use serde::Serialize;
use trimlab_device::{transfer_chunks, BlockDevice, Command, DeviceReport, Recording, Ssd, TrimSplitter};
use trimlab_sim::SimTime;

/// What clients sent, counted at the NBD level (bytes as requested, before any splitting).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OpCounters {
    pub read_commands: u64,
    pub read_bytes: u64,
    pub write_commands: u64,
    pub write_bytes: u64,
    pub trim_commands: u64,
    pub trim_bytes: u64,
    pub write_zeroes_commands: u64,
    pub write_zeroes_bytes: u64,
    /// WRITE_ZEROES that carried NO_HOLE (modelled as writes, not deallocation).
    pub write_zeroes_no_hole_commands: u64,
    pub flush_commands: u64,
    pub fua_commands: u64,
    pub cache_commands: u64,
    /// Requests answered with an error (bad peers, out-of-range, misaligned ...).
    pub refused_commands: u64,
    /// Commands submitted to the device model (after splitting).
    pub model_commands: u64,
    /// Power cuts injected (`POST /power-cut`, `--power-cut-after`).
    pub power_cuts: u64,
    /// BLOCK_STATUS queries (answered from the store; the model is not involved).
    pub block_status_commands: u64,
}

impl OpCounters {
    fn minus(&self, base: &OpCounters) -> OpCounters {
        OpCounters {
            read_commands: self.read_commands - base.read_commands,
            read_bytes: self.read_bytes - base.read_bytes,
            write_commands: self.write_commands - base.write_commands,
            write_bytes: self.write_bytes - base.write_bytes,
            trim_commands: self.trim_commands - base.trim_commands,
            trim_bytes: self.trim_bytes - base.trim_bytes,
            write_zeroes_commands: self.write_zeroes_commands - base.write_zeroes_commands,
            write_zeroes_bytes: self.write_zeroes_bytes - base.write_zeroes_bytes,
            write_zeroes_no_hole_commands: self.write_zeroes_no_hole_commands
                - base.write_zeroes_no_hole_commands,
            flush_commands: self.flush_commands - base.flush_commands,
            fua_commands: self.fua_commands - base.fua_commands,
            cache_commands: self.cache_commands - base.cache_commands,
            refused_commands: self.refused_commands - base.refused_commands,
            model_commands: self.model_commands - base.model_commands,
            power_cuts: self.power_cuts - base.power_cuts,
            block_status_commands: self.block_status_commands - base.block_status_commands,
        }
    }
}

/// The device-model counters of one phase (differences of two `DeviceReport`s).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PhaseReport {
    pub name: String,
    pub sim_start_ns: u64,
    pub sim_end_ns: u64,
    pub nbd: OpCounters,
    pub host_pages_written: u64,
    pub host_pages_read: u64,
    pub host_pages_trim_requested: u64,
    pub nand_pages_programmed: u64,
    pub nand_blocks_erased: u64,
    /// NAND programs / host pages written within the phase (0 when nothing was written).
    pub waf: f64,
    pub gc_invocations: u64,
    pub gc_victims: u64,
    pub gc_pages_copied: u64,
    pub trim_commands: u64,
    pub trim_ranges: u64,
    pub trim_pages_requested: u64,
    pub trim_pages_unmapped: u64,
    pub trim_foreground_ns: u64,
}

/// Everything the server reports: NBD-level counters, the device report, the phases.
#[derive(Clone, Debug, Serialize)]
pub struct DriveStats {
    pub sim_time_ns: u64,
    pub export_bytes: u64,
    pub store_resident_bytes: u64,
    pub nbd: OpCounters,
    pub phases: Vec<PhaseReport>,
    pub device: DeviceReport,
    /// Erased blocks ready for writes, over every plane (the dashboard plots it).
    pub free_blocks: u64,
    /// At shutdown only: latency histogram CSV and, when enabled, timeseries CSV.
    #[serde(skip)]
    pub series: Option<(String, Option<String>)>,
}

struct PhaseStart {
    name: String,
    at: SimTime,
    nbd: OpCounters,
    device: DeviceReport,
}

pub struct Drive {
    /// `--record`: every command the model receives (trimlab_device::Recording), so a live
    /// session can be replayed under other configurations; arrivals are kept on whole
    /// microseconds, the recording's resolution, so the replay sees the same instants.
    recorder: Option<Recording>,
    ssd: Ssd,
    store: Box<dyn Store>,
    next_tag: u64,
    ops: OpCounters,
    last_arrival: SimTime,
    phase: PhaseStart,
    phases: Vec<PhaseReport>,
    scratch: Vec<u64>,
    /// Pre-write copies of the pages a power cut may take back, when cuts are possible.
    undo: Option<UndoLog>,
    /// A command the model refused although it was valid (a trimlab bug), for the server to
    /// treat as a fault.
    fault: Option<String>,
    /// Testing the fault path: this model command (counted from 1) panics.
    panic_at: Option<u64>,
}

/// Phases kept per run: `POST /phase/NAME` beyond this is refused (each phase holds a report).
pub const PHASES_MAX: usize = 1000;

/// For each page written since the last FLUSH and possibly still in the model's write buffer,
/// its bytes before that write (`None`: all zeros). Entries of pages the model has programmed
/// since are pruned, so the log stays within a small multiple of the write buffer.
#[derive(Default)]
struct UndoLog {
    pages: FxHashMap<u64, Option<Box<[u8]>>>,
}

/// What a power cut did to the bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PowerCutReport {
    /// Pages that lost their unflushed writes (restored to their earlier bytes).
    pub pages_reverted: u64,
    /// Pages whose flushed TRIM stands again (their unflushed rewrite lost; read as zeros).
    pub pages_retrimmed: u64,
}

fn io_refusal(what: &str, e: std::io::Error) -> Refusal {
    if e.kind() == std::io::ErrorKind::StorageFull {
        return Refusal::new(ENOSPC, format!("store {what} refused: {e}"));
    }
    Refusal::new(EIO, format!("store {what} failed: {e}"))
}

impl Drive {
    pub fn new(ssd: Ssd, store: Box<dyn Store>) -> Drive {
        assert_eq!(
            store.size_bytes(),
            ssd.capacity_bytes(),
            "drive: the store must be exactly as large as the device's logical capacity"
        );
        let device = ssd.report(SimTime::ZERO);
        Drive {
            recorder: None,
            ssd,
            store,
            next_tag: 1,
            ops: OpCounters::default(),
            last_arrival: SimTime::ZERO,
            phase: PhaseStart { name: "start".into(), at: SimTime::ZERO, nbd: OpCounters::default(), device },
            phases: Vec::new(),
            scratch: Vec::new(),
            undo: None,
            fault: None,
            panic_at: None,
        }
    }

    /// Makes model command number `n` (from 1) panic, as a bug in the model would: tests of
    /// how the server survives one.
    pub fn inject_panic_after(&mut self, n: u64) {
        self.panic_at = Some(n);
    }

    /// The model error of the last command, if the model refused a command it should have
    /// taken (the server then stops the export).
    pub fn take_fault(&mut self) -> Option<String> {
        self.fault.take()
    }

    /// Keeps what a later [`Drive::power_cut`] needs (costs a copy of each page written since
    /// the last FLUSH while it may sit in the model's write buffer).
    pub fn track_power_loss(&mut self) {
        self.undo.get_or_insert_with(UndoLog::default);
    }

    /// Copies the current bytes of the pages of `[offset, offset+length)` that have no copy yet.
    fn save_for_undo(&mut self, offset: u64, length: u64) -> Result<(), Refusal> {
        let Some(undo) = self.undo.as_mut() else { return Ok(()) };
        let page = self.ssd.page_bytes();
        for lpn in offset / page..(offset + length).div_ceil(page) {
            if undo.pages.contains_key(&lpn) {
                continue;
            }
            let mut bytes = vec![0u8; page as usize];
            self.store.read(lpn * page, &mut bytes).map_err(|e| io_refusal("read for undo", e))?;
            let saved = bytes.iter().any(|&b| b != 0).then(|| bytes.into_boxed_slice());
            undo.pages.insert(lpn, saved);
        }
        Ok(())
    }

    /// Drops the copies of pages the model no longer holds in its write buffer, once the log
    /// outgrows twice the buffer (a few thousand pages at least, so pruning is rare).
    fn prune_undo(&mut self) {
        let Some(undo) = self.undo.as_mut() else { return };
        let limit = (2 * self.ssd.config().write_buffer_pages as usize).max(4096);
        if undo.pages.len() > limit {
            let ssd = &self.ssd;
            undo.pages.retain(|&lpn, _| ssd.is_buffered(lpn));
        }
    }

    /// A host FLUSH (or FUA) completed: nothing written so far can be lost any more.
    fn durable(&mut self) {
        self.ssd.flush_completed();
        if let Some(undo) = self.undo.as_mut() {
            undo.pages.clear();
        }
    }

    /// Cuts power: the model drops what a real drive would lose, and the bytes follow (see the
    /// module comment). Needs [`Drive::track_power_loss`]; without it only the model is cut.
    ///
    /// In memory a cut always completes: a page goes back by moving its undo copy into the
    /// store, past `--memory-max` if need be (the copy was already in memory; issue 26: the
    /// restore was a write, refused at the limit halfway, and the undo log was lost with it, so
    /// every later cut reverted nothing). A backing file may fail a restore: then every other
    /// page is still restored, the error says how many were not (they keep their newer,
    /// unflushed bytes, which a drive may also keep), and later cuts work as before.
    pub fn power_cut(&mut self, arrival: SimTime) -> Result<PowerCutReport, String> {
        self.arrive(arrival);
        self.ops.power_cuts += 1;
        let cut = self.ssd.power_cut();
        let page = self.ssd.page_bytes();
        let mut report = PowerCutReport::default();
        // The log starts again empty either way: a cut, like a FLUSH, ends what it may undo.
        let mut saved = self.undo.as_mut().map(|u| std::mem::take(&mut u.pages)).unwrap_or_default();
        let (mut failed, mut first_error) = (0u64, None);
        for &lpn in &cut.lost_writes {
            let Some(bytes) = saved.remove(&lpn) else { continue };
            match self.store.restore_page(lpn * page, page, bytes) {
                Ok(()) => report.pages_reverted += 1,
                Err(e) => {
                    failed += 1;
                    first_error.get_or_insert(format!("restoring page {lpn}: {e}"));
                }
            }
        }
        for &lpn in &cut.retrimmed {
            match self.store.zero(lpn * page, page) {
                Ok(()) => report.pages_retrimmed += 1,
                Err(e) => {
                    failed += 1;
                    first_error.get_or_insert(format!("zeroing page {lpn}: {e}"));
                }
            }
        }
        match first_error {
            None => Ok(report),
            Some(e) => Err(format!(
                "power cut: {failed} pages could not be put back ({e}); they keep their unflushed bytes \
                 ({} reverted, {} re-trimmed); later cuts work",
                report.pages_reverted, report.pages_retrimmed
            )),
        }
    }

    pub fn size_bytes(&self) -> u64 {
        self.ssd.capacity_bytes()
    }

    pub fn ssd(&self) -> &Ssd {
        &self.ssd
    }

    pub fn counters(&self) -> &OpCounters {
        &self.ops
    }

    /// Starts writing every model command to `out` as fio iolog v3.
    pub fn record_to(&mut self, out: Box<dyn std::io::Write + Send>) -> std::io::Result<()> {
        self.recorder = Some(Recording::start(out)?);
        Ok(())
    }

    /// Closes the recording (if any) and flushes it; the first write error of the recording,
    /// if there was one (issue 26: it came out as a model consistency failure).
    pub fn finish_recording(&mut self) -> std::io::Result<()> {
        match self.recorder.take() {
            Some(r) => r.finish(),
            None => Ok(()),
        }
    }

    /// Arrivals never go backwards, whatever the caller's clock did, and sit on whole
    /// microseconds (the resolution of a recording).
    fn arrive(&mut self, arrival: SimTime) -> SimTime {
        let arrival = SimTime(arrival.0 / 1000 * 1000);
        self.last_arrival = self.last_arrival.max(arrival);
        self.last_arrival
    }

    fn submit(&mut self, at: SimTime, command: &Command) -> Result<SimTime, Refusal> {
        self.ops.model_commands += 1;
        if self.panic_at == Some(self.ops.model_commands) {
            panic!("injected fault: model command {} panics (inject_panic_after)", self.ops.model_commands);
        }
        if let Some(r) = self.recorder.as_mut() {
            let failed = r.failed();
            r.command(at, command);
            if r.failed() && !failed {
                eprintln!("trimlab serve: --record stopped: a write to the recording failed");
            }
        }
        let out = if matches!(command, Command::Read { .. }) { Some(&mut self.scratch) } else { None };
        match BlockDevice::submit(&mut self.ssd, at, command, out) {
            Ok(c) => Ok(c.done),
            // Requests were validated against the same limits; this is a trimlab bug.
            Err(e) => {
                let message = format!("device model refused {command:?}: {e}");
                self.fault.get_or_insert_with(|| message.clone());
                Err(Refusal::new(EIO, message))
            }
        }
    }

    /// WRITEs of `[offset, offset + length)` split at the device's transfer limit, all queued at
    /// `at` (the kernel sends a large request's pieces at once); each piece gets fresh tags.
    fn model_write(&mut self, at: SimTime, offset: u64, length: u64) -> Result<SimTime, Refusal> {
        let limits = self.ssd.limits();
        let mut done = at;
        for (pos, bytes) in transfer_chunks(offset, length, limits.max_transfer_bytes) {
            let tag = self.next_tag;
            self.next_tag += bytes.div_ceil(limits.tag_bytes) + 1;
            done = done.max(self.submit(at, &Command::Write { offset: pos, bytes, tag })?);
        }
        Ok(done)
    }

    /// TRIMs of `[offset, offset + length)`, one range per command, cut on TRIM granules so that
    /// splitting deallocates every whole granule (as the block layer cuts discards on the
    /// discard granularity), all queued at `at`.
    fn model_trim(&mut self, at: SimTime, offset: u64, length: u64) -> Result<SimTime, Refusal> {
        let granule = self.ssd.config().trim_granularity_bytes;
        let mut splitter =
            TrimSplitter::for_device(&self.ssd.limits()).ranges_per_command(1).aligned_to(granule);
        let mut done = at;
        splitter.split([(offset, length)], |command| {
            done = done.max(self.submit(at, command)?);
            Ok(())
        })?;
        Ok(done)
    }

    fn fua(&mut self, at: SimTime, done: SimTime, fua: bool) -> Result<SimTime, Refusal> {
        self.prune_undo();
        if !fua {
            return Ok(done);
        }
        self.ops.fua_commands += 1;
        // Durable before the reply: the backing file too, not only the model (issue 13 item 6).
        self.store.flush().map_err(|e| io_refusal("sync for FUA", e))?;
        let flushed = self.submit(at, &Command::Flush)?;
        self.durable();
        Ok(done.max(flushed))
    }

    /// Reads `buf.len()` bytes at `offset` into `buf`. Returns the model's completion.
    pub fn read(&mut self, arrival: SimTime, offset: u64, buf: &mut [u8]) -> Result<SimTime, Refusal> {
        let at = self.arrive(arrival);
        self.ops.read_commands += 1;
        self.ops.read_bytes += buf.len() as u64;
        self.store.read(offset, buf).map_err(|e| io_refusal("read", e))?;
        let max = self.ssd.limits().max_transfer_bytes;
        let mut done = at;
        for (pos, bytes) in transfer_chunks(offset, buf.len() as u64, max) {
            done = done.max(self.submit(at, &Command::Read { offset: pos, bytes })?);
        }
        Ok(done)
    }

    pub fn write(
        &mut self,
        arrival: SimTime,
        offset: u64,
        data: &[u8],
        fua: bool,
    ) -> Result<SimTime, Refusal> {
        self.write_with(arrival, offset, data.len() as u64, fua, |store| store.write(offset, data))
    }

    /// [`Drive::write`] of a payload as the server received it (whole pages move into the
    /// store instead of being copied).
    pub fn write_payload(
        &mut self,
        arrival: SimTime,
        payload: &mut Payload,
        fua: bool,
    ) -> Result<SimTime, Refusal> {
        let (offset, length) = (payload.offset, payload.len());
        self.write_with(arrival, offset, length, fua, |store| store.write_payload(payload))
    }

    fn write_with(
        &mut self,
        arrival: SimTime,
        offset: u64,
        length: u64,
        fua: bool,
        store_write: impl FnOnce(&mut dyn Store) -> std::io::Result<()>,
    ) -> Result<SimTime, Refusal> {
        let at = self.arrive(arrival);
        self.ops.write_commands += 1;
        self.ops.write_bytes += length;
        self.save_for_undo(offset, length)?;
        store_write(self.store.as_mut()).map_err(|e| io_refusal("write", e))?;
        let done = self.model_write(at, offset, length)?;
        self.fua(at, done, fua)
    }

    pub fn trim(
        &mut self,
        arrival: SimTime,
        offset: u64,
        length: u64,
        fua: bool,
    ) -> Result<SimTime, Refusal> {
        let at = self.arrive(arrival);
        self.ops.trim_commands += 1;
        self.ops.trim_bytes += length;
        if length == 0 {
            return Ok(at);
        }
        self.store.zero(offset, length).map_err(|e| io_refusal("trim", e))?;
        let done = self.model_trim(at, offset, length)?;
        self.fua(at, done, fua)
    }

    pub fn write_zeroes(
        &mut self,
        arrival: SimTime,
        offset: u64,
        length: u64,
        no_hole: bool,
        fua: bool,
    ) -> Result<SimTime, Refusal> {
        let at = self.arrive(arrival);
        self.ops.write_zeroes_commands += 1;
        self.ops.write_zeroes_bytes += length;
        if no_hole {
            self.ops.write_zeroes_no_hole_commands += 1;
        }
        if length == 0 {
            return Ok(at);
        }
        let end = offset + length;
        let granule = self.ssd.config().trim_granularity_bytes;
        // Pages the model will write (lost if unflushed at a cut): all with NO_HOLE, else the
        // partial granules at the edges.
        if no_hole {
            self.save_for_undo(offset, length)?;
        } else {
            let (inner_start, inner_end) = (offset.div_ceil(granule) * granule, end / granule * granule);
            if inner_end > inner_start {
                self.save_for_undo(offset, inner_start - offset)?;
                self.save_for_undo(inner_end, end - inner_end)?;
            } else {
                self.save_for_undo(offset, length)?;
            }
        }
        self.store.zero(offset, length).map_err(|e| io_refusal("write zeroes", e))?;
        let done = if no_hole {
            self.model_write(at, offset, length)?
        } else {
            let inner_start = offset.div_ceil(granule) * granule;
            let inner_end = end / granule * granule;
            if inner_end > inner_start {
                let mut done = self.model_trim(at, inner_start, inner_end - inner_start)?;
                if inner_start > offset {
                    done = done.max(self.model_write(at, offset, inner_start - offset)?);
                }
                if end > inner_end {
                    done = done.max(self.model_write(at, inner_end, end - inner_end)?);
                }
                done
            } else {
                self.model_write(at, offset, length)?
            }
        };
        self.fua(at, done, fua)
    }

    pub fn flush(&mut self, arrival: SimTime) -> Result<SimTime, Refusal> {
        let at = self.arrive(arrival);
        self.ops.flush_commands += 1;
        self.store.flush().map_err(|e| io_refusal("flush", e))?;
        let done = self.submit(at, &Command::Flush)?;
        self.durable();
        Ok(done)
    }

    /// The base:allocation extents of a range: (bytes, NBD_STATE_* flags), at most
    /// `max_extents` of them. A query about the host-visible bytes, so the model is not asked.
    pub fn block_status(
        &mut self,
        arrival: SimTime,
        offset: u64,
        length: u64,
        max_extents: usize,
    ) -> Result<(SimTime, Vec<(u64, u32)>), Refusal> {
        let at = self.arrive(arrival);
        self.ops.block_status_commands += 1;
        let extents =
            self.store.extents(offset, length, max_extents).map_err(|e| io_refusal("extents", e))?;
        let flags = |hole: bool| if hole { STATE_HOLE | STATE_ZERO } else { 0 };
        Ok((at, extents.into_iter().map(|(bytes, hole)| (bytes, flags(hole))).collect()))
    }

    pub fn cache(&mut self, arrival: SimTime) -> SimTime {
        self.ops.cache_commands += 1;
        self.arrive(arrival)
    }

    pub fn count_refusal(&mut self) {
        self.ops.refused_commands += 1;
    }

    /// The simulated instant up to which the drive has been busy or observed.
    pub fn now(&self) -> SimTime {
        self.last_arrival.max(self.ssd.commands_done_at())
    }

    fn close_phase(&self, end: SimTime) -> PhaseReport {
        let now = self.ssd.report(end);
        let base = &self.phase.device;
        let written = now.host.pages_written - base.host.pages_written;
        let programmed = now.nand_pages_programmed - base.nand_pages_programmed;
        PhaseReport {
            name: self.phase.name.clone(),
            sim_start_ns: self.phase.at.ns(),
            sim_end_ns: end.ns(),
            nbd: self.ops.minus(&self.phase.nbd),
            host_pages_written: written,
            host_pages_read: now.host.pages_read - base.host.pages_read,
            host_pages_trim_requested: now.host.pages_trim_requested - base.host.pages_trim_requested,
            nand_pages_programmed: programmed,
            nand_blocks_erased: now.nand_blocks_erased - base.nand_blocks_erased,
            waf: if written == 0 { 0.0 } else { programmed as f64 / written as f64 },
            gc_invocations: now.gc.invocations - base.gc.invocations,
            gc_victims: now.gc.victims - base.gc.victims,
            gc_pages_copied: now.gc.pages_copied - base.gc.pages_copied,
            trim_commands: now.trim.commands - base.trim.commands,
            trim_ranges: now.trim.ranges - base.trim.ranges,
            trim_pages_requested: now.trim.pages_requested - base.trim.pages_requested,
            trim_pages_unmapped: now.trim.pages_unmapped - base.trim.pages_unmapped,
            trim_foreground_ns: now.trim.foreground_total_ns - base.trim.foreground_total_ns,
        }
    }

    /// Ends the current phase at `at` and starts one called `name`; refused past
    /// [`PHASES_MAX`] phases (each keeps a report: a client looping on POST would grow them).
    pub fn start_phase(&mut self, name: &str, at: SimTime) -> Result<(), String> {
        if self.phases.len() + 1 >= PHASES_MAX {
            return Err(format!("at most {PHASES_MAX} phases per run; this run has them all"));
        }
        let at = self.arrive(at);
        let closed = self.close_phase(at);
        self.phases.push(closed);
        if let Some(r) = self.recorder.as_mut() {
            r.phase(at, name);
        }
        self.phase =
            PhaseStart { name: name.to_string(), at, nbd: self.ops.clone(), device: self.ssd.report(at) };
        Ok(())
    }

    pub fn phase_name(&self) -> &str {
        &self.phase.name
    }

    /// The report as of `at`; the current phase appears as the last entry, still open.
    pub fn stats(&self, at: SimTime) -> DriveStats {
        let end = at.max(self.now());
        let mut phases = self.phases.clone();
        phases.push(self.close_phase(end));
        DriveStats {
            sim_time_ns: end.ns(),
            export_bytes: self.size_bytes(),
            store_resident_bytes: self.store.resident_bytes(),
            nbd: self.ops.clone(),
            phases,
            device: self.ssd.report(end),
            free_blocks: self.ssd.ftl().free_blocks(),
            series: None,
        }
    }

    /// The device's time-series rows that ended after `since_ns`, at most the last `max` of
    /// them; `None` when the series is off (`--log-interval` / `[output] interval`).
    pub fn series_rows(&self, since_ns: u64, max: usize) -> Option<Vec<trimlab_device::timeseries::Row>> {
        if !self.ssd.timeseries_enabled() {
            return None;
        }
        let rows = self.ssd.timeseries();
        let first = rows.partition_point(|r| r.end_ns <= since_ns);
        Some(rows[first.max(rows.len().saturating_sub(max))..].to_vec())
    }

    /// Closes the device's time series at `at`: (latency histogram CSV, timeseries CSV).
    pub fn finish_series(&mut self, at: SimTime) -> (String, Option<String>) {
        let end = at.max(self.now());
        self.ssd.finish_timeseries(end);
        let series = self
            .ssd
            .timeseries_enabled()
            .then(|| trimlab_device::timeseries::rows_to_csv(self.ssd.timeseries()));
        (self.ssd.latency_histogram_csv(), series)
    }

    /// Tells the model the host stays idle until `at` (used once, at shutdown, so an engine
    /// that works at idle gets the final quiet period).
    pub fn idle_until(&mut self, at: SimTime) {
        let at = self.arrive(at);
        self.ssd.idle_until(at);
    }

    /// The device model's full consistency check.
    pub fn check(&self) -> Result<(), String> {
        self.ssd.check()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::SparseStore;
    use trimlab_device::{DeviceSection, FtlSection, SsdConfig, TrimSection};
    use trimlab_sim::ByteSize;

    pub(crate) fn small_drive() -> Drive {
        drive_on(TrimSection::default(), |size| Box::new(SparseStore::new(size, 4096, u64::MAX).unwrap()))
    }

    /// The 64 MiB test drive with a TRIM section and a store.
    fn drive_on(trim: TrimSection, store: impl FnOnce(u64) -> Box<dyn Store>) -> Drive {
        let device = DeviceSection {
            logical_bytes: Some(ByteSize(64 << 20)),
            channels: Some(2),
            chips_per_channel: Some(1),
            dies_per_chip: Some(1),
            planes_per_die: Some(1),
            pages_per_block: Some(64),
            ..Default::default()
        };
        let config = SsdConfig::resolve(&device, &FtlSection::default(), &trim).unwrap();
        let size = config.logical_bytes();
        Drive::new(Ssd::new(config), store(size))
    }

    #[test]
    fn idle_time_between_requests_reaches_a_delayed_trim_engine() {
        let device = DeviceSection {
            logical_bytes: Some(ByteSize(64 << 20)),
            channels: Some(2),
            chips_per_channel: Some(1),
            dies_per_chip: Some(1),
            planes_per_die: Some(1),
            pages_per_block: Some(64),
            idle_threshold: Some(trimlab_sim::DurationNs(1_000_000)),
            ..Default::default()
        };
        let trim = TrimSection { engine: Some(trimlab_trim::EngineKind::Delayed), ..Default::default() };
        let config = SsdConfig::resolve(&device, &FtlSection::default(), &trim).unwrap();
        let size = config.logical_bytes();
        let mut d = Drive::new(Ssd::new(config), Box::new(SparseStore::new(size, 4096, u64::MAX).unwrap()));
        let data = vec![7u8; 1 << 20];
        let t = d.write(SimTime(1000), 0, &data, false).unwrap();
        let t = d.trim(t, 0, 1 << 20, false).unwrap();
        assert_eq!(d.stats(t).device.trim.figure("pages_pending"), 256, "the TRIM is deferred");
        // The next request comes 50 ms later: the engine drains while the host is idle.
        let later = t.after(50_000_000);
        let mut buf = vec![1u8; 4096];
        d.read(later, 0, &mut buf).unwrap();
        assert!(buf.iter().all(|&b| b == 0));
        let s = d.stats(later);
        assert_eq!(s.device.trim.figure("pages_pending"), 0);
        assert!(s.device.trim.figure("idle_total_ns") > 0 && s.device.trim.foreground_step3_ns == 0);
        d.check().unwrap();
    }

    #[test]
    fn data_round_trips_and_trim_reads_zero() {
        let mut d = small_drive();
        let data: Vec<u8> = (0..20_480).map(|i| (i % 251) as u8 + 1).collect();
        let t = d.write(SimTime(1000), 4096 + 512, &data, false).unwrap();
        assert!(t > SimTime(1000));
        let mut buf = vec![0u8; data.len()];
        d.read(SimTime(2000), 4096 + 512, &mut buf).unwrap();
        assert_eq!(buf, data);
        d.trim(SimTime(3000), 4096, 8192, false).unwrap();
        d.read(SimTime(4000), 4096 + 512, &mut buf).unwrap();
        assert!(buf[..8192 - 512].iter().all(|&b| b == 0));
        assert_eq!(&buf[8192 - 512..], &data[8192 - 512..]);
        let s = d.stats(SimTime(5000));
        assert_eq!(s.nbd.trim_bytes, 8192);
        assert_eq!(s.device.trim.pages_requested, 2);
        assert_eq!(s.device.host.read_modify_writes, 0, "nothing was mapped before the first write");
        d.check().unwrap();
    }

    #[test]
    fn write_zeroes_trims_whole_granules_and_writes_edges() {
        let mut d = small_drive();
        d.write(SimTime(0), 0, &vec![9u8; 64 << 10], false).unwrap();
        d.write_zeroes(SimTime(10), 512, 16384, false, false).unwrap();
        let s = d.stats(SimTime(20));
        // Granules 1..4 (3 pages) deallocated; the two partial edge pages rewritten.
        assert_eq!(s.device.trim.pages_requested, 3);
        assert_eq!(s.device.host.write_commands, 3);
        d.write_zeroes(SimTime(30), 0, 8192, true, true).unwrap();
        let s = d.stats(SimTime(40));
        assert_eq!(s.device.trim.commands, 1, "NO_HOLE must not deallocate");
        assert_eq!(s.nbd.fua_commands, 1);
        let mut buf = vec![1u8; 20480];
        d.read(SimTime(50), 0, &mut buf).unwrap();
        assert!(buf[..16896].iter().all(|&b| b == 0));
        assert!(buf[16896..].iter().all(|&b| b == 9));
        d.check().unwrap();
    }

    #[test]
    fn large_requests_are_split_for_the_model() {
        let mut d = small_drive();
        let max = d.ssd().config().max_transfer_bytes as usize;
        d.write(SimTime(0), 0, &vec![1u8; 2 * max + 4096], false).unwrap();
        d.trim(SimTime(1), 0, 64 << 20, false).unwrap();
        let s = d.stats(SimTime(2));
        assert_eq!(s.device.host.write_commands, 3);
        assert_eq!(s.device.trim.pages_requested, (64 << 20) / 4096);
        assert_eq!(s.store_resident_bytes, 0);
    }

    #[test]
    fn phases_split_the_counters() {
        let mut d = small_drive();
        d.write(SimTime(0), 0, &[1u8; 4096], false).unwrap();
        d.start_phase("trim", SimTime(10)).unwrap();
        d.trim(SimTime(20), 0, 4096, false).unwrap();
        let s = d.stats(SimTime(30));
        assert_eq!(s.phases.len(), 2);
        assert_eq!((s.phases[0].name.as_str(), s.phases[0].nbd.write_commands), ("start", 1));
        assert_eq!((s.phases[1].name.as_str(), s.phases[1].nbd.trim_commands), ("trim", 1));
        assert_eq!(s.phases[1].trim_pages_requested, 1);
        assert_eq!(s.phases[1].host_pages_written, 0);
    }

    /// A `Write` whose bytes a test can read after the drive took it.
    #[derive(Clone, Default)]
    struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().map_err(|_| std::io::Error::other("poisoned"))?.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_recording_marks_each_phase_where_it_starts() {
        let mut d = small_drive();
        let out = Shared::default();
        d.record_to(Box::new(out.clone())).unwrap();
        d.write(SimTime(0), 0, &[1u8; 4096], false).unwrap();
        d.start_phase("rm dir", SimTime(5_000_000)).unwrap();
        d.trim(SimTime(6_000_000), 0, 4096, false).unwrap();
        d.finish_recording().unwrap();
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[..3], ["fio version 3 iolog", "0 trimlab add", "0 trimlab open"]);
        assert_eq!(
            lines[3..],
            [
                "0 trimlab write 0 4096",
                "# phase rm_dir 5000",
                "6000 trimlab trim 0 4096",
                "6000 trimlab close"
            ]
        );
    }

    /// A store that counts syncs, over a memory store.
    struct CountingStore(SparseStore, std::sync::Arc<std::sync::atomic::AtomicU64>);

    impl Store for CountingStore {
        fn size_bytes(&self) -> u64 {
            self.0.size_bytes()
        }
        fn read(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
            self.0.read(offset, buf)
        }
        fn write(&mut self, offset: u64, data: &[u8]) -> std::io::Result<()> {
            self.0.write(offset, data)
        }
        fn zero(&mut self, offset: u64, length: u64) -> std::io::Result<()> {
            self.0.zero(offset, length)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            self.1.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            self.0.flush()
        }
        fn resident_bytes(&self) -> u64 {
            self.0.resident_bytes()
        }
        fn extents(&self, offset: u64, length: u64, max: usize) -> std::io::Result<Vec<(u64, bool)>> {
            self.0.extents(offset, length, max)
        }
    }

    fn drive_with(engine: trimlab_trim::EngineKind, store: impl FnOnce(u64) -> Box<dyn Store>) -> Drive {
        drive_on(TrimSection { engine: Some(engine), ..Default::default() }, store)
    }

    #[test]
    fn fua_syncs_the_store_like_flush() {
        // Issue 13 item 6: FUA writes were not synced to the backing file.
        let syncs = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counter = syncs.clone();
        let mut d = drive_with(trimlab_trim::EngineKind::Immediate, move |size| {
            Box::new(CountingStore(SparseStore::new(size, 4096, u64::MAX).unwrap(), counter))
        });
        d.write(SimTime(0), 0, &[1u8; 4096], false).unwrap();
        assert_eq!(syncs.load(std::sync::atomic::Ordering::SeqCst), 0);
        d.write(SimTime(10), 0, &[1u8; 4096], true).unwrap();
        d.trim(SimTime(20), 0, 4096, true).unwrap();
        d.write_zeroes(SimTime(30), 0, 8192, false, true).unwrap();
        assert_eq!(syncs.load(std::sync::atomic::Ordering::SeqCst), 3, "each FUA command syncs");
        d.flush(SimTime(40)).unwrap();
        assert_eq!(syncs.load(std::sync::atomic::Ordering::SeqCst), 4);
    }

    fn read_page(d: &mut Drive, at: u64, offset: u64) -> Vec<u8> {
        let mut buf = vec![0u8; 4096];
        d.read(SimTime(at), offset, &mut buf).unwrap();
        buf
    }

    #[test]
    fn a_power_cut_reverts_unflushed_buffered_writes_and_keeps_flushed_ones() {
        for engine in [trimlab_trim::EngineKind::Immediate, trimlab_trim::EngineKind::Delayed] {
            let mut d = drive_with(engine, |size| Box::new(SparseStore::new(size, 4096, u64::MAX).unwrap()));
            d.track_power_loss();
            d.write(SimTime(0), 0, &[1u8; 8192], false).unwrap();
            d.flush(SimTime(10)).unwrap();
            d.write(SimTime(20), 0, &[2u8; 4096], false).unwrap(); // unflushed rewrite
            d.write(SimTime(30), 8192, &[3u8; 4096], true).unwrap(); // FUA: durable
            d.write(SimTime(40), 4096, &[4u8; 512], false).unwrap(); // unflushed, sub-page
            d.write(SimTime(50), 16384, &[5u8; 4096], false).unwrap(); // unflushed, new
            let report = d.power_cut(SimTime(60)).unwrap();
            assert_eq!(report, PowerCutReport { pages_reverted: 2, pages_retrimmed: 0 }, "{engine:?}");
            // The FUA drained the whole buffer, so page 0's rewrite (before it) is durable too.
            assert_eq!(read_page(&mut d, 70, 0), vec![2u8; 4096], "{engine:?}");
            assert_eq!(read_page(&mut d, 70, 4096), vec![1u8; 4096], "{engine:?}");
            assert_eq!(read_page(&mut d, 70, 8192), vec![3u8; 4096], "{engine:?}");
            assert_eq!(read_page(&mut d, 70, 16384), vec![0u8; 4096], "{engine:?}");
            assert_eq!(d.counters().power_cuts, 1);
            d.check().unwrap();
        }
    }

    #[test]
    fn a_power_cut_after_a_flushed_delayed_trim_keeps_the_pages_trimmed() {
        let mut d = drive_with(trimlab_trim::EngineKind::Delayed, |size| {
            Box::new(SparseStore::new(size, 4096, u64::MAX).unwrap())
        });
        d.track_power_loss();
        d.write(SimTime(0), 0, &[1u8; 16384], false).unwrap();
        d.trim(SimTime(10), 0, 16384, false).unwrap();
        d.flush(SimTime(20)).unwrap();
        d.write(SimTime(30), 4096, &[6u8; 4096], false).unwrap();
        d.flush(SimTime(40)).unwrap();
        // Page 1's rewrite was flushed (the persisted set no longer names it); page 2's is not.
        d.write(SimTime(50), 8192, &[7u8; 4096], false).unwrap();
        let report = d.power_cut(SimTime(60)).unwrap();
        assert_eq!(report, PowerCutReport { pages_reverted: 1, pages_retrimmed: 1 });
        assert_eq!(read_page(&mut d, 70, 0), vec![0u8; 4096]);
        assert_eq!(read_page(&mut d, 70, 4096), vec![6u8; 4096]);
        assert_eq!(read_page(&mut d, 70, 8192), vec![0u8; 4096], "lost rewrite of a trimmed page");
        d.check().unwrap();
    }

    #[test]
    fn a_power_cut_at_the_memory_limit_completes_and_later_cuts_still_work() {
        // Issue 26 item 9: with the store at --memory-max, restoring a page whose unflushed
        // write had freed it needed a page the store refused: the cut failed halfway (500)
        // and lost the undo log, so every later cut reverted nothing.
        let mut d = drive_with(trimlab_trim::EngineKind::Immediate, |size| {
            Box::new(SparseStore::new(size, 4096, 4 * 4096).unwrap())
        });
        d.track_power_loss();
        d.write(SimTime(0), 0, &[1u8; 4 * 4096], false).unwrap();
        d.flush(SimTime(10)).unwrap();
        // Unflushed: pages 0 and 1 zeroed (their memory freed), pages 10 and 11 take it.
        d.write(SimTime(20), 0, &[0u8; 2 * 4096], false).unwrap();
        d.write(SimTime(30), 10 * 4096, &[2u8; 2 * 4096], false).unwrap();
        let report = d.power_cut(SimTime(40)).unwrap();
        assert_eq!(report.pages_reverted, 4);
        assert_eq!(read_page(&mut d, 50, 0), vec![1u8; 4096]);
        assert_eq!(read_page(&mut d, 50, 4096), vec![1u8; 4096]);
        assert_eq!(read_page(&mut d, 50, 10 * 4096), vec![0u8; 4096]);
        // A later cut still reverts.
        d.write(SimTime(60), 2 * 4096, &[3u8; 4096], false).unwrap();
        let report = d.power_cut(SimTime(70)).unwrap();
        assert_eq!(report.pages_reverted, 1);
        assert_eq!(read_page(&mut d, 80, 2 * 4096), vec![1u8; 4096]);
        d.check().unwrap();
    }

    #[test]
    fn a_power_cut_that_cannot_restore_says_so_and_later_cuts_still_work() {
        // A store whose restores fail (as a backing file on a failing disk could): the cut
        // reports how many pages it could not put back, and the next cut works.
        struct Failing(SparseStore, std::sync::Arc<std::sync::atomic::AtomicBool>);
        impl Store for Failing {
            fn size_bytes(&self) -> u64 {
                self.0.size_bytes()
            }
            fn read(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
                self.0.read(offset, buf)
            }
            fn write(&mut self, offset: u64, data: &[u8]) -> std::io::Result<()> {
                self.0.write(offset, data)
            }
            fn zero(&mut self, offset: u64, length: u64) -> std::io::Result<()> {
                self.0.zero(offset, length)
            }
            fn restore_page(
                &mut self,
                offset: u64,
                page: u64,
                saved: Option<Box<[u8]>>,
            ) -> std::io::Result<()> {
                if self.1.load(std::sync::atomic::Ordering::SeqCst) {
                    return Err(std::io::Error::other("disk on fire"));
                }
                self.0.restore_page(offset, page, saved)
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
            fn resident_bytes(&self) -> u64 {
                self.0.resident_bytes()
            }
            fn extents(&self, offset: u64, length: u64, max: usize) -> std::io::Result<Vec<(u64, bool)>> {
                self.0.extents(offset, length, max)
            }
        }
        let failing = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let flag = failing.clone();
        let mut d = drive_with(trimlab_trim::EngineKind::Immediate, |size| {
            Box::new(Failing(SparseStore::new(size, 4096, u64::MAX).unwrap(), flag))
        });
        d.track_power_loss();
        d.write(SimTime(0), 0, &[1u8; 2 * 4096], false).unwrap();
        let e = d.power_cut(SimTime(10)).unwrap_err();
        assert!(e.contains("2 pages could not be put back") && e.contains("disk on fire"), "{e}");
        failing.store(false, std::sync::atomic::Ordering::SeqCst);
        d.write(SimTime(20), 8192, &[2u8; 4096], false).unwrap();
        assert_eq!(d.power_cut(SimTime(30)).unwrap().pages_reverted, 1);
        assert_eq!(read_page(&mut d, 40, 8192), vec![0u8; 4096]);
        d.check().unwrap();
    }

    #[test]
    fn phases_are_capped() {
        // Issue 13 item 3: phases grew without bound (20,000 POSTs: +112 MB).
        let mut d = small_drive();
        for i in 0..PHASES_MAX - 1 {
            d.start_phase("p", SimTime(i as u64)).unwrap();
        }
        let e = d.start_phase("one-too-many", SimTime(1 << 40)).unwrap_err();
        assert!(e.contains("at most 1000 phases"), "{e}");
        assert_eq!(d.stats(SimTime(1 << 41)).phases.len(), PHASES_MAX);
    }
}
