//! The event queue: pending events ordered by (time, insertion sequence).
//!
//! Ties at the same nanosecond are broken by insertion order (FIFO), as in MQSim, so the order of
//! simultaneous events never depends on heap internals and runs replay byte for byte.

use crate::run_queue::RunQueue;
use crate::time::SimTime;
use std::cmp::Ordering;

#[derive(Clone, Copy)]
struct Entry<E> {
    /// The time in the high 64 bits, the insertion sequence in the low: one integer compare
    /// orders by (time, sequence). Keys are unique, so the pop order never depends on the
    /// heap's layout.
    key: u128,
    event: E,
}

impl<E> Entry<E> {
    fn time(&self) -> SimTime {
        SimTime((self.key >> 64) as u64)
    }
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key.cmp(&other.key)
    }
}

/// A min-queue of events keyed by simulated time with FIFO tie-breaking. Kept as ascending runs
/// ([`RunQueue`]): a closed loop's completions come in classes that each finish in order (writes
/// through the buffer, TRIMs on the controller, the few writes behind GC), and a binary heap's
/// sift mispredicted on their mix (7 % of a closed loop with TRIMs, issue 27). Two runs (a
/// third cost more instructions and gained nothing); the rest goes to the queue's own heap.
pub struct EventQueue<E> {
    queue: RunQueue<Entry<E>, 2>,
    next_sequence: u64,
    now: SimTime,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue { queue: RunQueue::new(), next_sequence: 0, now: SimTime::ZERO }
    }

    /// The time of the last popped event: the simulation's present.
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Schedules `event` at `time`. Scheduling into the past is a bug in the caller.
    #[inline]
    pub fn push(&mut self, time: SimTime, event: E) {
        assert!(time >= self.now, "event_queue: scheduled at {time} before now {}", self.now);
        self.queue.push(Entry { key: (u128::from(time.0) << 64) | u128::from(self.next_sequence), event });
        self.next_sequence += 1;
    }

    /// Removes the earliest event and advances `now` to its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        let entry = self.queue.pop()?;
        self.now = entry.time();
        Some((self.now, entry.event))
    }

    pub fn peek_time(&self) -> Option<SimTime> {
        self.queue.peek().map(|e| e.time())
    }

    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_time_then_insertion_order() {
        let mut q = EventQueue::new();
        q.push(SimTime(10), "b");
        q.push(SimTime(5), "a");
        q.push(SimTime(10), "c");
        q.push(SimTime(7), "x");
        let order: Vec<_> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!["a", "x", "b", "c"]);
        assert_eq!(q.now(), SimTime(10));
    }

    #[test]
    #[should_panic(expected = "before now")]
    fn refuses_the_past() {
        let mut q = EventQueue::new();
        q.push(SimTime(10), ());
        q.pop();
        q.push(SimTime(3), ());
    }
}
