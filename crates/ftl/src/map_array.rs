//! The storage of one FTL map: a flat `u32` array, in memory the kernel may back with
//! transparent huge pages.
//!
//! Why: on a large drive a random map entry is a TLB miss as well as a cache miss, and its
//! page walk reads page-table entries that are themselves not cached. With 2 MiB pages the
//! tables are 512 times smaller. Measured (docs/performance.md, "Large drives"): the 61.44 TB
//! case's random phase took 524 s with these maps against 702 s without, the 30.72 TB case's
//! 929 s against 1283 s, with the same results.
//! Linux's default THP mode (`madvise`) grants huge pages to anonymous memory only where it is
//! asked to, which `memmap2` does without `unsafe`. Arrays under one huge page stay in a `Vec`.
//! Where huge pages are refused or unknown the map works as it is: the advice is a hint.

use std::ops::{Deref, DerefMut};

/// One huge page on x86-64 and arm64 (4 KiB base pages).
const HUGE_PAGE_BYTES: usize = 2 << 20;

pub(crate) enum MapArray {
    Small(Vec<u32>),
    Mapped(memmap2::MmapMut),
}

impl MapArray {
    /// `len` entries, each `value`.
    pub(crate) fn filled(len: usize, value: u32) -> MapArray {
        let bytes = len * std::mem::size_of::<u32>();
        if bytes >= HUGE_PAGE_BYTES {
            if let Ok(mut map) = memmap2::MmapMut::map_anon(bytes) {
                #[cfg(target_os = "linux")]
                let _ = map.advise(memmap2::Advice::HugePage);
                // Page-aligned and a whole number of entries: the cast cannot fail.
                bytemuck::cast_slice_mut::<u8, u32>(&mut map).fill(value);
                return MapArray::Mapped(map);
            }
        }
        MapArray::Small(vec![value; len])
    }

    /// Bytes the array holds.
    pub(crate) fn bytes(&self) -> usize {
        match self {
            MapArray::Small(v) => v.capacity() * std::mem::size_of::<u32>(),
            MapArray::Mapped(m) => m.len(),
        }
    }
}

impl Deref for MapArray {
    type Target = [u32];

    #[inline]
    fn deref(&self) -> &[u32] {
        match self {
            MapArray::Small(v) => v,
            MapArray::Mapped(m) => bytemuck::cast_slice(m),
        }
    }
}

impl DerefMut for MapArray {
    #[inline]
    fn deref_mut(&mut self) -> &mut [u32] {
        match self {
            MapArray::Small(v) => v,
            MapArray::Mapped(m) => bytemuck::cast_slice_mut(m),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_and_mapped_arrays_hold_what_is_written() {
        for len in [3, HUGE_PAGE_BYTES / 4 + 5] {
            let mut a = MapArray::filled(len, u32::MAX);
            assert_eq!(matches!(a, MapArray::Mapped(_)), len > 1000, "storage chosen by size");
            assert_eq!(a.len(), len);
            assert!(a.iter().all(|&e| e == u32::MAX));
            a[len - 1] = 7;
            a[0] = 9;
            assert_eq!((a[0], a[1], a[len - 1]), (9, u32::MAX, 7));
            assert!(a.bytes() >= len * 4);
        }
    }
}
