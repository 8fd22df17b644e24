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

/// A fio job file with `ss=` run on a filled 64 MiB drive, as `run --fio` runs it.
fn run_fio(job: &str) -> Value {
    let device = "seed = 3\n[device]\npreset = \"nvme-tlc\"\nlogical_bytes = \"64MiB\"\nspare_factor = 0.07\npages_per_block = 64\n[workload]\nprecondition = \"fill\"\n";
    let mut config = trimlab_scenario::RunConfig::parse(device, "dev.toml").unwrap();
    trimlab_scenario::fio_job::apply_fio(&mut config, true, job, "ss.fio", Some(64 << 20)).unwrap();
    trimlab_scenario::run(&config, None, &mut ()).unwrap().metrics
}

/// fio's `iops_slope` test as steadystate.c computes it: the least-squares slope of the
/// window's samples against 0..n, as a percentage of their mean, strictly below the limit.
fn fio_slope_holds(window: &[f64], limit_pct: f64) -> bool {
    let n = window.len() as f64;
    let (sum_x, sum_x_sq) = (n * (n - 1.0) / 2.0, (n - 1.0) * n * (2.0 * n - 1.0) / 6.0);
    let sum_y: f64 = window.iter().sum();
    let sum_xy: f64 = window.iter().enumerate().map(|(i, y)| i as f64 * y).sum();
    let slope = (sum_xy - sum_x * sum_y / n) / (sum_x_sq - sum_x * sum_x / n);
    (100.0 * slope / (sum_y / n)).abs() < limit_pct
}

#[test]
fn a_fio_job_with_ss_stops_when_fios_slope_rule_says_so() {
    let job = "[global]\ntime_based\nruntime=40s\n[rand]\nrw=randwrite\nbs=4k\niodepth=16\nss=iops_slope:1%\nss_dur=5s\n";
    let m = run_fio(job);
    let s = &m["steady_state"][0];
    assert_eq!(s["rule"], "fio");
    let iops = figures(s, "iops");
    let expected = (5..=iops.len()).find(|&end| fio_slope_holds(&iops[end - 5..end], 1.0)).map(|end| end - 1);
    assert_eq!(s["steady_round"].as_u64().map(|r| r as usize), expected, "iops per 1 s sample: {iops:?}");
    // Not trivially the first full window: GC's cycles on the small drive move the IOPS.
    assert!(expected.unwrap() > 4, "{iops:?}");
    assert_eq!(iops.len(), expected.unwrap() + 1, "the job stops at the steady sample");
    // Each round is one ss_interval (1 s) of simulated time, give or take the last commands.
    let r = &s["rounds"][1];
    let span = r["end_ns"].as_u64().unwrap() - r["start_ns"].as_u64().unwrap();
    assert!((1_000_000_000..1_100_000_000).contains(&span), "{span}");
}

#[test]
fn a_fio_job_whose_criterion_never_holds_runs_its_whole_runtime() {
    let job = "[rand]\ntime_based\nruntime=12s\nrw=randwrite\nbs=4k\niodepth=16\nss=iops_slope:0.3%\nss_dur=5s\nss_ramp=2s\n";
    let s = &run_fio(job)["steady_state"][0];
    assert_eq!(s["reached"], false, "{s:#}");
    assert_eq!(s["rounds_run"], 12);
    // ss_ramp=2s: fio records from one second after the ramp, so 3 samples are left out.
    assert_eq!(s["ramp"], 3);
}

#[test]
fn fio_steady_state_options_are_checked() {
    let device = "[device]\npreset = \"nvme-tlc\"\nlogical_bytes = \"64MiB\"\n";
    for (job, needle) in [
        ("[a]\nrw=write\nsize=1m\nss=iops:10%\nss_dur=5s\n", "give its jobs time_based with runtime"),
        ("[a]\nrw=write\ntime_based\nruntime=5s\nss=wat:10%\nss_dur=5s\n", "is not fio's"),
        ("[a]\nrw=write\ntime_based\nruntime=5s\nss_dur=5s\n", "ss_dur without ss="),
        ("[a]\nrw=write\ntime_based\nruntime=5s\nss=iops:1%\nss_dur=1s\n", "at least two ss_interval samples"),
        (
            "[a]\nrw=write\ntime_based\nruntime=5s\nss=iops:1%\nss_dur=5s\n[b]\nrw=read\ntime_based\nruntime=5s\nss=iops:2%\nss_dur=5s\n",
            "consistent within a group",
        ),
    ] {
        let mut config = trimlab_scenario::RunConfig::parse(device, "dev.toml").unwrap();
        let e = trimlab_scenario::fio_job::apply_fio(&mut config, true, job, "ss.fio", Some(64 << 20))
            .unwrap_err()
            .to_string();
        assert!(e.contains(needle), "{job}: {e}");
    }
}

