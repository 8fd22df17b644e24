//! The controller's DRAM write buffer.
//!
//! A host write lands in a free slot and is acknowledged; it stays *dirty* until the buffer is
//! full or the host sends FLUSH, and then it is programmed. A slot is free again only when its
//! program has finished, so a full buffer makes writes wait for NAND, as on a real drive.
//! A rewrite of a dirty page replaces it in place (one program saved); a TRIM of a dirty page
//! drops it (TRIM step 2 in 002).

use crate::lpn::Lpn;
use prefetch_index::prefetch_index;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use trimlab_sim::SimTime;

/// Marks an empty slot of the dirty index and a dropped page in the admission queue (no page
/// number reaches it: drives are limited to 32-bit page numbers below it).
const EMPTY: u32 = u32::MAX;

/// The dirty pages' positions in the admission queue, by logical page: an open-addressed table
/// (linear probing, deletion by backward shift) at most half full. It replaced a `HashMap`
/// holding each page's tag and sequence (profiled: its insert and remove were a tenth of a
/// random-write run); an entry is 8 bytes and a lookup is one multiply and, nearly always, one
/// cache line. Never iterated, so its layout cannot reach a result.
struct DirtyIndex {
    /// (logical page, admission sequence modulo 2^32); `EMPTY` pages are free slots. Allocated
    /// at the first insert, as the map it replaced was: a drive whose buffer is never used, or
    /// not used yet, holds none of it.
    slots: Vec<(u32, u32)>,
    /// Room for the buffer's pages at half load, in slots (see `grow`).
    planned_slots: usize,
    /// 64 minus log2 of the slot count: the hash is the top bits of a multiply.
    shift: u32,
    len: usize,
}

impl DirtyIndex {
    fn with_room_for(pages: usize) -> Self {
        DirtyIndex {
            slots: Vec::new(),
            planned_slots: (pages.max(4) * 2).next_power_of_two(),
            shift: 64,
            len: 0,
        }
    }

