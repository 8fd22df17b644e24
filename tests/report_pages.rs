//! The page each job writes (issue 25): a run, replay, advise or sweep page is that job's page,
//! not the reproduce template ("reproduced results", "0 of 0 acceptance checks hold"); an
//! advise page leads with the recommendation; a saturated replay is warned about on the
//! terminal and on its page; a sweep page has a plot and a table per swept key.

mod common;

use common::{scratch, stderr, trimlab};

const TRACE: &str = "examples/traces/ext4-smallfiles-discard.log";
const DEVICE: &str = "examples/traces/device.toml";

fn page(dir: &std::path::Path) -> String {
    std::fs::read_to_string(dir.join("index.html")).expect("index.html")
}

fn assert_not_the_reproduce_template(html: &str) {
    assert!(!html.contains("reproduced results"), "the reproduce heading on a job's page");
    assert!(!html.contains("acceptance checks hold"), "an acceptance-check count on a job's page");
}

#[test]
fn a_saturated_replay_is_warned_about_on_the_terminal_and_its_page() {
    let dir = scratch("page-replay");
    let o = trimlab(&["replay", TRACE, "--device", DEVICE, "--html", "--out", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    // The README's trace at speed 1 on its 512 MiB drive: write p99 about 1 s, mostly queueing.
    assert!(stdout.contains("warning: saturated: 7"), "{stdout}");
    let html = page(&dir);
    assert_not_the_reproduce_template(&html);
    assert!(html.contains("<h1>trimlab replay: examples/traces/ext4-smallfiles-discard.log</h1>"));
    assert!(html.contains("class=\"warning\"") && html.contains("saturated: 7"));
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("metrics.json")).unwrap()).unwrap();
    let (wait, latency) =
        (m["replay"]["queue_wait_ns"].as_u64().unwrap(), m["replay"]["latency_ns"].as_u64().unwrap());
    assert!(wait * 2 > latency && latency > 0, "{wait} of {latency}");

    // Closed loop at depth 4 keeps the queue from filling: no warning.
    let calm = scratch("page-replay-calm");
    let o = trimlab(&[
        "replay",
        TRACE,
        "--device",
        DEVICE,
        "--closed-loop",
        "4",
        "--html",
        "--out",
        calm.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!String::from_utf8_lossy(&o.stdout).contains("saturated"));
    assert!(!page(&calm).contains("class=\"warning\""));
}

#[test]
fn a_replay_page_draws_its_sparse_series_whole_and_only_the_lines_it_has() {
    // Issue 43 item 8: the README's trace with a time series drew disconnected fragments (a
    // line broken at every interval without commands, lone points invisible) and listed a
    // "read p99" it never drew (0 ns in intervals without reads, off the log axis).
    let dir = scratch("page-replay-series");
    let o = trimlab(&[
        "replay",
        TRACE,
        "--device",
        DEVICE,
        "--log-interval",
        "100ms",
        "--html",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run/report.json")).unwrap()).unwrap();
    let plot =
        |name: &str| report["plots"].as_array().unwrap().iter().find(|p| p["name"] == name).unwrap().clone();
    let rates = plot("pages_per_s");
    for series in rates["kind"]["series"].as_array().unwrap() {
        let points = series["points"].as_array().unwrap();
        assert!(
            points.len() > 10 && points.iter().all(|p| p[1].is_number()),
            "rates drop to 0 between bursts, unbroken"
        );
    }
    let latency = plot("latency");
    for series in latency["kind"]["series"].as_array().unwrap() {
        let points = series["points"].as_array().unwrap();
        let drawn = points.iter().filter(|p| p[1].as_f64().is_some_and(|v| v > 0.0)).count();
        assert!(drawn > 0, "{} is in the legend but has no point to draw", series["label"]);
        assert!(points.iter().all(|p| p[1].as_f64().is_none_or(|v| v > 0.0)), "no 0 on a log axis");
    }
    let html = page(&dir);
    assert!(
        html.contains("Headline: WAF 1.11") && html.contains("write p99 1.04"),
        "headline figures with units"
    );
}

#[test]
fn an_advise_page_leads_with_its_recommendation() {
    let dir = scratch("page-advise");
    let o = trimlab(&[
        "advise",
        TRACE,
        "--device",
        DEVICE,
        "--fstrim-periods",
        "10s",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = page(&dir);
    assert_not_the_reproduce_template(&html);
    let recommendation = html.find("class=\"recommendation\"").expect("a recommendation box");
    let table = html.find("<table").expect("the scenarios' table");
    let plot = html.find("<svg").expect("plots");
    assert!(recommendation < table && table < plot, "recommendation, then scenarios, then plots");
    // The trace saturates the drive at speed 1 (see the replay test): said on the page and the
    // terminal.
    assert!(html.contains("class=\"warning\"") && html.contains("saturated: 7"), "no saturation warning");
    assert!(stderr(&o).contains("trimlab advise: warning: saturated: 7"), "{}", stderr(&o));
}

#[test]
fn run_and_sweep_pages_are_their_jobs_pages() {
    let dir = scratch("page-run");
    let o = trimlab(&["run", "examples/quick.toml", "--html", "--out", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = page(&dir);
    assert_not_the_reproduce_template(&html);
    assert!(html.contains("<h1>trimlab run: examples/quick.toml"));
    // Headline figures first, and the precondition said (issue 43 item 8).
    assert!(html.contains("Headline: WAF 2.23") && html.contains("NAND blocks erased"), "no headline");
    assert!(
        html.contains("A precondition (precondition = &quot;steady&quot;"),
        "the precondition is not mentioned"
    );

    let dir = scratch("page-sweep");
    let o = trimlab(&[
        "sweep",
        "examples/sweeps/small.toml",
        "--html",
        "--jobs",
        "2",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = page(&dir);
    assert_not_the_reproduce_template(&html);
    for key in ["device.spare_factor", "trim.engine"] {
        assert!(html.contains(&format!("WAF by {key}")), "a plot for {key}");
        assert!(html.contains(&format!("Mean of each measure by {key}")), "a table for {key}");
    }
    // Issue 43 item 7: the pair's heatmap, bars over the seeds, the points' table; the terminal
    // prints the headline measure per point.
    assert!(html.contains("id=\"fig-sweep-heatmap-device-spare_factor-x-trim-engine\""), "no heatmap");
    assert!(html.contains("bars: min–max over seeds") && html.contains("Each point of the grid"));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let header =
        stdout.lines().find(|l| l.contains("mean WAF")).unwrap_or_else(|| panic!("no table: {stdout}"));
    assert!(header.contains("device.spare_factor") && header.contains("WAF min–max over seeds"), "{header}");
}
