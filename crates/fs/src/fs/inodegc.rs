//! XFS's deferred inode inactivation (Linux 5.14+, fs/xfs/xfs_icache.c), behind
//! `FsConfig::inodegc`: an unlinked file keeps its extents until the inodegc worker frees
//! them, so they join the log checkpoint that is open when the worker runs, not the unlink's.
//!
//! What decides which unlinked files' extents a `sync` discards and which wait for the next
//! log force (traced on Linux 6.18 with tests/realclient/trace-discard-pattern.sh xfs):
//! * `xfs_inodegc_queue` adds the inode to the CPU's queue and, if the queue already held more
//!   than `inodes_per_cluster` (32) inodes, queues the worker at once (`queue_delay = 0`); the
//!   kworker on the same CPU runs as soon as the unlinking task returns to user space (7 us
//!   after the 34th inode in the trace) and takes the whole queue (`llist_del_all`).
//! * Otherwise it re-arms a delayed work of one jiffy (`mod_delayed_work_on(..., 1)`); the
//!   timer wheel rounds that to the second tick boundary (4-8 ms at HZ = 250), and each newly
//!   queued inode re-arms it, so a run of unlinks faster than a tick apart never lets it fire.
//! * `sync -f` (`xfs_fs_sync_fs`) forces the log (`xfs_log_force(mp, XFS_LOG_SYNC)`): the
//!   CIL checkpoint holds the frees of the inodes the worker has inactivated so far, whose
//!   discards `xlog_cil_committed` issues (`xfs_discard_extents`) when the checkpoint is on
//!   disk. It does not flush the inodegc queue, so the inodes still queued are inactivated a
//!   few ms after the sync, into the next checkpoint, which waits for the next log force
//!   (the next sync, or the 30 s `xfs_log_worker`).
//!
//! The model has one queue (the kernel's is per CPU; a task that migrates between CPUs
//! splits the count, which moves the point where the worker is kicked: see docs/host-fs.md).

use super::*;
use crate::config::InodeGc;

/// The inodegc queue and its pending work.
#[derive(Default)]
pub(super) struct InodeGcQueue {
    /// Unlinked inodes waiting for inactivation, in the order they were queued: out of the
    /// file system's inode map (no call reaches them by number), still owning their extents.
    pub(super) queued: Vec<(Ino, Inode)>,
    /// The blocks the queued inodes' extents hold: what `df` already counts as free (see
    /// `FileSystem::utilization`).
    pub(super) queued_blocks: u64,
    /// Bumped whenever the pending work is re-armed or run, so that an earlier event is stale.
    pub(super) generation: u64,
}

impl<D: BlockDevice> FileSystem<D> {
    /// The unlink's half (`xfs_remove`, then `evict` -> `xfs_inode_mark_reclaimable` ->
    /// `xfs_inodegc_queue`): the name and its directory slot go in the unlink's transaction
    /// (the caller has removed the entry; the inode goes on the AGI unlinked list), the page
    /// cache is dropped (`truncate_inode_pages_final`), and the inode with its extents waits
    /// in the queue.
    pub(super) fn inodegc_unlink(&mut self, ino: Ino, gc: &InodeGc) -> Result<(), FsError> {
        self.drop_cached_pages(ino, 0, u64::MAX);
        let inode = self.inodes.remove(ino).ok_or(FsError::BadInode(ino))?;
        // truncate_inode_pages_final drops the cached pages (every written block: the model
        // has no memory pressure) before destroy_inode queues the inode; the delayed work the
        // previous unlink armed fires meanwhile (idle_until runs it at its time).
        let unwritten: u64 = inode.unwritten.values().sum();
        let cached = inode.extents.iter().map(|e| e.len).sum::<u64>().saturating_sub(unwritten);
        self.idle_until(self.now.after(cached * gc.evict_page_ns));
        self.inodegc_queue(ino, inode, gc);
        Ok(())
    }

