//! The trim buffer of Delayed TRIM (002 §II-B): the (start, length) of every TRIM range whose
//! steps 2 and 3 are deferred, in arrival order, with room for a fixed number of entries.
//! Draining takes pages from the front; a drain paused mid-entry keeps its place (the saved
//! context of 002), so the next drain resumes at the next page.

use crate::engine::PageRange;
use std::collections::VecDeque;
use trimlab_ftl::Lpn;

#[derive(Clone)]
pub struct TrimBuffer {
    entries: VecDeque<PageRange>,
    capacity_entries: usize,
    pages: u64,
}

impl TrimBuffer {
    pub fn new(capacity_entries: usize) -> Self {
        TrimBuffer { entries: VecDeque::new(), capacity_entries, pages: 0 }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn capacity_entries(&self) -> usize {
        self.capacity_entries
    }

    /// Free entry slots.
    pub fn room(&self) -> usize {
        self.capacity_entries - self.entries.len()
    }

    /// Pages named by the entries not yet drained (overlaps counted twice).
    pub fn pages(&self) -> u64 {
        self.pages
    }

    pub fn push(&mut self, range: PageRange) {
        debug_assert!(self.entries.len() < self.capacity_entries, "trim buffer: push past capacity");
        self.pages += range.count as u64;
        self.entries.push_back(range);
    }

    /// Takes the next page to drain, if any.
    #[inline]
    pub fn pop_page(&mut self) -> Option<Lpn> {
        let front = self.entries.front_mut()?;
        let lpn = front.start;
        front.start = Lpn(lpn.0 + 1);
        front.count -= 1;
        if front.count == 0 {
            self.entries.pop_front();
        }
        self.pages -= 1;
        Some(lpn)
    }

    /// Takes up to `out.len()` pages to drain into `out`, in `pop_page`'s order; returns how
    /// many (fewer only when the buffer runs out).
    #[inline]
    pub fn pop_pages(&mut self, out: &mut [Lpn]) -> usize {
        for (taken, slot) in out.iter_mut().enumerate() {
            match self.pop_page() {
                Some(lpn) => *slot = lpn,
                None => return taken,
            }
        }
        out.len()
    }

    /// Heap bytes of the entries held now (8 bytes each, as a firmware would store them).
    pub fn heap_bytes(&self) -> u64 {
        self.entries.len() as u64 * 8
    }

    pub fn ranges(&self) -> impl Iterator<Item = &PageRange> {
        self.entries.iter()
    }
}
