//! Replays a stream of trace records on a simulated device, open loop (the trace's own arrival
//! times, idle gaps kept, optionally sped up) or closed loop (a fixed number of requests
//! outstanding), with the trace's TRIMs sent as recorded, dropped, or collected and sent in one
//! batch at each period (a periodic fstrim).

use crate::interval_set::IntervalSet;
use crate::reader::TraceError;
use crate::record::{CommandKind, TraceRecord};
use serde::Serialize;
use trimlab_device::{
    transfer_chunks, BlockDevice, Command, CommandError, DeviceReport, Limits, OneRangeTrim, Ssd,
    TrimSplitter,
};
use trimlab_sim::{ByteUnit, EventQueue, SimTime};

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pacing {
    /// Each request arrives at its trace time divided by `speed` (2.0 = twice as fast). A
    /// request without a time arrives when the previous one completes.
    OpenLoop { speed: f64 },
    /// `queue_depth` requests outstanding; the trace's times are ignored.
    ClosedLoop { queue_depth: u32 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LbaMode {
    /// A request past the device's end is an error.
    Check,
    /// Offsets wrap modulo the device's capacity (a request straddling the end is cut there).
    Remap,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "mode")]
pub enum TrimHandling {
    /// Online discard: every TRIM of the trace is sent when it was recorded.
    AsRecorded,
    /// No discard: TRIMs are dropped.
    Drop,
    /// Periodic fstrim: TRIMed ranges not rewritten since are collected and sent together
    /// every `period_ns` of trace time, as FITRIM would find them free.
    Periodic { period_ns: u64 },
}

#[derive(Clone, Copy, Debug)]
pub struct ReplayOptions {
    pub pacing: Pacing,
    pub lba: LbaMode,
    pub trims: TrimHandling,
}

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(transparent)]
    Trace(#[from] TraceError),
    #[error("request {index} ({op:?} at byte {offset}, {bytes} bytes) ends past the device's {capacity_bytes} bytes; replay with --lba remap, or on a larger device")]
    OutOfRange { index: u64, op: CommandKind, offset: u64, bytes: u64, capacity_bytes: u64 },
    #[error("request {index}: the device refused it: {error}")]
    Device { index: u64, error: CommandError },
}

/// A reader's error boxed, as the trace reader thread hands it over: the records it passes
/// are then 40 bytes (the record's own size), not the 80 of a `Result` sized for the error,
/// which the replay loop copied for every record (issue 27).
impl From<Box<TraceError>> for ReplayError {
    fn from(error: Box<TraceError>) -> Self {
        ReplayError::Trace(*error)
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct ReplayStats {
    pub requests: u64,
    pub reads: u64,
    pub writes: u64,
    pub trims: u64,
    pub flushes: u64,
    pub trim_bytes_recorded: u64,
    pub trims_dropped: u64,
    pub fstrim_runs: u64,
    pub fstrim_commands: u64,
    pub fstrim_bytes: u64,
    /// Requests stamped earlier than the one before (served in file order at the later time).
    pub out_of_order: u64,
    pub remapped: u64,
    /// Requests widened to whole 512-byte sectors.
    pub sector_aligned: u64,
    /// Commands sent to the device (large requests are split at the device's limits).
    pub device_commands: u64,
    pub trace_span_ns: u64,
    /// Summed over device commands: the time from arrival until the drive's queue took the
    /// command (a full queue, or a non-queued TRIM draining it), and from arrival to
    /// completion. Their ratio says whether the replay is saturated ([`ReplayStats::queue_share`]).
    pub queue_wait_ns: u64,
    pub latency_ns: u64,
}

/// Counts one device command that arrived at `at`, was taken at `start` and ended at `done`.
fn count_command(stats: &mut ReplayStats, at: SimTime, start: SimTime, done: SimTime) {
    stats.device_commands += 1;
    stats.queue_wait_ns += start.since(at);
    stats.latency_ns += done.since(at);
}

impl ReplayStats {
    /// The share of the commands' latency spent waiting for the drive's queue (0 with no
    /// command): near 1 when requests arrive faster than the drive serves them.
    pub fn queue_share(&self) -> f64 {
        if self.latency_ns == 0 {
            0.0
        } else {
            self.queue_wait_ns as f64 / self.latency_ns as f64
        }
    }
}

pub struct ReplayOutcome {
    pub stats: ReplayStats,
    pub report: DeviceReport,
    pub end: SimTime,
}

/// What replay needs of the device's limits, read once instead of once per request.
#[derive(Clone, Copy)]
struct Units {
    sector: ByteUnit,
    page: ByteUnit,
}

struct Replayer<'a, D> {
    dev: &'a mut D,
    limits: Limits,
    units: Units,
    options: ReplayOptions,
    stats: ReplayStats,
    next_tag: u64,
    pending_fstrim: IntervalSet,
    next_fstrim_ns: u64,
    trims: TrimSplitter,
    /// The one-range TRIM command of each recorded TRIM that fits the device's limits whole
    /// (what the splitter would send for it, without its batching).
    one_trim: OneRangeTrim,
}

impl<D: BlockDevice> Replayer<'_, D> {
    /// Brings a request inside the device and onto sector boundaries.
    fn place(&mut self, index: u64, record: &TraceRecord) -> Result<Option<(u64, u64)>, ReplayError> {
        let capacity = self.limits.capacity_bytes;
        let sector = self.units.sector;
        let (mut offset, mut bytes) = (record.offset, record.bytes);
        if offset.checked_add(bytes).is_none_or(|end| end > capacity) {
            match self.options.lba {
                LbaMode::Check => {
                    return Err(ReplayError::OutOfRange {
                        index,
                        op: record.op,
                        offset,
                        bytes,
                        capacity_bytes: capacity,
                    })
                }
                LbaMode::Remap => {
                    self.stats.remapped += 1;
                    offset %= capacity;
                    bytes = bytes.min(capacity - offset);
                }
            }
        }
        let start = sector.floor(offset);
        let end = sector.count_ceil(offset + bytes) * sector.bytes();
        if start != offset || end != offset + bytes {
            self.stats.sector_aligned += 1;
        }
        Ok((end > start).then_some((start, end - start)))
    }

