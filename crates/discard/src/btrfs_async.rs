//! btrfs `discard=async`: freed space is usable at once; a worker trims it after a reuse delay,
//! largest extents first, at an IOPS limit, at most `max discard` per command; reused space is
//! dropped from the queue.

use super::{no_args, CommitPlan, PolicyKind, PolicySpec, PolicyStats, TrimPolicy, WorkerPick};
use super::{PolicyKey, PolicyParams, Unit};
use crate::run::{FreedRun, Run};
use std::collections::BTreeMap;
use trimlab_sim::SimTime;

impl PolicyKind {
    /// btrfs `discard=async`: freed space is usable at once; a worker trims it after a reuse
    /// delay, largest extents first, at an IOPS limit, at most `max discard` per command;
    /// reused space is dropped from the queue.
    #[allow(non_upper_case_globals)]
    pub const Async: PolicyKind = PolicyKind::plain("async");
}

/// BTRFS_DISCARD_DELAY: the time a freed extent waits before it is discarded (120 s).
pub const DELAY: PolicyKey = PolicyKey::new(
    "async_delay",
    Unit::Duration,
    120_000_000_000,
    "btrfs: reuse delay before a freed extent is discarded",
);
/// BTRFS_DISCARD_UNUSED_DELAY (fs/btrfs/discard.c add_to_discard_unused_list): a block
/// group left with nothing in use is discarded after 10 s, not 120 s (the recordings' first
/// async TRIM, 10.15-10.24 s after the rm of btrfs-async-rm-third, is such a group's).
pub const UNUSED_DELAY: PolicyKey = PolicyKey::new(
    "async_unused_delay",
    Unit::Duration,
    10_000_000_000,
    "btrfs: delay before an unused block group is discarded",
)
.model_only();
/// The discard iops_limit (1000 since Linux 6.2, i.e. one discard per ms).
pub const IOPS_LIMIT: PolicyKey =
    PolicyKey::new("async_iops_limit", Unit::Count, 1000, "btrfs: discards per second").positive();
/// BTRFS_ASYNC_DISCARD_DEFAULT_MAX_SIZE (64 MiB).
pub const MAX_BYTES: PolicyKey =
    PolicyKey::new("async_max_bytes", Unit::Bytes, 64 << 20, "btrfs: largest discard").positive();
/// BTRFS_ASYNC_DISCARD_MAX_FILTER (1 MiB): extents from this size go on the first list.
pub const LARGE_BYTES: PolicyKey =
    PolicyKey::new("async_large_bytes", Unit::Bytes, 1 << 20, "btrfs: the large extents' list from this size")
        .model_only();
/// BTRFS_ASYNC_DISCARD_MIN_FILTER (32 KiB): smaller extents are left to fstrim.
pub const MIN_BYTES: PolicyKey =
    PolicyKey::new("async_min_bytes", Unit::Bytes, 32 << 10, "btrfs: smaller extents are left to fstrim")
        .model_only();
/// The free-space cache lets an untrimmed (freed) extent merge with the free space on both
/// sides ("we opt to let untrimmed regions merge with everything", discard.c), so the worker
/// trims the whole free run around a freed extent; the size filters then apply to that run.
/// Off by default (the experiments' async trims exactly the freed extents); on as Linux 6.18
/// does it ([`as_in_linux_6_18`]).
pub const MERGE_FREE: PolicyKey =
    PolicyKey::new("async_merge_free", Unit::Flag, 0, "btrfs: trim the free run around a freed extent")
        .model_only();
/// The worker's delay goes through nsecs_to_jiffies, which rounds down to a scheduler tick:
/// 1 ms (iops_limit 1000) is 0 ticks at CONFIG_HZ = 250 (4 ms), so the discards go back to
/// back. 0 = no rounding (the default).
pub const TICK: PolicyKey =
    PolicyKey::new("async_tick", Unit::Duration, 0, "btrfs: the scheduler tick the delay rounds down to")
        .model_only();

/// What Linux 6.18 does (the discard-pattern recordings): free-space merging, and 4 ms ticks
/// (CONFIG_HZ = 250 on Debian's kernels, the recording's).
pub fn as_in_linux_6_18(params: &mut PolicyParams) {
    params.set(&MERGE_FREE, 1);
    params.set(&TICK, 4_000_000);
}

