//! The ordered JBD2-like journal: running and committing transactions, the commit's phases
//! (ordered data, checkpoint, descriptor + metadata, commit block + FLUSH, policy TRIMs,
//! release, wake), and the release of held blocks.

use super::*;

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
    pub(super) pages: Vec<((Ino, u64), u64)>,
}

impl<D: BlockDevice> FileSystem<D> {
    pub(super) fn dirty_meta(&mut self, block: u64) {
        self.dirty_meta_at(block, self.now);
    }

    /// A metadata change made at `t` by a background thread (XFS's inodegc worker), whose
    /// clock is not the application's.
    pub(super) fn dirty_meta_at(&mut self, block: u64, t: SimTime) {
        if self.running.is_empty() {
            let at = t.after(self.config.commit_interval_ns);
            self.events.push(at, Ev::CommitTimer(self.running.tid));
        }
        self.running.meta.insert(block);
    }

    pub(super) fn free_run(&mut self, run: Run) {
        self.free_run_at(run, self.now);
    }

    /// Frees `run` into the running transaction at `t` (see `dirty_meta_at`).
    pub(super) fn free_run_at(&mut self, run: Run, t: SimTime) {
        if self.running.is_empty() {
            let at = t.after(self.config.commit_interval_ns);
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
                // Descriptor blocks hold 16-byte tags; a checkpoint makes room first.
                let n = c.meta.len() as u64;
                let per_desc = self.config.block_bytes / 16 - 1;
                let log_blocks = n + n.div_ceil(per_desc).max(1);
                let mut reqs = Vec::new();
                if self.journal_used + log_blocks + 1 > self.layout.journal_blocks {
                    let home: Vec<Run> = coalesce(self.checkpoint.iter().map(|&b| Run::new(b, 1)).collect());
                    self.stats.metadata_blocks_checkpointed += self.checkpoint.len() as u64;
                    self.stats.checkpoints += 1;
                    self.checkpoint.clear();
                    reqs.extend(self.write_requests_meta(&home));
                    reqs.push(Command::Flush);
                    self.journal_used = 0;
                }
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
                self.checkpoint_committed(&c.meta);
                let util = self.utilization();
                let freed = self.committed_freed(&mut c);
                let plan = self.policy.on_commit(now, freed, util);
                self.release(now, plan.release);
                let mut reqs = Vec::new();
                for f in &plan.trim {
                    reqs.extend(self.trim_requests(f.run));
                }
                self.count_policy_trims(&reqs);
                c.trimming = plan.trim;
                c.phase = Phase::Trim;
                c.batch = Batch {
                    reqs: reqs.into(),
                    serial: plan.mode == TrimMode::Serial,
                    done_max: SimTime::ZERO,
                };
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

    pub(super) fn journal_writes(&mut self, blocks: u64) -> Vec<Command> {
        let bs = self.config.block_bytes;
        let max = (self.dev.max_transfer_bytes() / bs).max(1);
        let mut reqs = Vec::new();
        let mut left = blocks;
        while left > 0 {
            let room = self.layout.journal_blocks - self.journal_head;
            let n = left.min(room).min(max);
            let off = (self.layout.journal_start + self.journal_head) * bs;
            reqs.push(Command::Write { offset: off, bytes: n * bs, tag: self.journal_tag });
            self.journal_tag += n;
            self.journal_head = (self.journal_head + n) % self.layout.journal_blocks;
            left -= n;
        }
        self.journal_used += blocks;
        self.stats.journal_blocks_written += blocks;
        reqs
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
