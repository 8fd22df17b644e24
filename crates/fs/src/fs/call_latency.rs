//! How long the application's fsync and write calls took: simulated time from the call's entry
//! to its return, so a write that waits for dirty-page writeback or for blocks a TRIM policy
//! holds, and an fsync that waits for a commit with its synchronous discards, show it. Kept as
//! HDR histograms (as the device keeps its command latencies), so memory does not grow with
//! the number of calls.

use hdrhistogram::Histogram;
use serde::Serialize;
use trimlab_device::metrics::{latency_histogram, LatencySummary};

/// The application calls timed, one histogram each.
pub(crate) struct CallLatency {
    fsync: Histogram<u64>,
    write: Histogram<u64>,
}

/// What metrics.json reports of them (`host.calls`): count, mean, p50, p99, p99.9, max.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CallLatencies {
    /// fsync(2) and fdatasync(2).
    pub fsync: LatencySummary,
    /// Buffered and O_DIRECT write(2).
    pub write: LatencySummary,
}

impl CallLatency {
    pub(crate) fn new() -> Self {
        CallLatency { fsync: latency_histogram(), write: latency_histogram() }
    }

    pub(crate) fn fsync(&mut self, ns: u64) {
        self.fsync.saturating_record(ns.max(1));
    }

    pub(crate) fn write(&mut self, ns: u64) {
        self.write.saturating_record(ns.max(1));
    }

    pub(crate) fn summary(&self) -> CallLatencies {
        CallLatencies { fsync: LatencySummary::of(&self.fsync), write: LatencySummary::of(&self.write) }
    }
}

impl<D: trimlab_device::BlockDevice> super::FileSystem<D> {
    /// The time an unlink or rmdir spends before its system call frees anything
    /// (`HostCosts::unlink_ns`): background work due meanwhile (a commit timer, inodegc's
    /// delayed work) runs at its time.
    pub(super) fn unlink_cpu(&mut self) {
        self.now = self.now.after(self.config.host.unlink_ns);
        self.advance_to(self.now);
    }
}
