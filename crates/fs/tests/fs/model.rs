//! Model test of the file system under every TRIM policy.
//!
//! Strategy: seeded random sequences of create / write (with holes) / direct write / read /
//! truncate / unlink / fsync / sync / fstrim / idle on a small SSD (and a thin volume), against
//! a `BTreeMap` reference of what each file's blocks must read back (the device carries a tag
//! per page; a TRIM of live data or a double allocation reads back wrong).
//! Invariants: every read matches the reference; `FileSystem::check` (one owner per block,
//! bitmaps, policy queues, journal, device check) holds after every fsync/sync and at the end;
//! the file system asserts on every TRIM that no block in it is used or allocatable.
//! Even seeds also turn on the current-kernel behaviours (`FsConfig::ext4_defaults`, btrfs'
//! free-space merging for async).
//! Replay one case: `TRIMLAB_SEED=<n> cargo test -p trimlab-fs --test fs model::`.

use crate::common;

use common::{small_ssd, small_ssd_of_unit};
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use trimlab_device::{BlockDevice, Ssd, ThinConfig, ThinVolume};
use trimlab_fs::config::PolicyParams;
use trimlab_fs::policy::{btrfs_async, fstrim, lazy};
use trimlab_fs::{FileSystem, FsConfig, FsError, InodeGc, PolicyKind};
use trimlab_sim::{SimRng, SimTime};

const BS: u64 = 4096;

fn config(policy: PolicyKind) -> FsConfig {
    FsConfig {
        blocks_per_group: 2048,
        inode_ratio_bytes: 65536,
        dirty_limit_bytes: 1 << 20,
        commit_interval_ns: 1_000_000_000,
        params: PolicyParams::default()
            .with(&lazy::TRIMS_PER_WORKER, 2)
            .with(&btrfs_async::DELAY, 500_000_000)
            .with(&btrfs_async::MIN_BYTES, 8192)
            .with(&btrfs_async::LARGE_BYTES, 65536)
            .with(&fstrim::PERIOD, 3_000_000_000),
        ..Default::default()
    }
    .with_policy(policy)
}

struct RefFile {
    ino: u32,
    size: u64,
    blocks: BTreeMap<u64, u64>,
}

fn run_case<D: BlockDevice>(
    dev: D,
    policy: PolicyKind,
    seed: u64,
    ops: usize,
) -> (trimlab_fs::FsStats, trimlab_fs::PolicyStats, SimTime) {
    run_case_with(dev, policy, seed, ops, |_| {})
}

