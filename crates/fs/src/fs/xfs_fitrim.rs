//! XFS's FITRIM (`fstrim`) as Linux 6.18 runs it (fs/xfs/xfs_discard.c), with the XFS layout
//! (`FsConfig::inodegc`); the ext4-like FITRIM of fitrim.rs differs in three ways:
//! * Each gather forces the log first (`xfs_trim_gather_extents`: `xfs_log_force(mp,
//!   XFS_LOG_SYNC)`), so frees that no sync has committed yet (inodegc's, after an `rm`'s
//!   sync) are committed by the fstrim and their online discards go out during it.
//! * A free extent with any busy block is skipped (`xfs_extent_busy_search` -> "skip the
//!   discard and try again the next time"). Busy blocks are freed ones whose transaction is
//!   not yet committed or whose online discard is still in flight: the bitmap's freed but
//!   unavailable blocks. XFS's free-space btrees hold an extent merged with its free
//!   neighbours, busy or not, so the kernel's free extent is the maximal run of blocks not in
//!   use; the model skips an available run that touches a busy block.
//! * The discards are asynchronous (`xfs_trim_perag_extents` hands each gathered batch to
//!   `xfs_discard_extents`, which submits the chained bios and returns; `xfs_discard_endio`
//!   clears the busy extents on completion). fstrim returns once the last AG's batch is
//!   submitted; the trimmed runs stay out of the allocator until their TRIM completes.
//!
//! A gather examines at most `XFS_DISCARD_MAX_EXAMINE` (100) free extents of the by-size
//! btree, longest first (`xfs_cntbt` walked with `xfs_btree_decrement`), and stops at the
//! first one shorter than minlen; the next batch of the AG starts with another log force.

use super::*;

/// `XFS_DISCARD_MAX_EXAMINE`: `--batch <= 0` stops at the 100th record, so a gather takes 99.
const GATHER_BATCH: usize = 99;

impl<D: BlockDevice> FileSystem<D> {
    /// `xfs_ioc_trim` over blocks `[start, end)`: returns the bytes it submitted.
    pub(super) fn xfs_fstrim(&mut self, start: u64, end: u64, minlen: u64) -> u64 {
        // The job holds the runs in flight from the first submission on (check() sees them).
        let mut job = self.fitrim_job(start, end, minlen);
        job.xfs = true;
        self.fitrim = Some(job);
        let mut trimmed = 0;
        let bpg = self.layout.bpg;
        for ag in start / bpg..end.div_ceil(bpg).min(self.layout.groups) {
            let lo = (ag * bpg).max(start);
            let hi = ((ag + 1) * bpg).min(end).min(self.layout.total_blocks);
            // The by-size btree's cursor: the (length, block) the next batch starts at.
            let mut cursor: Option<(u64, u64)> = None;
            loop {
                // xfs_trim_gather_extents forces the log before it reads the AGF and walks the
                // btree: frees the force commits are free extents of this batch.
                self.xfs_log_force();
                let mut extents = self.bitmap.avail_runs(lo, hi, 1);
                // The by-size btree, longest first (equal lengths: highest block first), from
                // where the last batch stopped (xfs_alloc_lookup_le on the cursor).
                extents.retain(|r| cursor.is_none_or(|c| (r.len, r.start) <= c));
                extents.sort_by_key(|r| std::cmp::Reverse((r.len, r.start)));
                let keep = extents.iter().take_while(|r| r.len >= minlen).count();
                extents.truncate(keep);
                let more = extents.get(GATHER_BATCH).map(|r| (r.len, r.start));
                extents.truncate(GATHER_BATCH);
                let gathered: Vec<Run> = extents.into_iter().filter(|r| self.xfs_trim_free(*r)).collect();
                // xfs_extent_busy_insert_discard under the AGF lock: all of the batch is busy
                // before the first discard goes out (SimTime::MAX: not submitted yet).
                for &run in &gathered {
                    self.bitmap.hold(run.start, run.len);
                    self.policy.forget(run);
                    if let Some(job) = self.fitrim.as_mut() {
                        job.busy.push_back((SimTime(u64::MAX), run));
                    }
                }
                for run in gathered {
                    trimmed += self.xfs_trim_submit(run);
                }
                match more {
                    Some(c) => cursor = Some(c),
                    None => break,
                }
            }
        }
        // fstrim returns; what is still in flight is released by its completion events.
        match self.fitrim.take() {
            Some(mut job) if !job.busy.is_empty() => {
                job.done = true;
                self.fitrim = Some(job);
            }
            _ => {}
        }
        trimmed
    }

