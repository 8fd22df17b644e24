//! Tests of src/trace_options.rs (moved out of the lib so the crate compiles once).

use trimlab_replay::trace_options::*;
use trimlab_trace::advice::{period_label, DAY_NS};
use trimlab_trace::TrimHandling;

#[test]
fn periods_parse_and_read_well() {
    assert_eq!(parse_period("7d"), Ok(7 * DAY_NS));
    assert!(parse_period("0s").is_err());
    assert_eq!(period_label(DAY_NS), "daily");
    assert_eq!(period_label(10_000_000_000), "every 10s");
}

#[test]
fn trim_modes_parse() {
    assert_eq!(parse_trims("as-recorded").unwrap(), TrimHandling::AsRecorded);
    assert_eq!(parse_trims("fstrim:1d").unwrap(), TrimHandling::Periodic { period_ns: DAY_NS });
    assert_eq!(parse_trims("fstrim:10s").unwrap(), TrimHandling::Periodic { period_ns: 10_000_000_000 });
    assert!(parse_trims("fstrim:").is_err());
    let e = parse_trims("fstrim:10").unwrap_err().to_string();
    assert!(e.contains("10 has no unit") && e.contains("10s"), "{e}");
    assert!(parse_trims("sometimes").unwrap_err().to_string().contains("fstrim:PERIOD"));
}

#[test]
fn bad_knobs_name_the_flag() {
    let bad = |f: fn(&mut TraceOptions)| {
        let mut o = TraceOptions::default();
        f(&mut o);
        o.parse().unwrap_err().to_string()
    };
    assert!(bad(|o| o.lba = "wrap".into()).contains("--lba wrap"));
    assert!(bad(|o| o.speed = f64::NAN).contains("--speed NaN"));
    assert!(bad(|o| o.closed_loop = Some(0)).contains("--closed-loop 0"));
    assert!(bad(|o| o.fio_time_unit = "s".into()).contains("--fio-time-unit s"));
}