/// `run_case` with the config changed by `tweak` after the seed's choice.
fn run_case_with<D: BlockDevice>(
    dev: D,
    policy: PolicyKind,
    seed: u64,
    ops: usize,
    tweak: impl Fn(&mut FsConfig),
) -> (trimlab_fs::FsStats, trimlab_fs::PolicyStats, SimTime) {
    let mut rng = SimRng::seed_from_u64(seed);
    let mut config = config(policy);
    if seed.is_multiple_of(2) {
        // Even seeds run what a current kernel does: lazy inode-table init, locality-group
        // chunks, data from group 1, btrfs' free-space merging for async.
        config = config.ext4_defaults();
        btrfs_async::as_in_linux_6_18(&mut config.params);
    }
    if seed % 4 == 3 {
        // And every fourth seed btrfs' chunk layout (block groups, size classes, FITRIM per
        // block group and over the unallocated space).
        config = config.btrfs_defaults();
    }
    tweak(&mut config);
    let mut fs = FileSystem::mkfs(dev, config, SimTime::ZERO, rng.gen_bool(0.5)).expect("mkfs");
    fs.set_verify(true);
    let mut files: BTreeMap<String, RefFile> = BTreeMap::new();
    let ctx = |op: usize, what: &str| {
        format!("policy {} seed {seed} op {op}: {what} (replay: TRIMLAB_SEED={seed})", policy.label())
    };
    let mut next_name = 0;
    for op in 0..ops {
        let pick = rng.gen_range(0..100);
        let names: Vec<String> = files.keys().cloned().collect();
        let some = |rng: &mut SimRng| names.get(rng.gen_range(0..names.len().max(1))).cloned();
        match pick {
            0..=9 => {
                let name = format!("f{next_name}");
                next_name += 1;
                match fs.create(&name) {
                    Ok(ino) => {
                        files.insert(name, RefFile { ino, size: 0, blocks: BTreeMap::new() });
                    }
                    Err(FsError::NoInodes) => {}
                    Err(e) => panic!("{}", ctx(op, &format!("create: {e}"))),
                }
            }
            10..=44 => {
                let Some(name) = some(&mut rng) else { continue };
                let f = files.get_mut(&name).unwrap();
                let offset = if rng.gen_bool(0.5) {
                    f.size + rng.gen_range(0..4) * 8192
                } else {
                    rng.gen_range(0..(f.size + 1))
                };
                let bytes = rng.gen_range(1..200_000u64);
                let direct = rng.gen_bool(0.15);
                let (offset, bytes) =
                    if direct { (offset / BS * BS, bytes.div_ceil(BS) * BS) } else { (offset, bytes) };
                let r = if direct {
                    fs.write_direct(f.ino, offset, bytes)
                } else {
                    fs.write(f.ino, offset, bytes)
                };
                match r {
                    Ok(tag) => {
                        for (i, b) in (offset / BS..(offset + bytes).div_ceil(BS)).enumerate() {
                            f.blocks.insert(b, tag + i as u64);
                        }
                        f.size = f.size.max(offset + bytes);
                    }
                    Err(FsError::NoSpace) => {
                        // A failed write may have mapped part of its range: nothing the
                        // reference can check there until rewritten, so drop the file.
                        fs.unlink(&name).unwrap();
                        files.remove(&name);
                    }
                    Err(e) => panic!("{}", ctx(op, &format!("write: {e}"))),
                }
            }
            45..=64 => {
                let Some(name) = some(&mut rng) else { continue };
                let f = &files[&name];
                let offset = rng.gen_range(0..(f.size + 1));
                let bytes = rng.gen_range(1..300_000u64);
                let got = fs.read(f.ino, offset, bytes).unwrap();
                let end = (offset + bytes).min(f.size);
                let want: Vec<u64> = if end <= offset {
                    Vec::new()
                } else {
                    (offset / BS..end.div_ceil(BS)).map(|b| f.blocks.get(&b).copied().unwrap_or(0)).collect()
                };
                assert_eq!(got, want, "{}", ctx(op, &format!("read of {name} at {offset} len {bytes}")));
            }
            65..=70 => {
                let Some(name) = some(&mut rng) else { continue };
                let f = files.get_mut(&name).unwrap();
                let size = rng.gen_range(0..(f.size + 50_000));
                fs.truncate(f.ino, size).unwrap();
                let keep = size.div_ceil(BS);
                f.blocks.retain(|&b, _| b < keep);
                f.size = size;
            }
            71..=80 => {
                let Some(name) = some(&mut rng) else { continue };
                fs.unlink(&name).unwrap();
                files.remove(&name);
            }
            81..=88 => {
                if let Some(name) = some(&mut rng) {
                    fs.fsync(files[&name].ino).unwrap();
                } else {
                    fs.sync();
                }
                fs.check().unwrap_or_else(|e| panic!("{}", ctx(op, &e)));
            }
            89..=91 => {
                fs.sync();
                fs.check().unwrap_or_else(|e| panic!("{}", ctx(op, &e)));
            }
            92..=93 => {
                let start = rng.gen_range(0..48u64) << 20;
                fs.fstrim(start, rng.gen_range(1..48u64) << 20, rng.gen_range(0..4u64) * 8192);
                fs.check().unwrap_or_else(|e| panic!("{}", ctx(op, &e)));
            }
            _ => {
                let t = fs.now().after(rng.gen_range(0..3_000_000_000));
                fs.idle_until(t);
                fs.check().unwrap_or_else(|e| panic!("{}", ctx(op, &e)));
            }
        }
    }
    fs.umount();
    fs.check().unwrap_or_else(|e| panic!("{}", ctx(ops, &e)));
    if !matches!(policy, PolicyKind::NoDiscard) {
        assert!(fs.stats().trim_commands > 0, "{}", ctx(ops, "the run issued no TRIM at all"));
    }
    // After everything settled, every file still reads back.
    for (name, f) in &files {
        let got = fs.read(f.ino, 0, f.size).unwrap();
        let want: Vec<u64> =
            (0..f.size.div_ceil(BS)).map(|b| f.blocks.get(&b).copied().unwrap_or(0)).collect();
        assert_eq!(got, want, "{}", ctx(ops, &format!("final read of {name}")));
    }
    (fs.stats().clone(), fs.policy().stats().clone(), fs.now())
}

