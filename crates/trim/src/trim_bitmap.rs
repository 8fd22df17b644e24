//! The trim-validity bitmap of Delayed TRIM (002 §II-B): one bit per logical page, set while the
//! page's TRIM is pending and cleared by a later host write, so a deferred TRIM never
//! invalidates newer data and reads of a pending page return zeros.
//!
//! Two layouts with identical behaviour: a **full** bitmap allocated once for the whole logical
//! space (002: about 8 MB per 1 TB with 16 KiB pages), and a **partial** one that allocates a
//! small bitmap per region of the logical space on first use and frees it when its last pending
//! page is drained, trading a directory of pointers for memory proportional to what is pending.

use prefetch_index::prefetch_index;
use serde::{Deserialize, Serialize};

/// Which layout a delayed engine uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BitmapKind {
    #[default]
    Full,
    Partial,
}

#[derive(Clone)]
pub enum TrimBitmap {
    Full(FullBitmap),
    Partial(PartialBitmap),
}

impl TrimBitmap {
    pub fn new(kind: BitmapKind, logical_pages: u32, region_pages: u32) -> Self {
        match kind {
            BitmapKind::Full => TrimBitmap::Full(FullBitmap::new(logical_pages)),
            BitmapKind::Partial => TrimBitmap::Partial(PartialBitmap::new(logical_pages, region_pages)),
        }
    }

    /// Sets the bits of `start..start + count`. Returns (bits newly set, 64-bit words touched).
    pub fn set_range(&mut self, start: u32, count: u32) -> (u64, u64) {
        match self {
            TrimBitmap::Full(b) => b.set_range(start, count),
            TrimBitmap::Partial(b) => b.set_range(start, count),
        }
    }

    /// Starts fetching the word of `page`'s bit (a drain about to clear it); a hint, no change.
    #[inline]
    pub fn prefetch(&self, page: u32) {
        if let TrimBitmap::Full(b) = self {
            prefetch_index(&b.words, (page / 64) as usize);
        }
    }

    /// Clears one bit; true if it was set.
    #[inline]
    pub fn clear(&mut self, page: u32) -> bool {
        match self {
            TrimBitmap::Full(b) => b.clear(page),
            TrimBitmap::Partial(b) => b.clear(page),
        }
    }

    #[inline]
    pub fn test(&self, page: u32) -> bool {
        match self {
            TrimBitmap::Full(b) => b.test(page),
            TrimBitmap::Partial(b) => b.test(page),
        }
    }

    /// Pages whose TRIM is pending.
    #[inline]
    pub fn set_count(&self) -> u64 {
        match self {
            TrimBitmap::Full(b) => b.set_count,
            TrimBitmap::Partial(b) => b.set_count,
        }
    }

    /// Bytes the bitmap holds now (directory included for the partial layout).
    pub fn heap_bytes(&self) -> u64 {
        match self {
            TrimBitmap::Full(b) => b.words.len() as u64 * 8,
            TrimBitmap::Partial(b) => b.heap_bytes(),
        }
    }

    /// The pending pages in ascending order (tests and checks; linear in the logical space).
    pub fn pending_pages(&self) -> Vec<u32> {
        let logical = match self {
            TrimBitmap::Full(b) => b.logical_pages,
            TrimBitmap::Partial(b) => b.logical_pages,
        };
        (0..logical).filter(|&p| self.test(p)).collect()
    }

