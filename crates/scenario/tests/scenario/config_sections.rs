//! `[...]` sections parsed and resolved: errors name the key and its line, units are required,
//! defaults are the documented ones (moved from config.rs's unit tests: in the integration
//! binary they link the compiled crate instead of compiling it a second time).

use trimlab_scenario::config::*;

fn error_of(text: &str) -> String {
    match RunConfig::parse(text, "test.toml").map(|c| c.resolve()) {
        Err(e) => e.to_string(),
        Ok(Err(e)) => e.to_string(),
        Ok(Ok(_)) => panic!("config was accepted:\n{text}"),
    }
}

#[test]
fn the_issue_example_resolves() {
    let text = r#"
[device]
preset = "nvme-tlc"
logical_bytes = "8GiB"
spare_factor = 0.10
pages_per_block = 128
[ftl]
gc_victim = "greedy"
[trim]
engine = "immediate"
[workload]
pattern = "uniform-random"
trim_fraction = 0.1
writes = "5x"
"#;
    let resolved = RunConfig::parse(text, "x").unwrap().resolve().unwrap();
    assert_eq!(resolved.device.logical_bytes(), 8 << 30);
    assert_eq!(resolved.device.geometry.pages_per_block, 128);
}

#[test]
fn a_volume_without_unit_is_an_error_with_both_readings() {
    let e = error_of("[workload]\nwrites = 5\n");
    assert!(
        e.contains("line 2") && e.contains("writes") && e.contains("\"5x\"") && e.contains("5GiB"),
        "{e}"
    );
    let e = error_of("[workload]\nprecondition_writes = \"3\"\n");
    assert!(e.contains("precondition_writes") && e.contains("3 has no unit"), "{e}");
}

#[test]
fn a_duration_without_unit_is_an_error() {
    let e = error_of("[workload]\nidle = 5\n");
    assert!(e.contains("line 2") && e.contains("idle") && e.contains("5 has no unit"), "{e}");
    let zero = RunConfig::parse("[workload]\nidle = 0\nwrites = 0\n", "x").unwrap();
    assert_eq!(zero.workload.idle.0, 0);
}

#[test]
fn unknown_key_is_named_with_its_line() {
    let e = error_of("[device]\nspare_factr = 0.1\n");
    assert!(e.contains("spare_factr") && e.contains("line 2") && e.contains("spare_factor"), "{e}");
}

#[test]
fn unknown_section_is_named() {
    let e = error_of("[devices]\nspare_factor = 0.1\n");
    assert!(e.contains("devices") && e.contains("device"), "{e}");
}

#[test]
fn wrong_type_is_named_with_its_line() {
    let e = error_of("[device]\n\nspare_factor = \"lots\"\n");
    assert!(e.contains("line 3") && e.contains("spare_factor"), "{e}");
}

#[test]
fn impossible_spare_factor_names_key_and_range() {
    let e = error_of("[device]\nspare_factor = 1.0\n");
    assert!(e.contains("device.spare_factor = 1") && e.contains("must be > 0 and < 1"), "{e}");
}

#[test]
fn zero_pages_per_block_names_key_and_range() {
    let e = error_of("[device]\npages_per_block = 0\n");
    assert_eq!(e, "config: device.pages_per_block = 0 (must be 1..=65536)");
}

#[test]
fn bad_byte_size_says_what_is_accepted() {
    let e = error_of("[device]\nlogical_bytes = \"8 parsecs\"\n");
    assert!(e.contains("line 2") && e.contains("8GiB"), "{e}");
}

#[test]
fn bad_engine_lists_the_engines() {
    let e = error_of("[trim]\nengine = \"sometimes\"\n");
    assert!(e.contains("immediate") && e.contains("none"), "{e}");
}

#[test]
fn workload_fraction_out_of_range() {
    let e = error_of("[workload]\nread_fraction = 2.0\n");
    assert!(e.contains("workload.read_fraction = 2") && e.contains("0.0..=1.0"), "{e}");
}

#[test]
fn bad_gc_threshold() {
    let e = error_of("[device]\nlogical_bytes = \"1GiB\"\n[ftl]\ngc_free_blocks = \"60%\"\n");
    assert!(e.contains("ftl.gc_free_blocks") && e.contains("< 50"), "{e}");
}

#[test]
fn unknown_kinds_list_the_accepted_values_with_their_line() {
    let e = error_of("[workload]\nkind = \"tpc-c\"\n");
    assert!(
        e.contains("line 2")
            && e.contains("postmark")
            && e.contains("append-holes")
            && e.contains("file-churn"),
        "{e}"
    );
    let e = error_of("[host]\nfs = \"xfs\"\n");
    assert!(e.contains("line 2") && e.contains("layout = \"xfs\"") && e.contains("ext4"), "{e}");
    let e = error_of("[host]\nfs = \"zfs\"\n");
    assert!(e.contains("line 2") && e.contains("none") && e.contains("ext4"), "{e}");
    let e = error_of("[device]\nkind = \"hdd\"\n");
    assert!(e.contains("line 2") && e.contains("ssd") && e.contains("thin"), "{e}");
    let e = error_of("[host]\nfs = \"ext4\"\ndiscard = \"sometimes\"\n[workload]\nkind = \"aging\"\n");
    assert!(e.contains("host.discard") && e.contains("lazy-reuse") && e.contains("fstrim:PERIOD"), "{e}");
}

