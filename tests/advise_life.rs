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
