//! The trimmed-range list of 004 §3.2, "hash based linked list" (HBL): TRIMs answered at once
//! and remembered as `[start, length]` ranges until a merge or GC can use them.
//!
//! The logical space is cut into `N` groups of consecutive pages (the "hash" is `page / span`).
//! Each group keeps its ranges sorted by start, disjoint and coalesced; a TRIM that crosses a
//! group boundary is split so every range lies inside one group. A later write removes its
//! page from the list (splitting a range if needed).
//!
//! 004 keeps each group as a linked list. We store the same sorted sequence in a `Vec` and
//! search it by bisection, but we *count* the cost as the paper's structure would pay it: the
//! number of list nodes a walk from the head visits to reach the position (`walk_steps`). That
//! is the figure reported as the list's search and insert cost.
//!
//! Units: logical pages (the FTLs map whole pages; the device cuts TRIMs to whole pages before
//! they get here), so a range is `[start_page, end_page)`.

use trimlab_ftl::HblStats;

/// A half-open range of logical pages inside one group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Range {
    start: u32,
    end: u32,
}

pub struct TrimmedRangeList {
    span_pages: u32,
    logical_pages: u32,
    groups: Vec<Vec<Range>>,
    ranges: u64,
    pages: u64,
    stats: HblStats,
}

impl TrimmedRangeList {
    /// `groups` hash groups over `logical_pages` pages (at least 1 group, at most one per page).
    pub fn new(logical_pages: u32, groups: u32) -> Self {
        let groups = groups.clamp(1, logical_pages.max(1));
        let span_pages = logical_pages.div_ceil(groups).max(1);
        let count = logical_pages.div_ceil(span_pages).max(1) as usize;
        TrimmedRangeList {
            span_pages,
            logical_pages,
            groups: vec![Vec::new(); count],
            ranges: 0,
            pages: 0,
            stats: HblStats::default(),
        }
    }

    pub fn group_count(&self) -> usize {
        self.groups.len()
    }

    pub fn span_pages(&self) -> u32 {
        self.span_pages
    }

    /// Ranges currently stored (the list's size).
    pub fn range_count(&self) -> u64 {
        self.ranges
    }

    /// Pages currently covered.
    pub fn page_count(&self) -> u64 {
        self.pages
    }

    /// Longest group list.
    pub fn longest_group(&self) -> usize {
        self.groups.iter().map(Vec::len).max().unwrap_or(0)
    }

    /// Controller memory of the paper's linked list: start, length and next pointer per node
    /// (4 + 4 + 8 bytes) plus one head pointer per group.
    pub fn memory_bytes(&self) -> u64 {
        self.ranges * 16 + self.groups.len() as u64 * 8
    }

    pub fn stats(&self) -> &HblStats {
        &self.stats
    }

    /// Calls `f(group, start, end)` for each piece of `[start, start + count)` cut at group
    /// boundaries (004: "we partition it so that the resulting information lies within a group").
    fn pieces(&self, start: u32, count: u32, mut f: impl FnMut(usize, u32, u32)) {
        let end = start.saturating_add(count).min(self.logical_pages);
        let mut s = start;
        while s < end {
            let group = (s / self.span_pages) as usize;
            let group_end = ((group as u32 + 1) * self.span_pages).min(end);
            f(group, s, group_end);
            s = group_end;
        }
    }

    /// Records that `[start, start + count)` was trimmed.
    pub fn insert(&mut self, start: u32, count: u32) {
        self.stats.inserts += 1;
        let mut pieces = Vec::new();
        self.pieces(start, count, |g, s, e| pieces.push((g, s, e)));
        for (group, s, e) in pieces {
            self.stats.insert_pieces += 1;
            let list = &mut self.groups[group];
            // First range that overlaps or touches [s, e).
            let first = list.partition_point(|r| r.end < s);
            let mut last = first;
            let mut merged = Range { start: s, end: e };
            while last < list.len() && list[last].start <= e {
                merged.start = merged.start.min(list[last].start);
                merged.end = merged.end.max(list[last].end);
                last += 1;
            }
            let covered_before: u64 = list[first..last].iter().map(|r| (r.end - r.start) as u64).sum();
            self.stats.walk_steps_insert += first as u64 + 1 + (last - first) as u64;
            self.ranges = self.ranges + 1 - (last - first) as u64;
            self.pages = self.pages + (merged.end - merged.start) as u64 - covered_before;
            list.splice(first..last, std::iter::once(merged));
        }
        self.stats.ranges_max = self.stats.ranges_max.max(self.ranges);
    }

