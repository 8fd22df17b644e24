//! Selective TRIM (SeT, 001): on at or above `HIGH` % utilization, off below `LOW` %, in
//! between on while utilization falls and off while it rises. `selective:LOW:HIGH` sets the
//! watermarks; the bare name means 40:90.

use super::{CommitPlan, ParsedPolicy, PolicySpec, PolicyStats, TrimMode, TrimPolicy};
use crate::config::PolicyKind;
use crate::extent::{FreedRun, Run};
use trimlab_sim::SimTime;

pub(super) const SPEC: PolicySpec = PolicySpec {
    name: "selective",
    args: Some("LOW:HIGH"),
    help: "Selective TRIM (001), watermarks in % (bare selective = 40:90)",
    keys: &[],
    example: PolicyKind::Selective { low_pct: 30, high_pct: 60 },
    parse,
    args_of: |kind| match kind {
        PolicyKind::Selective { low_pct, high_pct } => Some(format!("{low_pct}:{high_pct}")),
        _ => None,
    },
    label: Some(|kind| match kind {
        PolicyKind::Selective { low_pct, high_pct } => format!("SeT({low_pct},{high_pct})"),
        other => unreachable!("selective's label asked for {other:?}"),
    }),
    build: |kind, _, _| Box::new(Selective { kind, on: false, previous: None, stats: Default::default() }),
};

fn parse(args: Option<&str>) -> Result<ParsedPolicy, String> {
    let Some(args) = args else {
        return Ok(ParsedPolicy {
            kind: PolicyKind::Selective { low_pct: 40, high_pct: 90 },
            period_ns: None,
        });
    };
    let bad = || {
        format!(
            "\"selective:{args}\": expected selective:LOW:HIGH with whole percentages, like selective:40:90"
        )
    };
    let (low, high) = args.split_once(':').ok_or_else(bad)?;
    let low: u32 = low.parse().map_err(|_| bad())?;
    let high: u32 = high.parse().map_err(|_| bad())?;
    if low > high || high > 100 {
        return Err(format!("selective:{low}:{high}: watermarks must satisfy 0 <= LOW <= HIGH <= 100"));
    }
    Ok(ParsedPolicy { kind: PolicyKind::Selective { low_pct: low, high_pct: high }, period_ns: None })
}

/// SeT (001): the watermarks decide; between them the utilization trend does.
pub(super) struct Selective {
    kind: PolicyKind,
    on: bool,
    previous: Option<f64>,
    stats: PolicyStats,
}

impl TrimPolicy for Selective {
    fn kind(&self) -> PolicyKind {
        self.kind
    }
    fn on_commit(&mut self, _now: SimTime, freed: Vec<FreedRun>, utilization: f64) -> CommitPlan {
        let PolicyKind::Selective { low_pct, high_pct } = self.kind else {
            unreachable!("selective policy built for {:?}", self.kind)
        };
        let pct = utilization * 100.0;
        self.on = if pct >= high_pct as f64 {
            true
        } else if pct < low_pct as f64 {
            false
        } else {
            match self.previous {
                Some(p) if utilization < p => true,
                Some(p) if utilization > p => false,
                _ => self.on,
            }
        };
        self.previous = Some(utilization);
        if freed.is_empty() {
            return CommitPlan::release_all(freed);
        }
        if self.on {
            self.stats.commits_trim_on += 1;
            CommitPlan { release: Vec::new(), trim: freed, mode: TrimMode::Serial }
        } else {
            self.stats.commits_trim_off += 1;
            self.stats.untrimmed_blocks += freed.iter().map(|f| f.run.len).sum::<u64>();
            CommitPlan::release_all(freed)
        }
    }
    fn held(&self) -> Vec<Run> {
        Vec::new()
    }
    fn stats(&self) -> &PolicyStats {
        &self.stats
    }
    fn stats_mut(&mut self) -> &mut PolicyStats {
        &mut self.stats
    }
}
