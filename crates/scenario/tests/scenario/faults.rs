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
    assert!(
        metrics["report"]["host"]["flush_commands"].as_u64() >= Some(63),
        "{}",
        metrics["report"]["host"]
    );
    assert!(metrics["report"]["gc"]["victims"].as_u64() > Some(0), "GC ran");
}

const SMALL: &str = r#"
[device]
logical_bytes = "32MiB"
spare_factor = 0.2
pages_per_block = 64
"#;

/// Item 4: `trim_fraction = 1.0` (with `ops`, which the config requires for it) spun forever
/// in the steady precondition, whose random part carried the TRIM share and never wrote.
#[test]
fn a_trim_only_workload_ends() {
    let metrics = run(&format!("{SMALL}[workload]\ntrim_fraction = 1.0\nops = 2000\n")).unwrap();
    assert_eq!(metrics["ops"], 2000);
    assert_eq!(metrics["report"]["host"]["trim_commands"], 2000);
    assert_eq!(metrics["report"]["host"]["write_commands"], 0);
}

/// Item 4: fio's rw=trim / randtrim with a config (so a steady precondition) spun the same way.
#[test]
fn a_fio_trim_job_with_a_config_ends() {
    for rw in ["trim", "randtrim"] {
        let mut config = trimlab_scenario::RunConfig::parse(SMALL, "small.toml").unwrap();
        let job = format!("[t]\nrw={rw}\nbs=64k\nsize=8m\n");
        config.workload = trimlab_workload::parse_fio_job(&job, "t.fio", &config.workload).unwrap().workload;
        let result = trimlab_scenario::run(&config, None, &mut ()).unwrap();
        assert_eq!(result.report.host.trim_commands, 128, "rw={rw}");
    }
}

/// Item 4: a write share so small that a phase ending on writes would run ~forever.
#[test]
fn a_mix_that_almost_never_writes_is_refused_unless_ops_bounds_it() {
    let e = run(&format!("{SMALL}[workload]\ntrim_fraction = 0.9999\n")).unwrap_err();
    assert!(
        e.starts_with(
            "config: workload.read_fraction + workload.trim_fraction = 0.9999 (must be at most 0.999"
        ),
        "{e}"
    );
    let e = run(&format!("{SMALL}[workload]\ntrim_fraction = 0.9999\nops = 10\n")).unwrap_err();
    assert!(e.starts_with("config: workload.trim_fraction = 0.9999 (with precondition = \"steady\""), "{e}");
    run(&format!("{SMALL}[workload]\ntrim_fraction = 0.9999\nops = 10\nprecondition = \"fill\"\n")).unwrap();
}

/// Item 2: i64::MAX as a cost panicked the event queue ("scheduled before now") in run.
#[test]
fn a_cost_the_clock_cannot_hold_is_refused_with_its_key() {
    for key in ["firmware_ns", "read_ns", "program_ns", "erase_ns", "command_ns", "host_transfer_ps_per_byte"]
    {
        let e = run(&format!("{SMALL}{key} = 9223372036854775807\n")).unwrap_err();
        assert!(
            e.starts_with(&format!("config: device.{key} = 9223372036854775807 (must be at most ")),
            "{e}"
        );
    }
    let e = run(&format!("{SMALL}[trim.cost]\ncommand_ns = 9223372036854775807\n")).unwrap_err();
    assert!(e.starts_with("config: trim.cost.command_ns = 9223372036854775807"), "{e}");
    let e = run(&format!("{SMALL}idle_threshold = \"1000000d\"\n")).unwrap_err();
    assert!(e.contains("is longer than the longest duration trimlab takes"), "{e}");
    let e = run(&format!("{SMALL}[workload]\nthink_time = \"9223372036854775807ns\"\n")).unwrap_err();
    assert!(e.contains("is longer than the longest duration trimlab takes"), "{e}");
}

/// Item 2: 2^64 bytes and "1e30x" were accepted (as u64::MAX bytes).
#[test]
fn sizes_and_volumes_past_u64_are_refused() {
    let e = run("[device]\nlogical_bytes = \"16777216TiB\"\n").unwrap_err();
    assert!(e.contains("is not a byte size"), "{e}");
    let e = run("[device]\nlogical_bytes = \"18446744073709551616\"\n").unwrap_err();
    assert!(e.contains("line 2"), "{e}");
    let e = run(&format!("{SMALL}[workload]\nwrites = \"1e30x\"\n")).unwrap_err();
    assert!(e.contains("\"1e30x\" is more than 1000000x the logical capacity"), "{e}");
    let e = run(&format!("{SMALL}[workload]\nwrites = \"16000000TiB\"\n")).unwrap_err();
    assert!(e.starts_with("config: workload.writes = 16000000TiB (comes to"), "{e}");
    let e = run(&format!("{SMALL}[workload]\nregion_offset = \"16777215TiB\"\nregion_bytes = \"1TiB\"\n"))
        .unwrap_err();
    assert!(e.starts_with("config: workload.region_offset / workload.region_bytes"), "{e}");
}
