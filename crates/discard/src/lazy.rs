//! Lazy TRIM (000): a commit queues its TRIMs to background workers whose count follows the
//! queue; freed blocks are allocatable only when their commit's TRIMs have all been issued.
//! Lazy + Reuse (lazy_reuse.rs) is this policy with the allocator taking queued blocks.

use super::{no_args, CommitPlan, PolicyKind, PolicySpec, PolicyStats, TrimPolicy, WorkerPick};
use super::{PolicyKey, PolicyParams, Unit};
use crate::run::{FreedRun, Run};
use std::collections::{BTreeMap, VecDeque};
use trimlab_sim::SimTime;

impl PolicyKind {
    /// Lazy TRIM (000): TRIMs queued to background workers whose count follows the queue;
    /// freed blocks are allocatable only when their commit's TRIMs have all been issued.
    #[allow(non_upper_case_globals)]
    pub const Lazy: PolicyKind = PolicyKind::plain("lazy");
}

/// Most discard workers (the Galaxy S8 of 000 has 4 big cores).
pub const WORKERS_MAX: PolicyKey =
    PolicyKey::new("lazy_workers_max", Unit::Count, 4, "Lazy TRIM: most discard workers").positive();
/// Queued TRIMs per worker before another worker is woken.
pub const TRIMS_PER_WORKER: PolicyKey = PolicyKey::new(
    "lazy_trims_per_worker",
    Unit::Count,
    64,
    "Lazy TRIM: queued TRIMs per worker before another wakes",
)
.positive();
/// Lazy TRIM's keys (Lazy + Reuse reads the same).
pub(super) const KEYS: &[PolicyKey] = &[WORKERS_MAX, TRIMS_PER_WORKER];

pub(super) const SPEC: PolicySpec = PolicySpec {
    name: PolicyKind::Lazy.name(),
    arg_names: &[],
    args: None,
    help: "Lazy TRIM (000): TRIM queue + adaptive background workers",
    keys: KEYS,
    example: PolicyKind::Lazy,
    parse: |args| no_args(args, PolicyKind::Lazy),
    label: None,
    build: |kind, params, _| Box::new(Lazy::new(kind, params)),
};

/// A count key's value as a length, at least 1 (`[host]` refuses 0; a config built in code
/// may not have been checked).
fn count(value: u64) -> usize {
    usize::try_from(value).unwrap_or(usize::MAX).max(1)
}

struct LazyEntry {
    ticket: u64,
    freed: FreedRun,
    batch: u64,
}

struct LazyBatch {
    remaining: usize,
    done: Vec<FreedRun>,
}

/// Lazy TRIM and Lazy + Reuse TRIM (000). One batch per commit: its blocks return to the
/// allocator when the workers have issued every TRIM of the batch (as ext4 frees a commit's
/// extents in the buddy only after all of its discards complete).
pub(super) struct Lazy {
    kind: PolicyKind,
    reuse: bool,
    workers_max: usize,
    per_worker: usize,
    queue: VecDeque<LazyEntry>,
    in_flight: BTreeMap<u64, LazyEntry>,
    batches: BTreeMap<u64, LazyBatch>,
    next_ticket: u64,
    next_batch: u64,
    releasable: Vec<FreedRun>,
    stats: PolicyStats,
}

impl Lazy {
    pub(super) fn new(kind: PolicyKind, params: &PolicyParams) -> Self {
        Lazy {
            kind,
            reuse: kind == PolicyKind::LazyReuse,
            workers_max: count(params.get(&WORKERS_MAX)),
            per_worker: count(params.get(&TRIMS_PER_WORKER)),
            queue: VecDeque::new(),
            in_flight: BTreeMap::new(),
            batches: BTreeMap::new(),
            next_ticket: 0,
            next_batch: 0,
            releasable: Vec::new(),
            stats: PolicyStats::default(),
        }
    }

    fn entry_finished(&mut self, entry: LazyEntry, trimmed: bool) {
        let batch = self
            .batches
            .get_mut(&entry.batch)
            .unwrap_or_else(|| unreachable!("lazy: batch {} missing", entry.batch));
        batch.remaining -= 1;
        if trimmed && entry.freed.run.len > 0 {
            batch.done.push(entry.freed);
        }
        if batch.remaining == 0 {
            let batch = self.batches.remove(&entry.batch).unwrap_or_else(|| unreachable!());
            self.releasable.extend(batch.done);
        }
    }
}

impl TrimPolicy for Lazy {
    fn kind(&self) -> PolicyKind {
        self.kind
    }
    fn on_commit(&mut self, _now: SimTime, freed: Vec<FreedRun>, _u: f64) -> CommitPlan {
        if !freed.is_empty() {
            let batch = self.next_batch;
            self.next_batch += 1;
            self.batches.insert(batch, LazyBatch { remaining: freed.len(), done: Vec::new() });
            for f in freed {
                self.queue.push_back(LazyEntry { ticket: self.next_ticket, freed: f, batch });
                self.next_ticket += 1;
            }
        }
        CommitPlan::release_all(Vec::new())
    }
    fn workers_wanted(&self) -> usize {
        let pending = self.queue.len() + self.in_flight.len();
        pending.div_ceil(self.per_worker).min(self.workers_max)
    }
    fn next_for_worker(&mut self, _now: SimTime) -> WorkerPick {
        match self.queue.pop_front() {
            Some(e) => {
                let pick = WorkerPick::Trim { ticket: e.ticket, run: e.freed.run, hold: false };
                self.in_flight.insert(e.ticket, e);
                pick
            }
            None => WorkerPick::Idle,
        }
    }
    fn trim_done(&mut self, ticket: u64, _now: SimTime) {
        let e = self
            .in_flight
            .remove(&ticket)
            .unwrap_or_else(|| unreachable!("lazy: ticket {ticket} not in flight"));
        self.entry_finished(e, true);
    }
    fn drain_releasable(&mut self) -> Vec<FreedRun> {
        std::mem::take(&mut self.releasable)
    }
    fn reuse(&mut self, want: u64) -> Option<Run> {
        if !self.reuse || want == 0 {
            return None;
        }
        let front = self.queue.front_mut()?;
        let take = want.min(front.freed.run.len);
        let run = Run::new(front.freed.run.start, take);
        front.freed.run.start += take;
        front.freed.run.len -= take;
        self.stats.reuse_cancelled_blocks += take;
        if front.freed.run.len == 0 {
            let e = self.queue.pop_front().unwrap_or_else(|| unreachable!());
            self.entry_finished(e, false);
        }
        Some(run)
    }
    fn reusable_blocks(&self) -> u64 {
        if self.reuse {
            self.queue.iter().map(|e| e.freed.run.len).sum()
        } else {
            0
        }
    }
    fn held(&self) -> Vec<Run> {
        let mut v: Vec<Run> = self.queue.iter().map(|e| e.freed.run).collect();
        v.extend(self.in_flight.values().map(|e| e.freed.run));
        v.extend(self.batches.values().flat_map(|b| b.done.iter().map(|f| f.run)));
        v.extend(self.releasable.iter().map(|f| f.run));
        v
    }
    fn stats(&self) -> &PolicyStats {
        &self.stats
    }
    fn stats_mut(&mut self) -> &mut PolicyStats {
        &mut self.stats
    }
}