    /// `xfs_log_force(mp, XFS_LOG_SYNC)`: returns once the checkpoint is on disk and its
    /// completion callbacks ran (`xlog_state_do_iclog_callbacks` before the force waiters are
    /// woken; `xlog_cil_committed` -> `xlog_discard_busy_extents` submits all the freed
    /// extents' discards and returns): the discards are in flight, their extents still busy. (The model's commit waits for them before it completes, as ext4's does.)
    fn xfs_log_force(&mut self) {
        let target = if !self.running.is_empty() {
            let tid = self.running.tid;
            self.request_commit(self.now, tid);
            tid
        } else {
            return;
        };
        self.wait_until(|fs| {
            fs.committed_tid >= target
                || fs.commit.as_ref().is_some_and(|c| {
                    c.tid >= target && matches!(c.phase, journal::Phase::Trim) && c.batch.reqs.is_empty()
                })
        });
    }

    /// Whether `run` (gathered before the log force) is still a whole free extent with no
    /// busy block: available throughout, and neither neighbour freed but unavailable.
    fn xfs_trim_free(&self, run: Run) -> bool {
        let group = self.bitmap.group_of(run.start);
        let (g0, g1) =
            (group * self.layout.bpg, ((group + 1) * self.layout.bpg).min(self.layout.total_blocks));
        let busy = |b: u64| !self.bitmap.is_used(b) && !self.bitmap.is_avail(b);
        (run.start..run.end()).all(|b| self.bitmap.is_avail(b))
            && !(run.start > g0 && busy(run.start - 1))
            && !(run.end() < g1 && busy(run.end()))
    }

    /// Submits the discards of gathered `run` back to back (`xfs_discard_extents`); returns
    /// the bytes.
    fn xfs_trim_submit(&mut self, run: Run) -> u64 {
        let mut done = self.now;
        let mut bytes = 0;
        for req in self.trim_requests(run) {
            let t = self.now.after(self.config.host.submit_ns);
            self.advance_to(t);
            self.now = t;
            if let Some(b) = trimmed_bytes(&req) {
                self.stats.fitrim_trim_commands += 1;
                self.stats.fitrim_trim_bytes += b;
                bytes += b;
            }
            done = done.max(self.dev_submit(t, &req, None));
        }
        // One completion for the chained bios (xfs_discard_endio -> xfs_extent_busy_clear).
        let done = done.after(self.config.host.complete_ns);
        if let Some(job) = self.fitrim.as_mut() {
            if let Some(i) = job.busy.iter().position(|&(t, r)| t == SimTime(u64::MAX) && r == run) {
                job.busy.remove(i);
            }
            let at = job.busy.partition_point(|(t, _)| *t <= done);
            job.busy.insert(at, (done, run));
        }
        self.events.push(done, Ev::Fitrim);
        bytes
    }

    /// The discards of an XFS FITRIM completed up to `now` (each has its event): their runs
    /// become available again. Returns the job while fstrim runs or some are in flight.
    pub(super) fn xfs_fitrim_release(&mut self, now: SimTime, mut job: Fitrim) -> Option<Fitrim> {
        while job.busy.front().is_some_and(|(t, _)| *t <= now) {
            let (_, run) = job.busy.pop_front().unwrap_or_else(|| unreachable!());
            self.release(now, vec![FreedRun { run, freed_at: now }]);
        }
        (!job.busy.is_empty() || !job.done).then_some(job)
    }
}
