//! The controller's DRAM write buffer.
//!
//! A host write lands in a free slot and is acknowledged; it stays *dirty* until the buffer is
//! full or the host sends FLUSH, and then it is programmed. A slot is free again only when its
//! program has finished, so a full buffer makes writes wait for NAND, as on a real drive.
//! A rewrite of a dirty page replaces it in place (one program saved); a TRIM of a dirty page
//! drops it (TRIM step 2 in 002).

use crate::lpn::Lpn;
use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use trimlab_sim::SimTime;

#[derive(Clone, Copy, Debug)]
struct Dirty {
    sequence: u64,
    tag: u64,
}

pub struct WriteBuffer {
    capacity_pages: usize,
    flush_batch_pages: usize,
    // FxHash: a fixed hash, so behaviour never depends on a random key; never iterated.
    dirty: FxHashMap<u32, Dirty>,
    /// Dirty pages oldest first; entries whose sequence no longer matches `dirty` are stale.
    order: VecDeque<(u32, u64)>,
    /// When slots whose pages are being programmed become free, and how many free then. The
    /// pages of one flash page (or multi-plane group) finish together, so they share an entry:
    /// one heap operation per program instead of one per 4 KiB page (profiled: the per-page heap
    /// was a tenth of a write-heavy run).
    in_flight: BinaryHeap<Reverse<(SimTime, u32)>>,
    /// Pages reported programmed but not yet pushed: consecutive reports of the same time.
    pending_release: Option<(SimTime, u32)>,
    in_flight_pages: usize,
    next_sequence: u64,
}

impl WriteBuffer {
    /// `flush_batch_pages` dirty pages are programmed together when a write finds the buffer full
    /// (one page per plane spreads them over every die).
    pub fn new(capacity_pages: usize, flush_batch_pages: usize) -> Self {
        WriteBuffer {
            capacity_pages,
            flush_batch_pages: flush_batch_pages.clamp(1, capacity_pages.max(1)),
            dirty: FxHashMap::default(),
            order: VecDeque::new(),
            in_flight: BinaryHeap::new(),
            pending_release: None,
            in_flight_pages: 0,
            next_sequence: 0,
        }
    }

    pub fn capacity_pages(&self) -> usize {
        self.capacity_pages
    }

    pub fn is_enabled(&self) -> bool {
        self.capacity_pages > 0
    }

    pub fn dirty_pages(&self) -> usize {
        self.dirty.len()
    }

    /// The data tag of a dirty page, if the buffer holds `lpn`.
    #[inline]
    pub fn lookup(&self, lpn: Lpn) -> Option<u64> {
        self.dirty.get(&lpn.0).map(|d| d.tag)
    }

    /// Rewrites a dirty page in place. False if `lpn` is not dirty.
    #[inline]
    pub fn overwrite(&mut self, lpn: Lpn, tag: u64) -> bool {
        match self.dirty.get_mut(&lpn.0) {
            Some(d) => {
                d.tag = tag;
                true
            }
            None => false,
        }
    }

    /// Drops a dirty page (it was trimmed). True if it was there.
    pub fn discard(&mut self, lpn: Lpn) -> bool {
        self.dirty.remove(&lpn.0).is_some()
    }

    /// Power is lost: every dirty page is dropped unprogrammed (slots in flight keep their
    /// programs, which the controller had already handed to the flash). Returns the pages.
    pub fn drop_dirty(&mut self) -> Vec<Lpn> {
        let mut lost: Vec<Lpn> = self
            .order
            .drain(..)
            .filter(|&(lpn, sequence)| self.dirty.get(&lpn).is_some_and(|d| d.sequence == sequence))
            .map(|(lpn, _)| Lpn(lpn))
            .collect();
        lost.sort_unstable();
        self.dirty.clear();
        lost
    }

    /// Frees slots whose programs have finished by `now`.
    #[inline]
    fn reclaim(&mut self, now: SimTime) {
        if let Some(entry) = self.pending_release.take() {
            self.in_flight.push(Reverse(entry));
        }
        while let Some(&Reverse((t, pages))) = self.in_flight.peek() {
            if t > now {
                break;
            }
            self.in_flight.pop();
            self.in_flight_pages -= pages as usize;
        }
    }

    /// Whether a new page can be admitted at `now` without flushing or waiting.
    pub fn has_free_slot(&mut self, now: SimTime) -> bool {
        if self.dirty.len() + self.in_flight_pages < self.capacity_pages {
            return true;
        }
        // Slots are only reclaimed when one is needed: most writes find room without it.
        self.reclaim(now);
        self.dirty.len() + self.in_flight_pages < self.capacity_pages
    }

    /// The earliest instant a slot frees, if any program is in flight.
    pub fn next_release(&self) -> Option<SimTime> {
        let pending = self.pending_release.map(|(t, _)| t);
        self.in_flight.peek().map(|Reverse((t, _))| *t).into_iter().chain(pending).min()
    }

    /// Records a new dirty page. The caller made room first.
    pub fn admit(&mut self, lpn: Lpn, tag: u64) {
        debug_assert!(self.dirty.len() + self.in_flight_pages < self.capacity_pages);
        let sequence = self.next_sequence;
        self.next_sequence += 1;
        let previous = self.dirty.insert(lpn.0, Dirty { sequence, tag });
        debug_assert!(previous.is_none(), "write_buffer: admit of a dirty page");
        self.order.push_back((lpn.0, sequence));
    }

