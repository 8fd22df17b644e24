//! The forward (LPN -> PPA) and backward (PPA -> LPN) maps of a page-mapping FTL.
//!
//! Both are flat `u32` arrays with `u32::MAX` for "none": 4 bytes per logical page plus 4 bytes
//! per physical page, which is what keeps a 256 GiB device under 10 bytes of RAM per page.

use crate::lpn::Lpn;
use crate::map_array::MapArray;
use trimlab_nand::Ppa;

pub const NONE: u32 = u32::MAX;

pub struct PageMap {
    forward: MapArray,
    backward: MapArray,
}

impl PageMap {
    pub fn new(logical_pages: usize, physical_pages: usize) -> Self {
        PageMap {
            forward: MapArray::filled(logical_pages, NONE),
            backward: MapArray::filled(physical_pages, NONE),
        }
    }

    pub fn logical_pages(&self) -> usize {
        self.forward.len()
    }

    #[inline]
    pub fn lookup(&self, lpn: Lpn) -> Option<Ppa> {
        let raw = self.forward[lpn.index()];
        (raw != NONE).then_some(Ppa(raw))
    }

    /// The logical page whose current data lives at `ppa`, if that page is valid.
    #[inline]
    pub fn owner(&self, ppa: Ppa) -> Option<Lpn> {
        let raw = self.backward[ppa.index()];
        (raw != NONE).then_some(Lpn(raw))
    }

    /// Points `lpn` at `ppa`. The caller has invalidated any previous location.
    #[inline]
    pub fn bind(&mut self, lpn: Lpn, ppa: Ppa) {
        debug_assert_eq!(self.backward[ppa.index()], NONE, "page_map: {ppa:?} already owned");
        self.forward[lpn.index()] = ppa.0;
        self.backward[ppa.index()] = lpn.0;
    }

    /// Drops both directions of `lpn`'s mapping; returns where it pointed.
    #[inline]
    pub fn unbind(&mut self, lpn: Lpn) -> Option<Ppa> {
        let raw = std::mem::replace(&mut self.forward[lpn.index()], NONE);
        if raw == NONE {
            return None;
        }
        self.backward[raw as usize] = NONE;
        Some(Ppa(raw))
    }

    /// Moves `lpn` from `from`, where it lives, to the unowned `to` (a GC copy). The forward
    /// entry is stored without being read: GC knows where the page lives, and a store that
    /// misses the cache does not stall the CPU as a load does.
    #[inline]
    pub fn relocate(&mut self, lpn: Lpn, from: Ppa, to: Ppa) {
        debug_assert_eq!(self.forward[lpn.index()], from.0, "page_map: {lpn:?} does not live at {from:?}");
        debug_assert_eq!(self.backward[to.index()], NONE, "page_map: {to:?} already owned");
        self.forward[lpn.index()] = to.0;
        self.backward[from.index()] = NONE;
        self.backward[to.index()] = lpn.0;
    }

    /// Drops only the forward entry of `lpn` (a lazy TRIM); the backward entry goes stale.
    #[inline]
    pub fn clear_forward(&mut self, lpn: Lpn) -> Option<Ppa> {
        let raw = std::mem::replace(&mut self.forward[lpn.index()], NONE);
        (raw != NONE).then_some(Ppa(raw))
    }

    /// Whether `ppa`'s backward entry names a page whose forward entry points elsewhere.
    #[inline]
    pub fn is_stale(&self, ppa: Ppa) -> bool {
        let owner = self.backward[ppa.index()];
        owner != NONE && self.forward[owner as usize] != ppa.0
    }

    /// Clears a stale backward entry (reconciling a lazy TRIM).
    #[inline]
    pub fn clear_backward(&mut self, ppa: Ppa) {
        debug_assert!(self.is_stale(ppa), "page_map: {ppa:?} is not stale");
        self.backward[ppa.index()] = NONE;
    }

    /// Raw backward entries of a block's pages, for GC scans and checks.
    #[inline]
    pub fn owners_of(&self, first: Ppa, pages: usize) -> &[u32] {
        &self.backward[first.index()..first.index() + pages]
    }

    pub fn forward_raw(&self) -> &[u32] {
        &self.forward
    }

    pub fn backward_raw(&self) -> &[u32] {
        &self.backward
    }

    /// Both maps, writable, so the check's tests can break them.
    #[cfg(test)]
    pub(crate) fn raw_mut(&mut self) -> (&mut [u32], &mut [u32]) {
        (&mut self.forward, &mut self.backward)
    }

    pub fn heap_bytes(&self) -> usize {
        self.forward.bytes() + self.backward.bytes()
    }
}
