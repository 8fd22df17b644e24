//! The page cache's write-back: dirty pages become write requests (contiguous blocks with
//! consecutive tags share one), and stay readable until their write is submitted.

use super::*;

use super::request_merge::{merged_segments, Segment};

impl<D: BlockDevice> FileSystem<D> {
    /// Takes dirty pages (all, or one file's) and returns the write requests: physically
    /// contiguous blocks with consecutive tags share a request. Delayed pages (not mapped yet,
    /// delalloc.rs) stay dirty: only write-back that allocates them first takes them.
    pub(super) fn take_dirty(&mut self, only: Option<Ino>) -> (Vec<Command>, PageTags) {
        let taken = match only {
            Some(ino) => self.dirty.take_file(ino),
            None => self.dirty.take_all(),
        };
        let (pages, segments) = self.map_pages(taken);
        for r in &pages {
            self.writeback.insert(*r);
        }
        self.stats.data_blocks_written += pages.iter().map(|r| r.len).sum::<u64>();
        let bs = self.config.block_bytes;
        let max = (self.dev.max_transfer_bytes() / bs).max(1);
        let reqs = merged_segments(segments, max)
            .into_iter()
            .map(|(p0, t0, n)| Command::Write { offset: p0 * bs, bytes: n * bs, tag: t0 })
            .collect();
        (reqs, pages)
    }

    /// Splits taken dirty runs at their extents' edges: the mapped parts (to write back, in
    /// key order) with their device segments; the delayed parts go back to the dirty set.
    fn map_pages(&mut self, taken: Vec<PageRun>) -> (PageTags, Vec<Segment>) {
        let mut pages: PageTags = Vec::with_capacity(taken.len());
        let mut segments = Vec::with_capacity(taken.len());
        for r in taken {
            for (b, phys, n) in self.inodes[r.ino].extents.stretches(r.first, r.end()) {
                let part = PageRun { ino: r.ino, first: b, len: n, tag: r.tag.wrapping_add(b - r.first) };
                match phys {
                    Some(p) => {
                        segments.push((p, part.tag, n));
                        match pages.last_mut() {
                            Some(last) if last.joins(&part) => last.len += n,
                            _ => pages.push(part),
                        }
                    }
                    None if self.delalloc.reserved_blocks > 0 => self.dirty.insert(part),
                    None => unreachable!("fs: dirty page ({}, {b}) is not mapped", r.ino),
                }
            }
        }
        (pages, segments)
    }

    /// Write-back of `pages` has been submitted: they leave the write-back set (those a later
    /// write-back took again with new data stay).
    pub(super) fn end_writeback(&mut self, pages: PageTags) {
        if self.writeback.len() == pages.iter().map(|r| r.len).sum::<u64>()
            && self.writeback.iter().zip(&pages).all(|(w, p)| w == *p)
        {
            // Most often the set is exactly these pages (no commit took others meanwhile).
            self.writeback = PageRuns::new();
            return;
        }
        for r in &pages {
            self.writeback.remove_matching(r);
        }
    }

    /// For [`FileSystem::check`]: every page under write-back is mapped.
    pub(super) fn writeback_check(&self) -> Result<(), String> {
        for r in self.writeback.iter() {
            let mapped = |b: u64| self.inodes.get(r.ino).and_then(|i| i.extents.lookup(b)).is_some();
            if let Some(b) = (r.first..r.end()).find(|&b| !mapped(b)) {
                return Err(format!("fs: page ({}, {b}) under write-back is not mapped", r.ino));
            }
        }
        Ok(())
    }
}
