//! Garbage-collection victim policies.

use serde::{Deserialize, Serialize};

/// How GC picks the block to reclaim in a plane.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum VictimPolicy {
    /// Fewest valid pages (004 §4.1; the policy the analytic models of Desnoyers and Van Houdt
    /// describe). Per choice, a read of the plane's per-64-block summaries (fewest valid count,
    /// latest block at it; see `BlockPool::greedy_victim`).
    #[default]
    Greedy,
    /// Rosenblum and Ousterhout's LFS cleaner: maximise (1 - u) * age / (1 + u), where u is the
    /// block's valid fraction and age the host writes since it was closed. O(blocks per plane).
    CostBenefit,
    /// Oldest closed block first, whatever it holds (LRU cleaning in Desnoyers' terms).
    Fifo,
}