#[test]
fn the_same_seed_gives_the_same_run() {
    trimlab_device::verify::enable();
    for policy in [PolicyKind::Lazy, PolicyKind::Async, PolicyKind::selective(30, 60)] {
        let a = run_case(small_ssd(), policy, 7, 200);
        let b = run_case(small_ssd(), policy, 7, 200);
        assert_eq!(a, b, "{}", policy.label());
    }
}

fn seeds() -> Vec<u64> {
    match std::env::var("TRIMLAB_SEED") {
        Ok(s) => vec![s.parse().expect("TRIMLAB_SEED must be an integer")],
        Err(_) => (1..=4).collect(),
    }
}

#[test]
fn random_operations_never_corrupt_leak_or_trim_live_data_on_an_ssd() {
    trimlab_device::verify::enable();
    for policy in PolicyKind::all_for_tests() {
        for seed in seeds() {
            run_case(small_ssd(), policy, seed, 400);
        }
    }
}

/// Drives of 16 and 64 KiB mapping units (QLC indirection units): the file system's 4 KiB
/// blocks are carried by the drive's tags per host page, its sub-unit writes are the drive's
/// read-modify-writes and its sub-unit discards unmap nothing, and every read-back and check
/// holds as on a drive that maps pages: no block reads another's data, no write is lost to a
/// TRIM of the unit it shares with a freed block.
#[test]
fn random_operations_on_drives_of_larger_mapping_units() {
    trimlab_device::verify::enable();
    let policies = [PolicyKind::Discard, PolicyKind::Ext4Discard, PolicyKind::Async, PolicyKind::Fstrim];
    for unit in [16 << 10, 64 << 10] {
        for policy in policies {
            for seed in seeds() {
                run_case(small_ssd_of_unit(Some(unit)), policy, seed + 300, 300);
            }
        }
    }
}

/// XFS's deferred inode inactivation: unlinked files keep their blocks in the inodegc queue
/// (a small cluster, so that the worker is both kicked and left to its timer) until the
/// worker frees them into a later transaction; the invariants and read-back hold throughout.
#[test]
fn random_operations_with_xfs_inodegc() {
    trimlab_device::verify::enable();
    for policy in
        [PolicyKind::DiscardBatch, PolicyKind::Ext4Discard, PolicyKind::LazyReuse, PolicyKind::Async]
    {
        for seed in seeds() {
            run_case_with(small_ssd(), policy, seed + 200, 400, |c| {
                // XFS's layout: none of the seed's ext4 or btrfs behaviours (mkfs refuses
                // them with inodegc).
                c.btrfs_layout = false;
                c.lazy_itable_init = false;
                c.small_file_chunk_blocks = 0;
                c.inodegc = Some(InodeGc { kick_inodes: 2, tick_ns: 4_000_000, evict_page_ns: 0 });
            });
        }
    }
}

#[test]
fn random_operations_on_a_thin_volume() {
    trimlab_device::verify::enable();
    for policy in [PolicyKind::Discard, PolicyKind::LazyReuse, PolicyKind::Async, PolicyKind::Fstrim] {
        for seed in seeds() {
            let thin = ThinVolume::new(ThinConfig::xtremio_like(48 << 20)).unwrap();
            run_case(thin, policy, seed + 100, 300);
        }
    }
}

