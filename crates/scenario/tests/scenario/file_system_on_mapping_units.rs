//! A file system on drives of 16 and 64 KiB mapping units (issue 27: QLC indirection units),
//! end to end through the scenario: mkfs asks the drive for a data tag per 4 KiB block, and the
//! run's consistency checks (the FTL's after every TRIM, the file system's at the end) hold.
//! What the unit costs and what discard buys there: the file system's 4 KiB writes into mapped
//! units are read-modify-writes, its discards of scattered small files mostly cover units in
//! part and unmap nothing there, and the whole units they do cover still lower WAF.

use serde_json::Value;

/// examples/scenarios/small-file-churn.toml with two churn rounds: small files (16-256 KiB)
/// on a 128 MiB SATA drive, deleted at random and replaced.
const CHURN: &str = r#"
seed = 1
[device]
preset = "sata-mlc-2011"
logical_bytes = "128MiB"
pages_per_block = 64
[ftl]
track_data = true
[host]
fs = "ext4"
commit_interval = "1s"
[workload]
kind = "script"
operations = """
mkdir -p d{0..3}
create d{0..3}/f{0..199} size=16KiB..256KiB bs=64KiB
sync
rm random=300 d*/f*
create d{0..3}/g{0..74} size=16KiB..256KiB bs=64KiB fsync
rm random=300 d*/*
create d{0..3}/h{0..74} size=16KiB..256KiB bs=64KiB fsync
sync
"""
"#;

/// What one run reports: WAF, read-modify-writes, TRIM bytes received and ineffective.
#[derive(Debug)]
struct Run {
    waf: f64,
    read_modify_writes: u64,
    trim_bytes: u64,
    trim_bytes_ineffective: u64,
}

fn run(unit: &str, discard: &str) -> Run {
    let set = [format!("ftl.mapping_unit={unit}"), format!("host.discard={discard}")];
    let m = trimlab_scenario::run_text(CHURN, "churn.toml", None, &set)
        .unwrap_or_else(|e| panic!("{unit} {discard}: {e}"));
    assert!(m.get("error").is_none(), "{unit} {discard}: {}", m["error"]);
    let report = &m["report"];
    let number = |v: &Value| v.as_u64().unwrap_or(0);
    Run {
        waf: report["waf"].as_f64().unwrap(),
        read_modify_writes: number(&report["host"]["read_modify_writes"]),
        trim_bytes: number(&report["host"]["trim_bytes_with_unit"]),
        trim_bytes_ineffective: number(&report["trim"]["trim_bytes_ineffective"]),
    }
}

#[test]
fn ext4_runs_on_16_and_64_kib_units_with_rmw_and_ineffective_discards_counted() {
    trimlab_device::verify::enable();
    let page = run("4KiB", "discard");
    assert_eq!((page.read_modify_writes, page.trim_bytes_ineffective), (0, 0), "{page:?}");
    let mut ineffective_share = Vec::new();
    for unit in ["16KiB", "64KiB"] {
        let none = run(unit, "nodiscard");
        let online = run(unit, "discard");
        let context = format!("{unit}: no discard {none:?}, discard {online:?}");
        assert!(none.read_modify_writes > 0 && online.read_modify_writes > 0, "{context}");
        assert_eq!((none.trim_bytes, none.trim_bytes_ineffective), (0, 0), "{context}");
        // Some of the discarded bytes fall in units covered in part; the rest unmap whole units.
        assert!(online.trim_bytes_ineffective > 0, "{context}");
        assert!(online.trim_bytes_ineffective < online.trim_bytes, "{context}");
        assert!(online.waf < none.waf, "whole-unit discards lower WAF: {context}");
        ineffective_share.push(online.trim_bytes_ineffective as f64 / online.trim_bytes as f64);
    }
    assert!(ineffective_share[1] > ineffective_share[0], "a larger unit wastes more: {ineffective_share:?}");
}