/// A script run in four rounds on ext4, with `between` saying what its files become.
fn repeated_script(between: &str) -> Result<Value, String> {
    let text = format!(
        r#"
seed = 1
[device]
preset = "nvme-tlc"
logical_bytes = "256MiB"
[host]
fs = "ext4"
discard = "discard"
[workload]
kind = "script"
operations = """
mkdir proj
create proj/a{{1..50}} size=64KiB
create proj/big size=4MiB
rm proj/a{{1..25}}
sync
"""
[[phase]]
kind = "workload"
repeat = 4
between = "{between}"
"#
    );
    trimlab_scenario::run_text(&text, "test.toml", None, &[]).map_err(|e| e.to_string())
}

#[test]
fn a_file_workload_repeats_with_its_files_removed_or_kept_between_rounds() {
    let kept = repeated_script("rename").unwrap();
    let removed = repeated_script("remove").unwrap();
    let used = |m: &Value| {
        let p = m["phases"].as_array().unwrap();
        p[p.len() - 2]["utilization"].as_f64().unwrap()
    };
    // Each round leaves 25 × 64 KiB + 4 MiB; renamed, four rounds' worth stays.
    assert!(used(&kept) > 3.0 * used(&removed), "kept {} removed {}", used(&kept), used(&removed));
    let trims = |m: &Value| m["host"]["stats"]["trim_commands"].as_u64().unwrap();
    assert!(trims(&removed) > trims(&kept), "removing the rounds' files discards them");
    // Without between the script's own mkdir meets the first round's directory.
    let e = repeated_script("own").unwrap_err();
    assert!(e.contains("already exists"), "{e}");
    let e = repeated_script("shred").unwrap_err();
    assert!(e.contains("phase[0].between") && e.contains("\"remove\""), "{e}");
}

/// `[workload] until = "steady"` in a run without `[[phase]]` runs the same rounds as the
/// written phases: on a bare SSD, the precondition (`fill`), `measure` and the workload in
/// rounds, reaching steady state as `fill` + `workload` written out do; on a file system the
/// one workload phase in rounds. A config without the keys is unchanged (tests elsewhere).
#[test]
fn the_plain_workload_runs_in_rounds_until_steady() {
    let written = run(&config("repeat = 25"));
    let plain = config("").replace("[[phase]]\nkind = \"fill\"\n[[phase]]\nkind = \"workload\"\nname = \"random-write\"\nuntil = \"steady\"\n", "")
        .replace("precondition = \"none\"", "precondition = \"fill\"\nuntil = \"steady\"\nrepeat = 25");
    assert!(!plain.contains("[[phase]]"), "{plain}");
    let m = run(&plain);
    let (a, b) = (&written["steady_state"][0], &m["steady_state"][0]);
    // Its own random stream (the workload is phase 2 here), so the figures are not the
    // written run's, but the WAF converges the same way and the rule says so.
    assert_eq!((a["reached"].clone(), b["reached"].clone()), (Value::Bool(true), Value::Bool(true)), "{b:#}");
    assert_eq!(figures(b, "waf").len() as u64, b["rounds_run"].as_u64().unwrap());
    let kinds: Vec<&str> =
        m["phases"].as_array().unwrap().iter().map(|p| p["kind"].as_str().unwrap()).collect();
    assert_eq!(&kinds[..2], ["fill", "measure"], "{kinds:?}");
    // On a file system: rounds of the file workload, a verdict either way.
    let fs = r#"
[device]
preset = "nvme-tlc"
logical_bytes = "128MiB"
[host]
fs = "ext4"
[workload]
kind = "postmark"
files = 100
transactions = 300
until = "steady"
repeat = 6
"#;
    let m = run(fs);
    let s = &m["steady_state"][0];
    assert!(s["verdict"].as_str().is_some(), "{m:#}");
    let rounds = m["phases"].as_array().unwrap().iter().filter(|p| p["round"].is_u64()).count();
    assert_eq!(rounds as u64, s["rounds_run"].as_u64().unwrap());
    // Refused where rounds make no sense, naming the key.
    let bad = fs.replace(
        "kind = \"postmark\"\nfiles = 100\ntransactions = 300",
        "kind = \"script\"\noperations = \"create a size=4KiB\"",
    );
    let e = trimlab_scenario::run_text(&bad, "t.toml", None, &[]).unwrap_err().to_string();
    assert!(e.contains("workload.until"), "{e}");
}
