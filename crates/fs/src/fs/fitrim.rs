//! FITRIM (`fstrim`): per block group, free extents of at least minlen are held, trimmed one
//! at a time and released; groups trimmed since mount are skipped (ext4). On btrfs the units
//! are its block groups and then the device's unallocated space (fs/btrfs.rs); XFS's is
//! xfs_fitrim.rs.

use super::*;

pub(super) struct Fitrim {
    /// ext4's groups, or on btrfs the indices of its block groups and then the device.
    pub(super) groups: VecDeque<u64>,
    pub(super) start: u64,
    pub(super) end: u64,
    pub(super) minlen: u64,
    pub(super) group: Option<u64>,
    pub(super) pending: VecDeque<Run>,
    pub(super) current: Option<(Run, Batch)>,
    pub(super) finishing: bool,
    pub(super) trimmed_bytes: u64,
    pub(super) done: bool,
    /// Started by the fstrim policy's timer (nobody waits for it).
    pub(super) periodic: bool,
    /// XFS: runs whose discards are in flight after fstrim returned, by completion time
    /// (xfs_fitrim.rs).
    pub(super) busy: VecDeque<(SimTime, Run)>,
    /// XFS's FITRIM: the caller gathers and submits, events only release (xfs_fitrim.rs).
    pub(super) xfs: bool,
}

/// The fstrim policy's timer as a cron'd fstrim (fstrim.timer) runs it: its first pass comes
/// one period after mount whatever the file system did meanwhile; later passes come a period
/// after the first commit that follows the previous one (the model's timer, which the paper
/// experiments were run with).
#[derive(Default)]
pub(super) struct PeriodicFstrim {
    mounted_at: SimTime,
    /// Passes started since mount.
    passes: u64,
    /// What a run should be told (a mount that ended before the first pass).
    notes: Vec<String>,
}

impl<D: BlockDevice> FileSystem<D> {
    /// Mount: the periodic fstrim's first pass is due one period later. It trims all free
    /// space not trimmed since mount: ext4's per-group EXT4_GROUP_INFO_WAS_TRIMMED flags are
    /// in-memory and start clear (fs/ext4/mballoc.c ext4_trim_all_free), XFS keeps no such
    /// state (fs/xfs/xfs_discard.c trims every free extent of at least minlen each call), and
    /// btrfs' free-space entries start untrimmed (fs/btrfs/free-space-cache.c `trim_state`,
    /// which only async discard consults) as do the device's CHUNK_TRIMMED bits.
    pub(super) fn fitrim_mounted(&mut self) {
        self.periodic.mounted_at = self.now;
        self.periodic.passes = 0;
        if let Some((period, _)) = self.policy.periodic_fitrim() {
            self.fitrim_timer_armed = true;
            self.events.push(self.now.after(period), Ev::FitrimTimer);
        }
    }

    /// The fstrim timer fired: a pass over the whole file system unless one is running (a
    /// systemd service is not started twice).
    pub(super) fn periodic_fitrim_due(&mut self, t: SimTime) {
        self.fitrim_timer_armed = false;
        let Some((_, minlen)) = self.policy.periodic_fitrim() else { return };
        if self.fitrim.is_some() {
            return;
        }
        if self.flavor() == layout::Flavor::Xfs {
            // XFS's FITRIM remembers nothing between calls: every pass visits every group.
            self.group_trimmed.iter_mut().for_each(|g| *g = None);
        }
        self.periodic.passes += 1;
        self.stats.fitrim_periodic_passes += 1;
        self.start_fitrim(t, 0, self.layout.total_blocks, minlen / self.config.block_bytes);
        if let Some(j) = self.fitrim.as_mut() {
            j.periodic = true;
        }
    }

    /// Unmount: a mount that ended before its first periodic pass is noted (its free space
    /// was never trimmed by fstrim).
    pub(super) fn fitrim_unmounted(&mut self) {
        let Some((period, _)) = self.policy.periodic_fitrim() else { return };
        if self.periodic.passes == 0 {
            let mounted = self.now.since(self.periodic.mounted_at);
            self.periodic.notes.push(format!(
                "fstrim every {}: the file system was mounted for {} and unmounted before the first pass (nothing was trimmed by fstrim; a shorter period, or an `fstrim` line in the script, trims)",
                fmt_ns(period),
                fmt_ns(mounted)
            ));
        }
    }

    /// What the run should be told about the file system (the periodic fstrim's notes).
    pub fn notes(&self) -> &[String] {
        &self.periodic.notes
    }

    pub(super) fn start_fitrim(&mut self, now: SimTime, start: u64, end: u64, minlen: u64) {
        let bpg = self.layout.bpg;
        let groups: VecDeque<u64> = match self.btrfs_fitrim_units() {
            0 => (start / bpg..end.div_ceil(bpg).min(self.layout.groups)).collect(),
            units => (0..units as u64).collect(),
        };
        let mut job = self.fitrim_job(start, end, minlen);
        job.groups = groups;
        self.fitrim = Some(job);
        self.events.push(now.after(self.config.host.submit_ns), Ev::Fitrim);
    }

