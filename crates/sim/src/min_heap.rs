//! A binary min-heap whose pop leaves the root's slot to the next push.
//!
//! A simulation loop pops the earliest item and, nearly always, pushes its successor right
//! after (the closed-loop driver's next command, a device's next completion). A plain binary
//! heap pays for that pair with three sifts: the pop's sift down and sift up, the push's sift up.
//! Here a pop only marks the root taken; a push that follows fills the root with its item and
//! sifts it down once, which is what the pair needs. A pop that follows a pop removes the taken
//! root first. Items equal under `Ord` must be indistinguishable for the order of pops to be
//! independent of the heap's layout (the event queue's keys are unique; the device's completion
//! times are plain values).

/// A min-heap of `Copy` items; see the module documentation.
#[derive(Clone, Debug)]
pub struct MinHeap<T> {
    items: Vec<T>,
    /// The root (`items[0]`) was popped and its slot is free for the next push.
    root_taken: bool,
}

impl<T> Default for MinHeap<T> {
    fn default() -> Self {
        MinHeap { items: Vec::new(), root_taken: false }
    }
}

impl<T: Copy + Ord> MinHeap<T> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.items.len() - usize::from(self.root_taken)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The least item. With the root taken it is the lesser of the root's two children.
    #[inline]
    pub fn peek(&self) -> Option<T> {
        if self.root_taken {
            self.items.get(1..).and_then(|rest| rest.iter().take(2).min().copied())
        } else {
            self.items.first().copied()
        }
    }

    /// Inlined always: a device's queue pushed here once per command (now through `RunQueue`'s
    /// heap, for what fits none of its runs), and called it lost a tenth of the trace replay's
    /// host-side time.
    #[inline(always)]
    pub fn push(&mut self, item: T) {
        if self.root_taken {
            self.root_taken = false;
            self.items[0] = item;
            self.sift_down(0);
        } else {
            self.items.push(item);
            self.sift_up(self.items.len() - 1);
        }
    }

    /// Removes and returns the least item.
    #[inline]
    pub fn pop(&mut self) -> Option<T> {
        self.settle();
        let root = *self.items.first()?;
        self.root_taken = true;
        Some(root)
    }

    /// The items in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.items[usize::from(self.root_taken)..].iter()
    }

    pub fn clear(&mut self) {
        self.items.clear();
        self.root_taken = false;
    }

    /// Removes a taken root: the last item moves there and sifts down.
    #[inline]
    fn settle(&mut self) {
        if !self.root_taken {
            return;
        }
        self.root_taken = false;
        if let Some(last) = self.items.pop() {
            if !self.items.is_empty() {
                self.items[0] = last;
                self.sift_down(0);
            }
        }
    }

    #[inline]
    fn sift_up(&mut self, mut at: usize) {
        let item = self.items[at];
        while at > 0 {
            let parent = (at - 1) / 2;
            if self.items[parent] <= item {
                break;
            }
            self.items[at] = self.items[parent];
            at = parent;
        }
        self.items[at] = item;
    }

    #[inline]
    fn sift_down(&mut self, mut at: usize) {
        let item = self.items[at];
        let len = self.items.len();
        loop {
            let left = 2 * at + 1;
            if left >= len {
                break;
            }
            let right = left + 1;
            let child = if right < len && self.items[right] < self.items[left] { right } else { left };
            if self.items[child] >= item {
                break;
            }
            self.items[at] = self.items[child];
            at = child;
        }
        self.items[at] = item;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SeedTree;
    use rand::Rng;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    /// Random pushes and pops (bursts of each, and the pop-then-push pairs the module is for)
    /// against the standard library's heap: same pops, lengths and least items throughout.
    #[test]
    fn pops_what_a_binary_heap_pops() {
        let mut rng = SeedTree::new(7).fork("min_heap");
        let mut ours = MinHeap::new();
        let mut reference = BinaryHeap::new();
        for step in 0..200_000u32 {
            let op = rng.gen_range(0..10u32);
            if op < 5 || (step / 5_000) % 3 == 0 {
                let item = rng.gen_range(0..500u32);
                ours.push(item);
                reference.push(Reverse(item));
            } else {
                assert_eq!(ours.pop(), reference.pop().map(|Reverse(i)| i), "step {step}");
            }
            assert_eq!(ours.len(), reference.len());
            assert_eq!(ours.peek(), reference.peek().map(|&Reverse(i)| i));
            if step % 997 == 0 {
                let mut a: Vec<u32> = ours.iter().copied().collect();
                let mut b: Vec<u32> = reference.iter().map(|&Reverse(i)| i).collect();
                a.sort_unstable();
                b.sort_unstable();
                assert_eq!(a, b);
            }
        }
        while let Some(Reverse(item)) = reference.pop() {
            assert_eq!(ours.pop(), Some(item));
        }
        assert!(ours.is_empty() && ours.pop().is_none() && ours.peek().is_none());
        ours.push(3);
        ours.clear();
        assert!(ours.is_empty());
    }
}
