//! `[output] interval`: an SSD run hands back its time series (rows adding up to the report),
//! on the hybrid FTL too; without the key there are no rows, and 0 is refused.

use trimlab_scenario::RunConfig;

const BASE: &str = r#"
[device]
preset = "nvme-tlc"
logical_bytes = "128MiB"
channels = 2
spare_factor = 0.15
pages_per_block = 64
[workload]
precondition = "fill"
trim_fraction = 0.1
writes = "1x"
"#;

fn series(text: &str) -> (trimlab_scenario::RunResult, Vec<trimlab_device::timeseries::Row>) {
    let config = RunConfig::parse(text, "test.toml").unwrap_or_else(|e| panic!("{e}\n{text}"));
    let result = trimlab_scenario::run(&config, Some(3), &mut ()).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let rows =
        result.series.as_ref().expect("an SSD run has a series").timeseries.clone().unwrap_or_default();
    (result, rows)
}

#[test]
fn block_runs_sample_their_time_series_on_both_ftl_kinds() {
    for ftl in ["", "[ftl]\nkind = \"hybrid\"\n"] {
        let text = format!("{BASE}{ftl}[output]\ninterval = \"5ms\"\n");
        let (result, rows) = series(&text);
        assert!(rows.len() > 1, "{ftl}: {} rows", rows.len());
        let written: u64 = rows.iter().map(|r| r.host_pages_written).sum();
        let programmed: u64 = rows.iter().map(|r| r.nand_pages_programmed).sum();
        assert_eq!(written, result.report.host.pages_written, "{ftl}");
        assert_eq!(programmed, result.report.nand_pages_programmed, "{ftl}");
        assert!(rows.iter().all(|r| r.free_blocks > 0), "{ftl}");
    }
}

#[test]
fn no_interval_no_rows_and_the_same_metrics() {
    let (plain, rows) = series(BASE);
    assert!(rows.is_empty());
    assert!(plain.series.as_ref().unwrap().histogram_csv.lines().count() > 1);
    let (sampled, _) = series(&format!("{BASE}[output]\ninterval = \"5ms\"\n"));
    assert_eq!(plain.metrics, sampled.metrics, "sampling must not change the run");
}

#[test]
fn a_zero_interval_is_refused() {
    let config = RunConfig::parse(&format!("{BASE}[output]\ninterval = \"0s\"\n"), "x").unwrap();
    let Err(e) = trimlab_scenario::run(&config, None, &mut ()) else { panic!("accepted") };
    assert!(e.to_string().contains("output.interval = 0"), "{e}");
}

/// ext4 on an SSD samples the SSD's series too: its rows add up to the report (which covers
/// mkfs, the workload and umount), TRIMs included, and sampling changes nothing.
#[test]
fn file_system_runs_sample_the_ssds_time_series() {
    let device = BASE.split("[workload]").next().expect("BASE opens with its [device] section");
    let text = &format!(
        r#"{device}
[host]
fs = "ext4"
discard = "discard"
[workload]
kind = "file-churn"
writes = "96MiB"
"#
    );
    let (result, rows) = series(&format!("{text}[output]\ninterval = \"20ms\"\n"));
    assert!(rows.len() > 1, "{} rows", rows.len());
    let written: u64 = rows.iter().map(|r| r.host_pages_written).sum();
    let trimmed: u64 = rows.iter().map(|r| r.host_pages_trimmed).sum();
    assert_eq!(written, result.report.host.pages_written);
    assert!(
        trimmed > 0 && trimmed == result.report.host.pages_trim_requested,
        "{trimmed} trimmed pages in the series"
    );
    let (plain, _) = series(text);
    assert_eq!(plain.metrics, result.metrics, "sampling must not change the run");
}
