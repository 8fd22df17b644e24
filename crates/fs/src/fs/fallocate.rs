//! fallocate(2): preallocation as unwritten extents (mode 0) and hole punching
//! (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE), and the unwritten-block bookkeeping that
//! reads and writes consult.

use super::*;

/// Whether logical block `b` is in one of `runs` (start -> length).
pub(super) fn in_runs(runs: &BTreeMap<u64, u64>, b: u64) -> bool {
    runs.range(..=b).next_back().is_some_and(|(&s, &n)| b < s + n)
}

/// Removes `[b0, b1)` from `runs`, keeping the parts of runs outside it.
fn remove_runs(runs: &mut BTreeMap<u64, u64>, b0: u64, b1: u64) {
    if let Some((&s, &n)) = runs.range(..b0).next_back() {
        if s + n > b0 {
            runs.insert(s, b0 - s);
            if s + n > b1 {
                runs.insert(b1, s + n - b1);
            }
        }
    }
    let inside: Vec<u64> = runs.range(b0..b1).map(|(&s, _)| s).collect();
    for s in inside {
        if let Some(n) = runs.remove(&s) {
            if s + n > b1 {
                runs.insert(b1, s + n - b1);
            }
        }
    }
}

impl<D: BlockDevice> FileSystem<D> {
    pub(super) fn is_unwritten(&self, ino: Ino, b: u64) -> bool {
        self.inodes.get(ino).is_some_and(|i| in_runs(&i.unwritten, b))
    }

    /// Blocks `[b0, b1)` of `ino` are written (or gone): no longer unwritten.
    pub(super) fn clear_unwritten(&mut self, ino: Ino, b0: u64, b1: u64) {
        if let Some(i) = self.inodes.get_mut(ino) {
            if !i.unwritten.is_empty() {
                remove_runs(&mut i.unwritten, b0, b1);
            }
        }
    }

    /// The byte range's end, or Invalid for an empty or overflowing range.
    fn range_end(op: &str, offset: u64, bytes: u64) -> Result<u64, FsError> {
        match offset.checked_add(bytes) {
            Some(end) if bytes > 0 => Ok(end),
            _ => Err(FsError::Invalid(format!(
                "{op}: offset {offset} and length {bytes} (length must be > 0)"
            ))),
        }
    }

    /// fallocate(2) mode 0: allocates unwritten extents over the holes of the range (the
    /// data allocator's placement, as ext4_alloc_file_blocks maps them with
    /// EXT4_GET_BLOCKS_CREATE_UNWRIT_EXT); the size grows to offset+bytes if beyond it.
    /// Nothing is written: the blocks read as zeroes until written.
    pub fn fallocate(&mut self, ino: Ino, offset: u64, bytes: u64) -> Result<(), FsError> {
        self.syscall();
        let end = Self::range_end("fallocate", offset, bytes)?;
        let bs = self.config.block_bytes;
        let (b0, b1) = (offset / bs, end.div_ceil(bs));
        // The gaps between the file's extents inside the range: a walk of the extents, not of
        // the range's blocks (a traced fallocate of a petabyte must fail at once, not loop).
        let holes: Vec<(u64, u64)> = {
            let inode = self.inodes.get(ino).ok_or(FsError::BadInode(ino))?;
            let mut v: Vec<(u64, u64)> = Vec::new();
            let mut at = b0;
            for e in inode.extents.iter().take_while(|e| e.logical < b1) {
                if e.logical > at {
                    v.push((at, e.logical - at));
                }
                at = at.max(e.logical + e.len);
            }
            if at < b1 {
                v.push((at, b1 - at));
            }
            v
        };
        let delayed: u64 = holes.iter().map(|&(s, n)| self.delayed_pages_in(ino, s, s + n)).sum();
        self.ensure_space(holes.iter().map(|h| h.1).sum::<u64>() - delayed)?;
        for &(s, n) in &holes {
            self.allocate(ino, s, n)?;
        }
        // Delayed pages in the range hold data: their blocks are written, not unwritten.
        let cached: Vec<u64> = holes
            .iter()
            .flat_map(|&(s, n)| self.dirty.runs_in(ino, s, s + n).flat_map(|r| r.first..r.end()))
            .collect();
        let inode = self.inode_mut(ino)?;
        for (s, n) in holes {
            inode.unwritten.insert(s, n);
        }
        for b in cached {
            remove_runs(&mut inode.unwritten, b, b + 1);
        }
        inode.size = inode.size.max(end);
        let ib = self.layout.inode_block(ino, bs, self.config.inode_bytes);
        self.dirty_meta(ib);
        Ok(())
    }

    /// fallocate(PUNCH_HOLE|KEEP_SIZE): frees the whole blocks inside the range (they reach
    /// the TRIM policy like any freed blocks, so `-o discard` discards them); partial blocks
    /// at the edges are zeroed in the page cache (a write of those pages), size unchanged.
    /// As ext4_punch_hole: nothing at or beyond the size; a range past the size stops there.
    pub fn punch_hole(&mut self, ino: Ino, offset: u64, bytes: u64) -> Result<(), FsError> {
        self.syscall();
        let end = Self::range_end("punch-hole", offset, bytes)?;
        let size = self.inodes.get(ino).ok_or(FsError::BadInode(ino))?.size;
        if offset >= size {
            return Ok(());
        }
        let bs = self.config.block_bytes;
        let end = end.min(size.next_multiple_of(bs));
        let (first, stop) = (offset.div_ceil(bs), end / bs);
        let head = (!offset.is_multiple_of(bs)).then_some(offset / bs);
        let tail = (!end.is_multiple_of(bs)).then_some(end / bs).filter(|&t| Some(t) != head);
        for b in head.into_iter().chain(tail) {
            self.zero_partial_block(ino, b);
        }
        if first < stop {
            self.punch_blocks(ino, first, stop)?;
        }
        let ib = self.layout.inode_block(ino, bs, self.config.inode_bytes);
        self.dirty_meta(ib);
        Ok(())
    }

    /// ext4_zero_partial_blocks -> ext4_block_zero_page_range: a mapped, written block is
    /// read if not cached, then zeroed in part: a dirty page. A hole or an unwritten block
    /// already reads as zeroes.
    fn zero_partial_block(&mut self, ino: Ino, b: u64) {
        let Some(p) = self.inodes[ino].extents.lookup(b) else { return };
        if self.is_unwritten(ino, b) {
            return;
        }
        let cached = self.dirty.contains(ino, b) || self.writeback.contains(ino, b);
        if !cached {
            let bs = self.config.block_bytes;
            self.app_io(vec![Command::Read { offset: p * bs, bytes: bs }], false);
        }
        let tag = self.next_tag;
        self.next_tag += 1;
        self.dirty.insert(page_runs::PageRun { ino, first: b, len: 1, tag });
    }

    /// Unmaps and frees blocks `[first, stop)` of `ino`, dropping their cached pages
    /// (truncate_pagecache_range, then ext4_ext_remove_space).
    fn punch_blocks(&mut self, ino: Ino, first: u64, stop: u64) -> Result<(), FsError> {
        self.drop_cached_pages(ino, first, stop);
        self.clear_unwritten(ino, first, stop);
        let freed = self.inode_mut(ino)?.extents.remove_range(first, stop);
        let blocks: u64 = freed.iter().map(|r| r.len).sum();
        // ext4_ext_remove_space frees from the range's last extent back to its first: the
        // order ext4's tree of freed extents sees them (ext4_free_data.rs).
        for r in freed.into_iter().rev() {
            self.free_run(r);
        }
        self.now = self.now.after(blocks * self.config.host.free_block_ns);
        Ok(())
    }
}
