//! Discard workers: background threads that issue the TRIMs a policy queued (Lazy TRIM's
//! adaptive pool, btrfs' async discard worker, ext4's `ext4_discard_work`), one TRIM at a
//! time each.

use super::*;

#[derive(Default)]
pub(super) struct Worker {
    pub(super) scheduled: bool,
    pub(super) ticket: Option<u64>,
    pub(super) batch: Batch,
    pub(super) finishing: bool,
    /// Runs this worker holds while their TRIMs are in flight (ext4's discard worker, which
    /// marks them used in the buddy for the duration); released when it finishes.
    pub(super) held: Vec<FreedRun>,
}

impl<D: BlockDevice> FileSystem<D> {
    pub(super) fn wake_workers(&mut self, now: SimTime) {
        // The policy bounds its own pool (Lazy TRIM's `lazy_workers_max`); a worker, once
        // there, stays for the policies of later mounts.
        let want = self.policy.workers_wanted();
        if want > self.workers.len() {
            self.workers.resize_with(want, Worker::default);
        }
        for i in 0..want {
            if !self.workers[i].scheduled {
                self.workers[i].scheduled = true;
                self.events.push(now.after(self.config.host.wakeup_ns), Ev::Worker(i));
            }
        }
    }

    pub(super) fn worker_step(&mut self, now: SimTime, i: usize) {
        if self.workers[i].finishing {
            self.workers[i].finishing = false;
            let ticket = self.workers[i]
                .ticket
                .take()
                .unwrap_or_else(|| unreachable!("worker {i} finishing without a ticket"));
            self.policy.trim_done(ticket, now);
            self.stats.last_trim_done_ns = now.0;
            let mine = std::mem::take(&mut self.workers[i].held);
            self.release(now, mine);
            let rel = self.policy.drain_releasable();
            self.release(now, rel);
        }
        if self.workers[i].ticket.is_some() {
            let mut batch = std::mem::take(&mut self.workers[i].batch);
            let step = self.batch_step(now, &mut batch);
            self.workers[i].batch = batch;
            match step {
                Step::Next(t) => self.events.push(t, Ev::Worker(i)),
                Step::Finished(t) => {
                    self.workers[i].finishing = true;
                    self.events.push(t, Ev::Worker(i));
                }
            }
            return;
        }
        if i >= self.policy.workers_wanted() {
            self.workers[i].scheduled = false;
            return;
        }
        match self.policy.next_for_worker(now) {
            WorkerPick::Trim { ticket, run, hold } => {
                if hold {
                    self.bitmap.hold(run.start, run.len);
                }
                let reqs = self.trim_requests(run);
                self.count_policy_trims(&reqs);
                self.workers[i].ticket = Some(ticket);
                self.workers[i].batch = Batch { reqs: reqs.into(), serial: true, done_max: SimTime::ZERO };
                self.events.push(now.after(self.config.host.submit_ns), Ev::Worker(i));
                self.wake_workers(now);
            }
            WorkerPick::TrimFreeRuns { ticket, run } => {
                let runs = self.bitmap.avail_runs_extended(run.start, run.end());
                let mut reqs = Vec::new();
                for r in &runs {
                    self.bitmap.hold(r.start, r.len);
                    self.policy.forget(*r);
                    reqs.extend(self.trim_requests(*r));
                }
                self.count_policy_trims(&reqs);
                self.workers[i].held = runs.into_iter().map(|run| FreedRun { run, freed_at: now }).collect();
                self.workers[i].ticket = Some(ticket);
                self.workers[i].batch = Batch { reqs: reqs.into(), serial: true, done_max: SimTime::ZERO };
                self.events.push(now.after(self.config.host.submit_ns), Ev::Worker(i));
            }
            WorkerPick::TrimMerged { ticket, run, max_blocks, min_blocks } => {
                let mut reqs = Vec::new();
                match self.bitmap.avail_run_around(run.start).map(|m| self.btrfs_clip(m, run.start)) {
                    Some(merged) if merged.len >= min_blocks => {
                        self.bitmap.hold(merged.start, merged.len);
                        // Queued neighbours merged into this entry are trimmed with it.
                        self.policy.forget(merged);
                        let mut s = merged.start;
                        while s < merged.end() {
                            let n = max_blocks.max(1).min(merged.end() - s);
                            reqs.extend(self.trim_requests(Run::new(s, n)));
                            s += n;
                        }
                        self.workers[i].held = vec![FreedRun { run: merged, freed_at: now }];
                    }
                    Some(small) => {
                        // Below the smallest filter: left to fstrim, as btrfs does.
                        self.policy.forget(small);
                        self.policy.stats_mut().untrimmed_blocks += run.len;
                    }
                    None => {}
                }
                self.count_policy_trims(&reqs);
                self.workers[i].ticket = Some(ticket);
                self.workers[i].batch = Batch { reqs: reqs.into(), serial: true, done_max: SimTime::ZERO };
                self.events.push(now.after(self.config.host.submit_ns), Ev::Worker(i));
            }
            WorkerPick::WaitUntil(t) => self.events.push(t.max(now), Ev::Worker(i)),
            WorkerPick::Idle => self.workers[i].scheduled = false,
        }
    }
}
