//! Runs of file-system blocks, and a file's extent map (logical block -> physical run), as in
//! ext4's extent tree: adjacent extents merge up to the largest extent length.

use std::collections::BTreeMap;

pub use trimlab_discard::{FreedRun, Run};

/// One extent: `len` file blocks from `logical` stored at `physical`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    pub logical: u64,
    pub physical: u64,
    pub len: u64,
}

/// Extents a map holds inside itself before it moves them to a B-tree: ext4 keeps a file's
/// first four extents in the inode (`i_block`, the extent tree's root) and most files have
/// one or two. Inline, a small file's map costs no allocation and a lookup touches no other
/// cache line (a B-tree of its own per file was a fifth of a small-file script's malloc/free:
/// docs/performance.md, "File-operation scripts").
const INLINE_EXTENTS: usize = 4;

/// Where a map keeps its extents: up to [`INLINE_EXTENTS`] sorted in place, else a B-tree
/// keyed by first logical block (logical -> (physical, len)).
#[derive(Clone, Debug)]
enum Store {
    Inline { n: u8, ext: [Extent; INLINE_EXTENTS] },
    Tree(BTreeMap<u64, (u64, u64)>),
}

const NO_EXTENT: Extent = Extent { logical: 0, physical: 0, len: 0 };

impl Default for Store {
    fn default() -> Self {
        Store::Inline { n: 0, ext: [NO_EXTENT; INLINE_EXTENTS] }
    }
}

/// A file's extents keyed by first logical block. Extents never overlap.
#[derive(Clone, Debug, Default)]
pub struct ExtentMap {
    store: Store,
    max_len: u64,
}

impl ExtentMap {
    pub fn new(max_len: u64) -> Self {
        ExtentMap { store: Store::default(), max_len }
    }

    pub fn len(&self) -> usize {
        match &self.store {
            Store::Inline { n, .. } => *n as usize,
            Store::Tree(map) => map.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn iter(&self) -> impl Iterator<Item = Extent> + '_ {
        let (inline, tree) = match &self.store {
            Store::Inline { n, ext } => (&ext[..*n as usize], None),
            Store::Tree(map) => (&[][..], Some(map)),
        };
        let tree = tree.into_iter().flatten();
        inline.iter().copied().chain(tree.map(|(&logical, &(physical, len))| Extent {
            logical,
            physical,
            len,
        }))
    }

    /// The extent starting at or before `logical` (`strict`: before it). The last extent is
    /// tried first: most files have one, and writes mostly land at or past the last
    /// (a B-tree's range search costs several times its last_key_value).
    fn floor(&self, logical: u64, strict: bool) -> Option<Extent> {
        let below = |l: u64| l < logical || (l == logical && !strict);
        match &self.store {
            Store::Inline { n, ext } => ext[..*n as usize].iter().rev().find(|e| below(e.logical)).copied(),
            Store::Tree(map) => {
                let (k, v) = map.last_key_value()?;
                let (k, v) = match below(*k) {
                    true => (k, v),
                    false => match strict {
                        true => map.range(..logical).next_back()?,
                        false => map.range(..=logical).next_back()?,
                    },
                };
                Some(Extent { logical: *k, physical: v.0, len: v.1 })
            }
        }
    }

    /// The physical block of `logical`, if mapped.
    pub fn lookup(&self, logical: u64) -> Option<u64> {
        let e = self.floor(logical, false)?;
        (logical < e.logical + e.len).then(|| e.physical + (logical - e.logical))
    }

    /// The mapping from `logical` on, a stretch at a time: `(Some(physical), blocks)` while
    /// mapped (to the extent's end), `(None, blocks)` while unmapped (to the next extent, or
    /// `u64::MAX - logical` past the last), so that callers walking a run of pages look the
    /// map up once per extent, not once per block.
    pub fn stretch(&self, logical: u64) -> (Option<u64>, u64) {
        if let Some(e) = self.floor(logical, false).filter(|e| logical < e.logical + e.len) {
            return (Some(e.physical + (logical - e.logical)), e.logical + e.len - logical);
        }
        let next = match &self.store {
            Store::Inline { n, ext } => ext[..*n as usize].iter().map(|e| e.logical).find(|&l| l > logical),
            Store::Tree(map) => {
                use std::ops::Bound::{Excluded, Unbounded};
                map.range((Excluded(logical), Unbounded)).next().map(|(&l, _)| l)
            }
        };
        (None, next.unwrap_or(u64::MAX) - logical)
    }

    /// `[from, to)` cut at the map's edges: `(logical, Some(physical) or None, blocks)` for
    /// each mapped or unmapped stretch, in order (a lookup per stretch, not per block).
    pub fn stretches(&self, from: u64, to: u64) -> impl Iterator<Item = (u64, Option<u64>, u64)> + '_ {
        let mut b = from;
        std::iter::from_fn(move || {
            (b < to).then(|| {
                let (phys, n) = self.stretch(b);
                let part = (b, phys, n.min(to - b));
                b += part.2;
                part
            })
        })
    }

