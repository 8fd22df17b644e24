//! Delayed allocation (`FsConfig::delalloc`): a buffered write reserves space and dirties
//! pages; blocks are allocated when the page cache writes them back, per inode, for the whole
//! dirty extent, so a file written in 4 KiB calls lands where one written in one call does.
//!
//! The kernel's rules (Linux 6.18):
//! * ext4 (fs/ext4/inode.c): `ext4_da_write_begin` -> `ext4_da_get_block_prep` ->
//!   `ext4_insert_delayed_block` reserves the block (`ext4_da_reserve_space`, so ENOSPC is
//!   reported by write()) and maps nothing; `ext4_writepages` -> `mpage_map_and_submit_extent`
//!   allocates the contiguous dirty delayed blocks with one `ext4_map_blocks` call each. mballoc
//!   then sizes the request by the file (`ext4_mb_group_or_file`: `size = max(extent end,
//!   i_size)`, stream allocation above `s_mb_stream_request` = 16 blocks, the locality group at
//!   or below it), which at write-back is the file's final size: lg_prealloc.rs applies.
//!   `MAX_WRITEPAGES_EXTENT_LEN` (2048 blocks) caps one mapping; the next continues at the
//!   previous one's end (`ext4_ext_find_goal`), so the model maps the whole dirty run at once
//!   (one placement while the free space there is contiguous; an assumption elsewhere).
//! * XFS (fs/xfs/xfs_iomap.c `xfs_buffered_write_iomap_begin` -> `xfs_bmapi_reserve_delalloc`;
//!   write-back `xfs_bmapi_convert_delalloc` allocates the whole delalloc extent): as ext4, with
//!   xfs_alloc.rs's placement. Speculative preallocation beyond EOF (`xfs_iomap_prealloc_size`)
//!   is not modelled: the model's files are closed after each call, and `xfs_release` ->
//!   `xfs_free_eofblocks` drops the post-EOF reservation before write-back ever allocates it,
//!   so it reaches no TRIM figure unless the flusher writes a file back while it is still
//!   open and growing.
//! * btrfs (fs/btrfs/inode.c `btrfs_writepages` -> `run_delalloc_cow` -> `cow_file_range`):
//!   the dirty range is allocated at write-back (`btrfs_reserve_extent`), btrfs.rs's placement.
//!
//! What forces write-back: fsync (that file), sync and umount (every file), a writer past
//! the dirty limit (`balance_dirty_pages`), and the flusher: the `wb` work wakes every
//! `dirty_writeback_centisecs` (5 s, mm/page-writeback.c `dirty_writeback_interval`) while
//! anything is dirty (fs/fs-writeback.c `wb_wakeup_delayed`, armed 5 s after the first page
//! is dirtied) and writes the inodes dirtied more than `dirty_expire_centisecs` (30 s,
//! `dirty_expire_interval`) ago (`wb_check_old_data_flush`, `move_expired_inodes`), oldest
//! first (`b_dirty` is kept in `dirtied_when` order and `writeback_sb_inodes` takes
//! `b_io`'s tail). The journal commit does not write delayed pages: jbd2's ordered data is
//! the ranges `ext4_map_blocks` registered when it allocated (`ext4_jbd2_inode_add_write`
//! for `EXT4_MAP_NEW`), which write-back itself submits. Pages over mapped blocks
//! (overwrites, `nodelalloc`) keep the model's earlier rule: the commit writes them.

use super::*;

/// `dirty_writeback_interval` (mm/page-writeback.c): 5 * 100 centiseconds.
const FLUSHER_PERIOD_NS: u64 = 5_000_000_000;
/// `dirty_expire_interval` (mm/page-writeback.c): 30 * 100 centiseconds.
const DIRTY_EXPIRE_NS: u64 = 30_000_000_000;

