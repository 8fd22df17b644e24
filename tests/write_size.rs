//! Delayed allocation against the program's write size (issue 40 item 1): the same files
//! written in one call, in 8 KiB calls and in 4 KiB calls give the same per-phase TRIM
//! figures on ext4, XFS and btrfs, because the kernel (and now the model) allocates a file's
//! blocks when the page cache writes the dirty extent back, not at each write()
//! (crates/fs/src/fs/delalloc.rs). An fsync between the calls forces write-back of each
//! piece, so interleaved files are allocated piece by piece and interleave on disk, and
//! removing half of them frees many small extents: there the figures differ, as the
//! kernel's do.

mod common;

use common::{scratch, stderr, trimlab};
use std::path::Path;

/// The drive of the discard-pattern recordings and `[host]` for a layout, with its usual
/// discard mode here (online discard on ext4 and XFS, fstrim on btrfs).
fn config(layout: &str, ops: &str) -> String {
    let policy = match layout {
        "ext4" => "ext4-discard",
        "xfs" => "discard-batch",
        _ => "nodiscard",
    };
    config_with(layout, policy, "10", ops)
}

/// The drive of the discard-pattern recordings, `[host]` for a layout and a policy, and the
/// script after a mount phase of `settle_s` seconds, as tests/discard_workloads.rs runs them.
fn config_with(layout: &str, policy: &str, settle_s: &str, ops: &str) -> String {
    let device = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/discard-patterns/device.toml"),
    )
    .expect("device.toml");
    let host = match layout {
        "ext4" => "kernel = \"linux-6.18\"\n".to_string(),
        other => format!("layout = \"{other}\"\n"),
    };
    format!(
        "{device}\n[host]\nfs = \"ext4\"\n{host}discard = \"{policy}\"\nmkfs_discard = true\n[workload]\n\
         kind = \"script\"\noperations = '''\nphase mount\nsleep {settle_s}s\n{ops}'''\n"
    )
}

/// (phase, TRIM commands, TRIM bytes) of a model run.
fn phases(name: &str, config: &str) -> Vec<(String, u64, u64)> {
    let dir = scratch(name);
    let path = dir.join("config.toml");
    std::fs::write(&path, config).expect("config");
    let out = dir.join("out");
    let o = trimlab(&["run", path.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{name}: {}", stderr(&o));
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("metrics.json")).unwrap()).unwrap();
    m["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let d = &p["device"];
            let n = |k: &str| d[k].as_u64().unwrap_or(0);
            (p["name"].as_str().unwrap().to_string(), n("trim_commands"), n("trim_bytes"))
        })
        .collect()
}

/// Small, medium and large files in `bs` calls (`""` = one call each), half of each kind
/// removed, then sync, fstrim. The second after the rm lets XFS's inodegc worker (4 ms ticks)
/// finish before the sync: the write calls' own time shifts the rm by a few milliseconds,
/// which would otherwise decide which log force carries its frees.
fn files_then_rm(bs: &str) -> String {
    format!(
        "phase write\nmkdir s m\ncreate s/f{{0..39}} size=24KiB {bs}\ncreate m/f{{0..7}} size=1MiB {bs}\n\
         create big{{0..1}} size=24MiB {bs}\nsync\nphase rm\nrm s/f{{0..19}} m/f{{0..3}} big0\nsleep 1s\n\
         phase sync\nsync\nsleep 2s\nphase fstrim\nfstrim\n"
    )
}

#[test]
fn files_written_in_1_8k_and_4k_calls_give_the_same_trims_on_every_layout() {
    for layout in ["ext4", "xfs", "btrfs"] {
        let one = phases(&format!("write-size-{layout}-1"), &config(layout, &files_then_rm("")));
        assert!(one.iter().any(|p| p.1 > 0 && p.0 != "mkfs"), "{layout}: no TRIM after mkfs: {one:?}");
        for bs in ["8KiB", "4KiB"] {
            let ops = files_then_rm(&format!("bs={bs}"));
            let small = phases(&format!("write-size-{layout}-{bs}"), &config(layout, &ops));
            assert_eq!(small, one, "{layout}: written in {bs} calls vs one call");
        }
    }
    // ext4 -o nodelalloc allocates at each write(): there the write size shows.
    let nodelalloc = |bs: &str| {
        let c = config("ext4", &files_then_rm(bs)).replace("[host]\n", "[host]\ndelalloc = false\n");
        phases(&format!("write-size-nodelalloc-{}", if bs.is_empty() { "1" } else { "8k" }), &c)
    };
    assert_ne!(nodelalloc(""), nodelalloc("bs=8KiB"), "nodelalloc: the write size should matter");
}