#[test]
fn a_full_file_system_says_no_space_and_recovers_after_unlink() {
    trimlab_device::verify::enable();
    for policy in PolicyKind::all_for_tests() {
        let mut fs = FileSystem::mkfs(small_ssd(), config(policy), SimTime::ZERO, false).unwrap();
        let a = fs.create("a").unwrap();
        let mut off = 0;
        loop {
            match fs.write(a, off, 1 << 20) {
                Ok(_) => off += 1 << 20,
                Err(FsError::NoSpace) => break,
                Err(e) => panic!("{e}"),
            }
        }
        assert!(fs.utilization() > 0.9, "{}: filled only {}", policy.label(), fs.utilization());
        fs.fsync(a).unwrap();
        fs.unlink("a").unwrap();
        let b = fs.create("b").unwrap();
        fs.write(b, 0, 8 << 20).unwrap_or_else(|e| panic!("{}: write after unlink: {e}", policy.label()));
        fs.umount();
        fs.check().unwrap();
    }
}

/// XFS's inodegc: a sync right after an unlink does not free the file's blocks (the worker
/// waits for its timer, 4-8 ms, and the sync does not flush it); the next commit after the
/// timer does. On a nearly full file system (free space below 5 %) the unlink kicks the worker
/// at once, and the sync frees the blocks. A bad tick is refused at mkfs with the field named.
#[test]
fn xfs_inodegc_defers_frees_past_a_sync_unless_space_is_low() {
    trimlab_device::verify::enable();
    let mut config = config(PolicyKind::DiscardBatch);
    config.inodegc = Some(InodeGc { kick_inodes: 32, tick_ns: 4_000_000, evict_page_ns: 0 });
    let mut fs = FileSystem::mkfs(small_ssd(), config.clone(), SimTime::ZERO, false).unwrap();
    let a = fs.create("a").unwrap();
    fs.write(a, 0, 8 << 20).unwrap();
    fs.fsync(a).unwrap();
    let before = fs.available_blocks();
    fs.unlink("a").unwrap();
    fs.sync();
    assert_eq!(fs.available_blocks(), before, "the unlinked file waits for the inodegc worker");
    fs.idle_until(fs.now().after(20_000_000));
    fs.sync();
    assert_eq!(fs.available_blocks(), before + 2048, "the worker's frees commit with the next sync");
    fs.check().unwrap();

    let a = fs.create("a").unwrap();
    let mut off = 0;
    while fs.write(a, off, 1 << 20).is_ok() {
        off += 1 << 20;
    }
    fs.fsync(a).unwrap();
    let before = fs.available_blocks();
    fs.unlink("a").unwrap();
    fs.sync();
    assert!(fs.available_blocks() > before + 2048, "low space kicks the worker at the unlink");
    let b = fs.create("b").unwrap();
    fs.write(b, 0, 8 << 20).unwrap_or_else(|e| panic!("write after unlink: {e}"));
    fs.umount();
    fs.check().unwrap();

    config.inodegc = Some(InodeGc { kick_inodes: 32, tick_ns: 0, evict_page_ns: 0 });
    let e = FileSystem::mkfs(small_ssd(), config, SimTime::ZERO, false)
        .err()
        .expect("tick_ns = 0 must be refused");
    assert!(e.to_string().contains("inodegc.tick_ns = 0"), "{e}");
}

/// XFS's unlink drops the file's cached pages before it queues the inode
/// (`truncate_inode_pages_final` in evict, then `destroy_inode`): while `rm a b` evicts b,
/// the delayed work armed by a's queueing fires and frees a, so the sync right after the rm
/// commits a's blocks and not b's. With no eviction time neither is freed by that sync.
#[test]
fn xfs_inodegc_frees_the_previous_file_while_the_next_is_evicted() {
    trimlab_device::verify::enable();
    for (evict_page_ns, freed_at_sync) in [(5_000, 2048), (0, 0)] {
        let mut config = config(PolicyKind::DiscardBatch);
        config.inodegc = Some(InodeGc { kick_inodes: 32, tick_ns: 4_000_000, evict_page_ns });
        let mut fs = FileSystem::mkfs(small_ssd(), config, SimTime::ZERO, false).unwrap();
        for name in ["a", "b"] {
            let f = fs.create(name).unwrap();
            fs.write(f, 0, 8 << 20).unwrap();
        }
        fs.sync();
        let before = fs.available_blocks();
        fs.unlink("a").unwrap();
        fs.unlink("b").unwrap();
        fs.sync();
        assert_eq!(fs.available_blocks(), before + freed_at_sync, "evict_page_ns = {evict_page_ns}");
        fs.idle_until(fs.now().after(20_000_000));
        fs.sync();
        assert_eq!(fs.available_blocks(), before + 4096, "both files freed by the next sync");
        fs.umount();
        fs.check().unwrap();
    }
}

