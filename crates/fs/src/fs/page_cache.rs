//! The page cache's write-back: dirty pages become write requests (contiguous blocks with
//! consecutive tags share one), and stay readable until their write is submitted.

use super::*;

/// A stretch of pages to write: `len` blocks from `phys`, holding tags from `tag`.
type Segment = (u64, u64, u64);

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
        let reqs = requests(segments, max)
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
            let extents = &self.inodes[r.ino].extents;
            let mut b = r.first;
            while b < r.end() {
                let (phys, n) = extents.stretch(b);
                let n = n.min(r.end() - b);
                let part = PageRun { ino: r.ino, first: b, len: n, tag: r.tag.wrapping_add(b - r.first) };
                match phys {
                    Some(p) => {
                        segments.push((p, part.tag, n));
                        match pages.last_mut() {
                            Some(last)
                                if last.ino == r.ino
                                    && last.end() == b
                                    && last.tag.wrapping_add(last.len) == part.tag =>
                            {
                                last.len += n
                            }
                            _ => pages.push(part),
                        }
                    }
                    None if self.delalloc.reserved_blocks > 0 => self.dirty.insert(part),
                    None => unreachable!("fs: dirty page ({}, {b}) is not mapped", r.ino),
                }
                b += n;
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

/// The write requests of `segments` in the order the device sees pages, (physical block, tag):
/// consecutive pages (in block and in tag) join, up to `max` blocks a request, as
/// request_merge.rs's `merged_runs` joins the same pages sorted one by one.
fn requests(mut segments: Vec<Segment>, max: u64) -> Vec<Segment> {
    // Segments are cut at extent edges, so while no two overlap on the device, sorting them
    // orders every page as a sort of the pages would; two that overlap (never met: a block
    // mapped twice) fall back to the pages' sort.
    segments.sort_unstable();
    if segments.windows(2).any(|w| w[0].0 + w[0].2 > w[1].0) {
        let mut blocks: Vec<(u64, u64)> =
            segments.iter().flat_map(|&(p, t, n)| (0..n).map(move |i| (p + i, t.wrapping_add(i)))).collect();
        blocks.sort_unstable();
        segments = blocks.into_iter().map(|(p, t)| (p, t, 1)).collect();
    }
    let mut out: Vec<Segment> = Vec::new();
    for (p, t, n) in segments {
        let mut done = 0;
        while done < n {
            let (p, t) = (p + done, t.wrapping_add(done));
            let k = match out.last_mut() {
                Some((p0, t0, len)) if *len < max && *p0 + *len == p && t0.wrapping_add(*len) == t => {
                    let k = (max - *len).min(n - done);
                    *len += k;
                    k
                }
                _ => {
                    let k = max.min(n - done);
                    out.push((p, t, k));
                    k
                }
            };
            done += k;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The old write-back: every page sorted by (physical block, tag), then merged.
    fn requests_page_by_page(segments: &[Segment], max: u64) -> Vec<Segment> {
        let mut pages: Vec<(u64, u64)> =
            segments.iter().flat_map(|&(p, t, n)| (0..n).map(move |i| (p + i, t.wrapping_add(i)))).collect();
        pages.sort_unstable();
        super::super::request_merge::merged_runs(&pages, max)
            .into_iter()
            .map(|((p, t), n)| (p, t, n))
            .collect()
    }

    #[test]
    fn segments_give_the_requests_pages_sorted_one_by_one_give() {
        // A seeded xorshift: segments of a few pages, disjoint on the device or (one case in
        // four) overlapping, tags continuing or not, some near the wrap.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for case in 0..400 {
            let overlap = case % 4 == 0;
            let mut segments = Vec::new();
            let mut p = 0;
            let mut t = u64::MAX - 40;
            for _ in 0..next(12) + 1 {
                let n = next(9) + 1;
                p = match overlap {
                    true => next(40),
                    false => p + next(3),
                };
                if next(3) > 0 {
                    t = t.wrapping_add(next(20));
                }
                segments.push((p, t, n));
                p += n;
                t = t.wrapping_add(n);
            }
            let max = next(10) + 1;
            assert_eq!(
                requests(segments.clone(), max),
                requests_page_by_page(&segments, max),
                "case {case}: {segments:?}, max {max}"
            );
        }
    }
}