pub(super) const SPEC: PolicySpec = PolicySpec {
    name: PolicyKind::Async.name(),
    arg_names: &[],
    args: None,
    help: "btrfs discard=async: reuse delay, size-ordered lists, IOPS limit, max size",
    keys: &[DELAY, UNUSED_DELAY, IOPS_LIMIT, MAX_BYTES, LARGE_BYTES, MIN_BYTES, MERGE_FREE, TICK],
    example: PolicyKind::Async,
    parse: |args| no_args(args, PolicyKind::Async),
    label: None,
    build: |_, params, block_bytes| Box::new(Async::new(params, block_bytes)),
};

/// btrfs discard=async (fs/btrfs/discard.c): freed extents stay allocatable; after the reuse
/// delay a single worker discards them, extents >= 1 MiB first, then >= 32 KiB, at most one
/// discard per 1/iops_limit, at most `max_bytes` per discard. Smaller extents are left to fstrim.
pub(super) struct Async {
    delay_ns: u64,
    unused_delay_ns: u64,
    interval_ns: u64,
    max_blocks: u64,
    large_blocks: u64,
    min_blocks: u64,
    /// list 0: large, list 1: medium; keyed by start block, value (len, eligible at).
    lists: [BTreeMap<u64, (u64, SimTime)>; 2],
    in_flight: BTreeMap<u64, FreedRun>,
    /// [`MERGE_FREE`]: the file system extends and holds the run (TrimMerged).
    merge_free: bool,
    merged_in_flight: Option<u64>,
    next_ticket: u64,
    next_issue: SimTime,
    releasable: Vec<FreedRun>,
    /// umount stopped the worker (`btrfs_discard_stop`): nothing is queued any more.
    stopped: bool,
    stats: PolicyStats,
}

impl Async {
    pub(super) fn new(p: &PolicyParams, block_bytes: u64) -> Self {
        let interval_ns = 1_000_000_000u64.checked_div(p.get(&IOPS_LIMIT)).unwrap_or(0);
        // nsecs_to_jiffies rounds down to whole scheduler ticks.
        let interval_ns = match p.get(&TICK) {
            0 => interval_ns,
            tick => interval_ns / tick * tick,
        };
        Async {
            delay_ns: p.get(&DELAY),
            unused_delay_ns: p.get(&UNUSED_DELAY),
            interval_ns,
            merge_free: p.flag(&MERGE_FREE),
            merged_in_flight: None,
            max_blocks: (p.get(&MAX_BYTES) / block_bytes).max(1),
            large_blocks: (p.get(&LARGE_BYTES) / block_bytes).max(1),
            min_blocks: (p.get(&MIN_BYTES) / block_bytes).max(1),
            lists: [BTreeMap::new(), BTreeMap::new()],
            in_flight: BTreeMap::new(),
            next_ticket: 0,
            next_issue: SimTime::ZERO,
            releasable: Vec::new(),
            stopped: false,
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

    /// Every queued run in `range` becomes due at `eligible`; whether there was any.
    fn set_due(&mut self, range: Run, eligible: SimTime) -> bool {
        let mut any = false;
        for list in self.lists.iter_mut() {
            for (_, (_, at)) in list.range_mut(range.start..range.end()) {
                *at = eligible;
                any = true;
            }
        }
        any
    }

    fn requeue(&mut self, run: Run, at: SimTime) {
        match self.list_for(run.len) {
            Some(l) if !self.stopped => {
                self.lists[l].insert(run.start, (run.len, at));
            }
            _ => self.stats.untrimmed_blocks += run.len,
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
        self.set_due(range, now.after(self.delay_ns))
    }
    fn unused_delay(&mut self, range: Run, now: SimTime) -> bool {
        self.set_due(range, now.after(self.unused_delay_ns))
    }
    fn block_group_queued(&mut self, range: Run) {
        let earliest = self.lists.iter().flat_map(|l| l.range(range.start..range.end()).map(|(_, &(_, at))| at)).min();
        if let Some(at) = earliest {
            self.set_due(range, at);
        }
    }
    /// `close_ctree` -> `btrfs_discard_cleanup` (fs/btrfs/discard.c): the worker is stopped
    /// (`cancel_delayed_work_sync` waits for a discard in flight) and the discard lists are
    /// purged; what they held stays untrimmed free space.
    fn gives_up_at_umount(&self) -> bool {
        true
    }
    fn give_up_queued(&mut self) {
        self.stopped = true;
        let blocks: u64 = self.lists.iter_mut().flat_map(std::mem::take).map(|(_, (len, _))| len).sum();
        self.stats.untrimmed_blocks += blocks;
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