    /// The runs FITRIM holds out of the allocator: the one being trimmed, and on XFS those
    /// whose discards are still in flight (for `check`).
    pub(super) fn fitrim_held(&self) -> Vec<Run> {
        let Some(j) = &self.fitrim else { return Vec::new() };
        j.current.iter().map(|(r, _)| *r).chain(j.busy.iter().map(|(_, r)| *r)).collect()
    }

    /// A FITRIM job over `[start, end)` with no groups to do yet.
    pub(super) fn fitrim_job(&self, start: u64, end: u64, minlen: u64) -> Fitrim {
        Fitrim {
            groups: VecDeque::new(),
            start,
            end,
            minlen: minlen.max(1),
            group: None,
            pending: VecDeque::new(),
            current: None,
            finishing: false,
            trimmed_bytes: 0,
            done: false,
            periodic: false,
            busy: VecDeque::new(),
            xfs: false,
        }
    }

    pub(super) fn fitrim_step(&mut self, now: SimTime) {
        let Some(mut job) = self.fitrim.take() else { return };
        if job.xfs {
            self.fitrim = self.xfs_fitrim_release(now, job);
            return;
        }
        if job.finishing {
            job.finishing = false;
            if let Some((run, _)) = job.current.take() {
                self.release(now, vec![FreedRun { run, freed_at: now }]);
                job.trimmed_bytes += run.len * self.config.block_bytes;
            }
        }
        if let Some((run, mut batch)) = job.current.take() {
            let step = self.batch_step(now, &mut batch);
            job.current = Some((run, batch));
            match step {
                Step::Next(t) => self.events.push(t, Ev::Fitrim),
                Step::Finished(t) => {
                    job.finishing = true;
                    self.events.push(t, Ev::Fitrim);
                }
            }
            self.fitrim = Some(job);
            return;
        }
        // ext4_trim_all_free: a group's free extents of at least minlen, each held while its
        // TRIM is in flight and waited for; a group trimmed since mount with this minlen or a
        // smaller one is skipped.
        while job.pending.is_empty() {
            if let Some(g) = job.group.take() {
                self.group_trimmed[g as usize] = Some(job.minlen);
            }
            let Some(g) = job.groups.pop_front() else {
                job.done = true;
                if !job.periodic {
                    self.fitrim = Some(job);
                }
                return;
            };
            if self.layout_fs.btrfs().is_some() {
                // btrfs_trim_fs: no per-group "trimmed" flag (btrfs_trim_free_extents keeps its
                // own for the unallocated space).
                job.pending = self.btrfs_fitrim_runs(g as usize, job.start, job.end, job.minlen).into();
                continue;
            }
            if self.group_trimmed[g as usize].is_some_and(|m| job.minlen >= m) {
                continue;
            }
            let lo = (g * self.layout.bpg).max(job.start);
            let hi = ((g + 1) * self.layout.bpg).min(job.end).min(self.layout.total_blocks);
            job.pending = self.bitmap.avail_runs(lo, hi, job.minlen).into();
            job.group = Some(g);
        }
        let run = job.pending.pop_front().unwrap_or_else(|| unreachable!());
        if (run.start..run.end()).all(|b| self.bitmap.is_avail(b)) {
            self.bitmap.hold(run.start, run.len);
            self.policy.forget(run);
            let reqs = self.trim_requests(run);
            for r in &reqs {
                if let Some(bytes) = trimmed_bytes(r) {
                    self.stats.fitrim_trim_commands += 1;
                    self.stats.fitrim_trim_bytes += bytes;
                }
            }
            job.current = Some((run, Batch { reqs: reqs.into(), serial: true, done_max: SimTime::ZERO }));
        }
        self.fitrim = Some(job);
        self.events.push(now.after(self.config.host.submit_ns), Ev::Fitrim);
    }

    /// FITRIM (`fstrim`) over the byte range, trimming free extents of at least `minlen_bytes`.
    /// The caller waits until it is done; returns the bytes trimmed.
    pub fn fstrim(&mut self, start_bytes: u64, len_bytes: u64, minlen_bytes: u64) -> u64 {
        self.syscall();
        self.wait_until(|fs| fs.fitrim.is_none());
        let bs = self.config.block_bytes;
        let end = (start_bytes.saturating_add(len_bytes) / bs).min(self.layout.total_blocks);
        if self.flavor() == layout::Flavor::Xfs {
            return self.xfs_fstrim(start_bytes / bs, end, minlen_bytes.div_ceil(bs).max(1));
        }
        self.start_fitrim(self.now, start_bytes / bs, end, minlen_bytes.div_ceil(bs));
        self.wait_until(|fs| fs.fitrim.as_ref().is_some_and(|j| j.done));
        self.fitrim.take().map_or(0, |j| j.trimmed_bytes)
    }
}

/// A duration as fstrim's periods are written (`20ms`, `1.5s`, `2h`).
fn fmt_ns(ns: u64) -> String {
    const UNITS: [(u64, &str); 5] = [
        (3_600_000_000_000, "h"),
        (60_000_000_000, "min"),
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
    ];
    for (unit, name) in UNITS {
        if ns >= unit {
            let v = ns as f64 / unit as f64;
            return if ns.is_multiple_of(unit) {
                format!("{}{name}", ns / unit)
            } else {
                format!("{v:.3}{name}")
            };
        }
    }
    format!("{ns}ns")
}
