//! Where XFS puts a file's data (Linux 6.18, fs/xfs/libxfs/xfs_bmap.c and xfs_alloc.c), with
//! the XFS layout (`FsConfig::inodegc`); the ext4-like allocator's stream goal does not apply:
//! * A file's first extent targets its inode (`xfs_bmap_btalloc`: `ap->blkno =
//!   XFS_INO_TO_FSB(mp, ip->i_ino)`), so data stays in the inode's AG: a directory's AG (the
//!   inode allocator's rotor, inode_alloc.rs) for the files in it.
//! * The AG is the first from the inode's whose longest free extent holds the whole request
//!   (`xfs_bmap_btalloc_select_lengths` walks the AGs from the target's with
//!   `xfs_bmap_longest_free_extent` and stops at `blen >= maxlen`; `xfs_alloc_vextent_start_ag`
//!   then skips AGs that cannot give `minlen = maxlen`, `xfs_alloc_space_available`), at its
//!   first block when it is not the inode's (`xfs_alloc_vextent_iterate_ags` restarts at
//!   agbno 0). A delalloc file written in one go is one request, so a 128 MiB file goes whole
//!   into an AG with 128 MiB free in one piece rather than split over two.
//! * In the AG, the free extent nearest the target that holds the request
//!   (`xfs_alloc_ag_vextent_near`); with none long enough the allocation takes what there is
//!   near the target, as the model's bitmap does.
//!
//! A later extent continues the previous one (`xfs_bmap_adjacent`), as ext4's does.

use super::*;

impl<D: BlockDevice> FileSystem<D> {
    /// The goal of `want` blocks of `ino` at file block `logical` on XFS.
    pub(super) fn xfs_goal(&self, ino: Ino, logical: u64, want: u64) -> u64 {
        if self.inodes[ino].extents.before(logical).is_some() {
            return self.goal_for(ino, logical);
        }
        let bs = self.config.block_bytes;
        let target =
            self.layout.inode_block(ino, bs, self.config.inode_bytes).min(self.layout.total_blocks - 1);
        // A file still growing is converted with its speculative preallocation (delalloc.rs);
        // when no AG holds that, the dirty part alone (`xfs_bmap_btalloc_select_lengths`
        // settles for less than the maximum length).
        let converted = self.xfs_convert_length(ino, logical, want);
        let lengths = if converted > want { vec![converted, want] } else { vec![want] };
        lengths.into_iter().find_map(|len| self.xfs_ag_start(target, len)).unwrap_or(target)
    }

    /// The first AG from `target`'s whose free space holds `want` blocks, and where in it.
    fn xfs_ag_start(&self, target: u64, want: u64) -> Option<u64> {
        let own = self.bitmap.group_of(target);
        let groups = self.layout.groups;
        (0..groups).map(|i| (own + i) % groups).find_map(|ag| {
            let lo = ag * self.layout.bpg;
            let hi = (lo + self.layout.bpg).min(self.layout.total_blocks);
            let near = if ag == own { target } else { lo };
            self.nearest_fitting(lo, hi, near, want)
        })
    }

    /// Where in `[lo, hi)` the free run nearest `near` that holds `want` blocks would give
    /// them (`xfs_alloc_compute_diff`: a run after `near` from its start, one around it at
    /// `near`, one before it at its end).
    fn nearest_fitting(&self, lo: u64, hi: u64, near: u64, want: u64) -> Option<u64> {
        self.bitmap
            .avail_runs(lo, hi, want)
            .into_iter()
            .map(|r| {
                if r.start >= near {
                    r.start
                } else if r.end() >= near + want {
                    near
                } else {
                    r.end() - want
                }
            })
            .min_by_key(|&s| (s.abs_diff(near), s))
    }
}
