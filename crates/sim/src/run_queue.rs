//! A min-queue kept as a few ascending runs, with a binary heap for what fits none of them.
//!
//! A simulator's completions come in classes that each finish in order: a drive's writes behind
//! its link and write buffer, its TRIMs on the controller (sooner than the writes queued before
//! them), the few writes that wait behind garbage collection (later than the ones after them).
//! A binary heap pays for the mix with a sift whose every level is a branch the CPU cannot
//! predict (a third of `Ssd::submit` in a saturated trace replay, most of the closed loop's
//! event queue with TRIMs; issue 27). Here an item joins the run whose last item is the latest
//! at or before it (best fit), so each class settles in a run of its own; the least item is the
//! least of the runs' fronts and the heap's root. An item that extends no run goes to the heap.
//!
//! Exact whatever the order of pushes: it holds the same items as a heap would and always
//! yields the least. Items equal under `Ord` must be indistinguishable (the event queue's keys
//! are unique; a device's completion times are plain values), as for [`MinHeap`].

use crate::min_heap::MinHeap;

/// A FIFO of items: a vector and the index of its front. Leaner than a `VecDeque`, whose
/// wrap-around arithmetic cost more instructions than the heap's sift it replaced: the vector
/// restarts when the run empties, and the taken front part is dropped once it is most of it.
#[derive(Clone, Debug)]
struct Run<T> {
    items: Vec<T>,
    head: usize,
}

impl<T> Default for Run<T> {
    fn default() -> Self {
        Run { items: Vec::new(), head: 0 }
    }
}

impl<T: Copy> Run<T> {
    #[inline(always)]
    fn front(&self) -> Option<T> {
        self.items.get(self.head).copied()
    }

    #[inline(always)]
    fn back(&self) -> Option<T> {
        if self.head < self.items.len() {
            self.items.last().copied()
        } else {
            None
        }
    }

    #[inline(always)]
    fn push_back(&mut self, item: T) {
        if self.head == self.items.len() {
            self.items.clear();
            self.head = 0;
        } else if self.head >= 64 && self.head * 2 >= self.items.len() {
            self.items.drain(..self.head);
            self.head = 0;
        }
        self.items.push(item);
    }

    fn len(&self) -> usize {
        self.items.len() - self.head
    }
}

/// A min-queue of `Copy` items as `N` ascending runs and a heap; see the module documentation.
#[derive(Clone, Debug)]
pub struct RunQueue<T, const N: usize> {
    runs: [Run<T>; N],
    rest: MinHeap<T>,
    len: usize,
}

impl<T, const N: usize> Default for RunQueue<T, N> {
    fn default() -> Self {
        RunQueue { runs: std::array::from_fn(|_| Run::default()), rest: MinHeap::default(), len: 0 }
    }
}

