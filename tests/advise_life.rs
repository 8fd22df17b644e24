//! `advise CONFIG` by default answers for months of use: the file system aged to 70 % under
//! each policy (filled, thinned, 2 capacities of turnover), then the workload repeated until its
//! WAF is steady by SNIA PTS's rule. On a real program's strace (tests/data/strace) the policies
//! then differ, where one fresh run left them tied.

use std::path::Path;
use std::process::Command;

fn advise(config: &str, extra: &[&str], out: &str) -> (bool, String, serde_json::Value) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::env::temp_dir().join(format!("trimlab-advise-life-{}-{out}", std::process::id()));
    let o = Command::new(env!("CARGO_BIN_EXE_trimlab"))
        .args(["advise", root.join(config).to_str().unwrap(), "--out", out.to_str().unwrap()])
        .args(extra)
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    let report = std::fs::read(out.join("advise/report.json")).ok();
    let report = report.map_or(serde_json::Value::Null, |r| serde_json::from_slice(&r).unwrap());
    (o.status.success(), text, report)
}

fn waf(report: &serde_json::Value, policy_prefix: &str) -> f64 {
    let table = &report["tables"][0];
    let rows = table["rows"].as_array().unwrap();
    let row = rows.iter().find(|r| r[0].as_str().unwrap().starts_with(policy_prefix)).unwrap();
    row[1].as_f64().unwrap()
}

#[test]
fn advise_on_a_real_programs_strace_ages_repeats_and_no_longer_ties() {
    for program in ["git-build", "sqlite"] {
        let (ok, text, report) = advise(&format!("tests/data/strace/{program}/replay.toml"), &[], program);
        assert!(ok, "{text}");
        let notes = report["notes"].as_array().unwrap();
        let how = notes[0].as_str().unwrap();
        assert!(
            how.contains("aged the file system to 70 %") && how.contains("capacities of file turnover"),
            "{how}"
        );
        assert!(how.contains("ran the workload") && how.contains("WAF "), "{how}");
        // Aged and repeated, not trimming costs: no discard's WAF is above online discard's.
        let (none, online) = (waf(&report, "no discard"), waf(&report, "online discard"));
        assert!(none > 1.2 * online, "{program}: no discard {none} vs online {online}\n{text}");
        let rec = report["params"].as_array().unwrap().iter().find(|p| p[0] == "recommendation").unwrap()[1]
            .as_str()
            .unwrap()
            .to_string();
        assert!(!rec.contains("no discard"), "{program}: {rec}");
    }
}

#[test]
fn as_is_keeps_the_single_fresh_run_and_a_workload_too_big_for_the_aging_says_what_to_change() {
    let (ok, text, report) = advise("tests/data/strace/git-build/replay.toml", &["--as-is"], "as-is");
    assert!(ok, "{text}");
    assert!(!report["notes"][0].as_str().unwrap().contains("aged"), "{text}");
    let (ok, text, _) =
        advise("tests/data/strace/git-build/replay.toml", &["--utilization", "0.999"], "full");
    assert!(!ok && text.contains("--utilization"), "{text}");
    let (ok, text, _) = advise("tests/data/strace/git-build/replay.toml", &["--rounds", "3"], "rounds");
    assert!(!ok && text.contains("at least 5 rounds"), "{text}");
}

/// `advise` with flags instead of a config: (status, stdout + stderr, report.json).
fn advise_args(args: &[&str], out: &str) -> (bool, String, serde_json::Value) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::env::temp_dir().join(format!("trimlab-advise-in-{}-{out}", std::process::id()));
    let o = Command::new(env!("CARGO_BIN_EXE_trimlab"))
        .current_dir(root)
        .arg("advise")
        .args(args)
        .args(["--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    let report = std::fs::read(out.join("advise/report.json")).ok();
    let report = report.map_or(serde_json::Value::Null, |r| serde_json::from_slice(&r).unwrap());
    (o.status.success(), text, report)
}

#[test]
fn advise_takes_a_fio_job_as_a_flag_or_as_the_file_and_a_preset_as_the_device() {
    let job = "examples/fio/fill-then-trim.fio";
    let small = ["--device", "nvme-tlc", "--set", "device.logical_bytes=256MiB"];
    let (ok, text, by_flag) = advise_args(&[&["--fio", job], &small[..]].concat(), "fio-flag");
    assert!(ok, "{text}");
    let (ok, text, by_file) = advise_args(&[&[job], &small[..]].concat(), "fio-file");
    assert!(ok, "{text}");
    assert_eq!(by_flag["tables"], by_file["tables"]);
    let notes = by_flag["notes"].as_array().unwrap();
    assert!(notes[0].as_str().unwrap().contains("its commands recorded"), "{notes:?}");
    // The job's 4096 TRIMs (128 MiB in 1 MiB commands) reach the online-discard row.
    let rows = by_flag["tables"][0]["rows"].as_array().unwrap();
    let online = rows.iter().find(|r| r[0].as_str().unwrap().starts_with("online discard")).unwrap();
    let trims = by_flag["tables"][0]["columns"].as_array().unwrap().iter().position(|c| c == "trim_commands");
    assert_eq!(online[trims.unwrap()].as_i64(), Some(128));
    // "done in" is the last line, after the report.
    assert!(text.trim_end().lines().last().unwrap().starts_with("trimlab advise: done in "), "{text}");
}

#[test]
fn advise_takes_an_strace_with_its_root_and_refuses_what_does_not_fit() {
    let trace = "tests/data/strace/git-build/trace.strace";
    let (ok, text, report) = advise_args(
        &["--strace", trace, "--root", "/mnt/strace-root", "--as-is", "--set", "device.logical_bytes=1GiB"],
        "strace",
    );
    assert!(ok, "{text}");
    assert!(report["summary"].as_str().unwrap().contains("kind = \"strace\""), "{}", report["summary"]);
    let (ok, text, _) = advise_args(&["--strace", trace], "strace-no-root");
    assert!(!ok && text.contains("needs --root DIR"), "{text}");
    let (ok, text, _) = advise_args(&[trace], "strace-positional-no-root");
    assert!(!ok && text.contains("needs --root DIR"), "{text}");
    let (ok, text, _) =
        advise_args(&["--fio", "examples/fio/fill-then-trim.fio", "--rounds", "9"], "fio-rounds");
    assert!(!ok && text.contains("shape a file workload"), "{text}");
    let empty = std::env::temp_dir().join(format!("trimlab-advise-empty-{}.log", std::process::id()));
    std::fs::write(&empty, "").unwrap();
    let (ok, text, _) = advise_args(&[empty.to_str().unwrap()], "empty");
    assert!(!ok && text.contains("the file is empty (0 bytes)"), "{text}");
    assert!(!text.contains("done in"), "an error is not 'done': {text}");
}
