//! Column names read as words with units: rates as rates, minimum not minutes.

use trimlab_report::readable_header;

#[test]
fn headers_read_as_words_with_units() {
    assert_eq!(readable_header("fsync_reduction_vs_discard_pct"), "fsync reduction vs discard (%)");
    assert_eq!(readable_header("waf"), "WAF");
    assert_eq!(readable_header("gc_busy_ms"), "GC busy (ms)");
    assert_eq!(readable_header("paper_write_ms"), "paper write (ms)");
    assert_eq!(readable_header("host_pages_written_per_s"), "host pages written per s");
    assert_eq!(readable_header("s"), "s");
}

#[test]
fn rates_are_rates_and_minimum_is_not_minutes() {
    // Issue 25: these read "TRIM mb (s)" and "free pct (min)" before the table.
    assert_eq!(readable_header("trim_mb_s"), "TRIM (MB/s)");
    assert_eq!(readable_header("trim_free_pct_min"), "TRIM free, minimum (%)");
    assert_eq!(readable_header("paper_duration_minutes"), "paper duration (min)");
    assert_eq!(readable_header("write_p99_us_off"), "write p99, off (µs)");
    assert_eq!(readable_header("hbl_ranges_max"), "HBL ranges, maximum");
    assert_eq!(readable_header("fg_share_dt_512mb"), "foreground share DT 512MB");
    assert_eq!(readable_header("min"), "min");
}