#[test]
fn a_policy_without_a_file_system_is_refused() {
    let e = error_of("[host]\ndiscard = \"lazy\"\n");
    assert!(e.contains("host.discard") && e.contains("\"lazy\"") && e.contains("host.fs = \"ext4\""), "{e}");
    let e = error_of("[host]\nfs = \"none\"\ncommit_interval = \"1s\"\n");
    assert!(e.contains("host.commit_interval") && e.contains("host.fs = \"ext4\""), "{e}");
}

#[test]
fn a_file_workload_without_a_file_system_is_refused() {
    let e = error_of("[workload]\nkind = \"postmark\"\nfiles = 10\n");
    assert!(e.contains("workload.kind = \"postmark\"") && e.contains("host.fs = \"ext4\""), "{e}");
    let e = error_of("[host]\nfs = \"ext4\"\n");
    assert!(e.contains("workload.kind = \"block\"") && e.contains("postmark"), "{e}");
}

#[test]
fn keys_of_another_kind_and_missing_units_are_named() {
    let ext4 = "[host]\nfs = \"ext4\"\n";
    let e = error_of(&format!("{ext4}[workload]\nkind = \"append-holes\"\nfiles = 3\n"));
    assert!(e.contains("workload.files") && e.contains("append_bytes, file_bytes"), "{e}");
    let e = error_of("[host]\nfs = \"ext4\"\ncommit_interval = 5\n");
    assert!(e.contains("commit_interval") && e.contains("needs a unit") && e.contains("line 3"), "{e}");
    // 004's workloads bring their own cluster host: not on ext4, not on a thin volume, not
    // inside a phase; and they read only their own keys.
    let e = error_of(&format!("{ext4}[workload]\nkind = \"os-install\"\n"));
    assert!(e.contains("workload.kind = \"os-install\"") && e.contains("drives the block device"), "{e}");
    let e = error_of("[device]\nkind = \"thin\"\nlogical_bytes = \"1GiB\"\n[workload]\nkind = \"iozone\"\n");
    assert!(e.contains("device.kind = \"thin\"") && e.contains("drive an SSD"), "{e}");
    let e = error_of("[workload]\nkind = \"os-install\"\nrecord_bytes = [\"4KiB\"]\n");
    assert!(e.contains("workload.record_bytes") && e.contains("volume, host_discard"), "{e}");
}

#[test]
fn bad_phases_name_the_phase_key_and_the_accepted_values() {
    let e = error_of("[[phase]]\nkind = \"fill\"\n[[phase]]\nkind = \"defrag\"\n");
    assert!(e.contains("line 4") && e.contains("trim-burst") && e.contains("remount"), "{e}");
    let e = error_of("[[phase]]\nkind = \"fill\"\n[[phase]]\nkind = \"fstrim\"\n");
    assert!(
        e.contains("phase[1].kind") && e.contains("host.fs = \"ext4\"") && e.contains("trim-burst"),
        "{e}"
    );
    let e = error_of("[host]\nfs = \"ext4\"\n[[phase]]\nkind = \"idle\"\nutilization = 0.5\n");
    assert!(e.contains("phase[0].utilization") && e.contains("its keys: duration"), "{e}");
    let e = error_of("[host]\nfs = \"ext4\"\n[[phase]]\nkind = \"idle\"\n");
    assert!(e.contains("phase[0].duration = missing"), "{e}");
    let e = error_of("[host]\nfs = \"ext4\"\n[[phase]]\nkind = \"remount\"\ndiscard = \"often\"\n");
    assert!(e.contains("phase[0].discard") && e.contains("lazy"), "{e}");
    let e = error_of("[host]\nfs = \"ext4\"\n[[phase]]\nkind = \"workload\"\n[phase.workload]\nkind = \"aging\"\nfiles = 2\n");
    assert!(e.contains("phase[0].workload.files") && e.contains("utilization"), "{e}");
}

#[test]
fn a_thin_volume_reads_only_its_keys() {
    let ok = "[device]\nkind = \"thin\"\nlogical_bytes = \"1GiB\"\n[thin]\nlanes = 4\n[host]\nfs = \"ext4\"\n[workload]\nkind = \"bulk-rm\"\n";
    let r = RunConfig::parse(ok, "x").unwrap().resolve().unwrap();
    assert_eq!(r.thin.map(|t| (t.lanes, t.capacity_bytes)), Some((4, 1 << 30)));
    let e = error_of(
        "[device]\nkind = \"thin\"\nlogical_bytes = \"1GiB\"\nchannels = 4\n[host]\nfs = \"ext4\"\n",
    );
    assert!(e.contains("reads only kind and logical_bytes"), "{e}");
    let e = error_of("[device]\nkind = \"thin\"\nlogical_bytes = \"1GiB\"\n");
    assert!(e.contains("device.kind") && e.contains("host.fs = \"ext4\""), "{e}");
    let e = error_of("[thin]\nlanes = 2\n");
    assert!(e.contains("device.kind = \"thin\""), "{e}");
}