/// The delayed pages' reservation and the inodes holding them, in the order they were dirtied.
#[derive(Default)]
pub(super) struct DelayedAlloc {
    /// Dirty pages over unmapped blocks: reserved, not allocated.
    pub(super) reserved_blocks: u64,
    /// Inode -> (its place in `order`, when it was first dirtied: `inode->dirtied_when`).
    inodes: BTreeMap<Ino, (u64, SimTime)>,
    /// Dirtying sequence -> inode (the `b_dirty` list, oldest first).
    order: BTreeMap<u64, Ino>,
    next_seq: u64,
    /// The flusher's wake-up is queued.
    pub(super) flusher_armed: bool,
    /// Write-back runs on the flusher thread: an allocation must not wait for the journal.
    in_flusher: bool,
    /// The file whose write() is forcing write-back (the dirty limit): still open and growing.
    growing: Option<Ino>,
}

impl DelayedAlloc {
    fn note(&mut self, ino: Ino, now: SimTime) {
        if !self.inodes.contains_key(&ino) {
            let seq = self.next_seq;
            self.next_seq += 1;
            self.inodes.insert(ino, (seq, now));
            self.order.insert(seq, ino);
        }
    }

    fn forget(&mut self, ino: Ino) {
        if let Some((seq, _)) = self.inodes.remove(&ino) {
            self.order.remove(&seq);
        }
    }

    /// Inodes in dirtying order, those dirtied at or before `expired_at` only if given.
    fn queue(&self, expired_at: Option<SimTime>) -> Vec<Ino> {
        self.order
            .values()
            .copied()
            .filter(|ino| expired_at.is_none_or(|t| self.inodes[ino].1 <= t))
            .collect()
    }
}

impl<D: BlockDevice> FileSystem<D> {
    /// Dirty pages of `ino` in `[b0, b1)` over unmapped blocks (reserved, not allocated).
    pub(super) fn delayed_pages_in(&self, ino: Ino, b0: u64, b1: u64) -> u64 {
        if !self.config.delalloc || b0 >= b1 {
            return 0;
        }
        let Some(inode) = self.inodes.get(ino) else { return 0 };
        self.dirty
            .runs_in(ino, b0, b1)
            .map(|r| unmapped_parts(&inode.extents, r.first, r.end()).map(|(_, n)| n).sum::<u64>())
            .sum()
    }

    /// A buffered write's reservation (`ext4_da_reserve_space`): the blocks of `[b0, b1)`
    /// that are neither mapped nor already reserved; ENOSPC here, as write() reports it.
    pub(super) fn delalloc_reserve(&mut self, ino: Ino, b0: u64, b1: u64) -> Result<(), FsError> {
        let inode = self.inodes.get(ino).ok_or(FsError::BadInode(ino))?;
        // Unmapped blocks less the delayed pages among them.
        let unmapped: u64 = unmapped_parts(&inode.extents, b0, b1).map(|(_, n)| n).sum();
        let new = unmapped - self.delayed_pages_in(ino, b0, b1);
        if new == 0 {
            return Ok(());
        }
        self.ensure_space(new)?;
        self.delalloc.reserved_blocks += new;
        self.delalloc.note(ino, self.now);
        if !self.delalloc.flusher_armed {
            // wb_wakeup_delayed: the first dirtying arms the flusher one interval later.
            self.delalloc.flusher_armed = true;
            self.events.push(self.now.after(FLUSHER_PERIOD_NS), Ev::Flusher);
        }
        Ok(())
    }

    /// Pages of `ino` in `[first, stop)` leave the page cache (truncate, punch-hole, unlink):
    /// their reservation goes with them.
    pub(super) fn drop_cached_pages(&mut self, ino: Ino, first: u64, stop: u64) {
        let delayed = self.delayed_pages_in(ino, first, stop);
        self.delalloc.reserved_blocks -= delayed;
        self.dirty.remove(ino, first, stop);
        self.writeback.remove(ino, first, stop);
        if self.delalloc.inodes.contains_key(&ino) && self.delayed_pages_in(ino, 0, u64::MAX) == 0 {
            self.delalloc.forget(ino);
        }
    }

    /// The contiguous runs of `ino`'s delayed pages (logical start, blocks).
    fn delayed_runs(&self, ino: Ino) -> Vec<(u64, u64)> {
        let Some(inode) = self.inodes.get(ino) else { return Vec::new() };
        let mut runs: Vec<(u64, u64)> = Vec::new();
        for r in self.dirty.runs_in(ino, 0, u64::MAX) {
            for (b, len) in unmapped_parts(&inode.extents, r.first, r.end()) {
                match runs.last_mut() {
                    Some((s, n)) if *s + *n == b => *n += len,
                    _ => runs.push((b, len)),
                }
            }
        }
        runs
    }

