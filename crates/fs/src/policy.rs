//! Host TRIM policies behind one interface: what a journal commit does with the blocks its
//! transaction freed, what background workers trim, and when freed blocks become allocatable.
//!
//! The file system keeps the bitmaps and issues every command; a policy only decides. Blocks a
//! policy holds (queued for TRIM, or being trimmed) are free on disk but not allocatable.

use crate::config::{PolicyKind, PolicyParams};
use crate::extent::{FreedRun, Run};
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};
use trimlab_sim::SimTime;

/// How the journal thread issues the TRIMs a commit does itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrimMode {
    /// One TRIM at a time, each waiting for the previous completion.
    Serial,
    /// All submitted back to back, then one wait for the last.
    Batch,
}

/// What a commit does with its transaction's freed blocks.
#[derive(Debug)]
pub struct CommitPlan {
    /// Allocatable right after the commit block.
    pub release: Vec<FreedRun>,
    /// Trimmed by the journal thread before the commit completes, released after.
    pub trim: Vec<FreedRun>,
    pub mode: TrimMode,
}

impl CommitPlan {
    fn release_all(freed: Vec<FreedRun>) -> Self {
        CommitPlan { release: freed, trim: Vec::new(), mode: TrimMode::Serial }
    }
}

/// A background worker's next step.
#[derive(Debug, PartialEq, Eq)]
pub enum WorkerPick {
    /// Trim `run`; if `hold`, the run is available now and must be held while in flight.
    Trim {
        ticket: u64,
        run: Run,
        hold: bool,
    },
    /// ext4's discard worker: trim the free extents inside `run` (available now), the last
    /// one extended to the end of its free run in the group; the file system finds them in
    /// its bitmap and holds them while in flight.
    TrimFreeRuns {
        ticket: u64,
        run: Run,
    },
    /// btrfs async discard with free-space merging: trim the whole available run around
    /// `run` (both sides, inside its group) in pieces of at most `max_blocks`, unless it is
    /// shorter than `min_blocks`; the file system holds it while in flight.
    TrimMerged {
        ticket: u64,
        run: Run,
        max_blocks: u64,
        min_blocks: u64,
    },
    /// Nothing ready before this instant.
    WaitUntil(SimTime),
    Idle,
}

/// Per-policy counters.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PolicyStats {
    pub trim_commands: u64,
    pub trim_bytes: u64,
    /// Blocks whose queued TRIM was cancelled because the allocator reused them.
    pub reuse_cancelled_blocks: u64,
    /// Freed blocks never trimmed by the policy (nodiscard, SeT off, async below min filter).
    pub untrimmed_blocks: u64,
    /// Sum over released blocks of (release - free) time, in block-seconds.
    pub unusable_block_s: f64,
    pub released_blocks: u64,
    /// SeT: commits with TRIM on and off.
    pub commits_trim_on: u64,
    pub commits_trim_off: u64,
}

impl PolicyStats {
    /// Mean time a freed block stayed unusable, in seconds.
    pub fn unusable_mean_s(&self) -> f64 {
        if self.released_blocks == 0 {
            0.0
        } else {
            self.unusable_block_s / self.released_blocks as f64
        }
    }
}

pub trait TrimPolicy {
    fn kind(&self) -> PolicyKind;
    /// Step 4 of a commit: the transaction's freed runs (coalesced) and the file system's
    /// utilization (used / data blocks) after it.
    fn on_commit(&mut self, now: SimTime, freed: Vec<FreedRun>, utilization: f64) -> CommitPlan;
    /// Discard workers the policy wants running now.
    fn workers_wanted(&self) -> usize {
        0
    }
    fn next_for_worker(&mut self, _now: SimTime) -> WorkerPick {
        WorkerPick::Idle
    }
    /// A worker's TRIM finished.
    fn trim_done(&mut self, _ticket: u64, _now: SimTime) {}
    /// Runs that became allocatable since the last call (the file system releases them).
    fn drain_releasable(&mut self) -> Vec<FreedRun> {
        Vec::new()
    }
    /// Reuse TRIM: a run of up to `want` queued blocks the allocator may take instead.
    fn reuse(&mut self, _want: u64) -> Option<Run> {
        None
    }
    /// Queued blocks the allocator could take through [`TrimPolicy::reuse`].
    fn reusable_blocks(&self) -> u64 {
        0
    }
    /// The allocator took `run` from available space: drop queued TRIMs that overlap it.
    fn on_allocate(&mut self, _run: Run) {}
    /// FITRIM claims `run`: drop queued TRIMs that overlap it without counting a reuse.
    fn forget(&mut self, _run: Run) {}
    /// btrfs took the block group `range` off its discard lists and queued it again (the
    /// cleaner's btrfs_delete_unused_bgs: btrfs_discard_cancel_work, then
    /// btrfs_discard_queue_work): its queued runs wait the whole reuse delay again from
    /// `now`. Returns whether any was queued (async only).
    fn restart_delay(&mut self, _range: Run, _now: SimTime) -> bool {
        false
    }
    /// Runs the policy holds unavailable (queued or in flight).
    fn held(&self) -> Vec<Run>;
    /// Queued runs that are available to the allocator (async).
    fn queued_available(&self) -> Vec<Run> {
        Vec::new()
    }
    /// Periodic FITRIM: (period, minlen bytes).
    fn periodic_fitrim(&self) -> Option<(u64, u64)> {
        None
    }
    fn stats(&self) -> &PolicyStats;
    fn stats_mut(&mut self) -> &mut PolicyStats;
}