    /// Takes up to `limit` of the oldest dirty pages for programming; each stays in a slot until
    /// [`WriteBuffer::programmed`] reports its completion.
    pub fn take_oldest(&mut self, limit: usize, out: &mut Vec<(Lpn, u64)>) {
        out.clear();
        while out.len() < limit {
            let Some((lpn, sequence)) = self.order.pop_front() else {
                break;
            };
            // One hash lookup for the common case (the page is still dirty from this admission).
            if let Some(d) = self.dirty.remove(&lpn) {
                if d.sequence == sequence {
                    out.push((Lpn(lpn), d.tag));
                } else {
                    // Trimmed and admitted again since: this queue entry is stale, the page stays.
                    self.dirty.insert(lpn, d);
                }
            }
        }
    }

    pub fn flush_batch_pages(&self) -> usize {
        self.flush_batch_pages
    }

    /// A page taken by `take_oldest` finished programming at `done`: its slot frees then.
    pub fn programmed(&mut self, done: SimTime) {
        self.programmed_pages(done, 1);
    }

    /// `pages` pages taken by `take_oldest` finished programming at `done`.
    pub fn programmed_pages(&mut self, done: SimTime, pages: u32) {
        if pages == 0 {
            return;
        }
        self.in_flight_pages += pages as usize;
        match &mut self.pending_release {
            Some((t, waiting)) if *t == done => *waiting += pages,
            pending => {
                if let Some(entry) = pending.replace((done, pages)) {
                    self.in_flight.push(Reverse(entry));
                }
            }
        }
    }

    /// When every slot will be free: the completion time of a FLUSH, once dirty pages are taken.
    pub fn drained_at(&self, now: SimTime) -> SimTime {
        let pending = self.pending_release.map(|(t, _)| t);
        self.in_flight.iter().map(|Reverse((t, _))| *t).chain(pending).max().unwrap_or(now).max(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oldest_first_skipping_trimmed_and_keeping_rewrite_position() {
        let mut b = WriteBuffer::new(8, 2);
        for lpn in 0..4 {
            b.admit(Lpn(lpn), lpn as u64);
        }
        assert!(b.overwrite(Lpn(0), 100));
        assert!(b.discard(Lpn(1)));
        let mut out = Vec::new();
        b.take_oldest(2, &mut out);
        assert_eq!(out, vec![(Lpn(0), 100), (Lpn(2), 2)]);
        b.take_oldest(8, &mut out);
        assert_eq!(out, vec![(Lpn(3), 3)]);
        assert_eq!(b.dirty_pages(), 0);
    }

    /// Pages of one flash page finish together and share a release entry; slots free at their
    /// own times whatever order the programs were reported in.
    #[test]
    fn slots_free_at_their_programs_end_in_any_report_order() {
        let mut b = WriteBuffer::new(4, 4);
        for lpn in 0..4 {
            b.admit(Lpn(lpn), 0);
        }
        let mut out = Vec::new();
        b.take_oldest(4, &mut out);
        for done in [30, 30, 10, 30] {
            b.programmed(SimTime(done));
        }
        assert_eq!(b.next_release(), Some(SimTime(10)));
        assert_eq!(b.drained_at(SimTime(0)), SimTime(30));
        assert!(!b.has_free_slot(SimTime(9)));
        assert!(b.has_free_slot(SimTime(10)));
        b.admit(Lpn(9), 0);
        assert!(!b.has_free_slot(SimTime(29)), "three slots still in flight, one dirty");
        assert!(b.has_free_slot(SimTime(30)));
        assert_eq!(b.next_release(), None);
    }

    #[test]
    fn a_power_cut_drops_exactly_the_dirty_pages() {
        let mut b = WriteBuffer::new(8, 2);
        for lpn in [7, 3, 5] {
            b.admit(Lpn(lpn), lpn as u64);
        }
        assert!(b.overwrite(Lpn(7), 70));
        assert!(b.discard(Lpn(3)));
        let mut out = Vec::new();
        b.take_oldest(1, &mut out);
        b.programmed(SimTime(10));
        b.admit(Lpn(9), 9);
        assert_eq!(b.drop_dirty(), vec![Lpn(5), Lpn(9)]);
        assert_eq!(b.dirty_pages(), 0);
        b.take_oldest(8, &mut out);
        assert!(out.is_empty(), "nothing left to program");
    }

    #[test]
    fn slots_free_only_when_programs_finish() {
        let mut b = WriteBuffer::new(1, 1);
        assert!(b.has_free_slot(SimTime(0)));
        b.admit(Lpn(5), 1);
        assert!(!b.has_free_slot(SimTime(0)));
        let mut out = Vec::new();
        b.take_oldest(1, &mut out);
        b.programmed(SimTime(50));
        assert!(!b.has_free_slot(SimTime(49)));
        assert_eq!(b.next_release(), Some(SimTime(50)));
        assert!(b.has_free_slot(SimTime(50)));
    }
}