    /// Allocates the delayed pages of `only` (or of every inode, in dirtying order) before
    /// they are written back; inodes dirtied after `expired_at` wait if it is given. An inode
    /// whose allocation fails keeps its pages dirty and reserved.
    pub(super) fn delalloc_map(&mut self, only: Option<Ino>, expired_at: Option<SimTime>) -> Vec<Ino> {
        let queue = match only {
            Some(ino) => vec![ino].into_iter().filter(|i| self.delalloc.inodes.contains_key(i)).collect(),
            None => self.delalloc.queue(expired_at),
        };
        let mut mapped = Vec::new();
        for ino in queue {
            let ok = self.delayed_runs(ino).into_iter().all(|(s, n)| self.allocate(ino, s, n).is_ok());
            if ok {
                self.delalloc.forget(ino);
                mapped.push(ino);
            }
        }
        mapped
    }

    /// Write-back that the application waits for (fsync, sync, umount, the dirty limit): the
    /// delayed pages are allocated first, then every dirty page of `only` (or of all) is
    /// written.
    pub(super) fn write_back(&mut self, only: Option<Ino>) {
        if self.delalloc.reserved_blocks > 0 {
            self.delalloc_map(only, None);
        }
        let (reqs, pages) = self.take_dirty(only);
        self.app_io(reqs, false);
        self.end_writeback(pages);
    }

    /// A file renamed over another file starts its write-back first, so that the replacing
    /// file's data is allocated before the old one goes (the "replace via rename" pattern):
    /// ext4's `auto_da_alloc` (fs/ext4/namei.c `ext4_rename`: `if (new.inode &&
    /// !test_opt(..., NO_AUTO_DA_ALLOC)) ext4_alloc_da_blocks(old.inode)`, a
    /// `filemap_flush`) and btrfs (fs/btrfs/inode.c `btrfs_rename`: `filemap_flush` when the
    /// replaced file is not empty); XFS has no such rule. The model waits for the writes,
    /// where `filemap_flush` only submits them.
    pub(super) fn flush_on_replace(&mut self, moved: namespace::Child, replaced: namespace::Child) {
        if moved.is_dir || replaced.is_dir || self.delayed_pages_in(moved.ino, 0, u64::MAX) == 0 {
            return;
        }
        let flush = match self.flavor() {
            layout::Flavor::Ext4 => true,
            layout::Flavor::Btrfs => self.inodes.get(replaced.ino).is_some_and(|i| i.size > 0),
            layout::Flavor::Xfs => false,
        };
        if flush {
            self.write_back(Some(moved.ino));
        }
    }

    /// A writer past the dirty limit (`balance_dirty_pages`). With delayed allocation the
    /// writer waits while background write-back (`wb_writeback` with `for_background`) writes
    /// whole inodes, oldest dirtied first, until the dirty pages are down to the background
    /// threshold: half the limit (`dirty_background_ratio` = 10 against `vm_dirty_ratio` = 20,
    /// mm/page-writeback.c); then everything if that did not do it. So the file being
    /// written, dirtied last, is left to grow unless it alone holds most of the limit, and its
    /// allocation does not depend on where the write() calls happened to end. Without delayed
    /// allocation everything is written, as before.
    pub(super) fn write_back_over_limit(&mut self, writer: Ino) {
        self.delalloc.growing = Some(writer);
        self.write_back_to_background();
        self.delalloc.growing = None;
    }

    fn write_back_to_background(&mut self) {
        let bs = self.config.block_bytes;
        let background = self.config.dirty_limit_bytes / 2;
        if self.config.delalloc {
            for ino in self.delalloc.queue(None) {
                if self.dirty.len() * bs <= background {
                    return;
                }
                self.write_back(Some(ino));
            }
        }
        if self.dirty.len() * bs > background {
            self.write_back(None);
        }
    }