    fn submit(&mut self, index: u64, at: SimTime, command: &Command) -> Result<SimTime, ReplayError> {
        let c = self.dev.submit(at, command, None).map_err(|error| ReplayError::Device { index, error })?;
        count_command(&mut self.stats, at, c.start, c.done);
        Ok(c.done)
    }

    /// Sends TRIMs of `ranges` as few commands as the device's limits allow, one after another.
    fn trim_ranges(
        &mut self,
        index: u64,
        mut at: SimTime,
        ranges: &[(u64, u64)],
    ) -> Result<(SimTime, u64), ReplayError> {
        let (dev, stats) = (&mut *self.dev, &mut self.stats);
        let commands = self.trims.split(ranges.iter().copied(), |command| {
            let c = dev.submit(at, command, None).map_err(|error| ReplayError::Device { index, error })?;
            count_command(stats, at, c.start, c.done);
            at = c.done;
            Ok::<(), ReplayError>(())
        })?;
        Ok((at, commands))
    }

    /// A recorded TRIM, sent when it was recorded. One within the device's limits goes out as
    /// the one command the splitter would make of it (one range, the bytes whole), from a
    /// command kept for it: through the splitter each of a replay's TRIMs paid for its batching
    /// and a `Result` returned through memory, 4 % of the simulation thread (issue 27).
    fn recorded_trim(
        &mut self,
        index: u64,
        at: SimTime,
        offset: u64,
        bytes: u64,
    ) -> Result<SimTime, ReplayError> {
        if bytes > self.limits.trim_max_bytes {
            return Ok(self.trim_ranges(index, at, &[(offset, bytes)])?.0);
        }
        let command = self.one_trim.of(offset, bytes);
        let done = self.submit(index, at, &command);
        self.one_trim.put_back(command);
        done
    }

    /// A READ, or a WRITE with the next tags (one per page, and a gap between writes).
    fn data_command(&mut self, write: bool, offset: u64, bytes: u64) -> Command {
        if write {
            let tag = self.next_tag;
            self.next_tag += self.units.page.count_ceil(bytes) + 1;
            Command::Write { offset, bytes, tag }
        } else {
            Command::Read { offset, bytes }
        }
    }

