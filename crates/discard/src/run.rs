//! Runs of file-system blocks, and freed runs with the instant they were freed: what a host
//! TRIM policy queues, trims and releases (the file system's extent maps are built of them).

use trimlab_sim::SimTime;

/// A run of contiguous file-system blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Run {
    pub start: u64,
    pub len: u64,
}

impl Run {
    pub fn new(start: u64, len: u64) -> Self {
        Run { start, len }
    }
    pub fn end(&self) -> u64 {
        self.start + self.len
    }
}

/// Blocks freed at `freed_at` and not yet allocatable again: the unit every TRIM policy
/// queues, so it can report how long freed space stayed unusable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FreedRun {
    pub run: Run,
    pub freed_at: SimTime,
}
