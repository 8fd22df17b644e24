//! Runs of file-system blocks, and a file's extent map (logical block -> physical run), as in
//! ext4's extent tree: adjacent extents merge up to the largest extent length.

use std::collections::BTreeMap;
use trimlab_sim::SimTime;

/// A run of contiguous file-system blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Run {
    pub start: u64,
    pub len: u64,
}

impl Run {
    pub fn new(start: u64, len: u64) -> Self {
        Run { start, len }
    }
    pub fn end(&self) -> u64 {
        self.start + self.len
    }
}

/// Blocks freed at `freed_at` and not yet allocatable again: the unit every TRIM policy
/// queues, so it can report how long freed space stayed unusable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FreedRun {
    pub run: Run,
    pub freed_at: SimTime,
}

/// One extent: `len` file blocks from `logical` stored at `physical`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    pub logical: u64,
    pub physical: u64,
    pub len: u64,
}

/// A file's extents keyed by first logical block. Extents never overlap.
#[derive(Clone, Debug, Default)]
pub struct ExtentMap {
    map: BTreeMap<u64, (u64, u64)>,
    max_len: u64,
}

impl ExtentMap {
    pub fn new(max_len: u64) -> Self {
        ExtentMap { map: BTreeMap::new(), max_len }
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = Extent> + '_ {
        self.map.iter().map(|(&logical, &(physical, len))| Extent { logical, physical, len })
    }

    /// The extent starting at or before `logical` (`strict`: before it). The last extent is
    /// tried first: most files have one, and writes mostly land at or past the last
    /// (a B-tree's range search costs several times its last_key_value).
    fn floor(&self, logical: u64, strict: bool) -> Option<(&u64, &(u64, u64))> {
        let (k, v) = self.map.last_key_value()?;
        if *k < logical || (*k == logical && !strict) {
            return Some((k, v));
        }
        match strict {
            true => self.map.range(..logical).next_back(),
            false => self.map.range(..=logical).next_back(),
        }
    }

    /// The physical block of `logical`, if mapped.
    pub fn lookup(&self, logical: u64) -> Option<u64> {
        let (&l, &(p, len)) = self.floor(logical, false)?;
        (logical < l + len).then(|| p + (logical - l))
    }

    /// The extent at or before `logical` (ext4's goal: continue its physical layout).
    pub fn before(&self, logical: u64) -> Option<Extent> {
        self.floor(logical, false).map(|(&logical, &(physical, len))| Extent { logical, physical, len })
    }

    /// Maps `len` unmapped blocks from `logical` to `physical`, merging with the previous extent
    /// when both are contiguous and the result stays within the largest extent length.
    pub fn insert(&mut self, logical: u64, physical: u64, len: u64) {
        debug_assert!(len > 0);
        if let Some((&pl, &(pp, plen))) = self.floor(logical, true) {
            debug_assert!(pl + plen <= logical, "extent_map: insert over a mapped block {logical}");
            if pl + plen == logical && pp + plen == physical && plen + len <= self.max_len {
                self.map.insert(pl, (pp, plen + len));
                return;
            }
        }
        self.map.insert(logical, (physical, len));
    }

    /// Unmaps every block at or after `logical`; returns the physical runs released.
    pub fn truncate_from(&mut self, logical: u64) -> Vec<Run> {
        let mut freed = Vec::new();
        if let Some((&l, &(p, len))) = self.map.range(..logical).next_back() {
            if l + len > logical {
                let keep = logical - l;
                self.map.insert(l, (p, keep));
                freed.push(Run::new(p + keep, len - keep));
            }
        }
        // Everything from `logical` on leaves in one split (or the whole map, from 0), in
        // logical order, not one removal per extent.
        let tail = match logical {
            0 => std::mem::take(&mut self.map),
            _ => self.map.split_off(&logical),
        };
        freed.extend(tail.into_iter().map(|(_, (p, len))| Run::new(p, len)));
        freed
    }

    /// Unmaps the blocks of `[from, to)` (a punched hole); returns the physical runs
    /// released, in logical order. Extents crossing an edge keep their outside parts.
    pub fn remove_range(&mut self, from: u64, to: u64) -> Vec<Run> {
        let mut freed = Vec::new();
        if from >= to {
            return freed;
        }
        if let Some((&l, &(p, len))) = self.map.range(..from).next_back() {
            if l + len > from {
                self.map.insert(l, (p, from - l));
                freed.push(Run::new(p + (from - l), (l + len).min(to) - from));
                if l + len > to {
                    self.map.insert(to, (p + (to - l), l + len - to));
                }
            }
        }
        let inside: Vec<u64> = self.map.range(from..to).map(|(&l, _)| l).collect();
        for l in inside {
            if let Some((p, len)) = self.map.remove(&l) {
                freed.push(Run::new(p, to.min(l + len) - l));
                if l + len > to {
                    self.map.insert(to, (p + (to - l), l + len - to));
                }
            }
        }
        freed
    }
}

/// Merges physically adjacent runs (sorted by start) so one TRIM covers them.
pub fn coalesce(mut runs: Vec<Run>) -> Vec<Run> {
    runs.sort();
    let mut out: Vec<Run> = Vec::with_capacity(runs.len());
    for r in runs {
        match out.last_mut() {
            Some(last) if last.end() == r.start => last.len += r.len,
            _ => out.push(r),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_contiguous_and_truncates_inside_an_extent() {
        let mut m = ExtentMap::new(8);
        m.insert(0, 100, 4);
        m.insert(4, 104, 4);
        assert_eq!(m.len(), 1);
        m.insert(8, 108, 2); // would exceed max_len 8
        assert_eq!(m.len(), 2);
        m.insert(20, 50, 3);
        assert_eq!(m.lookup(5), Some(105));
        assert_eq!(m.lookup(12), None);
        assert_eq!(m.lookup(21), Some(51));
        let freed = m.truncate_from(6);
        assert_eq!(freed, vec![Run::new(106, 2), Run::new(108, 2), Run::new(50, 3)]);
        assert_eq!(m.lookup(5), Some(105));
        assert_eq!(m.lookup(6), None);
    }

    #[test]
    fn remove_range_keeps_both_edges_of_a_crossing_extent() {
        let mut m = ExtentMap::new(100);
        m.insert(0, 100, 10);
        m.insert(20, 300, 5);
        assert_eq!(m.remove_range(3, 7), vec![Run::new(103, 4)]);
        assert_eq!((m.lookup(2), m.lookup(3), m.lookup(6), m.lookup(7)), (Some(102), None, None, Some(107)));
        assert_eq!(m.remove_range(8, 22), vec![Run::new(108, 2), Run::new(300, 2)]);
        assert_eq!((m.lookup(7), m.lookup(22), m.lookup(21)), (Some(107), Some(302), None));
        assert_eq!(m.remove_range(5, 5), vec![]);
    }
}