    /// Serves one request arriving at `at`; returns when it completes.
    fn request(&mut self, index: u64, at: SimTime, record: &TraceRecord) -> Result<SimTime, ReplayError> {
        self.stats.requests += 1;
        if let TrimHandling::Periodic { period_ns } = self.options.trims {
            // u64::MAX: the next run would be past the end of the clock, so none is due.
            if at.0 >= self.next_fstrim_ns && self.next_fstrim_ns != u64::MAX {
                let when = SimTime(self.next_fstrim_ns).max(self.dev.commands_done_at());
                let ranges: Vec<(u64, u64)> = self.pending_fstrim.iter().collect();
                self.pending_fstrim.clear();
                self.stats.fstrim_runs += 1;
                self.stats.fstrim_bytes += ranges.iter().map(|r| r.1).sum::<u64>();
                let (_, commands) = self.trim_ranges(index, when, &ranges)?;
                self.stats.fstrim_commands += commands;
                // The runs due after that one up to `at` find nothing pending and send nothing:
                // they are counted, not looped over (a request stamped near u64::MAX ns looped
                // forever once the next run saturated there, issue 26).
                let period = period_ns.max(1);
                let later = (at.0 - self.next_fstrim_ns) / period;
                self.stats.fstrim_runs += later;
                self.next_fstrim_ns = (later + 1)
                    .checked_mul(period)
                    .and_then(|d| self.next_fstrim_ns.checked_add(d))
                    .unwrap_or(u64::MAX);
            }
        }
        if record.op == CommandKind::Flush {
            self.stats.flushes += 1;
            return self.submit(index, at, &Command::Flush);
        }
        let Some((offset, bytes)) = self.place(index, record)? else {
            return Ok(at);
        };
        let max = self.limits.max_transfer_bytes;
        match record.op {
            CommandKind::Read | CommandKind::Write => {
                let write = record.op == CommandKind::Write;
                if write {
                    self.stats.writes += 1;
                    if !self.pending_fstrim.is_empty() {
                        self.pending_fstrim.remove(offset, offset + bytes);
                    }
                } else {
                    self.stats.reads += 1;
                }
                if bytes <= max {
                    // One command: what `transfer_chunks` yields for it, without the iterator.
                    let command = self.data_command(write, offset, bytes);
                    return Ok(at.max(self.submit(index, at, &command)?));
                }
                let mut done = at;
                for (o, len) in transfer_chunks(offset, bytes, max) {
                    let command = self.data_command(write, o, len);
                    done = done.max(self.submit(index, at, &command)?);
                }
                Ok(done)
            }
            CommandKind::Trim => {
                self.stats.trims += 1;
                self.stats.trim_bytes_recorded += bytes;
                match self.options.trims {
                    TrimHandling::AsRecorded => self.recorded_trim(index, at, offset, bytes),
                    TrimHandling::Drop => {
                        self.stats.trims_dropped += 1;
                        Ok(at)
                    }
                    TrimHandling::Periodic { .. } => {
                        self.stats.trims_dropped += 1;
                        self.pending_fstrim.insert(offset, offset + bytes);
                        Ok(at)
                    }
                }
            }
            CommandKind::Flush => unreachable!("flush handled above"),
        }
    }
}

/// Replays `records` on `ssd` from time zero; measurement covers the whole trace.
pub fn replay<I, E>(ssd: &mut Ssd, records: I, options: ReplayOptions) -> Result<ReplayOutcome, ReplayError>
where
    I: IntoIterator<Item = Result<TraceRecord, E>>,
    ReplayError: From<E>,
{
    replay_from(ssd, SimTime::ZERO, records, options)
}

/// [`replay`] on a device that has already run until `start` (a preconditioned drive, as
/// `trimlab bench` uses): the trace's time zero is `start`, and measurement starts there.
pub fn replay_from<I, E>(
    ssd: &mut Ssd,
    start: SimTime,
    records: I,
    options: ReplayOptions,
) -> Result<ReplayOutcome, ReplayError>
where
    I: IntoIterator<Item = Result<TraceRecord, E>>,
    ReplayError: From<E>,
{
    ssd.start_measurement(start);
    let (stats, end) = replay_on(ssd, start, records, options)?;
    let report = ssd.report(end);
    Ok(ReplayOutcome { stats, report, end })
}