pub fn build(kind: PolicyKind, params: &PolicyParams, block_bytes: u64) -> Box<dyn TrimPolicy> {
    match kind {
        PolicyKind::NoDiscard | PolicyKind::Fstrim => {
            Box::new(Online { kind, params: params.clone(), stats: Default::default() })
        }
        PolicyKind::Discard | PolicyKind::DiscardBatch => {
            Box::new(Online { kind, params: params.clone(), stats: Default::default() })
        }
        PolicyKind::Selective { .. } => {
            Box::new(Selective { kind, on: false, previous: None, stats: Default::default() })
        }
        PolicyKind::Lazy | PolicyKind::LazyReuse => Box::new(Lazy::new(kind, params)),
        PolicyKind::Ext4Discard => Box::new(Ext4Work::default()),
        PolicyKind::Async => Box::new(Async::new(params, block_bytes)),
    }
}

/// nodiscard, fstrim, discard and discard-batch: the commit decides everything.
struct Online {
    kind: PolicyKind,
    params: PolicyParams,
    stats: PolicyStats,
}

impl TrimPolicy for Online {
    fn kind(&self) -> PolicyKind {
        self.kind
    }
    fn on_commit(&mut self, _now: SimTime, freed: Vec<FreedRun>, _u: f64) -> CommitPlan {
        match self.kind {
            PolicyKind::Discard => CommitPlan { release: Vec::new(), trim: freed, mode: TrimMode::Serial },
            PolicyKind::DiscardBatch => {
                CommitPlan { release: Vec::new(), trim: freed, mode: TrimMode::Batch }
            }
            _ => {
                self.stats.untrimmed_blocks += freed.iter().map(|f| f.run.len).sum::<u64>();
                CommitPlan::release_all(freed)
            }
        }
    }
    fn held(&self) -> Vec<Run> {
        Vec::new()
    }
    fn periodic_fitrim(&self) -> Option<(u64, u64)> {
        (self.kind == PolicyKind::Fstrim)
            .then_some((self.params.fstrim_period_ns, self.params.fstrim_minlen_bytes))
    }
    fn stats(&self) -> &PolicyStats {
        &self.stats
    }
    fn stats_mut(&mut self) -> &mut PolicyStats {
        &mut self.stats
    }
}

/// SeT (001): the watermarks decide; between them the utilization trend does.
struct Selective {
    kind: PolicyKind,
    on: bool,
    previous: Option<f64>,
    stats: PolicyStats,
}

impl TrimPolicy for Selective {
    fn kind(&self) -> PolicyKind {
        self.kind
    }
    fn on_commit(&mut self, _now: SimTime, freed: Vec<FreedRun>, utilization: f64) -> CommitPlan {
        let PolicyKind::Selective { low_pct, high_pct } = self.kind else {
            unreachable!("selective policy built for {:?}", self.kind)
        };
        let pct = utilization * 100.0;
        self.on = if pct >= high_pct as f64 {
            true
        } else if pct < low_pct as f64 {
            false
        } else {
            match self.previous {
                Some(p) if utilization < p => true,
                Some(p) if utilization > p => false,
                _ => self.on,
            }
        };
        self.previous = Some(utilization);
        if freed.is_empty() {
            return CommitPlan::release_all(freed);
        }
        if self.on {
            self.stats.commits_trim_on += 1;
            CommitPlan { release: Vec::new(), trim: freed, mode: TrimMode::Serial }
        } else {
            self.stats.commits_trim_off += 1;
            self.stats.untrimmed_blocks += freed.iter().map(|f| f.run.len).sum::<u64>();
            CommitPlan::release_all(freed)
        }
    }
    fn held(&self) -> Vec<Run> {
        Vec::new()
    }
    fn stats(&self) -> &PolicyStats {
        &self.stats
    }
    fn stats_mut(&mut self) -> &mut PolicyStats {
        &mut self.stats
    }
}

