//! `[host]`: discard policy names, layouts and kernels, the file-system defaults (moved from
//! host.rs's unit tests, so the crate is not compiled twice).

use trimlab_fs::config::PolicyParams;
use trimlab_fs::{FsConfig, Kernel, Layout};
use trimlab_scenario::host::*;

#[test]
fn discard_names_parse_with_fstrim_period() {
    use trimlab_fs::policy::fstrim;
    use trimlab_fs::PolicyKind;
    let lazy = parse_discard("lazy").unwrap();
    assert_eq!((lazy.kind, lazy.params), (PolicyKind::Lazy, PolicyParams::default()));
    let periodic = parse_discard("fstrim:2s").unwrap();
    assert_eq!(periodic.kind, PolicyKind::Fstrim);
    assert_eq!(periodic.params.get(&fstrim::PERIOD), 2_000_000_000);
    let e = parse_discard("fstrim:2").unwrap_err();
    assert!(e.contains("needs a unit"), "{e}");
    let e = parse_discard("sometimes").unwrap_err();
    assert!(e.contains("lazy-reuse") && e.contains("fstrim:PERIOD"), "{e}");
}

#[test]
fn defaults_are_the_fs_defaults() {
    let h = HostSection { fs: Some(FsKind::Ext4), ..Default::default() };
    let plan = h.resolve().unwrap().unwrap();
    assert_eq!(plan.fs, FsConfig::default());
    assert!(!plan.mkfs_discard);
}

/// `[host]` as a config file would give it.
fn host(text: &str) -> Result<HostSection, String> {
    trimlab_scenario::RunConfig::parse(&format!("[host]\nfs = \"ext4\"\n{text}"), "test.toml")
        .map(|c| c.host)
        .map_err(|e| e.to_string())
}

#[test]
fn xfs_and_btrfs_are_layouts_and_paper_is_ext4s_kernel() {
    for fs in ["xfs", "btrfs"] {
        let e = trimlab_scenario::RunConfig::parse(&format!("[host]\nfs = \"{fs}\"\n"), "t.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains(&format!("layout = \"{fs}\"")) && e.contains("line 2"), "{e}");
    }
    let e = trimlab_scenario::RunConfig::parse("[host]\nfs = \"zfs\"\n", "t.toml").unwrap_err().to_string();
    assert!(e.contains("\"zfs\"") && e.contains("layout"), "{e}");
    for layout in ["xfs", "btrfs"] {
        let h = host(&format!("layout = \"{layout}\"\nkernel = \"paper\"\n")).unwrap();
        let e = h.resolve().unwrap_err().to_string();
        assert!(e.contains("host.kernel") && e.contains("Linux 6.18"), "{e}");
        let h = host(&format!("layout = \"{layout}\"\nkernel = \"linux-6.18\"\n")).unwrap();
        let plain = host(&format!("layout = \"{layout}\"\n")).unwrap();
        assert_eq!(
            h.resolve().unwrap().unwrap().fs,
            plain.resolve().unwrap().unwrap().fs,
            "6.18 is what {layout} models"
        );
    }
}

#[test]
fn kernel_selects_the_recorded_behaviours_and_names_bad_values() {
    let h = host("kernel = \"linux-6.18\"\n").unwrap();
    assert_eq!(h.kernel, Some(Kernel::Linux6_18));
    let fs = h.resolve().unwrap().unwrap().fs;
    assert!(fs.lazy_itable_init && fs.first_data_group == 1 && fs.small_file_chunk_blocks == 512);
    use trimlab_fs::policy::btrfs_async::{MERGE_FREE, TICK};
    assert!(fs.params.flag(&MERGE_FREE) && fs.params.get(&TICK) == 4_000_000);
    let e = host("kernel = \"4.4\"\n").unwrap_err();
    assert!(
        e.contains("line 3") && e.contains("kernel") && e.contains("4.4") && e.contains("linux-6.18"),
        "{e}"
    );
}

#[test]
fn delalloc_follows_the_kernel_and_nodelalloc_is_ext4s_only() {
    let fs =
        |text: &str| host(text).and_then(|h| h.resolve().map_err(|e| e.to_string())).map(|p| p.unwrap().fs);
    assert!(!fs("").unwrap().delalloc, "the paper experiments allocate at write()");
    assert!(fs("kernel = \"linux-6.18\"\n").unwrap().delalloc);
    assert!(!fs("kernel = \"linux-6.18\"\ndelalloc = false\n").unwrap().delalloc);
    assert!(fs("delalloc = true\n").unwrap().delalloc);
    assert!(fs("layout = \"xfs\"\n").unwrap().delalloc);
    let e = fs("layout = \"btrfs\"\ndelalloc = false\n").unwrap_err();
    assert!(e.contains("host.delalloc") && e.contains("nodelalloc") && e.contains("ext4"), "{e}");
    // Only a config that sets the key has it in its resolved form (and so its hash).
    let plan = |text: &str| serde_json::to_string(&host(text).unwrap().resolve().unwrap()).unwrap();
    assert!(!plan("kernel = \"linux-6.18\"\n").contains("delalloc"));
    assert!(plan("delalloc = false\n").contains("\"delalloc\":false"));
}