    /// The extent at or before `logical` (ext4's goal: continue its physical layout).
    pub fn before(&self, logical: u64) -> Option<Extent> {
        self.floor(logical, false)
    }

    /// The B-tree of the extents, the store moved to one first if it was inline (a map past
    /// [`INLINE_EXTENTS`], or one having a hole punched, which is rare).
    fn tree(&mut self) -> &mut BTreeMap<u64, (u64, u64)> {
        if let Store::Inline { n, ext } = &self.store {
            let map = ext[..*n as usize].iter().map(|e| (e.logical, (e.physical, e.len))).collect();
            self.store = Store::Tree(map);
        }
        match &mut self.store {
            Store::Tree(map) => map,
            Store::Inline { .. } => unreachable!("extent_map: the store was just made a tree"),
        }
    }

    /// Puts extent `e` in, by its logical block (merging was decided by the caller): in
    /// place while it fits, else in the tree.
    fn put(&mut self, e: Extent) {
        if let Store::Inline { n, ext } = &mut self.store {
            let used = *n as usize;
            let at = ext[..used].partition_point(|x| x.logical < e.logical);
            if at < used && ext[at].logical == e.logical {
                ext[at] = e;
                return;
            }
            if used < INLINE_EXTENTS {
                ext.copy_within(at..used, at + 1);
                ext[at] = e;
                *n += 1;
                return;
            }
        }
        self.tree().insert(e.logical, (e.physical, e.len));
    }

    /// Maps `len` unmapped blocks from `logical` to `physical`, merging with the previous extent
    /// when both are contiguous and the result stays within the largest extent length.
    pub fn insert(&mut self, logical: u64, physical: u64, len: u64) {
        debug_assert!(len > 0);
        if let Some(prev) = self.floor(logical, true) {
            debug_assert!(
                prev.logical + prev.len <= logical,
                "extent_map: insert over a mapped block {logical}"
            );
            if prev.logical + prev.len == logical
                && prev.physical + prev.len == physical
                && prev.len + len <= self.max_len
            {
                self.put(Extent { len: prev.len + len, ..prev });
                return;
            }
        }
        self.put(Extent { logical, physical, len });
    }

    /// Unmaps every block at or after `logical`; returns the physical runs released.
    pub fn truncate_from(&mut self, logical: u64) -> Vec<Run> {
        let mut freed = Vec::new();
        self.truncate_from_into(logical, &mut freed);
        freed
    }

    /// [`ExtentMap::truncate_from`], the runs released appended to `freed` (a caller's
    /// reused buffer: no allocation per truncate).
    pub fn truncate_from_into(&mut self, logical: u64, freed: &mut Vec<Run>) {
        let map = match &mut self.store {
            Store::Inline { n, ext } => {
                let used = *n as usize;
                // Extents before `logical` stay; the last of them may cross it.
                let keep = ext[..used].partition_point(|e| e.logical < logical);
                if let Some(e) = keep.checked_sub(1).map(|i| &mut ext[i]) {
                    if e.logical + e.len > logical {
                        let kept = logical - e.logical;
                        freed.push(Run::new(e.physical + kept, e.len - kept));
                        e.len = kept;
                    }
                }
                freed.extend(ext[keep..used].iter().map(|e| Run::new(e.physical, e.len)));
                *n = keep as u8;
                return;
            }
            Store::Tree(map) => map,
        };
        if let Some((&l, &(p, len))) = map.range(..logical).next_back() {
            if l + len > logical {
                let keep = logical - l;
                map.insert(l, (p, keep));
                freed.push(Run::new(p + keep, len - keep));
            }
        }
        // Everything from `logical` on leaves in one split (or the whole map, from 0), in
        // logical order, not one removal per extent.
        let tail = match logical {
            0 => std::mem::take(map),
            _ => map.split_off(&logical),
        };
        freed.extend(tail.into_iter().map(|(_, (p, len))| Run::new(p, len)));
    }