    /// Internal consistency: the kept count equals the population count; the partial layout
    /// holds no empty region and no region past the logical space.
    pub fn check(&self) -> Result<(), String> {
        match self {
            TrimBitmap::Full(b) => {
                let ones: u64 = b.words.iter().map(|w| w.count_ones() as u64).sum();
                if ones != b.set_count {
                    return Err(format!("trim bitmap B1: {ones} bits set but count says {}", b.set_count));
                }
                for group in 0..b.group_pending.len() {
                    let ones = b.group_ones(group);
                    if ones != b.group_pending[group] {
                        return Err(format!(
                            "trim bitmap B4: group {group} has {ones} bits set but its summary says {}",
                            b.group_pending[group]
                        ));
                    }
                }
            }
            TrimBitmap::Partial(b) => {
                let mut total = 0u64;
                for (i, region) in b.regions.iter().enumerate() {
                    let ones: u64 =
                        region.as_ref().map_or(0, |r| r.iter().map(|w| w.count_ones() as u64).sum());
                    if ones != b.counts[i] as u64 {
                        return Err(format!(
                            "trim bitmap B2: region {i} has {ones} bits set but count says {}",
                            b.counts[i]
                        ));
                    }
                    if region.is_some() && ones == 0 {
                        return Err(format!("trim bitmap B3: region {i} is allocated but empty"));
                    }
                    total += ones;
                }
                if total != b.set_count {
                    return Err(format!("trim bitmap B1: {total} bits set but count says {}", b.set_count));
                }
            }
        }
        Ok(())
    }
}

/// Bytes of a full bitmap for `logical_bytes` of logical space at `page_bytes` per mapped page.
pub fn full_bitmap_bytes(logical_bytes: u64, page_bytes: u64) -> u64 {
    (logical_bytes / page_bytes).div_ceil(8)
}

#[derive(Clone)]
pub struct FullBitmap {
    words: Vec<u64>,
    logical_pages: u32,
    set_count: u64,
    /// Pending pages per group of 8 words (512 pages): every host write clears its page's bit,
    /// and a group with nothing pending answers from this small array (8 KiB for 8 GiB of 4 KiB
    /// pages, kept cached) instead of a random word of the bitmap, a cache miss per write
    /// (profiled: 9 % of a delayed-TRIM run; 4 % with groups of 4096 pages, most of which held
    /// a pending page). The simulator's index, not the
    /// controller's: `heap_bytes` (the modelled bitmap's size) leaves it out.
    group_pending: Vec<u16>,
}

/// log2 of the words per summary group of the full bitmap (8 words, 512 pages).
const GROUP_WORDS_SHIFT: u32 = 3;

impl FullBitmap {
    fn new(logical_pages: u32) -> Self {
        let words = (logical_pages as usize).div_ceil(64);
        FullBitmap {
            words: vec![0; words],
            logical_pages,
            set_count: 0,
            group_pending: vec![0; words.div_ceil(1 << GROUP_WORDS_SHIFT)],
        }
    }

    fn set_range(&mut self, start: u32, count: u32) -> (u64, u64) {
        let (newly, touched) = set_bits(&mut self.words, start, count, &mut self.set_count);
        if newly > 0 {
            // Recount the groups the range touched (whole words, so a group's count is exact).
            let first_group = (start / 64) as usize >> GROUP_WORDS_SHIFT;
            let last_group = ((start + count - 1) / 64) as usize >> GROUP_WORDS_SHIFT;
            for group in first_group..=last_group {
                self.group_pending[group] = self.group_ones(group);
            }
        }
        (newly, touched)
    }

    /// The bits set in summary group `group`, counted from its words (at most 512).
    fn group_ones(&self, group: usize) -> u16 {
        let first = group << GROUP_WORDS_SHIFT;
        let end = (first + (1 << GROUP_WORDS_SHIFT)).min(self.words.len());
        self.words[first..end].iter().map(|w| w.count_ones()).sum::<u32>() as u16
    }

    #[inline]
    fn clear(&mut self, page: u32) -> bool {
        let (w, m) = ((page / 64) as usize, 1u64 << (page % 64));
        let group = w >> GROUP_WORDS_SHIFT;
        if self.group_pending[group] == 0 {
            return false;
        }
        let was = self.words[w] & m != 0;
        self.words[w] &= !m;
        self.set_count -= was as u64;
        self.group_pending[group] -= was as u16;
        was
    }