/// XFS's FITRIM forces the log before it gathers an AG's free extents, so inodegc's frees that
/// no sync committed are committed and discarded online during the fstrim; it skips a free
/// extent with busy blocks (the freed extent, its discard in flight, merged with its free
/// neighbours), which the next fstrim trims.
#[test]
fn xfs_fstrim_forces_the_log_and_skips_busy_free_extents() {
    trimlab_device::verify::enable();
    let mut config = config(PolicyKind::DiscardBatch);
    config.inodegc = Some(InodeGc { kick_inodes: 32, tick_ns: 4_000_000, evict_page_ns: 0 });
    let mut fs = FileSystem::mkfs(small_ssd(), config, SimTime::ZERO, false).unwrap();
    let keep = fs.create("keep").unwrap();
    fs.write(keep, 0, 4 << 20).unwrap();
    let a = fs.create("a").unwrap();
    fs.write(a, 0, 2 << 20).unwrap();
    fs.sync();
    fs.unlink("a").unwrap();
    fs.sync();
    // The worker frees a 4-8 ms later, into a checkpoint nothing forces yet.
    fs.idle_until(fs.now().after(20_000_000));
    let online = fs.stats().trim_commands - fs.stats().fitrim_trim_commands;
    let first = fs.fstrim(0, u64::MAX, 0);
    let online_during = fs.stats().trim_commands - fs.stats().fitrim_trim_commands - online;
    assert!(online_during >= 1, "the fstrim's log force commits a's free and discards it");
    fs.idle_until(fs.now().after(100_000_000));
    let second = fs.fstrim(0, u64::MAX, 0);
    assert!(
        second > first + (2 << 20),
        "the first fstrim skipped the free space around a's busy extent: {first} then {second}"
    );
    fs.umount();
    fs.check().unwrap();
}

/// XFS puts a file's data in its inode's AG, or whole in the first AG after it with a free
/// extent that holds the request (xfs_bmap_btalloc_select_lengths): a second 6 MiB file does
/// not fill the end of the first's 8 MiB group and spill into the next, and a file in a
/// directory of another AG (the inode rotor) is in that AG.
#[test]
fn xfs_places_a_file_whole_in_its_inodes_ag_or_the_next_that_holds_it() {
    trimlab_device::verify::enable();
    let mut config = config(PolicyKind::DiscardBatch);
    config.inodegc = Some(InodeGc { kick_inodes: 32, tick_ns: 4_000_000, evict_page_ns: 0 });
    let group_bytes = config.blocks_per_group * BS;
    let mut fs = FileSystem::mkfs(small_ssd(), config, SimTime::ZERO, false).unwrap();
    let group = |fs: &FileSystem<Ssd>, ino| fs.file_runs(ino)[0].start * BS / group_bytes;
    let a = fs.create("a").unwrap();
    fs.write(a, 0, 6 << 20).unwrap();
    let b = fs.create("b").unwrap();
    fs.write(b, 0, 6 << 20).unwrap();
    assert_eq!(fs.extent_count(b), Some(1), "b in one piece: {:?}", fs.file_runs(b));
    assert_eq!(group(&fs, b), group(&fs, a) + 1, "b in the AG after a's");
    fs.mkdir("d0").unwrap();
    fs.mkdir("d1").unwrap();
    let (f0, f1) = (fs.create("d0/f").unwrap(), fs.create("d1/f").unwrap());
    fs.write(f0, 0, 64 << 10).unwrap();
    fs.write(f1, 0, 64 << 10).unwrap();
    assert_ne!(group(&fs, f0), group(&fs, f1), "files of directories in two AGs");
    fs.umount();
    fs.check().unwrap();
}

