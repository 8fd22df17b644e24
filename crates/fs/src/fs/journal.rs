//! The ordered JBD2-like journal: running and committing transactions, the commit's phases
//! (ordered data, descriptor + metadata, commit block + FLUSH, policy TRIMs, release, wake),
//! the release of held blocks, and ext4's jbd2 rules around them: a handle that would make
//! the running transaction exceed a quarter of the journal commits it first, and one that
//! finds too little log space checkpoints (metadata written home, then the tail moves).

use super::*;

/// The credits a handle reserves: ext4_mkdir's and ext4_create's, EXT4_DATA_TRANS_BLOCKS
/// (EXT4_SINGLEDATA_TRANS_BLOCKS 20 with extents + EXT4_XATTR_TRANS_BLOCKS 6 - 2, no quota) +
/// EXT4_INDEX_EXTRA_TRANS_BLOCKS 12 + 3 (fs/ext4/namei.c, fs/ext4/ext4_jbd2.h, Linux 6.x).
/// trimlab reserves as many for every call's handle (assumption: other calls reserve other
/// amounts, of the same order).
const HANDLE_CREDITS: u64 = 39;

/// jbd2_log_do_checkpoint writes a transaction's dirty buffers in batches of JBD2_NR_BATCH
/// (include/linux/jbd2.h) under one plug (`__flush_batch`) and waits for each batch (the next
/// pass finds its buffers locked: `wait_on_buffer`).
const CHECKPOINT_BATCH_BLOCKS: usize = 64;

/// The log of a new file system: ext4's follows jbd2 (superblock in the journal's block 0);
/// XFS's and btrfs' stand-ins keep the whole area as a ring checkpointed when full.
pub(super) fn new_log(layout: &Layout, config: &FsConfig, first_tid: u64) -> JournalLog {
    let jbd2 = !config.btrfs_layout && config.inodegc.is_none();
    JournalLog::new(layout.journal_blocks, jbd2, first_tid)
}

#[derive(Default)]
pub(super) struct Transaction {
    pub(super) tid: u64,
    pub(super) meta: BTreeSet<u64>,
    pub(super) freed: Vec<FreedRun>,
}

