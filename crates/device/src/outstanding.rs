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
pub struct Outstanding {
    /// Completion times in no order; those at or before `last_arrival` have left the queue
    /// already (all but the last one pushed, which came after that arrival's retirements).
    list: Vec<SimTime>,
    /// The queue while it is nearly full (`list` is then empty): two runs, a replay's writes
    /// and its TRIMs.
    heap: RunQueue<SimTime, 2>,
    pub is_heap: bool,
    last_arrival: SimTime,
}

impl Outstanding {
    /// A command arrives at `arrival`: the commands completed by then leave the queue and, when
    /// `queue_depth` are still in it, the earliest to complete leaves too and its completion is
    /// returned (the new command waits for it).
    #[inline]
    pub fn admit(&mut self, arrival: SimTime, queue_depth: usize) -> Option<SimTime> {
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
    pub fn push(&mut self, done: SimTime) {
        if self.is_heap {
            self.heap.push(done);
        } else {
            self.list.push(done);
        }
    }

    /// The latest completion of the commands in the queue, which all leave it (a non-queued
    /// command waits for the queue to drain). Completions in the list that have left already are
    /// at or before the arrival just admitted, so they never exceed the new command's start.
    pub fn drain(&mut self) -> Option<SimTime> {
        let latest = self.list.iter().copied().chain(self.heap.iter()).max();
        self.list.clear();
        self.heap.clear();
        self.is_heap = false;
        latest
    }
}
