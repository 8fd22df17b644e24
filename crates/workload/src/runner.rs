//! The closed-loop runner: `queue_depth` submitters, each issuing its next command when its last
//! one completes (plus think time), ordered through the event queue.

use crate::generator::{Generator, Op};
use trimlab_device::{BlockDevice, Command, CommandError, CommandKind, OneRangeTrim};
use trimlab_sim::{ByteUnit, EventQueue, SimTime};

/// When a phase ends.
#[derive(Clone, Copy, Debug)]
pub enum Target {
    WriteBytes(u64),
    Ops(u64),
    /// Until every stream of the generator has ended (fio jobs: each has its own end).
    Streams,
}

impl Target {
    /// The amount that ends the phase, and whether it counts operations (else bytes written).
    fn goal(self) -> (u64, bool) {
        match self {
            Target::WriteBytes(b) => (b, false),
            Target::Ops(n) => (n, true),
            Target::Streams => (u64::MAX, true),
        }
    }
}

/// How a phase is driven.
#[derive(Clone, Copy, Debug)]
pub struct Drive {
    pub queue_depth: u32,
    pub think_time_ns: u64,
    pub idle_every: u64,
    pub idle_ns: u64,
    pub flush_every: u64,
    pub target: Target,
}

impl Drive {
    /// `queue_depth` submitters issuing back to back (no think time, idle gaps or flushes).
    pub fn closed_loop(queue_depth: u32, target: Target) -> Drive {
        Drive { queue_depth, think_time_ns: 0, idle_every: 0, idle_ns: 0, flush_every: 0, target }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PhaseResult {
    pub ops: u64,
    pub bytes_written: u64,
    /// When the last command of the phase completed.
    pub end: SimTime,
}

/// Receives progress as a share of the phase in 0..=1000 (called rarely).
pub trait Progress {
    fn update(&mut self, permille: u64);
    /// A new phase starts (its share restarts at 0).
    fn phase(&mut self, _name: &str) {}
    /// A status line for a long run's terminal (rounds run, steady-state status); callers
    /// without a terminal ignore it.
    fn note(&mut self, _line: &str) {}
}

impl Progress for () {
    fn update(&mut self, _permille: u64) {}
}

/// Runs one phase from `start`. `next_tag` numbers written data so reads can be checked.
pub fn run_phase<D: BlockDevice>(
    dev: &mut D,
    generator: &mut Generator,
    start: SimTime,
    drive: Drive,
    next_tag: &mut u64,
    progress: &mut dyn Progress,
) -> Result<PhaseResult, CommandError> {
    let mut queue: EventQueue<u32> = EventQueue::new();
    for submitter in 0..drive.queue_depth {
        queue.push(start, submitter);
    }
    // Pages by a shift on the usual power-of-two sizes (a division per command was 2 % of a
    // closed loop's own time).
    let page = ByteUnit::new(dev.tag_bytes());
    let (goal, by_ops) = drive.target.goal();
    let report_every = (goal / 1000).max(1);
    let mut next_report = report_every;
    let mut result = PhaseResult { end: start, ..PhaseResult::default() };
    let mut writes = 0u64;
    let mut paused_until = SimTime::ZERO;
    // A FLUSH due after a write is the submitter's next command, issued when it is next
    // scheduled, so commands still reach the device in arrival order.
    let mut flush_due = vec![false; drive.queue_depth as usize];
    let mut held = held_slots(generator, drive.queue_depth);
    let mut trim = OneRangeTrim::default();
    while let Some((now, submitter)) = queue.pop() {
        let achieved = if by_ops { result.ops } else { result.bytes_written };
        if achieved >= goal {
            continue; // this submitter retires; the others drain
        }
        if now < paused_until {
            queue.push(paused_until, submitter);
            continue;
        }
        let think_ns = generator.think_time_ns(submitter).unwrap_or(drive.think_time_ns);
        // (`flush_due` is only ever set with `flush_every`: no store per command without it.)
        if drive.flush_every > 0 && std::mem::take(&mut flush_due[submitter as usize]) {
            let done = dev.submit(now, &Command::Flush, None)?.done;
            result.end = result.end.max(done);
            queue.push(done.after(think_ns), submitter);
            continue;
        }
        let Some(op) = next_op(generator, &mut held, &mut queue, submitter, now) else { continue };
        let tag = *next_tag;
        if op.kind == CommandKind::Write {
            *next_tag += page.count_ceil(op.bytes);
            result.bytes_written = result.bytes_written.saturating_add(op.bytes);
            writes += 1;
        }
        let done = submit_op(dev, now, op, tag, &mut trim)?;
        if drive.flush_every > 0 && op.kind == CommandKind::Write && writes.is_multiple_of(drive.flush_every)
        {
            flush_due[submitter as usize] = true;
        }
        result.ops += 1;
        result.end = result.end.max(done);
        if drive.idle_every > 0 && result.ops.is_multiple_of(drive.idle_every) {
            // Everyone stops: the device sees no command for `idle_ns` after the last completion.
            paused_until = dev.commands_done_at().after(drive.idle_ns);
        }
        queue.push(done.after(think_ns), submitter);
        let achieved = if by_ops { result.ops } else { result.bytes_written };
        if achieved >= next_report {
            progress.update(achieved * 1000 / goal.max(1));
            next_report = achieved + report_every;
        }
    }
    Ok(result)
}

/// Sends `op` (its pages tagged from `tag`) and returns when it completes. A TRIM is made from
/// `trim`, kept across the phase, not allocated per TRIM.
#[inline]
fn submit_op<D: BlockDevice>(
    dev: &mut D,
    now: SimTime,
    op: Op,
    tag: u64,
    trim: &mut OneRangeTrim,
) -> Result<SimTime, CommandError> {
    if op.kind == CommandKind::Trim {
        let command = trim.of(op.offset, op.bytes);
        let done = dev.submit(now, &command, None);
        trim.put_back(command);
        return Ok(done?.done);
    }
    Ok(dev.submit(now, &op.command(tag), None)?.done)
}

/// Where a rate-limited stream's early command waits for its time (fio sleeps in rate_ddir):
/// one slot per submitter, none without a rate.
fn held_slots(generator: &Generator, submitters: u32) -> Vec<Option<Op>> {
    if generator.paced() {
        vec![None; submitters as usize]
    } else {
        Vec::new()
    }
}

/// `submitter`'s command to issue at `now`: the one held for this time by its rate limit, or
/// a new draw. None when its stream has ended, or when the draw is early: it is then held and
/// the submitter comes back at its time (`held` is empty for a stream without a rate).
#[inline]
fn next_op(
    generator: &mut Generator,
    held: &mut [Option<Op>],
    queue: &mut EventQueue<u32>,
    submitter: u32,
    now: SimTime,
) -> Option<Op> {
    if let Some(op) = held.get_mut(submitter as usize).and_then(Option::take) {
        return Some(op);
    }
    let op = generator.next_for(submitter, now)?;
    if !held.is_empty() {
        let at = generator.issue_at(submitter, &op, now)?;
        if at > now {
            held[submitter as usize] = Some(op);
            queue.push(at, submitter);
            return None;
        }
    }
    Some(op)
}