/// With a queued file holding the space a write needs, the allocation flushes the queue
/// (xfs_blockgc_free_space -> xfs_inodegc_flush) and succeeds.
#[test]
fn xfs_inodegc_queue_is_flushed_when_a_write_needs_its_space() {
    trimlab_device::verify::enable();
    let mut config = config(PolicyKind::DiscardBatch);
    config.inodegc = Some(InodeGc { kick_inodes: 32, tick_ns: 4_000_000, evict_page_ns: 0 });
    let mut fs = FileSystem::mkfs(small_ssd(), config, SimTime::ZERO, false).unwrap();
    let a = fs.create("a").unwrap();
    let mut off = 0;
    while fs.utilization() < 0.7 {
        fs.write(a, off, 1 << 20).unwrap();
        off += 1 << 20;
    }
    fs.fsync(a).unwrap();
    fs.unlink("a").unwrap();
    let b = fs.create("b").unwrap();
    fs.write(b, 0, off / 2 + (4 << 20))
        .unwrap_or_else(|e| panic!("write needing the queued file's space: {e}"));
    fs.sync();
    fs.umount();
    fs.check().unwrap();
}

#[test]
fn write_then_read_back_through_the_device() {
    trimlab_device::verify::enable();
    let mut fs = FileSystem::mkfs(small_ssd(), config(PolicyKind::NoDiscard), SimTime::ZERO, false).unwrap();
    let a = fs.create("a").unwrap();
    let tag = fs.write(a, 0, 3 * BS).unwrap();
    assert_eq!(fs.read(a, 0, 3 * BS).unwrap(), vec![tag, tag + 1, tag + 2], "from the page cache");
    fs.sync();
    assert_eq!(fs.read(a, 0, 3 * BS).unwrap(), vec![tag, tag + 1, tag + 2], "from the device");
    let t2 = fs.write(a, 100, 10).unwrap();
    fs.sync();
    assert_eq!(fs.read(a, 0, 3 * BS).unwrap(), vec![t2, tag + 1, tag + 2]);
}

#[test]
fn fitrim_skips_groups_trimmed_since_mount_and_honours_minlen() {
    trimlab_device::verify::enable();
    let thin = ThinVolume::new(ThinConfig::xtremio_like(48 << 20)).unwrap();
    let mut fs = FileSystem::mkfs(thin, config(PolicyKind::NoDiscard), SimTime::ZERO, false).unwrap();
    let a = fs.create("a").unwrap();
    fs.write_direct(a, 0, 16 << 20).unwrap();
    fs.sync();
    let allocated = fs.device().allocated_bytes();
    fs.unlink("a").unwrap();
    fs.sync();
    assert_eq!(fs.device().allocated_bytes(), allocated, "nodiscard returns nothing to the thin volume");
    let huge = fs.fstrim(0, u64::MAX, 64 << 20);
    assert_eq!(huge, 0, "no free extent reaches a 64 MiB minlen in 8 MiB groups");
    let first = fs.fstrim(0, u64::MAX, 0);
    assert!(first >= 16 << 20, "the freed file is trimmed: {first}");
    assert!(fs.device().allocated_bytes() < allocated - (15 << 20));
    assert_eq!(fs.fstrim(0, u64::MAX, 0), 0, "every group was trimmed since mount");
    let b = fs.create("b").unwrap();
    fs.write_direct(b, 0, 1 << 20).unwrap();
    fs.unlink("b").unwrap();
    fs.sync();
    let again = fs.fstrim(0, u64::MAX, 0);
    assert!(again > 0 && again < first, "only the group that freed blocks again: {again}");
    fs.remount(PolicyKind::Discard);
    assert!(fs.fstrim(0, u64::MAX, 0) > 0, "a new mount forgets the flags");
    fs.check().unwrap();
}