impl<T: Copy + Ord, const N: usize> RunQueue<T, N> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline(always)]
    pub fn push(&mut self, item: T) {
        self.len += 1;
        // An empty run fits anything and ranks below every run with a tail (`None < Some`).
        let mut best: Option<(usize, Option<T>)> = None;
        for (i, run) in self.runs.iter().enumerate() {
            let back = run.back();
            if back.is_none_or(|b| b <= item) && best.is_none_or(|(_, best_back)| back > best_back) {
                best = Some((i, back));
            }
        }
        match best {
            Some((i, _)) => self.runs[i].push_back(item),
            None => self.rest.push(item),
        }
    }

    /// Where the least item is (a run's index, or `N` for the heap), and the item.
    #[inline(always)]
    fn least(&self) -> Option<(usize, T)> {
        // The heap is empty nearly always; its peek after a pop would look at the root's
        // children even then.
        let mut least = if self.rest.is_empty() { None } else { self.rest.peek().map(|t| (N, t)) };
        for (i, run) in self.runs.iter().enumerate() {
            if let Some(t) = run.front() {
                if least.is_none_or(|(_, l)| t < l) {
                    least = Some((i, t));
                }
            }
        }
        least
    }

    #[inline(always)]
    fn take(&mut self, from: usize) {
        self.len -= 1;
        if from == N {
            self.rest.pop();
        } else {
            self.runs[from].head += 1;
        }
    }

    /// The least item.
    #[inline]
    pub fn peek(&self) -> Option<T> {
        self.least().map(|(_, t)| t)
    }

    /// Removes and returns the least item.
    #[inline]
    pub fn pop(&mut self) -> Option<T> {
        let (from, t) = self.least()?;
        self.take(from);
        Some(t)
    }

    /// Removes every item at or before `limit`.
    #[inline]
    pub fn pop_through(&mut self, limit: T) {
        while let Some((from, t)) = self.least() {
            if t > limit {
                break;
            }
            self.take(from);
        }
    }

    /// The items in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = T> + '_ {
        self.runs.iter().flat_map(|r| r.items[r.head..].iter().copied()).chain(self.rest.iter().copied())
    }

    pub fn clear(&mut self) {
        for run in &mut self.runs {
            run.items.clear();
            run.head = 0;
        }
        self.rest.clear();
        self.len = 0;
    }

    /// Items in each run, then in the heap (tests, diagnostics).
    pub fn shape(&self) -> ([usize; N], usize) {
        (std::array::from_fn(|i| self.runs[i].len()), self.rest.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SeedTree;
    use rand::Rng;

    /// The runs yield what a binary heap yields, whatever the order of pushes: ascending
    /// streams (one run each), as many interleaved streams as runs (a replay's writes and
    /// TRIMs), one more than runs, and random items, with pops and `pop_through` between them;
    /// only the orders the runs cannot hold use the heap.
    #[test]
    fn yields_the_least_as_a_heap_does() {
        let mut rng = SeedTree::new(9).fork("run_queue");
        for streams in 1..=4u64 {
            let (mut runs, mut heap) = (RunQueue::<u64, 2>::new(), MinHeap::<u64>::new());
            let mut clocks = vec![0u64; streams as usize];
            let mut in_heap = 0;
            for step in 0..50_000u32 {
                match rng.gen_range(0..10) {
                    0..=4 => {
                        let s = rng.gen_range(0..streams) as usize;
                        clocks[s] += rng.gen_range(0..50);
                        let t = if streams == 4 { rng.gen_range(0..100_000) } else { clocks[s] };
                        runs.push(t);
                        heap.push(t);
                    }
                    5..=8 => {
                        assert_eq!(runs.peek(), heap.peek(), "{streams} streams, step {step}");
                        assert_eq!(runs.pop(), heap.pop(), "{streams} streams, step {step}");
                    }
                    _ => {
                        let limit = rng.gen_range(0..clocks[0].max(1) + 100);
                        runs.pop_through(limit);
                        while heap.peek().is_some_and(|t| t <= limit) {
                            heap.pop();
                        }
                    }
                }
                assert_eq!((runs.len(), runs.is_empty()), (heap.len(), heap.is_empty()));
                in_heap += runs.shape().1;
                if step % 97 == 0 {
                    let mut all: Vec<u64> = runs.iter().collect();
                    let mut expected: Vec<u64> = heap.iter().copied().collect();
                    all.sort_unstable();
                    expected.sort_unstable();
                    assert_eq!(all, expected);
                }
            }
            assert_eq!(in_heap > 0, streams > 2, "{streams} streams: {in_heap} item-steps in the heap");
        }
    }

    /// A run that never empties drops its taken front part, so it stays near its live size.
    #[test]
    fn a_run_that_never_empties_stays_small() {
        let mut q = RunQueue::<u64, 1>::new();
        for t in 0..100_000u64 {
            q.push(t);
            q.push(t + 1);
            q.pop();
        }
        assert_eq!(q.shape(), ([100_000], 0));
        for _ in 0..99_990 {
            q.pop();
        }
        for t in 0..1_000_000u64 {
            q.push(200_000 + t);
            q.pop();
        }
        assert_eq!(q.len(), 10);
        assert!(q.runs[0].items.len() <= 2 * 64 + 20, "{} items kept", q.runs[0].items.len());
    }
}
