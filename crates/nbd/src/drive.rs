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
//! - FLUSH: a model FLUSH. FUA on a command: the command, then a model FLUSH (the model has
//!   no per-command FUA, so this over-approximates its cost by draining the whole buffer).
//! - CACHE: a hint; counted, not modelled.

use crate::request::Refusal;
use crate::store::Store;
use crate::wire::EIO;
use serde::Serialize;
use std::io::Write as _;
use trimlab_device::{transfer_chunks, ByteRange, Command, DeviceReport, Ssd};
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

/// Writes every command the model receives as fio iolog v3, so a live session can be replayed
/// (`trimlab replay`) under other configurations. Timestamps are whole microseconds, which is
/// why arrivals are kept on microsecond boundaries: the replay then sees the same instants.
struct Recorder {
    out: Box<dyn std::io::Write + Send>,
    last_us: u64,
    failed: bool,
}

impl Recorder {
    const FILE: &'static str = "trimlab";

    fn line(&mut self, at: SimTime, command: &Command) {
        if self.failed {
            return;
        }
        let us = at.0 / 1000;
        self.last_us = self.last_us.max(us);
        let f = Self::FILE;
        let result = match command {
            Command::Read { offset, bytes } => writeln!(self.out, "{us} {f} read {offset} {bytes}"),
            Command::Write { offset, bytes, .. } => writeln!(self.out, "{us} {f} write {offset} {bytes}"),
            Command::Trim { ranges } => {
                ranges.iter().try_for_each(|r| writeln!(self.out, "{us} {f} trim {} {}", r.offset, r.bytes))
            }
            Command::Flush => writeln!(self.out, "{us} {f} sync 0 0"),
        };
        if let Err(e) = result {
            eprintln!("trimlab serve: --record stopped: {e}");
            self.failed = true;
        }
    }
}

pub struct Drive {
    recorder: Option<Recorder>,
    ssd: Ssd,
    store: Box<dyn Store>,
    next_tag: u64,
    ops: OpCounters,
    last_arrival: SimTime,
    phase: PhaseStart,
    phases: Vec<PhaseReport>,
    scratch: Vec<u64>,
}