    #[inline]
    fn test(&self, page: u32) -> bool {
        let w = (page / 64) as usize;
        self.group_pending[w >> GROUP_WORDS_SHIFT] != 0 && self.words[w] & (1u64 << (page % 64)) != 0
    }
}

/// Sets `count` bits from `start` in `words`, word at a time. Returns (newly set, words touched).
fn set_bits(words: &mut [u64], start: u32, count: u32, set_count: &mut u64) -> (u64, u64) {
    let (mut page, end) = (start, start + count);
    let (mut newly, mut touched) = (0u64, 0u64);
    while page < end {
        let bit = page % 64;
        let span = (64 - bit).min(end - page);
        let mask = if span == 64 { u64::MAX } else { ((1u64 << span) - 1) << bit };
        let w = &mut words[(page / 64) as usize];
        newly += (mask & !*w).count_ones() as u64;
        *w |= mask;
        touched += 1;
        page += span;
    }
    *set_count += newly;
    (newly, touched)
}

#[derive(Clone)]
pub struct PartialBitmap {
    /// One slot per region; a region's bitmap exists only while it holds a pending page.
    regions: Vec<Option<Box<[u64]>>>,
    counts: Vec<u32>,
    region_pages: u32,
    region_shift: u32,
    logical_pages: u32,
    set_count: u64,
    allocated: u64,
}

impl PartialBitmap {
    fn new(logical_pages: u32, region_pages: u32) -> Self {
        // A power of two keeps the region lookup a shift; the config checks it.
        assert!(region_pages.is_power_of_two() && region_pages >= 64, "partial bitmap region {region_pages}");
        let n = (logical_pages as usize).div_ceil(region_pages as usize);
        PartialBitmap {
            regions: (0..n).map(|_| None).collect(),
            counts: vec![0; n],
            region_pages,
            region_shift: region_pages.trailing_zeros(),
            logical_pages,
            set_count: 0,
            allocated: 0,
        }
    }

    fn heap_bytes(&self) -> u64 {
        let directory = self.regions.len() as u64 * (8 + 4);
        directory + self.allocated * (self.region_pages as u64 / 8)
    }

    fn set_range(&mut self, start: u32, count: u32) -> (u64, u64) {
        let (mut page, end) = (start, start + count);
        let (mut newly, mut touched) = (0u64, 0u64);
        while page < end {
            let r = (page >> self.region_shift) as usize;
            let region_end = ((r as u32 + 1) << self.region_shift).min(end);
            let words_per_region = self.region_pages as usize / 64;
            let region = self.regions[r].get_or_insert_with(|| {
                self.allocated += 1;
                vec![0u64; words_per_region].into_boxed_slice()
            });
            let local = page - ((r as u32) << self.region_shift);
            let mut added = 0u64;
            let (_, t) = set_bits(region, local, region_end - page, &mut added);
            self.counts[r] += added as u32;
            newly += added;
            touched += t;
            page = region_end;
        }
        self.set_count += newly;
        (newly, touched)
    }

    #[inline]
    fn clear(&mut self, page: u32) -> bool {
        let r = (page >> self.region_shift) as usize;
        let Some(region) = self.regions[r].as_mut() else {
            return false;
        };
        let local = page & (self.region_pages - 1);
        let (w, m) = ((local / 64) as usize, 1u64 << (local % 64));
        if region[w] & m == 0 {
            return false;
        }
        region[w] &= !m;
        self.set_count -= 1;
        self.counts[r] -= 1;
        if self.counts[r] == 0 {
            self.regions[r] = None;
            self.allocated -= 1;
        }
        true
    }

    #[inline]
    fn test(&self, page: u32) -> bool {
        let r = (page >> self.region_shift) as usize;
        match &self.regions[r] {
            None => false,
            Some(region) => {
                let local = page & (self.region_pages - 1);
                region[(local / 64) as usize] & (1u64 << (local % 64)) != 0
            }
        }
    }
}
