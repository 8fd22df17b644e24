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
}
