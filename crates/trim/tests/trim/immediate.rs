//! Tests of src/immediate.rs (moved out of the lib so the crate compiles once).

use trimlab_ftl::Lpn;
use trimlab_sim::SimTime;
use trimlab_trim::*;

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
