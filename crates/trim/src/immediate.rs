//! The conventional TRIM engine (002's Baseline): all three steps before the TRIM completes.

use crate::cost_model::TrimCostModel;
use crate::engine::{Controller, EngineKind, EngineSpec, PageRange, TrimEngine, TrimStats, TrimSteps};

impl EngineKind {
    #[allow(non_upper_case_globals)]
    pub const Immediate: EngineKind = EngineKind("immediate");
}

pub const SPEC: EngineSpec = EngineSpec {
    kind: EngineKind::Immediate,
    help: "steps 1-3 in the foreground (conventional TRIM)",
    keys: None,
    figures: &[],
    build: |i| Box::new(ImmediateTrim::new(i.cost)),
};

pub struct ImmediateTrim {
    cost: TrimCostModel,
    stats: TrimStats,
}

impl ImmediateTrim {
    pub fn new(cost: TrimCostModel) -> Self {
        ImmediateTrim { cost, stats: TrimStats::default() }
    }
}

impl TrimEngine for ImmediateTrim {
    fn name(&self) -> &'static str {
        SPEC.kind.name()
    }

    fn trim(&mut self, ranges: &[PageRange], ctl: Controller<'_>) -> TrimSteps {
        let buffered = ctl.buffer.is_enabled();
        let (mut pages, mut dropped, mut unmapped) = (0u64, 0u64, 0u64);
        // Each range's first map entry is a random miss, which the write-buffer lookups below
        // would otherwise wait for in turn (a range's later entries follow in its lines).
        for range in ranges {
            ctl.ftl.prefetch_map(range.start);
        }
        for range in ranges {
            for lpn in range.pages() {
                pages += 1;
                if buffered && ctl.buffer.discard(lpn) {
                    dropped += 1;
                }
            }
            unmapped += ctl.ftl.trim(ctl.now, range.start, range.count);
        }
        let steps = TrimSteps {
            step1_ns: self.cost.step1_ns(ranges.len()),
            step2_ns: if buffered { pages * self.cost.buffer_lookup_ns } else { 0 },
            step3_ns: pages * self.cost.map_lookup_ns + unmapped * self.cost.map_invalidate_ns,
        };
        let s = &mut self.stats;
        s.commands += 1;
        s.ranges += ranges.len() as u64;
        s.pages_requested += pages;
        s.pages_unmapped += unmapped;
        s.buffer_pages_dropped += dropped;
        s.foreground += steps;
        steps
    }

    fn stats(&self) -> &TrimStats {
        &self.stats
    }
}
