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

#[cfg(test)]
mod tests {
    use super::*;
    use trimlab_ftl::Lpn;
    use trimlab_sim::SimTime;

    #[test]
    fn a_trim_unmaps_its_pages_before_it_completes() {
        let (mut ftl, mut buffer) = crate::test_controller_state(128);
        for p in 0..8 {
            ftl.write(SimTime::ZERO, Lpn(p), p as u64);
        }
        let mut engine = ImmediateTrim::new(TrimCostModel::default());
        let ctl = Controller { ftl: &mut ftl, buffer: &mut buffer, now: SimTime::ZERO };
        let steps = engine.trim(&[PageRange { start: Lpn(2), count: 4 }], ctl);
        assert!(steps.step1_ns > 0 && steps.step3_ns > 0 && steps.step2_ns == 0, "no write buffer: {steps:?}");
        assert_eq!((engine.stats().pages_requested, engine.stats().pages_unmapped), (4, 4));
        assert!((2..6).all(|p| !ftl.is_mapped(Lpn(p))) && ftl.is_mapped(Lpn(1)) && ftl.is_mapped(Lpn(6)));
    }
}
