//! Simulated time: an instant in integer nanoseconds since the start of a run.

use serde::{Deserialize, Serialize};
use std::fmt;

/// An instant of simulated time, in nanoseconds since the run started.
///
/// Integer nanoseconds keep every run exactly reproducible: no float rounding can reorder events.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SimTime(pub u64);

pub const NS_PER_US: u64 = 1_000;
pub const NS_PER_MS: u64 = 1_000_000;
pub const NS_PER_S: u64 = 1_000_000_000;

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);

    pub fn ns(self) -> u64 {
        self.0
    }

    /// This instant moved later by `duration_ns`; the clock stops at its end (u64::MAX ns,
    /// 584 years) instead of wrapping to the past, which reordered events and panicked the
    /// event queue (issue 26). Configs cannot ask for that much (each cost and duration has a
    /// bound), and a run whose clock gets there is reported as an error.
    #[inline]
    pub fn after(self, duration_ns: u64) -> SimTime {
        SimTime(self.0.saturating_add(duration_ns))
    }

    /// Nanoseconds from `earlier` to `self`, zero if `earlier` is later.
    #[inline]
    pub fn since(self, earlier: SimTime) -> u64 {
        self.0.saturating_sub(earlier.0)
    }

    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / NS_PER_S as f64
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.6}s", self.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn after_and_since_are_inverse() {
        let t = SimTime(5).after(7);
        assert_eq!(t, SimTime(12));
        assert_eq!(t.since(SimTime(5)), 7);
        assert_eq!(SimTime(5).since(t), 0);
        assert_eq!(SimTime(u64::MAX - 1).after(7), SimTime(u64::MAX), "the clock stops at its end");
    }
}
