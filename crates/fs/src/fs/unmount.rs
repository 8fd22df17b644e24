//! ext4's and btrfs' unmount: they stop their background threads instead of running their
//! timers out. `generic_shutdown_super` -> `sync_filesystem` (the commit, then
//! `sync_blockdev`), then `put_super`. ext4's (fs/ext4/super.c): `ext4_unregister_li_request`
//! (ext4lazyinit stops; the next mount resumes it), `ext4_mb_release` (`flush_work` of the
//! discard worker's work in flight) and `jbd2_journal_destroy` (the commit thread and its timer
//! stop, the log is checkpointed). btrfs' `close_ctree` (fs/btrfs/disk-io.c) stops the cleaner
//! and transaction threads and purges the async discard lists (`btrfs_discard_cleanup`); the
//! model's cleaner only restarts those lists' delays, so nothing of it is left to run. So an
//! umount takes as long as its own I/O; the model's used to run every pending timer, the
//! commit timer and the rest of ext4lazyinit's zeroing included. (XFS: xfs_unmount.rs.)

use super::*;

impl<D: BlockDevice> FileSystem<D> {
    /// Everything of [`FileSystem::umount`] after the sync and before the checkpoint, the ext4
    /// and btrfs way: work in flight finishes, and so do the TRIM policy's own queued TRIMs
    /// (Lazy TRIM's workers: the papers' policies have no kernel umount to follow, so their
    /// queues drain); the timers are dropped without moving the clock to them.
    pub(super) fn stop_threads_at_unmount(&mut self) {
        loop {
            // A worker waiting for a TRIM's reuse delay (async) is not in flight: it goes with
            // the timers once its policy has nothing left to hand out.
            self.wait_until(|fs| {
                fs.commit.is_none()
                    && fs.fitrim.is_none()
                    && fs.workers.iter().all(|w| w.ticket.is_none())
                    && fs.policy.workers_wanted() == 0
            });
            // A worker's release may have dirtied the running transaction: commit it too.
            if !self.commit_and_wait() {
                break;
            }
        }
        self.events = EventQueue::new();
        self.fitrim_timer_armed = false;
        self.delalloc.flusher_armed = false;
        // Their pending wake-ups went with the queue; the next mount wakes them again.
        self.workers.iter_mut().for_each(|w| w.scheduled = false);
        if let Some(b) = self.layout_fs.btrfs_mut() {
            b.cleaner_armed = false;
        }
    }
}