    /// Whether `page` is trimmed.
    #[inline]
    pub fn contains(&mut self, page: u32) -> bool {
        if page >= self.logical_pages {
            return false;
        }
        let list = &self.groups[(page / self.span_pages) as usize];
        if list.is_empty() {
            // An empty group's head pointer answers at once.
            self.stats.lookups += 1;
            return false;
        }
        let i = list.partition_point(|r| r.end <= page);
        self.stats.lookups += 1;
        self.stats.walk_steps_lookup += i as u64 + 1;
        i < list.len() && list[i].start <= page
    }

    /// Whether any page of `[start, start + count)` is trimmed, without counting a lookup.
    pub fn any_in(&self, start: u32, count: u32) -> bool {
        let mut any = false;
        self.pieces(start, count, |g, s, e| {
            let list = &self.groups[g];
            let i = list.partition_point(|r| r.end <= s);
            any |= i < list.len() && list[i].start < e;
        });
        any
    }

    /// Forgets `[start, start + count)`: it was written again, or a merge applied the trim.
    pub fn remove(&mut self, start: u32, count: u32) {
        let mut pieces = Vec::new();
        self.pieces(start, count, |g, s, e| {
            if !self.groups[g].is_empty() {
                pieces.push((g, s, e));
            }
        });
        for (group, s, e) in pieces {
            let list = &mut self.groups[group];
            let first = list.partition_point(|r| r.end <= s);
            if first == list.len() || list[first].start >= e {
                continue;
            }
            self.stats.removals += 1;
            let mut last = first;
            let mut keep = Vec::with_capacity(2);
            let mut removed_pages = 0u64;
            while last < list.len() && list[last].start < e {
                let r = list[last];
                if r.start < s {
                    keep.push(Range { start: r.start, end: s });
                }
                if r.end > e {
                    keep.push(Range { start: e, end: r.end });
                }
                removed_pages += (r.end.min(e) - r.start.max(s)) as u64;
                last += 1;
            }
            self.stats.walk_steps_remove += first as u64 + 1 + (last - first) as u64;
            self.ranges = self.ranges + keep.len() as u64 - (last - first) as u64;
            self.pages -= removed_pages;
            list.splice(first..last, keep);
        }
        self.stats.ranges_max = self.stats.ranges_max.max(self.ranges);
    }

    /// Every range lies in its group, is non-empty, and each list is sorted, disjoint and
    /// coalesced; the running totals match.
    pub fn check(&self) -> Result<(), String> {
        let mut ranges = 0u64;
        let mut pages = 0u64;
        for (g, list) in self.groups.iter().enumerate() {
            let lo = g as u32 * self.span_pages;
            let hi = (lo + self.span_pages).min(self.logical_pages);
            let mut prev_end: Option<u32> = None;
            for r in list {
                if r.start >= r.end || r.start < lo || r.end > hi {
                    return Err(format!(
                        "T1 hbl: group {g} [{lo}, {hi}) holds range [{}, {})",
                        r.start, r.end
                    ));
                }
                if prev_end.is_some_and(|p| r.start <= p) {
                    return Err(format!(
                        "T2 hbl: group {g} range [{}, {}) overlaps or touches the previous one",
                        r.start, r.end
                    ));
                }
                prev_end = Some(r.end);
                ranges += 1;
                pages += (r.end - r.start) as u64;
            }
        }
        if ranges != self.ranges || pages != self.pages {
            return Err(format!(
                "T3 hbl: counts {} ranges / {} pages, lists hold {ranges} / {pages}",
                self.ranges, self.pages
            ));
        }
        Ok(())
    }
}