    /// The length XFS chooses an AG for when it converts `want` delayed blocks of `ino` from
    /// `logical`: with the file still growing, its delalloc extent runs on past EOF by the
    /// speculative preallocation (fs/xfs/xfs_iomap.c `xfs_iomap_prealloc_size`: twice the
    /// preceding extents, rounded down to a power of two, at most `XFS_MAX_BMBT_EXTLEN` =
    /// 2^21 blocks, none below `m_allocsize_blocks` = 64 KiB of file; the low-space throttling
    /// is left out), and `xfs_bmapi_convert_delalloc` allocates all of it. The model allocates
    /// the dirty part only, where the whole would go (the file's next write-back continues it;
    /// what `xfs_free_eofblocks` would give back at close is never taken), so a file the dirty
    /// limit writes back in the middle still gets an AG that holds it.
    pub(super) fn xfs_convert_length(&self, ino: Ino, logical: u64, want: u64) -> u64 {
        let Some(inode) = self.inodes.get(ino).filter(|_| self.delalloc.growing == Some(ino)) else {
            return want;
        };
        let bs = self.config.block_bytes;
        let end = logical + want;
        if end < inode.size.div_ceil(bs) || inode.size < 64 << 10 {
            return want;
        }
        let prealloc = (2 * end).min(1 << 21);
        want + (1 << (63 - prealloc.leading_zeros()))
    }

    /// The flusher's periodic wake-up (`wb_workfn` -> `wb_check_old_data_flush`): inodes
    /// dirtied 30 s ago or more are allocated and written, oldest first, submitted at `t`
    /// back to back; it wakes again in 5 s while delayed pages are left.
    pub(super) fn flusher(&mut self, t: SimTime) {
        self.delalloc.flusher_armed = false;
        let expired_at = SimTime(t.0.saturating_sub(DIRTY_EXPIRE_NS));
        self.delalloc.in_flusher = true;
        let inodes = self.delalloc_map(None, Some(expired_at));
        self.delalloc.in_flusher = false;
        for ino in inodes {
            let (reqs, pages) = self.take_dirty(Some(ino));
            for req in reqs {
                self.dev_submit(t, &req, None);
            }
            self.end_writeback(pages);
        }
        if !self.delalloc.inodes.is_empty() {
            self.delalloc.flusher_armed = true;
            self.events.push(t.after(FLUSHER_PERIOD_NS), Ev::Flusher);
        }
    }

    /// Whether an allocation short of space may wait for the journal and the TRIM policy
    /// (not on the flusher thread, which leaves the inode for a later write-back instead).
    pub(super) fn may_wait_for_space(&self) -> bool {
        !self.delalloc.in_flusher
    }

    /// For [`FileSystem::check`]: the reservation equals the delayed pages, and every inode
    /// holding some is queued for write-back.
    pub(super) fn delalloc_check(&self) -> Result<(), String> {
        let mut delayed = 0;
        for (ino, b) in self.dirty.iter().flat_map(|r| (r.first..r.end()).map(move |b| (r.ino, b))) {
            let Some(inode) = self.inodes.get(ino) else {
                return Err(format!("fs: dirty page ({ino}, {b}) of no inode"));
            };
            if inode.extents.lookup(b).is_none() {
                if !self.config.delalloc {
                    return Err(format!("fs: dirty page ({ino}, {b}) is not mapped"));
                }
                if !self.delalloc.inodes.contains_key(&ino) {
                    return Err(format!("fs: inode {ino} has delayed pages but no place in write-back"));
                }
                delayed += 1;
            }
        }
        if delayed != self.delalloc.reserved_blocks {
            return Err(format!(
                "fs: {delayed} delayed pages but {} blocks reserved",
                self.delalloc.reserved_blocks
            ));
        }
        Ok(())
    }
}

/// The unmapped stretches of `[b0, b1)` in `extents`: (first block, blocks), in order.
pub(super) fn unmapped_parts(
    extents: &crate::extent::ExtentMap,
    b0: u64,
    b1: u64,
) -> impl Iterator<Item = (u64, u64)> + '_ {
    extents.stretches(b0, b1).filter_map(|(b, phys, n)| phys.is_none().then_some((b, n)))
}