/// `ops` with every create, write and append that names no write size done in 8 KiB calls.
fn in_8k_calls(ops: &str) -> String {
    let sized = |l: &str| ["size=", "bytes="].iter().any(|k| l.contains(k)) && !l.contains("bs=");
    ops.lines()
        .map(|l| match l.split_whitespace().next() {
            Some("create" | "write" | "append") if sized(l) => {
                let (code, comment) = l.split_once('#').map_or((l, None), |(c, r)| (c, Some(r)));
                let comment = comment.map_or(String::new(), |c| format!(" #{c}"));
                format!("{} bs=8KiB{comment}\n", code.trim_end())
            }
            _ => format!("{l}\n"),
        })
        .collect()
}

/// Every kernel-recorded workload of tests/data/discard-patterns (tests/discard_workloads.rs
/// holds them to the kernel) gives the same per-phase TRIMs with its files written in 8 KiB
/// calls, as coreutils and most programs write, as in one call per file.
#[test]
fn every_recorded_workload_gives_the_same_trims_in_8k_calls() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/discard-patterns");
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .expect("discard-patterns")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("workload.ops").is_file() && p.join("meta.toml").is_file())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 8, "recorded workloads: {}", dirs.len());
    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let meta: toml::Table =
            toml::from_str(&std::fs::read_to_string(dir.join("meta.toml")).unwrap()).unwrap();
        let text = |k: &str| meta.get(k).map(|v| v.as_str().map_or(v.to_string(), str::to_string));
        let layout = text("fs").unwrap_or_else(|| "ext4".into());
        let policy = match (layout.as_str(), text("discard").as_deref()) {
            (_, Some("nodiscard")) => "nodiscard",
            ("ext4", _) => "ext4-discard",
            ("xfs", _) => "discard-batch",
            _ => "async",
        };
        let settle = text("settle_s").unwrap_or_else(|| "10".into());
        let ops = std::fs::read_to_string(dir.join("workload.ops")).unwrap();
        let config = |ops: &str| config_with(&layout, policy, &settle, ops);
        let one = phases(&format!("write-size-rec-{name}-1"), &config(&ops));
        let small = phases(&format!("write-size-rec-{name}-8k"), &config(&in_8k_calls(&ops)));
        assert_eq!(small, one, "{name}: written in 8 KiB calls vs one call per file");
    }
}

/// Twenty files grown 8 KiB at a time, all of them in turn; with `fsync` each piece is
/// written back (and allocated) before the next file's.
fn interleaved_appends(fsync: bool) -> String {
    let mut ops = String::from("phase write\ncreate f{0..19} size=8KiB\n");
    for _ in 0..3 {
        if fsync {
            ops.push_str("fsync f{0..19}\n");
        }
        ops.push_str("append f{0..19} bytes=8KiB\n");
    }
    ops.push_str("sync\nphase rm\nrm f{0..9}\nsleep 1s\nphase sync\nsync\nsleep 2s\nphase fstrim\nfstrim\n");
    ops
}

#[test]
fn an_fsync_between_the_calls_interleaves_the_files_as_the_kernel_does() {
    for layout in ["ext4", "xfs", "btrfs"] {
        let together =
            phases(&format!("interleave-{layout}-sync"), &config(layout, &interleaved_appends(false)));
        let fsynced =
            phases(&format!("interleave-{layout}-fsync"), &config(layout, &interleaved_appends(true)));
        // The same bytes are freed, but fsync's pieces interleave the files on disk: removing
        // half of them frees more, smaller extents.
        let trims = |p: &[(String, u64, u64)], phase: &str| -> (u64, u64) {
            p.iter().filter(|x| x.0 == phase).map(|x| (x.1, x.2)).next().unwrap_or((0, 0))
        };
        let phase = if layout == "btrfs" { "fstrim" } else { "sync" };
        let (a, b) = (trims(&together, phase), trims(&fsynced, phase));
        eprintln!("{layout} {phase}: written back together {a:?}, fsync'd piece by piece {b:?}");
        assert!(b.0 > a.0, "{layout}: fsync'd pieces should give more TRIMs: {a:?} vs {b:?}");
    }
}