/// Replays `records` on any [`BlockDevice`] from `start`: the statistics and when the last
/// command completed.
pub fn replay_on<D: BlockDevice, I, E>(
    dev: &mut D,
    start: SimTime,
    records: I,
    options: ReplayOptions,
) -> Result<(ReplayStats, SimTime), ReplayError>
where
    I: IntoIterator<Item = Result<TraceRecord, E>>,
    ReplayError: From<E>,
{
    let next_fstrim_ns = match options.trims {
        TrimHandling::Periodic { period_ns } => start.0.saturating_add(period_ns.max(1)),
        _ => u64::MAX,
    };
    let limits = dev.limits();
    let mut r = Replayer {
        dev,
        limits,
        units: Units { sector: ByteUnit::new(limits.sector_bytes), page: ByteUnit::new(limits.tag_bytes) },
        options,
        stats: ReplayStats::default(),
        next_tag: 1,
        pending_fstrim: IntervalSet::default(),
        next_fstrim_ns,
        trims: TrimSplitter::for_device(&limits),
        one_trim: OneRangeTrim::default(),
    };
    let end = match options.pacing {
        Pacing::OpenLoop { speed } => r.open_loop(start, speed, records)?,
        Pacing::ClosedLoop { queue_depth } => r.closed_loop(start, queue_depth, records)?,
    };
    Ok((r.stats, end))
}

/// A trace time over `speed`, in whole nanoseconds. At speed 1 a time below 2^53 ns (104 days)
/// is itself, exactly what the floating-point path gives (x / 1.0 is x), without its division
/// (profiled: a third of the replay loop's own time); times beyond that go through the same
/// path as before. The division is a call of its own: inline, the compiler computed it for every
/// record and then chose the time unchanged, so the division's latency stayed in the loop.
#[inline]
fn scaled_trace_time(t: u64, speed: f64) -> u64 {
    if speed == 1.0 && t < 1 << f64::MANTISSA_DIGITS {
        t
    } else {
        divided_trace_time(t, speed)
    }
}

#[inline(never)]
fn divided_trace_time(t: u64, speed: f64) -> u64 {
    (t as f64 / speed) as u64
}

impl<D: BlockDevice> Replayer<'_, D> {
    /// Each request at its trace time over `speed` (or when the previous one completes);
    /// returns when the last command completed.
    fn open_loop<I, E>(&mut self, start: SimTime, speed: f64, records: I) -> Result<SimTime, ReplayError>
    where
        I: IntoIterator<Item = Result<TraceRecord, E>>,
        ReplayError: From<E>,
    {
        let (mut end, mut last_arrival, mut last_done) = (start, start, start);
        for (index, record) in records.into_iter().enumerate() {
            let record = record?;
            let arrival = match record.time_ns {
                Some(t) => {
                    self.stats.trace_span_ns = self.stats.trace_span_ns.max(t);
                    SimTime(start.0.saturating_add(scaled_trace_time(t, speed)))
                }
                None => last_done,
            };
            if arrival < last_arrival {
                self.stats.out_of_order += 1;
            }
            let arrival = arrival.max(last_arrival);
            last_arrival = arrival;
            last_done = self.request(index as u64, arrival, &record)?;
            end = end.max(last_done);
        }
        Ok(end)
    }

    /// `queue_depth` requests outstanding, each slot taking the next record when its last one
    /// completes; returns when the last command completed.
    fn closed_loop<I, E>(
        &mut self,
        start: SimTime,
        queue_depth: u32,
        records: I,
    ) -> Result<SimTime, ReplayError>
    where
        I: IntoIterator<Item = Result<TraceRecord, E>>,
        ReplayError: From<E>,
    {
        let mut records = records.into_iter();
        let mut queue: EventQueue<u32> = EventQueue::new();
        for slot in 0..queue_depth.max(1) {
            queue.push(start, slot);
        }
        let (mut end, mut index) = (start, 0u64);
        while let Some((now, slot)) = queue.pop() {
            let Some(record) = records.next() else { break };
            let record = record?;
            if let Some(t) = record.time_ns {
                self.stats.trace_span_ns = self.stats.trace_span_ns.max(t);
            }
            let done = self.request(index, now, &record)?;
            index += 1;
            end = end.max(done);
            queue.push(done, slot);
        }
        Ok(end)
    }
}