impl Transaction {
    pub(super) fn is_empty(&self) -> bool {
        self.meta.is_empty() && self.freed.is_empty()
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Phase {
    Data,
    Log,
    CommitBlock,
    Trim,
}

pub(super) struct Commit {
    pub(super) tid: u64,
    pub(super) phase: Phase,
    pub(super) batch: Batch,
    pub(super) started: SimTime,
    pub(super) meta: Vec<u64>,
    pub(super) freed: Vec<FreedRun>,
    pub(super) trimming: Vec<FreedRun>,
    pub(super) pages: PageTags,
}

impl<D: BlockDevice> FileSystem<D> {
    pub(super) fn dirty_meta(&mut self, block: u64) {
        self.dirty_meta_at(block, self.now);
    }

    /// A metadata change made at `t` by a background thread (XFS's inodegc worker), whose
    /// clock is not the application's.
    pub(super) fn dirty_meta_at(&mut self, block: u64, t: SimTime) {
        if self.running.is_empty() {
            let at = self.commit_timer_due(t);
            self.events.push(at, Ev::CommitTimer(self.running.tid));
        }
        self.running.meta.insert(block);
    }

    /// When the running transaction, first changed at `t`, is committed with nobody asking.
    /// ext4 (jbd2's j_commit_interval, fs/jbd2/transaction.c start_this_handle ->
    /// jbd2_get_transaction arms t_expires) and btrfs (transaction_kthread's commit_interval)
    /// count from the transaction's start. XFS has no such timer: `xfs_log_worker`
    /// (fs/xfs/xfs_log.c) forces the log every `xfs_syncd_centisecs` (30 s) from mount
    /// (`xfs_log_mount_finish` -> `xfs_log_work_queue`, which the worker calls again at its
    /// end), so the change waits for the worker's next tick on the mount's clock.
    pub(super) fn commit_timer_due(&self, t: SimTime) -> SimTime {
        let period = self.config.commit_interval_ns.max(1);
        match self.layout_fs.xfs() {
            Some(x) => {
                let from = x.log_worker_from.min(t);
                let ticks = t.since(from) / period + 1;
                from.after(ticks * period)
            }
            None => t.after(period),
        }
    }

    pub(super) fn free_run(&mut self, run: Run) {
        self.free_run_at(run, self.now);
    }

    /// Frees `run` into the running transaction at `t` (see `dirty_meta_at`).
    pub(super) fn free_run_at(&mut self, run: Run, t: SimTime) {
        if self.running.is_empty() {
            let at = self.commit_timer_due(t);
            self.events.push(at, Ev::CommitTimer(self.running.tid));
        }
        self.bitmap.free(run.start, run.len);
        let g0 = self.bitmap.group_of(run.start);
        let g1 = self.bitmap.group_of(run.end() - 1);
        for g in g0..=g1 {
            self.running.meta.insert(self.layout.bitmap_block(g));
            self.running.meta.insert(self.layout.gdt_block(g));
        }
        self.running.freed.push(FreedRun { run, freed_at: t });
    }

    pub(super) fn request_commit(&mut self, now: SimTime, tid: u64) {
        self.commit_requested = self.commit_requested.max(tid);
        if self.commit.is_none() {
            self.start_commit(now);
        }
    }

    pub(super) fn start_commit(&mut self, now: SimTime) {
        if self.running.is_empty() || self.running.tid > self.commit_requested {
            return;
        }
        let tid = self.running.tid;
        let txn = std::mem::replace(&mut self.running, Transaction { tid: tid + 1, ..Default::default() });
        self.log.commit_started(tid, self.log_blocks_for(txn.meta.len() as u64) + 1);
        let merged = if self.policy.takes_ext4_free_data() {
            policy::ext4_free_data::ext4_freed_entries(&txn.freed, self.layout.bpg)
        } else {
            coalesced_in_block_order(txn.freed)
        };
        // btrfs copies the trees' changed nodes (btrfs_tree.rs); the first copy since mount sets
        // up the metadata cluster.
        self.btrfs_cow_trees();
        self.commit = Some(Commit {
            tid,
            phase: Phase::Data,
            batch: Batch::default(),
            started: now,
            meta: txn.meta.into_iter().collect(),
            freed: merged,
            trimming: Vec::new(),
            pages: Vec::new(),
        });
        // The journal thread wakes up and writes the transaction's ordered data first.
        let (data, pages) = self.take_dirty(None);
        if let Some(c) = self.commit.as_mut() {
            c.batch = Batch { reqs: data.into(), serial: false, done_max: SimTime::ZERO };
            c.pages = pages;
        }
        let at = now.after(self.config.host.wakeup_ns + self.config.host.submit_ns);
        self.events.push(at, Ev::Journal);
    }

    /// The commit block is on disk: its freed runs go to the policy, and btrfs' old tree nodes
    /// are unpinned (btrfs_tree.rs).
    fn committed_freed(&mut self, c: &mut Commit) -> Vec<FreedRun> {
        self.btrfs_unpin_tree_nodes();
        std::mem::take(&mut c.freed)
    }

    pub(super) fn journal_step(&mut self, now: SimTime) {
        let Some(mut c) = self.commit.take() else { unreachable!("fs: journal event without a commit") };
        let mut batch = std::mem::take(&mut c.batch);
        let step = self.batch_step(now, &mut batch);
        c.batch = batch;
        match step {
            Step::Next(t) => {
                self.commit = Some(c);
                self.events.push(t, Ev::Journal);
            }
            Step::Finished(t) if t > now => {
                // Wait for the batch's last completion, then move on.
                c.batch = Batch::default();
                self.commit = Some(c);
                self.events.push(t, Ev::Journal);
            }
            Step::Finished(_) => self.commit_next_phase(now, c),
        }
    }

    pub(super) fn commit_next_phase(&mut self, now: SimTime, mut c: Commit) {
        let submit = self.config.host.submit_ns;
        match c.phase {
            Phase::Data => {
                let pages = std::mem::take(&mut c.pages);
                self.end_writeback(pages);
                let log_blocks = self.log_blocks_for(c.meta.len() as u64);
                let mut reqs = self.stand_in_log_room(log_blocks + 1);
                reqs.extend(self.journal_writes(log_blocks));
                c.phase = Phase::Log;
                c.batch = Batch { reqs: reqs.into(), serial: false, done_max: SimTime::ZERO };
            }
            Phase::Log => {
                let mut reqs = self.journal_writes(1);
                reqs.push(Command::Flush);
                c.phase = Phase::CommitBlock;
                c.batch = Batch { reqs: reqs.into(), serial: true, done_max: SimTime::ZERO };
            }
            Phase::CommitBlock => {
                let logged: Vec<u64> = c.meta.iter().copied().filter(|b| !self.revoked.contains(b)).collect();
                self.checkpoint_committed(&c.meta);
                self.log.committed(c.tid, logged);
                let (reqs, mode) = self.commit_block_trims(now, &mut c);
                c.phase = Phase::Trim;
                c.batch =
                    Batch { reqs: reqs.into(), serial: mode == TrimMode::Serial, done_max: SimTime::ZERO };
                if !c.batch.reqs.is_empty() {
                    self.commit = Some(c);
                    self.events.push(now.after(submit), Ev::Journal);
                    return;
                }
                return self.commit_next_phase(now, c);
            }
            Phase::Trim => {
                if !c.trimming.is_empty() {
                    self.stats.last_trim_done_ns = now.0;
                }
                let trimmed = std::mem::take(&mut c.trimming);
                self.release(now, trimmed);
                self.committed_tid = c.tid;
                let took = now.since(c.started);
                self.stats.commits += 1;
                self.stats.commit_ns_total += took;
                self.stats.commit_ns_max = self.stats.commit_ns_max.max(took);
                self.wake_workers(now);
                if self.verify {
                    self.check().unwrap_or_else(|e| panic!("fs: after commit {}: {e}", c.tid));
                }
                if let Some((period, _)) = self.policy.periodic_fitrim() {
                    if !self.fitrim_timer_armed {
                        self.fitrim_timer_armed = true;
                        self.events.push(now.after(period), Ev::FitrimTimer);
                    }
                }
                if self.commit_requested >= self.running.tid {
                    self.start_commit(now);
                }
                return;
            }
        }
        self.commit = Some(c);
        self.events.push(now.after(submit), Ev::Journal);
    }

    /// At the commit block: the journal tail's update, and what the discard policy does with
    /// the extents this transaction freed (released now, or TRIMmed first: `c.trimming`).
    fn commit_block_trims(&mut self, now: SimTime, c: &mut Commit) -> (Vec<Command>, TrimMode) {
        let tail_update = self.tail_update_at_commit();
        let util = self.utilization();
        let freed = self.committed_freed(c);
        let freed_runs: Vec<Run> = freed.iter().map(|f| f.run).collect();
        let plan = self.policy.on_commit(now, freed, util);
        self.release(now, plan.release);
        self.btrfs_discard_queue_work(&freed_runs, now);
        let mut reqs = tail_update;
        for f in &plan.trim {
            reqs.extend(self.trim_requests(f.run));
        }
        self.count_policy_trims(&reqs);
        c.trimming = plan.trim;
        (reqs, plan.mode)
    }

    pub(super) fn journal_writes(&mut self, blocks: u64) -> Vec<Command> {
        let bs = self.config.block_bytes;
        let max = (self.dev.max_transfer_bytes() / bs).max(1);
        let mut reqs = Vec::new();
        for (start, len) in self.log.write(blocks) {
            let mut done = 0;
            while done < len {
                let n = (len - done).min(max);
                let off = (self.layout.journal_start + start + done) * bs;
                reqs.push(Command::Write { offset: off, bytes: n * bs, tag: self.journal_tag });
                self.journal_tag += n;
                done += n;
            }
        }
        self.stats.journal_blocks_written += blocks;
        reqs
    }

    /// Where the journal is: its first block (jbd2's superblock for ext4) and its length.
    pub fn journal_area(&self) -> (u64, u64) {
        (self.layout.journal_start, self.layout.journal_blocks)
    }

    /// Room for a commit of `blocks` log blocks where no handle made it (XFS's and btrfs'
    /// stand-in logs; ext4's handles checkpoint before this can happen): the commit thread
    /// writes every committed buffer home and starts the log over. The requests, or none.
    fn stand_in_log_room(&mut self, blocks: u64) -> Vec<Command> {
        if self.log.free() >= blocks {
            return Vec::new();
        }
        let home: Vec<Run> = coalesce(self.checkpoint.iter().map(|&b| Run::new(b, 1)).collect());
        self.stats.metadata_blocks_checkpointed += self.checkpoint.len() as u64;
        self.stats.checkpoints += 1;
        self.checkpoint.clear();
        let mut reqs = self.write_requests_meta(&home);
        reqs.push(Command::Flush);
        self.log.emptied();
        reqs
    }

    /// Log blocks of a transaction of `n` metadata blocks: descriptor blocks of 16-byte tags
    /// (at least one) and the blocks; the commit block comes on top.
    fn log_blocks_for(&self, n: u64) -> u64 {
        let per_desc = self.config.block_bytes / 16 - 1;
        n + n.div_ceil(per_desc).max(1)
    }

    /// Whether this file system's journal is jbd2's (ext4), which caps transactions and
    /// checkpoints at handle start.
    fn jbd2(&self) -> bool {
        self.log.has_superblock()
    }

    /// start_this_handle (fs/jbd2/transaction.c) for the application's next call. First
    /// `add_transaction_credits`: a running transaction whose outstanding credits plus the
    /// handle's would exceed `j_max_transaction_buffers` is committed (jbd2_log_start_commit)
    /// and the handle waits until the commit has taken it (`wait_transaction_locked`), then
    /// joins the next one. Then, with too little log space for a full transaction
    /// (jbd2_log_space_left < j_max_transaction_buffers), `__jbd2_log_wait_for_space`.
    pub(super) fn start_handle(&mut self) {
        if !self.jbd2() {
            return;
        }
        let t0 = self.now;
        let outstanding = self.log_blocks_for(self.running.meta.len() as u64) + 1;
        if !self.running.is_empty() && outstanding + HANDLE_CREDITS > self.log.max_transaction_blocks() {
            let tid = self.running.tid;
            self.stats.commits_capped += 1;
            self.request_commit(self.now, tid);
            self.wait_until(|fs| fs.running.tid > tid);
        }
        self.wait_for_log_space();
        self.stats.journal_wait_ns += self.now.since(t0);
    }

    /// `__jbd2_log_wait_for_space` (fs/jbd2/checkpoint.c): while the log has less room than a
    /// full transaction, checkpoint the oldest transaction (`jbd2_log_do_checkpoint`), or if
    /// none is left move the tail past what needs none (`jbd2_cleanup_journal_tail`), or wait
    /// for the commit in flight.
    fn wait_for_log_space(&mut self) {
        let need = self.log.max_transaction_blocks();
        while self.log.space_left() < need {
            let checkpoint = &self.checkpoint;
            self.log.drop_clean(|b| checkpoint.contains(&b));
            if self.log.checkpoint_transactions() > 0 {
                self.log_do_checkpoint();
            } else if self.cleanup_journal_tail() {
            } else if let Some(tid) = self.commit.as_ref().map(|c| c.tid) {
                self.wait_until(|fs| fs.committed_tid >= tid);
            } else {
                // Nothing can free more (a log smaller than a transaction plus the slack):
                // jbd2 would abort the journal; the model goes on with what is free.
                break;
            }
        }
    }

    /// jbd2_log_do_checkpoint: first `jbd2_cleanup_journal_tail` (done if it freed anything);
    /// else the oldest checkpoint transaction's dirty buffers are written home in batches of
    /// 64, each waited for, and the tail moves past it.
    fn log_do_checkpoint(&mut self) {
        if self.cleanup_journal_tail() {
            return;
        }
        let checkpoint = &self.checkpoint;
        let Some((_, blocks)) = self.log.oldest_dirty(|b| checkpoint.contains(&b)) else { return };
        for batch in blocks.chunks(CHECKPOINT_BATCH_BLOCKS) {
            let mut sorted = batch.to_vec();
            sorted.sort_unstable();
            let home = coalesce(sorted.iter().map(|&b| Run::new(b, 1)).collect());
            let reqs = self.write_requests_meta(&home);
            self.app_io(reqs, false);
            for b in batch {
                self.checkpoint.remove(b);
            }
        }
        self.stats.checkpoints += 1;
        self.stats.metadata_blocks_checkpointed += blocks.len() as u64;
        let checkpoint = &self.checkpoint;
        self.log.drop_clean(|b| checkpoint.contains(&b));
        self.cleanup_journal_tail();
    }

    /// jbd2_cleanup_journal_tail: if the log's tail can move (jbd2_journal_get_log_tail),
    /// a cache flush (the checkpoint's writes must be durable, JBD2_BARRIER) and the journal
    /// superblock written with REQ_FUA (`__jbd2_update_log_tail`; trimlab's devices have no
    /// FUA, so a write and a FLUSH); the application waits for each. Returns whether it moved.
    fn cleanup_journal_tail(&mut self) -> bool {
        let Some((tid, pos)) = self.log.log_tail(self.running.tid) else { return false };
        let mut reqs = vec![Command::Flush];
        reqs.extend(self.journal_superblock_write());
        self.app_io(reqs, true);
        self.log.move_tail(tid, pos);
        true
    }

    /// The journal superblock's write with REQ_FUA: a write and a FLUSH.
    fn journal_superblock_write(&mut self) -> Vec<Command> {
        let bs = self.config.block_bytes;
        let w = Command::Write { offset: self.layout.journal_start * bs, bytes: bs, tag: self.journal_tag };
        self.journal_tag += 1;
        self.stats.journal_tail_updates += 1;
        vec![w, Command::Flush]
    }

    /// jbd2_journal_commit_transaction: transactions whose buffers were all logged again or
    /// written home leave the checkpoint list (`__jbd2_journal_clean_checkpoint_list`,
    /// `__jbd2_journal_remove_checkpoint`); if that frees at least `j_max_transaction_buffers`
    /// log blocks, the tail moves after the commit block (`jbd2_update_log_tail`), before the
    /// commit callback's discards. The requests, or none.
    fn tail_update_at_commit(&mut self) -> Vec<Command> {
        if !self.jbd2() {
            return Vec::new();
        }
        let checkpoint = &self.checkpoint;
        self.log.drop_clean(|b| checkpoint.contains(&b));
        match self.log.log_tail(self.running.tid) {
            Some((tid, pos)) if self.log.freed_by(pos) >= self.log.max_transaction_blocks() => {
                self.log.move_tail(tid, pos);
                self.journal_superblock_write()
            }
            _ => Vec::new(),
        }
    }

    /// Mount: jbd2's journal_reset starts the log over at its first block (the journal was
    /// checkpointed at umount).
    /// A mount queues `xfs_log_worker` (`commit_timer_due`).
    pub(super) fn log_worker_mounted(&mut self) {
        if self.layout_fs.xfs().is_some() {
            self.layout_fs.xfs_mut().log_worker_from = self.now;
        }
    }

    pub(super) fn journal_mounted(&mut self) {
        self.log_worker_mounted();
        if self.jbd2() {
            let checkpoint = &self.checkpoint;
            self.log.drop_clean(|b| checkpoint.contains(&b));
            if self.log.checkpoint_transactions() == 0 {
                self.log = new_log(&self.layout, &self.config, self.running.tid);
            }
        }
    }

    pub(super) fn count_policy_trims(&mut self, reqs: &[Command]) {
        for r in reqs {
            if let Some(bytes) = trimmed_bytes(r) {
                let s = self.policy.stats_mut();
                s.trim_commands += 1;
                s.trim_bytes += bytes;
            }
        }
    }

    /// Held runs become allocatable.
    pub(super) fn release(&mut self, now: SimTime, runs: Vec<FreedRun>) {
        for f in runs {
            if f.run.len == 0 {
                continue;
            }
            self.bitmap.release(f.run.start, f.run.len);
            let s = self.policy.stats_mut();
            s.released_blocks += f.run.len;
            s.unusable_block_s += f.run.len as f64 * now.since(f.freed_at) as f64 / 1e9;
            let g0 = self.bitmap.group_of(f.run.start);
            let g1 = self.bitmap.group_of(f.run.end() - 1);
            for g in g0..=g1 {
                self.group_trimmed[g as usize] = None;
            }
        }
    }
}

/// A transaction's freed runs sorted by block, adjacent ones merged.
fn coalesced_in_block_order(mut freed: Vec<FreedRun>) -> Vec<FreedRun> {
    freed.sort_by_key(|f| f.run.start);
    let mut merged: Vec<FreedRun> = Vec::with_capacity(freed.len());
    for f in freed {
        match merged.last_mut() {
            Some(m) if m.run.end() == f.run.start => {
                m.run.len += f.run.len;
                m.freed_at = m.freed_at.min(f.freed_at);
            }
            _ => merged.push(f),
        }
    }
    merged
}
