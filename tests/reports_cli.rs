//! `trimlab run` as a fio user meets it: a fio job file as the workload (and a clear error for
//! an option we do not map), the time series and latency histograms, and units required.

mod common;

use common::*;

fn column(csv: &str, name: &str) -> Vec<String> {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let i = header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("no column {name}"));
    lines.map(|l| l.split(',').nth(i).unwrap().to_owned()).collect()
}

fn sum(csv: &str, name: &str) -> u64 {
    column(csv, name).iter().map(|v| v.parse::<u64>().unwrap()).sum()
}

#[test]
fn timeseries_rows_add_up_to_the_run_totals() {
    let dir = scratch("timeseries");
    let o = trimlab(&[
        "run",
        "examples/quick.toml",
        "--log-interval",
        "100ms",
        "--html",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let csv = std::fs::read_to_string(dir.join("timeseries.csv")).unwrap();
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("metrics.json")).unwrap()).unwrap();
    let report = &m["report"];
    // Every command and every NAND program of the measured phase is in exactly one row.
    assert_eq!(sum(&csv, "host_pages_written"), report["host"]["pages_written"].as_u64().unwrap());
    assert_eq!(sum(&csv, "nand_pages_programmed"), report["nand_pages_programmed"].as_u64().unwrap());
    assert_eq!(sum(&csv, "nand_blocks_erased"), report["nand_blocks_erased"].as_u64().unwrap());
    assert_eq!(sum(&csv, "trim_commands"), report["host"]["trim_commands"].as_u64().unwrap());
    assert_eq!(sum(&csv, "gc_busy_ns"), report["gc"]["busy_ns"].as_u64().unwrap());
    // Rows are 100 ms apart on one grid starting at the measured phase, in order.
    let starts: Vec<u64> = column(&csv, "start_ns").iter().map(|v| v.parse().unwrap()).collect();
    let first = m["precondition_end_ns"].as_u64().unwrap();
    assert!(starts.len() > 10, "{} rows", starts.len());
    assert!(starts.windows(2).all(|w| w[1] > w[0] && (w[1] - w[0]).is_multiple_of(100_000_000)));
    assert!(starts.iter().all(|s| (s - first).is_multiple_of(100_000_000)));
    // The last WAF so far is the run's WAF.
    let last: f64 = column(&csv, "waf_so_far").last().unwrap().parse().unwrap();
    assert!((last - report["waf"].as_f64().unwrap()).abs() < 1e-4, "{last}");
    let hist = std::fs::read_to_string(dir.join("latency_histogram.csv")).unwrap();
    let writes: u64 = hist
        .lines()
        .filter(|l| l.starts_with("write,"))
        .map(|l| l.split(',').nth(3).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(writes, report["latency"]["write"]["count"].as_u64().unwrap());
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(html.contains("Write amplification per interval and so far"), "the --html page plots the series");
}

#[test]
fn a_fio_job_runs_and_an_unsupported_option_is_named() {
    let dir = scratch("fio");
    let job = dir.join("job.fio");
    std::fs::write(&job, "[global]\nioengine=libaio\nbs=16k\n[rand]\nrw=randwrite\nsize=32m\niodepth=4\n")
        .unwrap();
    let device = dir.join("device.toml");
    std::fs::write(&device, "[device]\nlogical_bytes = \"64MiB\"\nchannels = 2\nchips_per_channel = 1\ndies_per_chip = 1\nplanes_per_die = 1\npages_per_block = 64\n").unwrap();
    let o = trimlab(&[
        "run",
        device.to_str().unwrap(),
        "--fio",
        job.to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("job.fio:2: ioengine ignored"), "{}", stderr(&o));
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("metrics.json")).unwrap()).unwrap();
    assert_eq!(m["config"]["workload"]["block_bytes"], "16KiB");
    assert_eq!(m["config"]["workload"]["queue_depth"], 4);
    assert_eq!(m["report"]["host"]["pages_written"].as_u64().unwrap(), (32 << 20) / 4096);

    std::fs::write(&job, "[rand]\nrw=randwrite\nsize=32m\nverify=md5\n").unwrap();
    let o = trimlab(&["run", "--fio", job.to_str().unwrap(), "--out", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("job.fio:4: fio option `verify` is not supported"), "{e}");
}

#[test]
fn bare_numbers_where_a_unit_is_expected_are_errors() {
    let dir = scratch("units");
    let path = dir.join("c.toml");
    std::fs::write(&path, "[workload]\nwrites = 5\n").unwrap();
    let o = trimlab(&["run", path.to_str().unwrap(), "--out", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("5 has no unit") && stderr(&o).contains("\"5x\""), "{}", stderr(&o));
    let o = trimlab(&[
        "replay",
        "examples/traces/ext4-copy.log",
        "--trims",
        "fstrim:10",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("10 has no unit"), "{}", stderr(&o));
    let o = trimlab(&["run", "examples/quick.toml", "--log-interval", "100", "--out", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--log-interval") && stderr(&o).contains("100 has no unit"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn advise_warns_when_its_fstrim_periods_are_longer_than_the_trace() {
    let dir = scratch("advise-warn");
    let o = trimlab(&[
        "advise",
        "examples/traces/ext4-smallfiles-discard.log",
        "--device",
        "examples/traces/device.toml",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("warning: no fstrim period fits in the trace") && e.contains("--fstrim-periods"),
        "{e}"
    );
    let summary = std::fs::read_to_string(dir.join("advise/summary.txt")).unwrap();
    assert!(summary.contains("Warning: no fstrim period fits"), "{summary}");
    assert!(
        summary.contains("sends them daily / weekly of trace time") && !summary.contains("every day or week")
    );
}

#[test]
fn serve_writes_the_series_at_shutdown() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let dir = scratch("serve-series");
    let config = dir.join("c.toml");
    std::fs::write(&config, "[device]\nlogical_bytes = \"64MiB\"\nchannels = 2\nchips_per_channel = 1\ndies_per_chip = 1\nplanes_per_die = 1\npages_per_block = 64\n[output]\ninterval = \"100ms\"\n").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_trimlab"))
        .args(["serve", config.to_str().unwrap(), "--listen", "127.0.0.1:0", "--quiet"])
        .args(["--out", dir.join("m").to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(lines.next().unwrap().unwrap().contains("listening on"));
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    assert!(child.wait().unwrap().success());
    let ts = std::fs::read_to_string(dir.join("m/timeseries.csv")).unwrap();
    assert!(ts.starts_with("start_ns,end_ns,read_commands,"), "{ts}");
    let hist = std::fs::read_to_string(dir.join("m/latency_histogram.csv")).unwrap();
    assert!(hist.starts_with("kind,lower_ns,upper_ns,count,cumulative_share\n"), "{hist}");
}
