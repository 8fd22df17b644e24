//! A set of disjoint half-open byte ranges: the free space a periodic fstrim would find, built
//! from the trace's TRIMs and shrunk by the writes that came after them.

use std::collections::BTreeMap;

#[derive(Clone, Debug, Default)]
pub struct IntervalSet {
    /// start -> end, disjoint and not touching.
    ranges: BTreeMap<u64, u64>,
}

impl IntervalSet {
    pub fn insert(&mut self, mut start: u64, mut end: u64) {
        if start >= end {
            return;
        }
        // Absorb every range that overlaps or touches [start, end).
        if let Some((&s, &e)) = self.ranges.range(..=start).next_back() {
            if e >= start {
                start = s;
                end = end.max(e);
                self.ranges.remove(&s);
            }
        }
        while let Some((&s, &e)) = self.ranges.range(start..=end).next() {
            end = end.max(e);
            self.ranges.remove(&s);
        }
        self.ranges.insert(start, end);
    }

    pub fn remove(&mut self, start: u64, end: u64) {
        if start >= end || self.ranges.is_empty() {
            return;
        }
        if let Some((&s, &e)) = self.ranges.range(..start).next_back() {
            if e > start {
                self.ranges.insert(s, start);
                if e > end {
                    self.ranges.insert(end, e);
                    return;
                }
            }
        }
        while let Some((&s, &e)) = self.ranges.range(start..end).next() {
            self.ranges.remove(&s);
            if e > end {
                self.ranges.insert(end, e);
                break;
            }
        }
    }

    pub fn clear(&mut self) {
        self.ranges.clear();
    }

    /// (start, length) of each range in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.ranges.iter().map(|(&s, &e)| (s, e - s))
    }

    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_a_bitset_under_random_operations() {
        let mut x = 0x1234_5678_u64;
        let mut next = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for _ in 0..50 {
            let mut set = IntervalSet::default();
            let mut bits = [false; 200];
            for _ in 0..300 {
                let a = next(200);
                let b = (a + 1 + next(30)).min(200);
                if next(2) == 0 {
                    set.insert(a, b);
                    bits[a as usize..b as usize].iter_mut().for_each(|v| *v = true);
                } else {
                    set.remove(a, b);
                    bits[a as usize..b as usize].iter_mut().for_each(|v| *v = false);
                }
                let mut from_set = [false; 200];
                let mut last_end = None;
                for (s, len) in set.iter() {
                    assert!(len > 0);
                    assert!(last_end.is_none_or(|e| e < s), "ranges must be disjoint and not touch");
                    last_end = Some(s + len);
                    from_set[s as usize..(s + len) as usize].iter_mut().for_each(|v| *v = true);
                }
                assert_eq!(from_set, bits);
            }
        }
    }
}