    /// Unmaps the blocks of `[from, to)` (a punched hole); returns the physical runs
    /// released, in logical order. Extents crossing an edge keep their outside parts.
    pub fn remove_range(&mut self, from: u64, to: u64) -> Vec<Run> {
        let mut freed = Vec::new();
        if from >= to {
            return freed;
        }
        let map = self.tree();
        if let Some((&l, &(p, len))) = map.range(..from).next_back() {
            if l + len > from {
                map.insert(l, (p, from - l));
                freed.push(Run::new(p + (from - l), (l + len).min(to) - from));
                if l + len > to {
                    map.insert(to, (p + (to - l), l + len - to));
                }
            }
        }
        let inside: Vec<u64> = map.range(from..to).map(|(&l, _)| l).collect();
        for l in inside {
            if let Some((p, len)) = map.remove(&l) {
                freed.push(Run::new(p, to.min(l + len) - l));
                if l + len > to {
                    map.insert(to, (p + (to - l), l + len - to));
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

    /// The map against a plain block -> physical table through inserts (merging and not),
    /// truncates and punched holes, across the move from inline extents to the tree: every
    /// block's mapping, the extents listed, and the runs each removal releases.
    #[test]
    fn inline_and_tree_stores_map_as_a_block_table_does() {
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        for round in 0..200 {
            let max_len = 1 + next(6);
            let mut m = ExtentMap::new(max_len);
            let mut table = [None::<u64>; 40];
            for _ in 0..(5 + round % 20) {
                match next(8) {
                    0 => {
                        let from = next(40);
                        let freed = m.truncate_from(from);
                        let want: Vec<u64> = table[from as usize..].iter().flatten().copied().collect();
                        let got: Vec<u64> = freed.iter().flat_map(|r| r.start..r.end()).collect();
                        assert_eq!(got, want, "truncate_from({from})");
                        table[from as usize..].iter_mut().for_each(|t| *t = None);
                    }
                    1 => {
                        let (from, to) = (next(40), next(41));
                        let freed = m.remove_range(from, to);
                        let span = from.min(to) as usize..to.max(from) as usize;
                        let want: Vec<u64> = match from < to {
                            true => table[span.clone()].iter().flatten().copied().collect(),
                            false => Vec::new(),
                        };
                        let got: Vec<u64> = freed.iter().flat_map(|r| r.start..r.end()).collect();
                        assert_eq!(got, want, "remove_range({from}, {to})");
                        if from < to {
                            table[span].iter_mut().for_each(|t| *t = None);
                        }
                    }
                    _ => {
                        // A hole's blocks, mapped either right after the block before it
                        // (so that it may merge) or elsewhere.
                        let Some(start) = (0..40).map(|_| next(40)).find(|&b| table[b as usize].is_none())
                        else {
                            continue;
                        };
                        let room = (start..40).take_while(|&b| table[b as usize].is_none()).count() as u64;
                        let len = 1 + next(room.min(max_len));
                        let prev = start.checked_sub(1).and_then(|b| table[b as usize]);
                        let physical = match (prev, next(2)) {
                            (Some(p), 0) => p + 1,
                            _ => 1000 * (1 + next(50)),
                        };
                        m.insert(start, physical, len);
                        for k in 0..len {
                            table[(start + k) as usize] = Some(physical + k);
                        }
                    }
                }
                for (b, want) in table.iter().enumerate() {
                    assert_eq!(m.lookup(b as u64), *want, "block {b}");
                }
                let listed: Vec<(u64, u64)> =
                    m.iter().flat_map(|e| (0..e.len).map(move |k| (e.logical + k, e.physical + k))).collect();
                let mapped: Vec<(u64, u64)> =
                    table.iter().enumerate().filter_map(|(b, p)| Some((b as u64, (*p)?))).collect();
                assert_eq!(listed, mapped);
                assert!(m.iter().all(|e| e.len <= max_len));
                assert_eq!(m.is_empty(), mapped.is_empty());
            }
        }
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