    /// Fibonacci hashing: consecutive pages land far apart, so sequential writes do not cluster.
    #[inline]
    fn home(&self, lpn: u32) -> usize {
        (u64::from(lpn).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    /// The slot holding `lpn`, or the empty slot where it would go.
    #[inline]
    fn find(&self, lpn: u32) -> usize {
        let mask = self.slots.len() - 1;
        let mut i = self.home(lpn);
        while self.slots[i].0 != lpn && self.slots[i].0 != EMPTY {
            i = (i + 1) & mask;
        }
        i
    }

    /// Starts fetching the home slot of `lpn` (a lookup of it is coming); a hint, no change.
    #[inline]
    fn prefetch(&self, lpn: u32) {
        if !self.slots.is_empty() {
            prefetch_index(&self.slots, self.home(lpn));
        }
    }

    #[inline]
    fn get(&self, lpn: u32) -> Option<u32> {
        if self.len == 0 {
            return None;
        }
        let (key, sequence) = self.slots[self.find(lpn)];
        (key == lpn).then_some(sequence)
    }

    /// Records `lpn` at `sequence`; the caller checked it is absent.
    #[inline]
    fn insert(&mut self, lpn: u32, sequence: u32) {
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let i = self.find(lpn);
        debug_assert_eq!(self.slots[i].0, EMPTY, "write_buffer: page {lpn} is dirty already");
        self.slots[i] = (lpn, sequence);
        self.len += 1;
    }

    /// Removes `lpn`; returns its sequence if it was there.
    #[inline]
    fn remove(&mut self, lpn: u32) -> Option<u32> {
        if self.len == 0 {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut hole = self.find(lpn);
        let (key, sequence) = self.slots[hole];
        if key != lpn {
            return None;
        }
        // Backward shift: later entries of the run move into the hole when their home slot is
        // not between the hole and them, so every entry stays reachable from its home.
        let mut j = (hole + 1) & mask;
        while self.slots[j].0 != EMPTY {
            let home = self.home(self.slots[j].0);
            if j.wrapping_sub(home) & mask >= j.wrapping_sub(hole) & mask {
                self.slots[hole] = self.slots[j];
                hole = j;
            }
            j = (j + 1) & mask;
        }
        self.slots[hole] = (EMPTY, 0);
        self.len -= 1;
        Some(sequence)
    }

    /// Allocates the planned table at the first insert, at most `FIRST_SLOTS_MAX` slots of it;
    /// doubles it when it is half full after that (a buffer of more than 32 Ki pages that
    /// fills, or a caller admitting beyond the capacity). So a large buffer that a run never
    /// fills costs what it holds, as the hash map this replaced did.
    fn grow(&mut self) {
        const FIRST_SLOTS_MAX: usize = 1 << 16;
        let slot_count = if self.slots.is_empty() {
            self.planned_slots.min(FIRST_SLOTS_MAX)
        } else {
            2 * self.slots.len()
        };
        let old = std::mem::replace(&mut self.slots, vec![(EMPTY, 0); slot_count]);
        self.shift = 64 - slot_count.trailing_zeros();
        self.len = 0;
        for &(lpn, sequence) in old.iter().filter(|s| s.0 != EMPTY) {
            self.insert(lpn, sequence);
        }
    }

    fn clear(&mut self) {
        self.slots.fill((EMPTY, 0));
        self.len = 0;
    }
}

pub struct WriteBuffer {
    capacity_pages: usize,
    flush_batch_pages: usize,
    dirty: DirtyIndex,
    /// Dirty pages in admission order, oldest first, with their tags: the page with sequence
    /// `s` is at `s - front_sequence`. A trimmed page's entry stays, marked `EMPTY`, until
    /// `take_oldest` passes it; a rewrite of a dirty page keeps its place.
    order: VecDeque<(u32, u64)>,
    /// The admission sequence of `order`'s front, modulo 2^32 (the queue is far shorter).
    front_sequence: u32,
    /// When slots whose pages are being programmed become free, and how many free then. The
    /// pages of one flash page (or multi-plane group) finish together, so they share an entry:
    /// one heap operation per program instead of one per 4 KiB page (profiled: the per-page heap
    /// was a tenth of a write-heavy run).
    in_flight: BinaryHeap<Reverse<(SimTime, u32)>>,
    /// Pages reported programmed but not yet pushed: consecutive reports of the same time.
    pending_release: Option<(SimTime, u32)>,
    in_flight_pages: usize,
}

impl WriteBuffer {
    /// `flush_batch_pages` dirty pages are programmed together when a write finds the buffer full
    /// (one page per plane spreads them over every die).
    pub fn new(capacity_pages: usize, flush_batch_pages: usize) -> Self {
        WriteBuffer {
            capacity_pages,
            flush_batch_pages: flush_batch_pages.clamp(1, capacity_pages.max(1)),
            dirty: DirtyIndex::with_room_for(capacity_pages),
            order: VecDeque::new(),
            front_sequence: 0,
            in_flight: BinaryHeap::new(),
            pending_release: None,
            in_flight_pages: 0,
        }
    }

    pub fn capacity_pages(&self) -> usize {
        self.capacity_pages
    }

    pub fn is_enabled(&self) -> bool {
        self.capacity_pages > 0
    }

    pub fn dirty_pages(&self) -> usize {
        self.dirty.len
    }

    /// Where the page admitted at `sequence` sits in `order`.
    #[inline]
    fn position(&self, sequence: u32) -> usize {
        sequence.wrapping_sub(self.front_sequence) as usize
    }

    /// The data tag of a dirty page, if the buffer holds `lpn`.
    #[inline]
    pub fn lookup(&self, lpn: Lpn) -> Option<u64> {
        self.dirty.get(lpn.0).map(|sequence| self.order[self.position(sequence)].1)
    }

    /// Rewrites a dirty page in place. False if `lpn` is not dirty.
    #[inline]
    pub fn overwrite(&mut self, lpn: Lpn, tag: u64) -> bool {
        match self.dirty.get(lpn.0) {
            Some(sequence) => {
                let position = self.position(sequence);
                self.order[position].1 = tag;
                true
            }
            None => false,
        }
    }

    /// A hint that `lpn` is about to be looked up or discarded (a TRIM engine's step 2): starts
    /// fetching its slot of the dirty index, so the miss overlaps the caller's other misses.
    #[inline]
    pub fn prefetch(&self, lpn: Lpn) {
        self.dirty.prefetch(lpn.0);
    }

    /// Drops a dirty page (it was trimmed). True if it was there.
    pub fn discard(&mut self, lpn: Lpn) -> bool {
        match self.dirty.remove(lpn.0) {
            Some(sequence) => {
                let position = self.position(sequence);
                self.order[position].0 = EMPTY;
                true
            }
            None => false,
        }
    }

    /// Power is lost: every dirty page is dropped unprogrammed (slots in flight keep their
    /// programs, which the controller had already handed to the flash). Returns the pages.
    pub fn drop_dirty(&mut self) -> Vec<Lpn> {
        let mut lost: Vec<Lpn> = self.order.iter().filter(|e| e.0 != EMPTY).map(|e| Lpn(e.0)).collect();
        lost.sort_unstable();
        self.front_sequence = self.front_sequence.wrapping_add(self.order.len() as u32);
        self.order.clear();
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
        if self.dirty.len + self.in_flight_pages < self.capacity_pages {
            return true;
        }
        // Slots are only reclaimed when one is needed: most writes find room without it.
        self.reclaim(now);
        self.dirty.len + self.in_flight_pages < self.capacity_pages
    }

    /// The earliest instant a slot frees, if any program is in flight.
    pub fn next_release(&self) -> Option<SimTime> {
        let pending = self.pending_release.map(|(t, _)| t);
        self.in_flight.peek().map(|Reverse((t, _))| *t).into_iter().chain(pending).min()
    }

    /// Records a new dirty page. The caller made room first.
    pub fn admit(&mut self, lpn: Lpn, tag: u64) {
        debug_assert!(self.dirty.len + self.in_flight_pages < self.capacity_pages);
        let sequence = self.front_sequence.wrapping_add(self.order.len() as u32);
        self.dirty.insert(lpn.0, sequence);
        self.order.push_back((lpn.0, tag));
    }

    /// Takes up to `limit` of the oldest dirty pages for programming; each stays in a slot until
    /// [`WriteBuffer::programmed`] reports its completion.
    pub fn take_oldest(&mut self, limit: usize, out: &mut Vec<(Lpn, u64)>) {
        out.clear();
        while out.len() < limit {
            let Some((lpn, tag)) = self.order.pop_front() else {
                break;
            };
            self.front_sequence = self.front_sequence.wrapping_add(1);
            // A trimmed page's entry is `EMPTY`; a live entry is its page's latest admission.
            if lpn != EMPTY {
                let removed = self.dirty.remove(lpn);
                debug_assert!(removed.is_some(), "write_buffer: queued page {lpn} not in the index");
                out.push((Lpn(lpn), tag));
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
    use std::collections::BTreeMap;

    /// The dirty index against a `BTreeMap` over random inserts, lookups and removals in a
    /// small key range, so probe runs collide, wrap the table's end and shift back on removal.
    #[test]
    fn dirty_index_agrees_with_a_btree_map() {
        for (seed, keys) in [(1u64, 40u32), (7, 300), (13, 5000)] {
            let mut index = DirtyIndex::with_room_for(64);
            let mut reference = BTreeMap::new();
            let mut state = seed;
            for step in 0..200_000u32 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let lpn = (state >> 8) as u32 % keys;
                match state % 3 {
                    0 if reference.len() < 64 && !reference.contains_key(&lpn) => {
                        index.insert(lpn, step);
                        reference.insert(lpn, step);
                    }
                    1 => assert_eq!(index.remove(lpn), reference.remove(&lpn), "seed {seed} step {step}"),
                    _ => assert_eq!(index.get(lpn), reference.get(&lpn).copied(), "seed {seed} step {step}"),
                }
                assert_eq!(index.len, reference.len());
            }
            for (&lpn, &sequence) in &reference {
                assert_eq!(index.get(lpn), Some(sequence));
            }
        }
    }

    /// Admitting beyond the table's planned size grows it and keeps every page; a large buffer
    /// starts with a bounded table and grows as it fills.
    #[test]
    fn dirty_index_grows_past_its_planned_size() {
        for (planned, pages) in [(4, 1000u32), (1 << 20, 100_000)] {
            let mut index = DirtyIndex::with_room_for(planned);
            for lpn in 0..pages {
                index.insert(lpn * 7, lpn);
            }
            assert!(index.slots.len() <= (2 * pages as usize).next_power_of_two().max(8 << 1));
            assert!((0..pages).all(|lpn| index.get(lpn * 7) == Some(lpn)));
            assert_eq!(index.get(3), None);
        }
    }

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
