//! The page cache's write-back: dirty pages become write requests (contiguous blocks with
//! consecutive tags share one), and stay readable until their write is submitted.

use super::*;

impl<D: BlockDevice> FileSystem<D> {
    /// Takes dirty pages (all, or one file's) and returns the write requests: physically
    /// contiguous blocks with consecutive tags share a request.
    pub(super) fn take_dirty(&mut self, only: Option<Ino>) -> (Vec<Command>, PageTags) {
        let keys: Vec<(Ino, u64)> = match only {
            Some(ino) => self.dirty.range((ino, 0)..=(ino, u64::MAX)).map(|(k, _)| *k).collect(),
            None => self.dirty.keys().copied().collect(),
        };
        let mut blocks: Vec<(u64, u64)> = Vec::with_capacity(keys.len());
        let mut pages = Vec::with_capacity(keys.len());
        for k in keys {
            let tag = self.dirty.remove(&k).unwrap_or_else(|| unreachable!());
            self.writeback.insert(k, tag);
            pages.push((k, tag));
            let phys = self.inodes[&k.0]
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
        for (k, tag) in pages {
            if self.writeback.get(&k) == Some(&tag) {
                self.writeback.remove(&k);
            }
        }
    }
}