/// ext4 `-o discard` since 5.17 (`ext4_process_freed_data` -> `ext4_discard_work`): a commit
/// frees its extents in the buddy at once and queues them; one worker takes them in order
/// and trims each with `ext4_try_to_trim_range(start, end, minblocks = 1)`, one synchronous
/// discard at a time. Blocks reallocated before the worker gets there are skipped (it scans
/// the bitmap), so the policy needs no allocation hook.
#[derive(Default)]
struct Ext4Work {
    queue: VecDeque<FreedRun>,
    in_flight: Option<u64>,
    next_ticket: u64,
    stats: PolicyStats,
}

impl TrimPolicy for Ext4Work {
    fn kind(&self) -> PolicyKind {
        PolicyKind::Ext4Discard
    }
    fn on_commit(&mut self, _now: SimTime, freed: Vec<FreedRun>, _u: f64) -> CommitPlan {
        self.queue.extend(freed.iter().copied());
        CommitPlan::release_all(freed)
    }
    fn workers_wanted(&self) -> usize {
        usize::from(!self.queue.is_empty() || self.in_flight.is_some())
    }
    fn next_for_worker(&mut self, _now: SimTime) -> WorkerPick {
        match self.queue.pop_front() {
            Some(f) => {
                let ticket = self.next_ticket;
                self.next_ticket += 1;
                self.in_flight = Some(ticket);
                WorkerPick::TrimFreeRuns { ticket, run: f.run }
            }
            None => WorkerPick::Idle,
        }
    }
    fn trim_done(&mut self, ticket: u64, _now: SimTime) {
        if self.in_flight.take() != Some(ticket) {
            unreachable!("ext4-discard: ticket {ticket} was not in flight");
        }
    }
    fn held(&self) -> Vec<Run> {
        Vec::new()
    }
    fn stats(&self) -> &PolicyStats {
        &self.stats
    }
    fn stats_mut(&mut self) -> &mut PolicyStats {
        &mut self.stats
    }
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
struct Lazy {
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
    fn new(kind: PolicyKind, params: &PolicyParams) -> Self {
        Lazy {
            kind,
            reuse: kind == PolicyKind::LazyReuse,
            workers_max: params.lazy_workers_max.max(1),
            per_worker: params.lazy_trims_per_worker.max(1),
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

/// btrfs discard=async (fs/btrfs/discard.c): freed extents stay allocatable; after the reuse
/// delay a single worker discards them, extents >= 1 MiB first, then >= 32 KiB, at most one
/// discard per 1/iops_limit, at most `max_bytes` per discard. Smaller extents are left to fstrim.
struct Async {
    delay_ns: u64,
    interval_ns: u64,
    max_blocks: u64,
    large_blocks: u64,
    min_blocks: u64,
    /// list 0: large, list 1: medium; keyed by start block, value (len, eligible at).
    lists: [BTreeMap<u64, (u64, SimTime)>; 2],
    in_flight: BTreeMap<u64, FreedRun>,
    /// `async_merge_free`: the file system extends and holds the run (TrimMerged).
    merge_free: bool,
    merged_in_flight: Option<u64>,
    next_ticket: u64,
    next_issue: SimTime,
    releasable: Vec<FreedRun>,
    stats: PolicyStats,
}

impl Async {
    fn new(p: &PolicyParams, block_bytes: u64) -> Self {
        let interval_ns = 1_000_000_000u64.checked_div(p.async_iops_limit).unwrap_or(0);
        // nsecs_to_jiffies rounds down to whole scheduler ticks.
        let interval_ns = match p.async_tick_ns {
            0 => interval_ns,
            tick => interval_ns / tick * tick,
        };
        Async {
            delay_ns: p.async_delay_ns,
            interval_ns,
            merge_free: p.async_merge_free,
            merged_in_flight: None,
            max_blocks: (p.async_max_bytes / block_bytes).max(1),
            large_blocks: (p.async_large_bytes / block_bytes).max(1),
            min_blocks: (p.async_min_bytes / block_bytes).max(1),
            lists: [BTreeMap::new(), BTreeMap::new()],
            in_flight: BTreeMap::new(),
            next_ticket: 0,
            next_issue: SimTime::ZERO,
            releasable: Vec::new(),
            stats: PolicyStats::default(),
        }
    }

    fn list_for(&self, len: u64) -> Option<usize> {
        if len >= self.large_blocks {
            Some(0)
        } else if len >= self.min_blocks || self.merge_free {
            // Merged with its neighbours a small extent may pass the filter: the file system
            // applies it to the merged run.
            Some(1)
        } else {
            None
        }
    }

    /// Removes the parts of queued extents that overlap `run`; returns blocks removed.
    fn cut(&mut self, run: Run) -> u64 {
        let mut removed = 0;
        for list in 0..2 {
            let overlapping: Vec<(u64, (u64, SimTime))> = self.lists[list]
                .range(..run.end())
                .rev()
                .take_while(|(&s, &(len, _))| s + len > run.start || s >= run.start)
                .filter(|(&s, &(len, _))| s + len > run.start)
                .map(|(&s, &v)| (s, v))
                .collect();
            for (s, (len, at)) in overlapping {
                self.lists[list].remove(&s);
                let lo = s.max(run.start);
                let hi = (s + len).min(run.end());
                removed += hi - lo;
                if s < lo {
                    self.requeue(Run::new(s, lo - s), at);
                }
                if hi < s + len {
                    self.requeue(Run::new(hi, s + len - hi), at);
                }
            }
        }
        removed
    }

    fn requeue(&mut self, run: Run, at: SimTime) {
        match self.list_for(run.len) {
            Some(l) => {
                self.lists[l].insert(run.start, (run.len, at));
            }
            None => self.stats.untrimmed_blocks += run.len,
        }
    }
}

impl TrimPolicy for Async {
    fn kind(&self) -> PolicyKind {
        PolicyKind::Async
    }
    fn on_commit(&mut self, now: SimTime, freed: Vec<FreedRun>, _u: f64) -> CommitPlan {
        let eligible = now.after(self.delay_ns);
        for f in &freed {
            self.requeue(f.run, eligible);
        }
        CommitPlan::release_all(freed)
    }
    fn workers_wanted(&self) -> usize {
        usize::from(self.lists.iter().any(|l| !l.is_empty()) || self.merged_in_flight.is_some())
    }
    fn next_for_worker(&mut self, now: SimTime) -> WorkerPick {
        if self.lists.iter().all(|l| l.is_empty()) {
            return WorkerPick::Idle;
        }
        if now < self.next_issue {
            return WorkerPick::WaitUntil(self.next_issue);
        }
        let mut earliest: Option<SimTime> = None;
        for list in 0..2 {
            // Oldest eligible extent of the list (lowest address among ties).
            let pick = self.lists[list]
                .iter()
                .filter(|(_, &(_, at))| at <= now)
                .map(|(&s, &(len, at))| (s, len, at))
                .next();
            if let Some((s, len, at)) = pick {
                self.lists[list].remove(&s);
                let ticket = self.next_ticket;
                self.next_ticket += 1;
                self.next_issue = now.after(self.interval_ns);
                if self.merge_free {
                    self.merged_in_flight = Some(ticket);
                    let (max_blocks, min_blocks) = (self.max_blocks, self.min_blocks);
                    return WorkerPick::TrimMerged { ticket, run: Run::new(s, len), max_blocks, min_blocks };
                }
                let take = len.min(self.max_blocks);
                if take < len {
                    self.lists[list].insert(s + take, (len - take, at));
                }
                let run = Run::new(s, take);
                self.in_flight.insert(ticket, FreedRun { run, freed_at: now });
                return WorkerPick::Trim { ticket, run, hold: true };
            }
            let e = self.lists[list].values().map(|&(_, at)| at).min();
            earliest = match (earliest, e) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        earliest.map_or(WorkerPick::Idle, WorkerPick::WaitUntil)
    }
    fn trim_done(&mut self, ticket: u64, _now: SimTime) {
        if self.merged_in_flight == Some(ticket) {
            self.merged_in_flight = None;
            return;
        }
        let f = self
            .in_flight
            .remove(&ticket)
            .unwrap_or_else(|| unreachable!("async: ticket {ticket} not in flight"));
        self.releasable.push(f);
    }
    fn drain_releasable(&mut self) -> Vec<FreedRun> {
        std::mem::take(&mut self.releasable)
    }
    fn on_allocate(&mut self, run: Run) {
        let n = self.cut(run);
        self.stats.reuse_cancelled_blocks += n;
    }
    fn forget(&mut self, run: Run) {
        self.cut(run);
    }
    fn restart_delay(&mut self, range: Run, now: SimTime) -> bool {
        let eligible = now.after(self.delay_ns);
        let mut any = false;
        for list in self.lists.iter_mut() {
            for (_, (_, at)) in list.range_mut(range.start..range.end()) {
                *at = eligible;
                any = true;
            }
        }
        any
    }
    fn held(&self) -> Vec<Run> {
        let mut v: Vec<Run> = self.in_flight.values().map(|f| f.run).collect();
        v.extend(self.releasable.iter().map(|f| f.run));
        v
    }
    fn queued_available(&self) -> Vec<Run> {
        self.lists.iter().flat_map(|l| l.iter().map(|(&s, &(len, _))| Run::new(s, len))).collect()
    }
    fn stats(&self) -> &PolicyStats {
        &self.stats
    }
    fn stats_mut(&mut self) -> &mut PolicyStats {
        &mut self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fr(start: u64, len: u64) -> FreedRun {
        FreedRun { run: Run::new(start, len), freed_at: SimTime::ZERO }
    }

    #[test]
    fn selective_follows_watermarks_and_trend() {
        let mut p =
            build(PolicyKind::Selective { low_pct: 40, high_pct: 80 }, &PolicyParams::default(), 4096);
        let on = |p: &mut Box<dyn TrimPolicy>, u: f64| {
            !p.on_commit(SimTime::ZERO, vec![fr(0, 1)], u).trim.is_empty()
        };
        assert!(on(&mut p, 0.9), "above high: on");
        assert!(!on(&mut p, 0.3), "below low: off");
        assert!(!on(&mut p, 0.5), "rising between: off");
        assert!(on(&mut p, 0.45), "falling between: on");
        assert!(on(&mut p, 0.45), "flat between: keeps state");
    }

    #[test]
    fn lazy_releases_a_batch_when_all_trimmed_and_reuse_cancels() {
        let mut p = build(PolicyKind::LazyReuse, &PolicyParams::default(), 4096);
        p.on_commit(SimTime::ZERO, vec![fr(0, 4), fr(10, 4)], 0.5);
        assert_eq!(p.reuse(2), Some(Run::new(0, 2)));
        let WorkerPick::Trim { ticket, run, .. } = p.next_for_worker(SimTime::ZERO) else { panic!() };
        assert_eq!(run, Run::new(2, 2));
        p.trim_done(ticket, SimTime(5));
        assert!(p.drain_releasable().is_empty(), "batch not done");
        let WorkerPick::Trim { ticket, .. } = p.next_for_worker(SimTime(5)) else { panic!() };
        p.trim_done(ticket, SimTime(9));
        let rel: Vec<Run> = p.drain_releasable().into_iter().map(|f| f.run).collect();
        assert_eq!(rel, vec![Run::new(2, 2), Run::new(10, 4)]);
        assert_eq!(p.stats().reuse_cancelled_blocks, 2);
    }

    #[test]
    fn async_waits_for_delay_and_prefers_large() {
        let params = PolicyParams { async_delay_ns: 100, ..Default::default() };
        let mut p = build(PolicyKind::Async, &params, 4096);
        // 16 blocks = 64 KiB (medium list), 512 blocks = 2 MiB (large list), 2 blocks ignored.
        let plan = p.on_commit(SimTime(0), vec![fr(0, 16), fr(100, 512), fr(1000, 2)], 0.5);
        assert_eq!(plan.release.len(), 3, "async frees at once");
        assert_eq!(p.next_for_worker(SimTime(10)), WorkerPick::WaitUntil(SimTime(100)));
        let WorkerPick::Trim { run, hold, .. } = p.next_for_worker(SimTime(100)) else { panic!() };
        assert_eq!((run, hold), (Run::new(100, 512), true));
        p.on_allocate(Run::new(4, 4));
        assert_eq!(p.stats().reuse_cancelled_blocks, 4);
        assert_eq!(p.queued_available(), vec![Run::new(8, 8)], "the 4-block head fell below the min filter");
    }

    #[test]
    fn async_restart_delay_requeues_a_block_group() {
        // iops_limit 0: no spacing between discards, to see the delays alone.
        let params = PolicyParams { async_delay_ns: 100, async_iops_limit: 0, ..Default::default() };
        let mut p = build(PolicyKind::Async, &params, 4096);
        p.on_commit(SimTime(0), vec![fr(0, 512), fr(1000, 512)], 0.5);
        // The cleaner requeues the block group [900, 2000) at 50: its run waits until 150.
        assert!(p.restart_delay(Run::new(900, 1100), SimTime(50)));
        assert!(!p.restart_delay(Run::new(5000, 10), SimTime(50)), "nothing queued there");
        let WorkerPick::Trim { run, .. } = p.next_for_worker(SimTime(100)) else { panic!() };
        assert_eq!(run, Run::new(0, 512), "the other block group keeps its time");
        assert_eq!(p.next_for_worker(SimTime(101)), WorkerPick::WaitUntil(SimTime(150)));
    }
}
