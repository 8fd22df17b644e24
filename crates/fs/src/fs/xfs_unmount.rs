//! XFS's unmount (`FsConfig::inodegc`, which only the XFS layout turns on): it forces the log
//! and flushes inodegc itself and cancels the periodic workers, so it takes as long as its own
//! I/O (~0.1 s on the Linux 6.18 recording), where the ext4-like umount runs every pending
//! timer, the 30 s `xfs_log_worker` included.
//!
//! The kernel's order (Linux 6.18): `generic_shutdown_super` -> `sync_filesystem` (write-back,
//! then `xfs_fs_sync_fs`: `xfs_log_force(mp, XFS_LOG_SYNC)`); `xfs_fs_put_super` ->
//! `xfs_unmountfs` (fs/xfs/xfs_mount.c): `xfs_inodegc_flush` (inactivate every queued inode),
//! `xfs_unmount_flush_inodes` (`xfs_log_force(mp, XFS_LOG_SYNC)`, `xfs_extent_busy_wait_all`:
//! the checkpoint's discards complete, `xfs_inodegc_stop`), then `xfs_log_unmount` ->
//! `xfs_log_clean` -> `xfs_log_quiesce` (`cancel_delayed_work_sync(&log->l_work)`: the log
//! worker is cancelled, not waited for; one more log force).

use super::*;

impl<D: BlockDevice> FileSystem<D> {
    /// Everything of [`FileSystem::umount`] before the journal checkpoint, the XFS way.
    pub(super) fn xfs_unmount_quiesce(&mut self) {
        self.sync();
        self.inodegc_flush();
        // xfs_unmount_flush_inodes' and xfs_log_quiesce's log forces; a checkpoint's release
        // may dirty metadata again, which the second force commits.
        for _ in 0..2 {
            self.commit_and_wait();
            self.wait_until(|fs| fs.background_work_done());
        }
        // Only timers are left (the log worker's, inodegc's delayed work, fstrim.timer's):
        // unmount cancels them. A fresh queue drops them without moving the clock to them.
        self.events = EventQueue::new();
        self.fitrim_timer_armed = false;
        self.delalloc.flusher_armed = false;
        if !self.running.is_empty() {
            // Never reached on the models so far; if it is, the next mount's log worker
            // commits it, as it would the kernel's.
            let at = self.commit_timer_due(self.now);
            self.events.push(at, Ev::CommitTimer(self.running.tid));
        }
    }

    /// No commit, FITRIM or discard worker in flight (`xfs_extent_busy_wait_all`).
    fn background_work_done(&self) -> bool {
        self.commit.is_none() && self.fitrim.is_none() && self.workers.iter().all(|w| !w.scheduled)
    }
}