/// Linux's umount gives up the TRIMs its discard workers have not started: ext4's worker
/// skips every entry once `generic_shutdown_super` has cleared `SB_ACTIVE` (after
/// `sync_filesystem`), and btrfs' `close_ctree` purges the async discard lists. Files removed
/// right before umount are then trimmed in part (ext4: what the worker starts while the
/// committed metadata is written home) or not at all (async: the reuse delay has not passed);
/// with a pause before umount every one is trimmed. What is given up stays free, untrimmed
/// (`untrimmed_blocks`), and the file system checks clean.
#[test]
fn umount_gives_up_the_discards_not_yet_started() {
    trimlab_device::verify::enable();
    for policy in [PolicyKind::Ext4Discard, PolicyKind::Async] {
        // TRIM commands after the unlinks, untrimmed blocks at the end.
        let run = |pause: bool| {
            let mut fs = FileSystem::mkfs(small_ssd(), config(policy), SimTime::ZERO, false).unwrap();
            for i in 0..24 {
                let ino = fs.create(&format!("f{i}")).unwrap();
                fs.write(ino, 0, 16 * BS).unwrap();
            }
            fs.sync();
            fs.quiesce();
            let (trims, untrimmed) = (fs.stats().trim_commands, fs.policy().stats().untrimmed_blocks);
            // Every other file: the freed extents are separate, one queued TRIM each.
            for i in (0..24).step_by(2) {
                fs.unlink(&format!("f{i}")).unwrap();
            }
            if pause {
                fs.sync();
                let t = fs.now().after(5_000_000_000);
                fs.idle_until(t);
            }
            fs.umount();
            fs.check().unwrap();
            (fs.stats().trim_commands - trims, fs.policy().stats().untrimmed_blocks - untrimmed)
        };
        let (paused, paused_untrimmed) = run(true);
        let (at_once, given_up) = run(false);
        let label = policy.label();
        assert!(paused >= 12, "{label}: with a pause all 12 freed files are trimmed ({paused} TRIMs)");
        assert_eq!(paused_untrimmed, 0, "{label}: nothing given up after a pause");
        assert!(at_once < paused / 2, "{label}: umount right after rm gave up most ({at_once} of {paused})");
        assert!(given_up >= 6 * 16, "{label}: {given_up} blocks given up, at least half of the 12 x 16");
        if policy == PolicyKind::Async {
            assert_eq!((at_once, given_up), (0, 12 * 16), "async: the reuse delay had not passed");
        }
    }
}

/// ext4's and btrfs' umount stop their threads (`ext4_put_super`: `jbd2_journal_destroy`,
/// `ext4_unregister_li_request`; btrfs' `close_ctree`) instead of running their timers out: an
/// umount takes as long as its own I/O, not until the next commit timer, fstrim period or
/// reuse delay. ext4lazyinit, stopped before it started, resumes at the next mount, and so do
/// the discard workers.
#[test]
fn umount_takes_its_own_io_time_and_threads_resume_at_mount() {
    trimlab_device::verify::enable();
    let cases = [
        (PolicyKind::NoDiscard, false),
        (PolicyKind::Fstrim, false),
        (PolicyKind::Ext4Discard, false),
        (PolicyKind::Async, true),
    ];
    for (policy, btrfs) in cases {
        let mut config = config(policy);
        config.lazy_itable_init = !btrfs;
        if btrfs {
            config = config.btrfs_defaults();
        }
        let label = format!("{}{}", policy.label(), if btrfs { " on btrfs" } else { "" });
        let mut fs = FileSystem::mkfs(small_ssd(), config, SimTime::ZERO, false).unwrap();
        for i in 0..8 {
            let ino = fs.create(&format!("f{i}")).unwrap();
            fs.write(ino, 0, 64 * BS).unwrap();
        }
        fs.sync();
        fs.unlink("f0").unwrap();
        let start = fs.now();
        fs.umount();
        let took = fs.now().since(start);
        assert!(took < 100_000_000, "{label}: umount took {took} ns");
        assert_eq!(fs.stats().itable_init_commands, 0, "{label}: lazyinit had not started");
        fs.check().unwrap();
        fs.mount_with(policy, fs.config().params.clone());
        let trims = fs.stats().trim_commands - fs.stats().itable_init_commands;
        for i in (2..8).step_by(2) {
            fs.unlink(&format!("f{i}")).unwrap();
        }
        fs.sync();
        let t = fs.now().after(300_000_000_000);
        fs.idle_until(t);
        if !btrfs {
            assert!(fs.stats().itable_init_commands > 0, "{label}: lazyinit resumed after mount");
        }
        let trims_after = fs.stats().trim_commands - fs.stats().itable_init_commands - trims;
        match policy {
            PolicyKind::NoDiscard => assert_eq!(trims_after, 0, "{label}"),
            _ => assert!(trims_after > 0, "{label}: the policy trims again after mount"),
        }
        fs.umount();
        fs.check().unwrap();
    }
}
