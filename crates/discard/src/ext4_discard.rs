//! ext4 `-o discard` since Linux 5.17/6.8: freed extents are allocatable at commit and queued
//! to one discard worker (`ext4_discard_work`), which trims each with
//! `ext4_try_to_trim_range(minblocks = 1)`: every free extent inside it, the last one extended to
//! the end of its free run in the group (commit 68da4c44b994, v6.8), so a freed file next to free
//! space trims that space too (overlaps with other TRIMs). The worker's list holds the entries
//! of ext4's tree of freed extents (ext4_free_data.rs: since Linux 6.17 a freed extent merges
//! only with the node its tree descent stops at), so `rm -rf` of many small contiguous files
//! sends one TRIM per entry, each from the entry's start to the end of the free run: 9-15
//! overlapping TRIMs where merging every adjacent extent would send one.

use super::{no_args, CommitPlan, PolicyKind, PolicySpec, PolicyStats, TrimPolicy, WorkerPick};
use crate::run::{FreedRun, Run};
use std::collections::VecDeque;
use trimlab_sim::SimTime;

impl PolicyKind {
    /// ext4 `-o discard` since Linux 5.17/6.8: freed extents are allocatable at commit and
    /// queued to one discard worker (`ext4_discard_work`), which trims each with
    /// `ext4_try_to_trim_range(minblocks = 1)`: every free extent inside it, the last one
    /// extended to the end of its free run in the group (commit 68da4c44b994, v6.8), so a
    /// freed file next to free space trims that space too (overlaps with other TRIMs).
    #[allow(non_upper_case_globals)]
    pub const Ext4Discard: PolicyKind = PolicyKind::plain("ext4-discard");
}

pub(super) const SPEC: PolicySpec = PolicySpec {
    name: PolicyKind::Ext4Discard.name(),
    arg_names: &[],
    args: None,
    help: "ext4 -o discard (Linux >= 6.8): a worker trims each freed extent to the end of its free run",
    keys: &[],
    example: PolicyKind::Ext4Discard,
    parse: |args| no_args(args, PolicyKind::Ext4Discard),
    label: None,
    build: |_, _, _| Box::<Ext4Work>::default(),
};

/// ext4 `-o discard` since 5.17 (`ext4_process_freed_data` -> `ext4_discard_work`): a commit
/// frees its extents in the buddy at once and queues them; one worker takes them in order
/// and trims each with `ext4_try_to_trim_range(start, end, minblocks = 1)`, one synchronous
/// discard at a time. Blocks reallocated before the worker gets there are skipped (it scans
/// the bitmap), so the policy needs no allocation hook.
#[derive(Default)]
pub(super) struct Ext4Work {
    queue: VecDeque<FreedRun>,
    in_flight: Option<u64>,
    next_ticket: u64,
    /// `SB_ACTIVE` is clear (umount): entries are given up instead of trimmed.
    closing: bool,
    stats: PolicyStats,
}

impl TrimPolicy for Ext4Work {
    fn kind(&self) -> PolicyKind {
        PolicyKind::Ext4Discard
    }
    /// `ext4_process_freed_data` (fs/ext4/mballoc.c): every entry of the committed
    /// transaction is freed in the buddy (allocatable at once), then the list is spliced onto
    /// the discard list in its order and the worker queued.
    fn on_commit(&mut self, _now: SimTime, freed: Vec<FreedRun>, _u: f64) -> CommitPlan {
        if self.closing {
            self.stats.untrimmed_blocks += freed.iter().map(|f| f.run.len).sum::<u64>();
        } else {
            self.queue.extend(freed.iter().copied());
        }
        CommitPlan::release_all(freed)
    }
    fn takes_ext4_free_data(&self) -> bool {
        true
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
    /// `generic_shutdown_super` clears `SB_ACTIVE` after `sync_filesystem`, and
    /// `ext4_discard_work` gives up every entry it takes after that ("If filesystem is
    /// umounting ... give up the discard", fs/ext4/mballoc.c); `ext4_mb_release` then waits
    /// (`flush_work`) only for the discard in flight.
    fn gives_up_at_umount(&self) -> bool {
        true
    }
    fn give_up_queued(&mut self) {
        self.closing = true;
        let blocks: u64 = self.queue.drain(..).map(|f| f.run.len).sum();
        self.stats.untrimmed_blocks += blocks;
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
