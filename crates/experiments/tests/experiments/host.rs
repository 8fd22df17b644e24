//! The host-side TRIM cost sweep: log-spaced costs, and the sentence naming where a claim holds.

use trimlab_experiments::host::{holding_ranges, TRIM_COST_SWEEP_NS};

#[test]
fn holding_ranges_names_each_run() {
    let c = [1_000, 2_000, 3_000_000, 4_000_000];
    assert_eq!(
        holding_ranges(&c, &[false, true, true, false]),
        "holds from 2 us to 3.00 ms per TRIM (swept 5 us to 5 ms)"
    );
    assert_eq!(
        holding_ranges(&c, &[true, false, false, true]),
        "holds at 1 us and at 4.00 ms per TRIM (swept 5 us to 5 ms)"
    );
    assert!(holding_ranges(&c, &[false; 4]).contains("no swept cost"));
}

#[test]
fn sweep_is_log_spaced_from_5_us_to_5_ms() {
    for w in TRIM_COST_SWEEP_NS.windows(2) {
        let r = w[1] as f64 / w[0] as f64;
        assert!((r - 10f64.sqrt()).abs() < 0.01, "{r}");
    }
}