fn io_refusal(what: &str, e: std::io::Error) -> Refusal {
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
    pub fn record_to(&mut self, mut out: Box<dyn std::io::Write + Send>) -> std::io::Result<()> {
        writeln!(out, "fio version 3 iolog")?;
        writeln!(out, "0 {} add", Recorder::FILE)?;
        writeln!(out, "0 {} open", Recorder::FILE)?;
        self.recorder = Some(Recorder { out, last_us: 0, failed: false });
        Ok(())
    }

    /// Closes the recording (if any) and flushes it.
    pub fn finish_recording(&mut self) -> std::io::Result<()> {
        if let Some(mut r) = self.recorder.take() {
            writeln!(r.out, "{} {} close", r.last_us, Recorder::FILE)?;
            r.out.flush()?;
        }
        Ok(())
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
        if let Some(r) = self.recorder.as_mut() {
            r.line(at, command);
        }
        let out = if matches!(command, Command::Read { .. }) { Some(&mut self.scratch) } else { None };
        match self.ssd.submit(at, command, out) {
            Ok(c) => Ok(c.done),
            // Requests were validated against the same limits; this is a trimlab bug.
            Err(e) => Err(Refusal::new(EIO, format!("device model refused {command:?}: {e}"))),
        }
    }

    fn model_write(&mut self, at: SimTime, offset: u64, length: u64) -> Result<SimTime, Refusal> {
        let max = self.ssd.config().max_transfer_bytes;
        let page = self.ssd.page_bytes();
        let mut done = at;
        for (pos, bytes) in transfer_chunks(offset, length, max) {
            let tag = self.next_tag;
            self.next_tag += bytes.div_ceil(page) + 1;
            done = done.max(self.submit(at, &Command::Write { offset: pos, bytes, tag })?);
        }
        Ok(done)
    }

    fn model_trim(&mut self, at: SimTime, offset: u64, length: u64) -> Result<SimTime, Refusal> {
        let config = self.ssd.config();
        let granule = config.trim_granularity_bytes;
        let piece_max = (config.trim_max_bytes / granule * granule).max(granule);
        let end = offset + length;
        let mut done = at;
        let mut pos = offset;
        while pos < end {
            // Pieces end on granule boundaries so that splitting deallocates every whole granule.
            let piece_end = (pos / granule * granule + piece_max).min(end);
            let ranges = vec![ByteRange { offset: pos, bytes: piece_end - pos }];
            done = done.max(self.submit(at, &Command::Trim { ranges })?);
            pos = piece_end;
        }
        Ok(done)
    }

    fn fua(&mut self, at: SimTime, done: SimTime, fua: bool) -> Result<SimTime, Refusal> {
        if !fua {
            return Ok(done);
        }
        self.ops.fua_commands += 1;
        Ok(done.max(self.submit(at, &Command::Flush)?))
    }

    /// Reads `buf.len()` bytes at `offset` into `buf`. Returns the model's completion.
    pub fn read(&mut self, arrival: SimTime, offset: u64, buf: &mut [u8]) -> Result<SimTime, Refusal> {
        let at = self.arrive(arrival);
        self.ops.read_commands += 1;
        self.ops.read_bytes += buf.len() as u64;
        self.store.read(offset, buf).map_err(|e| io_refusal("read", e))?;
        let max = self.ssd.config().max_transfer_bytes;
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
        let at = self.arrive(arrival);
        self.ops.write_commands += 1;
        self.ops.write_bytes += data.len() as u64;
        self.store.write(offset, data).map_err(|e| io_refusal("write", e))?;
        let done = self.model_write(at, offset, data.len() as u64)?;
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
        self.store.zero(offset, length).map_err(|e| io_refusal("write zeroes", e))?;
        let end = offset + length;
        let done = if no_hole {
            self.model_write(at, offset, length)?
        } else {
            let granule = self.ssd.config().trim_granularity_bytes;
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
        self.submit(at, &Command::Flush)
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

    /// Ends the current phase at `at` and starts one called `name`.
    pub fn start_phase(&mut self, name: &str, at: SimTime) {
        let at = self.arrive(at);
        let closed = self.close_phase(at);
        self.phases.push(closed);
        self.phase =
            PhaseStart { name: name.to_string(), at, nbd: self.ops.clone(), device: self.ssd.report(at) };
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
            series: None,
        }
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
        let device = DeviceSection {
            logical_bytes: Some(ByteSize(64 << 20)),
            channels: Some(2),
            chips_per_channel: Some(1),
            dies_per_chip: Some(1),
            planes_per_die: Some(1),
            pages_per_block: Some(64),
            ..Default::default()
        };
        let config = SsdConfig::resolve(&device, &FtlSection::default(), &TrimSection::default()).unwrap();
        let size = config.logical_bytes();
        let page = config.geometry.page_bytes as u64;
        Drive::new(Ssd::new(config), Box::new(SparseStore::new(size, page)))
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
        let mut d = Drive::new(Ssd::new(config), Box::new(SparseStore::new(size, 4096)));
        let data = vec![7u8; 1 << 20];
        let t = d.write(SimTime(1000), 0, &data, false).unwrap();
        let t = d.trim(t, 0, 1 << 20, false).unwrap();
        assert_eq!(d.stats(t).device.trim.pages_pending, 256, "the TRIM is deferred");
        // The next request comes 50 ms later: the engine drains while the host is idle.
        let later = t.after(50_000_000);
        let mut buf = vec![1u8; 4096];
        d.read(later, 0, &mut buf).unwrap();
        assert!(buf.iter().all(|&b| b == 0));
        let s = d.stats(later);
        assert_eq!(s.device.trim.pages_pending, 0);
        assert!(s.device.trim.idle_total_ns > 0 && s.device.trim.foreground_step3_ns == 0);
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
        d.start_phase("trim", SimTime(10));
        d.trim(SimTime(20), 0, 4096, false).unwrap();
        let s = d.stats(SimTime(30));
        assert_eq!(s.phases.len(), 2);
        assert_eq!((s.phases[0].name.as_str(), s.phases[0].nbd.write_commands), ("start", 1));
        assert_eq!((s.phases[1].name.as_str(), s.phases[1].nbd.trim_commands), ("trim", 1));
        assert_eq!(s.phases[1].trim_pages_requested, 1);
        assert_eq!(s.phases[1].host_pages_written, 0);
    }
}
