//! The policies whose commit decides everything (nodiscard, discard, discard-batch, fstrim):
//! a commit trims its freed runs itself or releases them untrimmed; fstrim adds a periodic
//! FITRIM. Each of those policies' files builds one of these with its own choices.

use super::{CommitPlan, PolicyKind, PolicyStats, TrimMode, TrimPolicy};
use crate::run::{FreedRun, Run};
use trimlab_sim::SimTime;

pub(super) struct Online {
    kind: PolicyKind,
    /// `Some(mode)`: the commit trims its freed runs this way; `None`: it releases them.
    commit_trim: Option<TrimMode>,
    /// Periodic FITRIM: (period, minlen bytes).
    fitrim: Option<(u64, u64)>,
    stats: PolicyStats,
}

impl Online {
    pub(super) fn new(kind: PolicyKind, commit_trim: Option<TrimMode>) -> Self {
        Online { kind, commit_trim, fitrim: None, stats: PolicyStats::default() }
    }

    /// No online TRIM, and a FITRIM every `period_ns` of extents from `minlen_bytes`.
    pub(super) fn with_fitrim(kind: PolicyKind, period_ns: u64, minlen_bytes: u64) -> Self {
        Online { fitrim: Some((period_ns, minlen_bytes)), ..Online::new(kind, None) }
    }
}

impl TrimPolicy for Online {
    fn kind(&self) -> PolicyKind {
        self.kind
    }
    fn on_commit(&mut self, _now: SimTime, freed: Vec<FreedRun>, _u: f64) -> CommitPlan {
        match self.commit_trim {
            Some(mode) => CommitPlan { release: Vec::new(), trim: freed, mode },
            None => {
                self.stats.untrimmed_blocks += freed.iter().map(|f| f.run.len).sum::<u64>();
                CommitPlan::release_all(freed)
            }
        }
    }
    fn held(&self) -> Vec<Run> {
        Vec::new()
    }
    fn periodic_fitrim(&self) -> Option<(u64, u64)> {
        self.fitrim
    }
    fn stats(&self) -> &PolicyStats {
        &self.stats
    }
    fn stats_mut(&mut self) -> &mut PolicyStats {
        &mut self.stats
    }
}
