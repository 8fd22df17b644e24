//! The XFS host model (`[host] layout = "xfs"`) driven through phases: deleting down to a
//! utilization stops at the target although unlinked files' extents wait for deferred inode
//! inactivation, and a remount takes what a real XFS umount takes (a log force and an inodegc
//! flush), not the 30 s log worker's period. Found by running Linux 6.18 under
//! `trimlab serve --record` (issue 22).

use serde_json::Value;

const XFS_ON_SMALL_SSD: &str = r#"
[device]
preset = "nvme-tlc"
logical_bytes = "256MiB"
channels = 2
spare_factor = 0.15
pages_per_block = 64
[host]
fs = "ext4"
layout = "xfs"
discard = "discard"
[workload]
kind = "file-churn"
writes = "8MiB"
"#;

fn run(phases: &str) -> Value {
    let text = format!("{XFS_ON_SMALL_SSD}{phases}");
    trimlab_scenario::run_text(&text, "test.toml", None, &[]).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// Before the fix the loop saw no drop (the extents were still allocated until the inodegc
/// worker ran) and unlinked every file: utilization ended near 0.
#[test]
fn delete_on_xfs_stops_at_the_utilization_target() {
    let m = run(
        "[[phase]]\nkind = \"age\"\nutilization = 0.7\n[[phase]]\nkind = \"delete\"\nutilization = 0.4\n\
         [[phase]]\nkind = \"idle\"\nduration = \"31s\"\n",
    );
    // phases[0] is mkfs.
    let after = m["phases"][2]["utilization"].as_f64().unwrap();
    assert!((0.3..=0.4).contains(&after), "delete to 0.4 left utilization {after}");
    // The files the worker inactivated after the phase's sync are discarded at the next log
    // force, the 30 s log worker's.
    let trimmed = |i: usize| m["phases"][i]["device"]["trim_bytes"].as_u64().unwrap();
    let deleted = (0.7 - 0.4) * (256u64 << 20) as f64;
    assert!((trimmed(2) + trimmed(3)) as f64 > deleted * 0.5, "-o discard trims the deleted files");
}

/// Real XFS unmounts in ~0.1 s (xfs_unmountfs forces the log and flushes inodegc itself); before
/// the fix the model waited for the log worker's 30 s timer (~23 s of simulated time).
#[test]
fn xfs_remount_does_not_wait_for_the_log_worker() {
    let m = run(
        "[[phase]]\nkind = \"age\"\nutilization = 0.5\n[[phase]]\nkind = \"delete\"\nutilization = 0.3\n\
         [[phase]]\nkind = \"remount\"\n",
    );
    let elapsed = m["phases"][2]["elapsed_ns"].as_u64().unwrap();
    assert!(elapsed < 1_000_000_000, "remount took {elapsed} ns of simulated time");
}