    /// Queues an unlinked inode (a file, or a removed directory with its blocks as extents)
    /// for inactivation.
    pub(super) fn inodegc_queue(&mut self, ino: Ino, inode: Inode, gc: &InodeGc) {
        let bs = self.config.block_bytes;
        self.dirty_meta(self.layout.inode_block(ino, bs, self.config.inode_bytes));
        let q = &mut self.layout_fs.xfs_mut().inodegc;
        let items = q.queued.len() as u64;
        q.queued_blocks += inode.extents.iter().map(|e| e.len).sum::<u64>();
        q.queued.push((ino, inode));
        q.generation += 1;
        let generation = q.generation;
        // xfs_inodegc_want_queue_work: a cluster's worth queued, or free space below 5 %.
        let low_space = self.bitmap.avail_count() < self.layout.total_blocks / 100 * 5;
        if items > gc.kick_inodes || low_space {
            // queue_delay = 0: the worker runs on this CPU when the unlinking task returns to
            // user space, before its next system call; its CPU time is the task's.
            self.inodegc_run(self.now, true);
        } else {
            let at = SimTime((self.now.0 / gc.tick_ns + 2) * gc.tick_ns);
            self.events.push(at, Ev::InodeGc(generation));
        }
    }

    /// The delayed work fired; stale if re-armed or run since.
    pub(super) fn inodegc_timer(&mut self, t: SimTime, generation: u64) {
        if self.layout_fs.xfs().is_some_and(|x| x.inodegc.generation == generation) {
            self.inodegc_run(t, false);
        }
    }

    /// `xfs_inodegc_worker`: takes the whole queue and inactivates each inode (`xfs_inactive`:
    /// truncate, then `xfs_ifree`), freeing its extents into the open transaction at `t`.
    /// `charge_app`: the worker ran on the application's CPU in its stead (then the per-block
    /// cost of freeing is the application's time, as a synchronous unlink's is).
    pub(super) fn inodegc_run(&mut self, t: SimTime, charge_app: bool) {
        let q = &mut self.layout_fs.xfs_mut().inodegc;
        q.generation += 1;
        let queued = std::mem::take(&mut q.queued);
        q.queued_blocks = 0;
        let bs = self.config.block_bytes;
        let mut blocks = 0;
        // The kernel's llist hands the inodes over newest first.
        for (ino, mut inode) in queued.into_iter().rev() {
            for r in inode.extents.truncate_from(0) {
                blocks += r.len;
                self.free_run_at(r, t);
            }
            self.dirty_meta_at(self.layout.inode_block(ino, bs, self.config.inode_bytes), t);
            self.dirty_meta_at(self.layout.bitmap_block(self.layout.inode_group(ino)) + 1, t);
            self.free_ino(ino);
        }
        if charge_app {
            self.now = self.now.after(blocks * self.config.host.free_block_ns);
        }
    }

    /// `xfs_inodegc_flush` (on ENOSPC, `xfs_blockgc_free_space`; at umount,
    /// `xfs_unmount_flush_inodes` -> `xfs_inodegc_stop`): inactivate everything queued now.
    pub(super) fn inodegc_flush(&mut self) -> bool {
        if self.layout_fs.xfs().is_none_or(|x| x.inodegc.queued.is_empty()) {
            return false;
        }
        self.inodegc_run(self.now, true);
        true
    }

    /// `check`'s part: queued inodes are neither live nor free, and `queued_blocks` is what
    /// their extents hold.
    pub(super) fn inodegc_check(&self) -> Result<(), String> {
        let Some(xfs) = self.layout_fs.xfs() else { return Ok(()) };
        let gc = &xfs.inodegc;
        for (ino, _) in &gc.queued {
            if self.inodes.contains_key(*ino) || self.inode_groups.freed.contains(ino) {
                return Err(format!("fs: inode {ino} awaiting inactivation is also live or free"));
            }
        }
        let queued: u64 = gc.queued.iter().flat_map(|(_, i)| i.extents.iter()).map(|e| e.len).sum();
        if queued != gc.queued_blocks {
            return Err(format!(
                "fs: inodegc counts {} queued blocks, its inodes hold {queued}",
                gc.queued_blocks
            ));
        }
        Ok(())
    }
}
