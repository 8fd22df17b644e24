//! `until = "steady"`: a phase repeated in rounds until SNIA PTS's rule (or fio's criterion)
//! holds over its last rounds. The verdict is checked against the rule applied afresh to the
//! reported per-round table, and both ways: a workload whose WAF converges is steady at the
//! first window that meets the bounds; the same run held to bounds it cannot meet is reported
//! not steady at its cap, never silently.

use serde_json::Value;
use trimlab_sim::steady_state::SteadyRule;

/// A 64 MiB drive filled once, then 4 KiB uniform random writes in rounds of a quarter
/// drive-write: its WAF climbs from the sequential fill's 1 to greedy GC's level and stays.
fn config(steady: &str) -> String {
    format!(
        r#"
seed = 3
[device]
preset = "nvme-tlc"
logical_bytes = "64MiB"
spare_factor = 0.07
pages_per_block = 64
[workload]
pattern = "uniform-random"
block_bytes = "4KiB"
queue_depth = 16
writes = "0.25x"
precondition = "none"
[[phase]]
kind = "fill"
[[phase]]
kind = "workload"
name = "random-write"
until = "steady"
{steady}
"#
    )
}

fn run(text: &str) -> Value {
    trimlab_scenario::run_text(text, "test.toml", None, &[]).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn figures(s: &Value, name: &str) -> Vec<f64> {
    s["rounds"].as_array().unwrap().iter().map(|r| r[name].as_f64().unwrap()).collect()
}

#[test]
fn a_converging_waf_is_steady_at_the_round_the_snia_rule_first_holds() {
    let m = run(&config("repeat = 25"));
    let s = &m["steady_state"][0];
    assert_eq!(s["reached"], true, "{s:#}");
    let at = s["steady_round"].as_u64().unwrap() as usize;
    let (waf, iops) = (figures(s, "waf"), figures(s, "iops"));
    // The run stopped at the steady round: every round ran is in the table.
    assert_eq!(s["rounds_run"].as_u64().unwrap() as usize, at + 1);
    assert_eq!(waf.len(), at + 1);
    // The rule recomputed here from the table agrees on the round.
    let rule = SteadyRule::snia(&["waf".into(), "iops".into()], 5, 0.20, 0.10);
    let first = rule.first_steady(waf.len(), |f, r| if f == "waf" { waf[r] } else { iops[r] });
    assert_eq!(first, Some(at), "waf {waf:?} iops {iops:?}");
    // The WAF did converge from below: the first round (GC starting) is under the window's mean.
    let window_mean: f64 = waf[at + 1 - 5..].iter().sum::<f64>() / 5.0;
    assert!(waf[0] < 0.95 * window_mean, "waf {waf:?}");
    // Each round's entry carries its round number; the terminal line says where.
    let rounds: Vec<_> =
        m["phases"].as_array().unwrap().iter().filter(|p| p["name"] == "random-write").collect();
    assert_eq!(rounds.len(), at + 1);
    assert_eq!(rounds[at]["round"], at as u64);
    assert!(s["verdict"].as_str().unwrap().contains(&format!("reached at round {}", at + 1)), "{s:#}");
    // Per-round volumes: a quarter drive-write of host data, more of NAND programs.
    let r = &s["rounds"][at];
    assert_eq!(r["host_write_bytes"], 16u64 << 20);
    assert!(r["nand_write_bytes"].as_u64().unwrap() > 16 << 20);
}

#[test]
fn bounds_the_series_cannot_meet_are_reported_not_steady_at_the_cap() {
    let m = run(&config("repeat = 8\n[phase.steady]\ntrack = [\"waf\"]\nrange = 0.0001\nslope = 0.0001"));
    let s = &m["steady_state"][0];
    assert_eq!(s["reached"], false, "{s:#}");
    assert_eq!(s["steady_round"], Value::Null);
    assert_eq!(s["rounds_run"], 8);
    let verdict = s["verdict"].as_str().unwrap();
    assert!(verdict.contains("NOT reached in 8 rounds"), "{verdict}");
    assert!(s["window_judged"].as_array().unwrap().iter().any(|j| j["met"] == false));
}

#[test]
fn a_fio_criterion_stops_when_fios_test_holds() {
    // fio's iops:N% is the largest deviation from the window's mean; a generous 50 % holds as
    // soon as the window is full past the ramp.
    let m = run(&config("repeat = 12\n[phase.steady]\nfio = \"iops:50%\"\nwindow = 3\nramp = 2"));
    let s = &m["steady_state"][0];
    assert_eq!(s["rule"], "fio");
    assert_eq!(s["steady_round"], 4, "{s:#}");
}

#[test]
fn steady_state_keys_are_checked_with_their_place() {
    for (steady, needle) in [
        ("until = \"forever\"", "phase[1].until"),
        ("[phase.steady]\nwindow = 1", "phase[1].steady.window"),
        ("[phase.steady]\ntrack = [\"wat\"]", "is not a round figure; accepted: waf, iops, bw, lat"),
        ("[phase.steady]\nfio = \"iops:10%\"\ntrack = [\"waf\"]", "replaces SNIA's rule"),
        ("[phase.steady]\nfio = \"speed:10%\"", "is not fio's"),
        ("[phase.steady]\nrange = -1.0", "phase[1].steady.range"),
    ] {
        let text = config(steady).replace("until = \"steady\"\nuntil", "until");
        let e = trimlab_scenario::run_text(&text, "test.toml", None, &[]).unwrap_err().to_string();
        assert!(e.contains(needle), "{steady}: {e}");
    }
    let text = config("").replace("until = \"steady\"\n", "") + "[phase.steady]\nwindow = 5\n";
    let e = trimlab_scenario::run_text(&text, "test.toml", None, &[]).unwrap_err().to_string();
    assert!(e.contains("needs until = \"steady\""), "{e}");
}