#[test]
fn layout_selects_btrfs_or_xfs() {
    for kernel in [None, Some(Kernel::Linux6_18)] {
        let h =
            HostSection { fs: Some(FsKind::Ext4), layout: Some(Layout::Btrfs), kernel, ..Default::default() };
        let fs = h.resolve().unwrap().unwrap().fs;
        let merge = fs.params.flag(&trimlab_fs::policy::btrfs_async::MERGE_FREE);
        assert!(fs.btrfs_layout && fs.commit_interval_ns == 30_000_000_000 && merge);
        assert!(!fs.mke2fs_layout, "mke2fs' journal has no place in btrfs' layout");
    }
    // A key set after the layout still wins.
    let h = host("layout = \"btrfs\"\ncommit_interval = \"5s\"\n").unwrap();
    assert_eq!(h.resolve().unwrap().unwrap().fs.commit_interval_ns, 5_000_000_000);
    let h = host("layout = \"xfs\"\n").unwrap();
    let fs = h.resolve().unwrap().unwrap().fs;
    assert!(fs.inodegc.is_some() && fs.blocks_per_group == 65536 && !fs.btrfs_layout);
    let e = host("layout = \"zfs\"\n").unwrap_err();
    assert!(e.contains("layout") && e.contains("zfs") && e.contains("btrfs") && e.contains("xfs"), "{e}");
    let plain = HostSection { fs: Some(FsKind::Ext4), ..Default::default() };
    assert!(!plain.resolve().unwrap().unwrap().fs.btrfs_layout);
}

#[test]
fn policy_keys_are_read_by_their_units_and_reach_the_params() {
    use trimlab_fs::policy::{btrfs_async, fstrim, lazy};
    let text = "discard = \"lazy\"\nlazy_workers_max = 8\nasync_delay = \"5s\"\n\
                async_max_bytes = \"1MiB\"\nfstrim_minlen_bytes = \"64KiB\"\nkernel = \"paper\"\n";
    let h = host(text).unwrap();
    assert_eq!(h.kernel, Some(Kernel::Paper), "the file system's keys are read as before");
    let p = h.resolve().unwrap().unwrap().fs.params;
    assert_eq!(p.get(&lazy::WORKERS_MAX), 8);
    assert_eq!(p.get(&lazy::TRIMS_PER_WORKER), 64, "unset: the policy's default");
    assert_eq!(p.get(&btrfs_async::DELAY), 5_000_000_000, "another policy's key is kept");
    assert_eq!(p.get(&btrfs_async::MAX_BYTES), 1 << 20);
    assert_eq!(p.get(&fstrim::MINLEN_BYTES), 64 << 10);
    // Written back, [host] reads the same.
    let back = toml::to_string(&h).unwrap();
    assert!(back.contains("async_delay = \"5s\"") && back.contains("lazy_workers_max = 8"), "{back}");
    assert_eq!(host(&back.replace("fs = \"ext4\"\n", "")).unwrap(), h);
}

#[test]
fn bad_policy_keys_are_named_with_their_line_and_what_is_accepted() {
    let e = host("async_delay = 5\n").unwrap_err();
    assert!(e.contains("line 3") && e.contains("needs a unit"), "{e}");
    let e = host("fstrim_minlen_bytes = \"12 parsecs\"\n").unwrap_err();
    assert!(e.contains("line 3") && e.contains("not a byte size"), "{e}");
    let e = host("lazy_workers_max = -1\n").unwrap_err();
    assert!(e.contains("line 3") && e.contains("-1"), "{e}");
    let e = host("lazy_workerz_max = 3\n").unwrap_err();
    assert!(e.contains("line 3") && e.contains("did you mean `lazy_workers_max`?"), "{e}");
    assert!(e.contains("`dirty_limit_bytes`") && e.contains("`async_delay` (async)"), "{e}");
    assert!(e.contains("`lazy_workers_max` (lazy, lazy-reuse)"), "{e}");
    let e = host("async_tick = \"4ms\"\n").unwrap_err();
    assert!(e.contains("unknown field `async_tick`"), "the model's own keys stay out of [host]: {e}");
    let zero = host("lazy_workers_max = 0\n").unwrap().resolve().unwrap_err().to_string();
    assert!(zero.contains("host.lazy_workers_max = 0 (must be > 0)"), "{zero}");
    let none = trimlab_scenario::RunConfig::parse("[host]\nasync_iops_limit = 5\n", "t").unwrap().host;
    let e = none.resolve().unwrap_err().to_string();
    assert!(e.contains("host.async_iops_limit") && e.contains("needs host.fs"), "{e}");
}

#[test]
fn thin_reads_the_old_trim_max_spelling_with_a_note_and_refuses_both() {
    let thin = |text: &str| {
        trimlab_scenario::RunConfig::parse(&format!("[thin]\n{text}"), "test.toml").unwrap().thin
    };
    let new = thin("trim_max_bytes = \"1MiB\"\n");
    assert_eq!(new.resolve(1 << 30).unwrap().trim_max_bytes, 1 << 20);
    assert!(new.deprecations().is_empty());
    let old = thin("max_trim_bytes = \"1MiB\"\n");
    assert_eq!(old.resolve(1 << 30).unwrap().trim_max_bytes, 1 << 20);
    assert!(old.deprecations()[0].contains("trim_max_bytes"), "{:?}", old.deprecations());
    let both = thin("trim_max_bytes = \"1MiB\"\nmax_trim_bytes = \"2MiB\"\n");
    let e = both.resolve(1 << 30).unwrap_err().to_string();
    assert!(e.contains("thin.max_trim_bytes") && e.contains("set only trim_max_bytes"), "{e}");
}
