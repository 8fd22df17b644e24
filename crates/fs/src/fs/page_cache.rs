//! The page cache's write-back: dirty pages become write requests (contiguous blocks with
//! consecutive tags share one), and stay readable until their write is submitted.

use super::*;

impl<D: BlockDevice> FileSystem<D> {
    /// Takes dirty pages (all, or one file's) and returns the write requests: physically
    /// contiguous blocks with consecutive tags share a request. Delayed pages (not mapped yet,
    /// delalloc.rs) stay dirty: only write-back that allocates them first takes them.
    pub(super) fn take_dirty(&mut self, only: Option<Ino>) -> (Vec<Command>, PageTags) {
        let mut pages: PageTags = match only {
            // One walk removing as it goes, not a search per page.
            Some(ino) => self.dirty.extract_if((ino, 0)..=(ino, u64::MAX), |_, _| true).collect(),
            // Every page: the whole map at once, not a removal per page.
            None => std::mem::take(&mut self.dirty).into_iter().collect(),
        };
        if self.delalloc.reserved_blocks > 0 {
            let inodes = &self.inodes;
            let (mapped, delayed): (PageTags, PageTags) =
                pages.into_iter().partition(|((ino, b), _)| inodes[*ino].extents.lookup(*b).is_some());
            self.dirty.extend(delayed);
            pages = mapped;
        }
        match self.writeback.is_empty() {
            // Pages come in key order: a sorted build, not an insertion per page.
            true => self.writeback = pages.iter().copied().collect(),
            false => self.writeback.extend(pages.iter().copied()),
        }
        let mut blocks: Vec<(u64, u64)> = Vec::with_capacity(pages.len());
        // Pages are in (inode, block) order: one inode lookup per file, not per page.
        let mut inode: Option<(Ino, &Inode)> = None;
        for &(k, tag) in &pages {
            let file = match inode {
                Some((ino, file)) if ino == k.0 => file,
                _ => {
                    let file = &self.inodes[k.0];
                    inode = Some((k.0, file));
                    file
                }
            };
            let phys = file
                .extents
                .lookup(k.1)
                .unwrap_or_else(|| unreachable!("fs: dirty page {k:?} is not mapped"));
            blocks.push((phys, tag));
        }
        blocks.sort_unstable();
        self.stats.data_blocks_written += blocks.len() as u64;
        let bs = self.config.block_bytes;
        let max = (self.dev.max_transfer_bytes() / bs).max(1);
        let reqs = super::request_merge::merged_runs(&blocks, max)
            .into_iter()
            .map(|((p0, t0), n)| Command::Write { offset: p0 * bs, bytes: n * bs, tag: t0 })
            .collect();
        (reqs, pages)
    }

    /// Write-back of `pages` has been submitted: they leave the write-back set.
    pub(super) fn end_writeback(&mut self, pages: Vec<((Ino, u64), u64)>) {
        // Most often the set is exactly these pages (no commit took others meanwhile): one
        // walk comparing both in key order, then the whole set goes, rather than a search
        // and a removal per page.
        let same = self.writeback.len() == pages.len()
            && self.writeback.iter().zip(&pages).all(|((k, t), (pk, pt))| (k, t) == (pk, pt));
        if same {
            self.writeback.clear();
            return;
        }
        for (k, tag) in pages {
            if self.writeback.get(&k) == Some(&tag) {
                self.writeback.remove(&k);
            }
        }
    }
}
