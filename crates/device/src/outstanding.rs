//! The commands in a device's queue, as their completion times: how many are still in it when
//! the next one arrives (the queue depth) and when a non-queued command may start (the drain).
//!
//! A command leaves the queue when a later one arrives at or after its completion. Kept as a
//! min-heap, every arrival pops what has completed and every command pushes its own completion:
//! a sift each time, whose branches the CPU cannot predict once TRIMs (done at once) mix with
//! writes (done behind the buffer); in a closed loop with TRIMs that was 6 % of the run. Yet
//! while the queue is far from full nobody needs to know which commands have left: nothing waits
//! for a slot. So the completions are appended to an unordered list, and the ones that have
//! left are dropped in one pass only when the list reaches the queue depth: a pass over at most
//! `queue_depth` times every `queue_depth / 4` commands or more. When that pass leaves the queue
//! more than three quarters full, the heap takes over (a full queue needs its earliest completion
//! at every arrival) until the queue is less than half full again.
//!
//! Exactness: the heap drops at each arrival the completions at or before it. The list drops
//! them later, with a later arrival's time, which drops the same ones as long as arrivals do
//! not go back in time; the device's callers submit in arrival order, and when one does not, the
//! list first drops what the previous (latest) arrival dropped, as the heap did then.
//!
//! The "heap" of a nearly full queue is not a binary heap either ([`RunQueue`]): a trace replayed
//! faster than the drive serves it keeps the queue full, and its sift down at every arrival was
//! a third of `Ssd::submit` there (issue 27). Completions come in a few ascending runs (writes
//! finish in order behind the link and the buffer, TRIMs in order on the controller, earlier
//! than the writes queued before them), so they are kept as such runs, with a binary heap only
//! for a completion that extends none of them.

use trimlab_sim::{RunQueue, SimTime};

#[derive(Default)]
pub(crate) struct Outstanding {
    /// Completion times in no order; those at or before `last_arrival` have left the queue
    /// already (all but the last one pushed, which came after that arrival's retirements).
    list: Vec<SimTime>,
    /// The queue while it is nearly full (`list` is then empty): two runs, a replay's writes
    /// and its TRIMs.
    heap: RunQueue<SimTime, 2>,
    is_heap: bool,
    last_arrival: SimTime,
}

impl Outstanding {
    /// A command arrives at `arrival`: the commands completed by then leave the queue and, when
    /// `queue_depth` are still in it, the earliest to complete leaves too and its completion is
    /// returned (the new command waits for it).
    #[inline]
    pub(crate) fn admit(&mut self, arrival: SimTime, queue_depth: usize) -> Option<SimTime> {
        if self.is_heap {
            return self.admit_to_heap(arrival, queue_depth);
        }
        if arrival < self.last_arrival {
            // Out of arrival order: first drop what the latest arrival dropped.
            let (newest, latest) = (self.list.pop(), self.last_arrival);
            self.list.retain(|&done| done > latest);
            self.list.extend(newest);
        }
        self.last_arrival = arrival;
        if self.list.len() < queue_depth {
            return None; // fewer commands in the queue than this, whichever have left
        }
        self.list.retain(|&done| done > arrival);
        if self.list.len() * 4 <= queue_depth * 3 {
            return None;
        }
        self.heap.clear();
        // Sorted, the list becomes one run rather than a scatter across runs and heap.
        self.list.sort_unstable();
        self.list.drain(..).for_each(|done| self.heap.push(done));
        self.is_heap = true;
        self.admit_to_heap(arrival, queue_depth)
    }

    #[inline]
    fn admit_to_heap(&mut self, arrival: SimTime, queue_depth: usize) -> Option<SimTime> {
        self.heap.pop_through(arrival);
        self.last_arrival = arrival;
        let waited = if self.heap.len() >= queue_depth { self.heap.pop() } else { None };
        if self.heap.len() * 2 < queue_depth {
            self.list.extend(self.heap.iter());
            self.heap.clear();
            self.is_heap = false;
        }
        waited
    }

    /// The command admitted last completes at `done`.
    #[inline(always)]
    pub(crate) fn push(&mut self, done: SimTime) {
        if self.is_heap {
            self.heap.push(done);
        } else {
            self.list.push(done);
        }
    }

    /// The latest completion of the commands in the queue, which all leave it (a non-queued
    /// command waits for the queue to drain). Completions in the list that have left already are
    /// at or before the arrival just admitted, so they never exceed the new command's start.
    pub(crate) fn drain(&mut self) -> Option<SimTime> {
        let latest = self.list.iter().copied().chain(self.heap.iter()).max();
        self.list.clear();
        self.heap.clear();
        self.is_heap = false;
        latest
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;
    use trimlab_sim::{MinHeap, SeedTree};

    /// The heap the device kept before: drop what completed by the arrival, then the earliest
    /// when `queue_depth` remain; a drain is the maximum and empties it.
    #[derive(Default)]
    struct Reference(MinHeap<SimTime>);

    impl Reference {
        fn admit(&mut self, arrival: SimTime, queue_depth: usize) -> Option<SimTime> {
            while self.0.peek().is_some_and(|t| t <= arrival) {
                self.0.pop();
            }
            if self.0.len() >= queue_depth {
                self.0.pop()
            } else {
                None
            }
        }

        fn drain(&mut self) -> Option<SimTime> {
            let latest = self.0.iter().copied().max();
            self.0.clear();
            latest
        }
    }

    /// Arrivals mostly in order with bursts (a queue that fills and empties), service times
    /// short and long, now and then an arrival back in time and a drain, queue depths 1 to 64:
    /// the same waits and drains as the heap, and the list and the heap both used.
    #[test]
    fn waits_and_drains_as_the_heap_did() {
        let mut rng = SeedTree::new(5).fork("outstanding");
        let (mut heap_admits, mut list_admits) = (0, 0);
        for case in 0..60u32 {
            let queue_depth = [1usize, 2, 8, 32, 64][case as usize % 5];
            let (mut ours, mut reference) = (Outstanding::default(), Reference::default());
            let mut arrival = 0u64;
            for step in 0..4_000u32 {
                arrival += match rng.gen_range(0..20) {
                    0 => 5_000,
                    1..=9 => 0,
                    _ => rng.gen_range(0..40),
                };
                let at = if rng.gen_range(0..200) == 0 { arrival.saturating_sub(300) } else { arrival };
                let at = SimTime(at);
                let waited = ours.admit(at, queue_depth);
                assert_eq!(waited, reference.admit(at, queue_depth), "case {case} step {step}");
                if ours.is_heap {
                    heap_admits += 1;
                } else {
                    list_admits += 1;
                }
                let start = waited.map_or(at, |w| w.max(at));
                if rng.gen_range(0..100) == 0 {
                    // The device starts the command at the later of the two: what it sees.
                    let drained = |d: Option<SimTime>| d.map_or(start, |d| d.max(start));
                    assert_eq!(drained(ours.drain()), drained(reference.drain()), "case {case} step {step}");
                }
                let done = start.after(if rng.gen_range(0..10) == 0 { 2_000 } else { rng.gen_range(0..200) });
                ours.push(done);
                reference.0.push(done);
            }
        }
        assert!(heap_admits > 10_000 && list_admits > 10_000, "heap {heap_admits}, list {list_admits}");
    }
}
