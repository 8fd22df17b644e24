//! The fstrim policy's periodic FITRIM as a cron'd fstrim: the first pass after mount trims all
//! free space (ext4's per-group "trimmed" flags start clear), a later pass skips groups where
//! nothing was freed (ext4) or trims again (XFS), and a mount shorter than the period is noted.
//!
//! Strategy: files written and some removed on a file system made without discard, then the
//! clock runs past the period. Invariants: `FileSystem::check` at the end; the first pass's
//! TRIMs cover every free extent (the free blocks less those in extents under minlen);
//! periodic passes and notes as counted by the file system.

use crate::common;

use common::small_ssd;
use trimlab_device::Ssd;
use trimlab_fs::{policy, FileSystem, FsConfig};
use trimlab_sim::SimTime;

const BS: u64 = 4096;
const MS: u64 = 1_000_000;

fn mkfs(config: FsConfig, discard: &str) -> FileSystem<Ssd> {
    let p = policy::parse(discard).unwrap();
    let config = FsConfig { policy: p.kind, params: p.params, ..config };
    let mut fs = FileSystem::mkfs(small_ssd(), config, SimTime(0), false).unwrap();
    fs.set_verify(true);
    fs
}

/// 40 files of 64 KiB, every other one removed, synced.
fn churn(fs: &mut FileSystem<Ssd>) {
    for i in 0..40 {
        let ino = fs.create(&format!("f{i}")).unwrap();
        fs.write(ino, 0, 64 << 10).unwrap();
    }
    fs.sync();
    for i in (0..40).step_by(2) {
        fs.unlink(&format!("f{i}")).unwrap();
    }
    fs.sync();
}

#[test]
fn the_first_pass_after_mount_trims_all_free_space_and_a_second_only_what_was_freed_since() {
    let mut fs = mkfs(FsConfig::default(), "fstrim:50ms");
    let t0 = fs.now();
    churn(&mut fs);
    assert!(fs.now().since(t0) < 50 * MS, "the churn ends before the first pass");
    assert_eq!(fs.stats().fitrim_periodic_passes, 0);
    fs.idle_until(t0.after(60 * MS));
    let s = fs.stats().clone();
    assert_eq!(s.fitrim_periodic_passes, 1, "{s:?}");
    // The whole free space, never trimmed (no mkfs discard), in one pass: minlen is one block.
    let free = fs.available_blocks() * BS;
    assert!(s.fitrim_trim_bytes >= free * 95 / 100, "trimmed {} of {free} free bytes", s.fitrim_trim_bytes);
    // No frees since: the next pass (a period after the next commit) finds every group trimmed.
    let ino = fs.create("g").unwrap();
    fs.write(ino, 0, 4096).unwrap();
    fs.sync();
    fs.idle_until(fs.now().after(120 * MS));
    let s2 = fs.stats().clone();
    assert_eq!(s2.fitrim_periodic_passes, 2, "{s2:?}");
    assert_eq!(s2.fitrim_trim_bytes, s.fitrim_trim_bytes, "ext4 skips groups trimmed since mount");
    assert!(fs.notes().is_empty(), "{:?}", fs.notes());
    fs.umount();
    fs.check().unwrap();
    assert!(fs.notes().is_empty(), "{:?}", fs.notes());
}

#[test]
fn xfs_trims_every_free_extent_on_every_pass() {
    let mut fs =
        mkfs(FsConfig { blocks_per_group: 4096, ..FsConfig::default().xfs_defaults() }, "fstrim:50ms");
    let t0 = fs.now();
    churn(&mut fs);
    fs.idle_until(t0.after(60 * MS));
    let first = fs.stats().fitrim_trim_bytes;
    assert!(first >= fs.available_blocks() * BS * 95 / 100, "{first}");
    let ino = fs.create("g").unwrap();
    fs.write(ino, 0, 4096).unwrap();
    fs.sync();
    fs.idle_until(fs.now().after(120 * MS));
    let s = fs.stats();
    assert_eq!(s.fitrim_periodic_passes, 2, "{s:?}");
    assert!(s.fitrim_trim_bytes >= first + first * 9 / 10, "the second pass trims again: {s:?}");
}

#[test]
fn a_mount_shorter_than_the_period_is_noted() {
    let mut fs = mkfs(FsConfig::default(), "fstrim:1s");
    churn(&mut fs);
    fs.umount();
    assert_eq!(fs.stats().fitrim_trim_commands, 0);
    let notes = fs.notes();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("fstrim every 1s") && notes[0].contains("before the first pass"), "{notes:?}");
    // Without a periodic fstrim there is nothing to say.
    let mut fs = mkfs(FsConfig::default(), "nodiscard");
    churn(&mut fs);
    fs.umount();
    assert!(fs.notes().is_empty());
}
