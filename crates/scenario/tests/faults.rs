//! Issue 26's reproducers that reach the model through a config: each one panicked, spun or was
//! accepted on 9f6f90b, and must now run to its end or be refused with the key at fault.

use trimlab_scenario::run_text;

fn run(text: &str) -> Result<serde_json::Value, String> {
    run_text(text, "issue26.toml", None, &[]).map_err(|e| e.to_string())
}

/// Item 1: a 64 MiB nvme-tlc drive of 2 planes with 64-page blocks, 1 MiB writes and a FLUSH
/// every 2 drained 512 buffered pages (4 blocks per plane) against GC's 2 free blocks per
/// plane: "page_ftl: no plane can take a host write (free blocks per plane: [1, 1])".
#[test]
fn a_flush_that_drains_more_than_the_gc_reserve_runs() {
    let metrics = run(r#"
[device]
preset = "nvme-tlc"
logical_bytes = "64MiB"
channels = 2
chips_per_channel = 1
dies_per_chip = 1
planes_per_die = 1
pages_per_block = 64
[workload]
pattern = "sequential"
block_bytes = "1MiB"
flush_every = 2
queue_depth = 1
writes = "2x"
"#)
    .unwrap();
    assert_eq!(metrics["report"]["host"]["pages_written"], 32768);
    assert!(metrics["report"]["host"]["flush_commands"].as_u64() >= Some(63), "{}", metrics["report"]["host"]);
    assert!(metrics["report"]["gc"]["victims"].as_u64() > Some(0), "GC ran");
}
