//! A drive without TRIM support: the command is received and acknowledged, nothing changes.

use crate::cost_model::TrimCostModel;
use crate::engine::{Controller, EngineKind, EngineSpec, PageRange, TrimEngine, TrimStats, TrimSteps};

impl EngineKind {
    #[allow(non_upper_case_globals)]
    pub const None: EngineKind = EngineKind("none");
}

pub const SPEC: EngineSpec = EngineSpec {
    kind: EngineKind::None,
    help: "TRIM acknowledged and ignored (no TRIM support)",
    keys: None,
    figures: &[],
    build: |i| Box::new(NoTrim::new(i.cost)),
};

pub struct NoTrim {
    cost: TrimCostModel,
    stats: TrimStats,
}

impl NoTrim {
    pub fn new(cost: TrimCostModel) -> Self {
        NoTrim { cost, stats: TrimStats::default() }
    }
}

impl TrimEngine for NoTrim {
    fn name(&self) -> &'static str {
        SPEC.kind.name()
    }

    fn trim(&mut self, ranges: &[PageRange], _ctl: Controller<'_>) -> TrimSteps {
        // Receiving the command and its range list (step 1) still costs; nothing else happens.
        let steps = TrimSteps { step1_ns: self.cost.step1_ns(ranges.len()), ..TrimSteps::default() };
        self.stats.commands += 1;
        self.stats.ranges += ranges.len() as u64;
        self.stats.pages_requested += ranges.iter().map(|r| r.count as u64).sum::<u64>();
        self.stats.foreground += steps;
        steps
    }

    fn stats(&self) -> &TrimStats {
        &self.stats
    }
}
