//! `[[phase]]` runs end to end: every phase kind on a file system and on a bare SSD reports
//! its span and the TRIM commands and bytes that reached the device, and a run is repeatable.

use serde_json::Value;

const SMALL_SSD: &str = r#"
[device]
preset = "nvme-tlc"
logical_bytes = "128MiB"
channels = 2
spare_factor = 0.15
pages_per_block = 64
[ftl]
track_data = true
"#;

fn run(text: &str) -> Value {
    trimlab_scenario::run_text(text, "test.toml", None, &[]).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn phase(m: &Value, i: usize) -> &Value {
    &m["phases"][i]
}

#[test]
fn file_system_phases_report_their_trims() {
    let text = format!(
        r#"{SMALL_SSD}
[host]
fs = "ext4"
discard = "nodiscard"
commit_interval = "100ms"
[workload]
kind = "file-churn"
writes = "64MiB"
[[phase]]
name = "age"
kind = "age"
utilization = 0.7
[[phase]]
kind = "fstrim"
[[phase]]
kind = "remount"
discard = "discard"
[[phase]]
kind = "delete"
utilization = 0.3
[[phase]]
kind = "idle"
duration = "1s"
[[phase]]
kind = "measure"
[[phase]]
kind = "workload"
[[phase]]
kind = "utilization"
utilization = 0.6
"#
    );
    let m = run(&text);
    let names: Vec<&str> =
        m["phases"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["age", "fstrim", "remount", "delete", "idle", "measure", "workload", "utilization"]);
    // nodiscard: aging issues no TRIM; fstrim trims what aging freed; after the remount with
    // discard, deleting files trims at commit.
    assert_eq!(phase(&m, 0)["device"]["trim_commands"], 0);
    assert!(phase(&m, 1)["figures"]["trimmed_bytes"].as_u64().unwrap() > 0);
    assert!(phase(&m, 1)["device"]["trim_bytes"].as_u64().unwrap() > 0);
    assert!(phase(&m, 3)["device"]["trim_commands"].as_u64().unwrap() > 0);
    assert!(phase(&m, 3)["utilization"].as_f64().unwrap() <= 0.3);
    assert_eq!(phase(&m, 4)["elapsed_ns"], 1_000_000_000u64);
    assert!(phase(&m, 6)["figures"]["bytes_created"].as_u64().unwrap() >= 64 << 20);
    assert!(phase(&m, 7)["utilization"].as_f64().unwrap() >= 0.6);
    // Totals: the meter's TRIMs are the phases' TRIMs plus those at umount.
    let sum: u64 =
        m["phases"].as_array().unwrap().iter().map(|p| p["device"]["trim_commands"].as_u64().unwrap()).sum();
    assert!(m["host"]["device"]["trim_commands"].as_u64().unwrap() >= sum);
    assert_eq!(run(&text), m, "same config and seed, same metrics");
}

#[test]
fn block_phases_on_a_bare_ssd() {
    let text = format!(
        r#"{SMALL_SSD}
[workload]
ops = 2000
[[phase]]
kind = "fill"
[[phase]]
kind = "trim-burst"
bytes = "32MiB"
[[phase]]
kind = "idle"
duration = "20ms"
[[phase]]
kind = "measure"
[[phase]]
kind = "workload"
"#
    );
    let m = run(&text);
    assert_eq!(phase(&m, 0)["device"]["write_bytes"], 128u64 << 20);
    assert_eq!(phase(&m, 1)["device"]["trim_bytes"], 32u64 << 20);
    assert!(phase(&m, 1)["device"]["trim_commands"].as_u64().unwrap() >= 1);
    assert_eq!(phase(&m, 2)["elapsed_ns"], 20_000_000u64);
    assert_eq!(phase(&m, 4)["device"]["write_commands"], 2000);
    assert_eq!(m["report"]["host"]["write_commands"], 2000, "the report covers from the measure phase");
}
