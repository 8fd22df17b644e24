//! Selective TRIM (SeT, 001): on at or above `HIGH` % utilization, off below `LOW` %, in
//! between on while utilization falls and off while it rises. `selective:LOW:HIGH` sets the
//! watermarks; the bare name means 40:90.

use super::{CommitPlan, ParsedPolicy, PolicyKind, PolicySpec, PolicyStats, TrimMode, TrimPolicy};
use crate::run::{FreedRun, Run};
use trimlab_sim::SimTime;

const NAME: &str = "selective";

impl PolicyKind {
    /// Selective TRIM (001) with its watermarks in %: on at or above `high_pct` utilization,
    /// off below `low_pct`, in between on while utilization falls and off while it rises.
    /// `parse` checks `low_pct <= high_pct <= 100` on config text.
    pub const fn selective(low_pct: u32, high_pct: u32) -> PolicyKind {
        PolicyKind::with_args(NAME, [low_pct, high_pct])
    }

    /// SeT's watermarks `(low_pct, high_pct)`; `None` for every other policy.
    pub fn watermarks(self) -> Option<(u32, u32)> {
        (self.name == NAME).then_some((self.args[0], self.args[1]))
    }
}

pub(super) const SPEC: PolicySpec = PolicySpec {
    name: NAME,
    arg_names: &["low_pct", "high_pct"],
    args: Some("LOW:HIGH"),
    help: "Selective TRIM (001), watermarks in % (bare selective = 40:90)",
    keys: &[],
    example: PolicyKind::selective(30, 60),
    parse,
    label: Some(|kind| match kind.watermarks() {
        Some((low_pct, high_pct)) => format!("SeT({low_pct},{high_pct})"),
        None => unreachable!("selective's label asked for {kind:?}"),
    }),
    build: |kind, _, _| {
        let Some((low_pct, high_pct)) = kind.watermarks() else {
            unreachable!("selective policy built for {kind:?}")
        };
        Box::new(Selective { kind, low_pct, high_pct, on: false, previous: None, stats: Default::default() })
    },
};

fn parse(args: Option<&str>) -> Result<ParsedPolicy, String> {
    let Some(args) = args else {
        return Ok(ParsedPolicy::plain(PolicyKind::selective(40, 90)));
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
    Ok(ParsedPolicy::plain(PolicyKind::selective(low, high)))
}

/// SeT (001): the watermarks decide; between them the utilization trend does.
pub(super) struct Selective {
    kind: PolicyKind,
    low_pct: u32,
    high_pct: u32,
    on: bool,
    previous: Option<f64>,
    stats: PolicyStats,
}

impl TrimPolicy for Selective {
    fn kind(&self) -> PolicyKind {
        self.kind
    }
    fn on_commit(&mut self, _now: SimTime, freed: Vec<FreedRun>, utilization: f64) -> CommitPlan {
        let (low_pct, high_pct) = (self.low_pct, self.high_pct);
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
