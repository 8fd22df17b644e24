//! The aging's handling of its live file names against the plain algorithm it replaced
//! (issue 39 item 6): `delete_down_to` shuffled the names, unlinked the last ones while the
//! file system was over its target and sorted the rest; it now shuffles indices and merges the
//! names appended since the last cycle into the sorted rest.
//!
//! Strategy: seeded random name lists (a sorted lead of any length, an appended tail with
//! names equal to the lead's and to each other) sorted by `sort_appended` against
//! `sort_unstable`; then aging cycles (files made in nested directories, then deleted down to
//! a target) on twin file systems, one by the old algorithm, one by `delete_down_to` and
//! `delete_down_to_appended`.
//! Invariants: the same names in the same order; the twins end with the same files, the same
//! utilization, the same device traffic and simulated time, and `check()` passes on both.

use rand::seq::SliceRandom;
use rand::Rng;
use trimlab_device::{DeviceSection, FtlSection, Ssd, SsdConfig, TrimSection};
use trimlab_fs::{FileSystem, FsConfig, FsError, PolicyKind};
use trimlab_sim::{ByteSize, SeedTree, SimRng, SimTime};
use trimlab_workload::file::{delete_down_to, delete_down_to_appended, sort_appended, write_file};

/// The seeds run: `TRIMLAB_SEED` replays one.
fn seeds() -> Vec<u64> {
    match std::env::var("TRIMLAB_SEED") {
        Ok(s) => vec![s.parse().expect("TRIMLAB_SEED is a number")],
        Err(_) => (1..=8).collect(),
    }
}

/// A short name from a small alphabet, so that equal names and common prefixes are frequent.
fn name(rng: &mut SimRng) -> String {
    let len = rng.gen_range(0..5);
    (0..len).map(|_| ['a', 'b', '/', 'c'][rng.gen_range(0..4)]).collect()
}

#[test]
fn sort_appended_sorts_as_sort_unstable() {
    for seed in seeds() {
        let mut rng = SeedTree::new(seed).fork("names");
        for case in 0..200 {
            let lead_len = rng.gen_range(0..60);
            let tail_len = rng.gen_range(0..if case % 4 == 0 { 200 } else { 8 });
            let mut lead: Vec<String> = (0..lead_len).map(|_| name(&mut rng)).collect();
            lead.sort_unstable();
            let mut names: Vec<String> = lead.clone();
            names.extend((0..tail_len).map(|_| match rng.gen_bool(0.3) && !lead.is_empty() {
                true => lead[rng.gen_range(0..lead.len())].clone(),
                false => name(&mut rng),
            }));
            let mut expected = names.clone();
            expected.sort_unstable();
            // Any length up to the sorted lead's is a true claim.
            let claimed = rng.gen_range(0..=lead_len);
            sort_appended(&mut names, claimed);
            assert_eq!(
                names, expected,
                "TRIMLAB_SEED={seed} case {case}, lead {lead_len}, claimed {claimed}"
            );
        }
    }
}

/// A 32 MiB ext4 under online discard on a small SSD.
fn mkfs() -> FileSystem<Ssd> {
    let device = DeviceSection {
        channels: Some(2),
        chips_per_channel: Some(1),
        dies_per_chip: Some(1),
        planes_per_die: Some(1),
        pages_per_block: Some(64),
        logical_bytes: Some(ByteSize(32 << 20)),
        spare_factor: Some(0.15),
        ..Default::default()
    };
    let ssd = Ssd::new(SsdConfig::resolve(&device, &FtlSection::default(), &TrimSection::default()).unwrap());
    let config =
        FsConfig { blocks_per_group: 2048, ..Default::default() }.with_policy(PolicyKind::Ext4Discard);
    let mut fs = FileSystem::mkfs(ssd, config, SimTime::ZERO, false).unwrap();
    fs.set_verify(true);
    fs
}

/// The delete the aging ran before: the names themselves shuffled, the rest sorted.
fn old_delete_down_to(
    fs: &mut FileSystem<Ssd>,
    rng: &mut SimRng,
    mut names: Vec<String>,
    target: f64,
) -> Result<Vec<String>, FsError> {
    names.shuffle(rng);
    while fs.utilization() > target {
        let Some(name) = names.pop() else { break };
        fs.unlink(&name)?;
    }
    names.sort_unstable();
    fs.sync();
    Ok(names)
}

/// Makes files of 4-64 KiB under random directories of `dirs` until `high`, on both twins.
fn fill(
    twins: &mut [FileSystem<Ssd>; 2],
    lives: &mut [Vec<String>; 2],
    rng: &mut SimRng,
    made: &mut u32,
    high: f64,
) {
    let dirs = ["", "d0", "d1", "d0/e0", "d0/e0/f0", "d1/e1"];
    while twins[0].utilization() < high {
        let dir = dirs[rng.gen_range(0..dirs.len())];
        let path = if dir.is_empty() { format!("n{made}") } else { format!("{dir}/n{made}") };
        *made += 1;
        let bytes = rng.gen_range(1..=16) * 4096;
        for (fs, live) in twins.iter_mut().zip(lives.iter_mut()) {
            write_file(fs, &path, bytes, 4096, 0).unwrap();
            live.push(path.clone());
        }
    }
}

#[test]
fn aging_cycles_delete_the_same_files_as_before() {
    for seed in seeds() {
        let mut twins = [mkfs(), mkfs()];
        for fs in &mut twins {
            for d in ["d0", "d1", "d0/e0", "d0/e0/f0", "d1/e1"] {
                fs.mkdir(d).unwrap();
            }
        }
        let tree = SeedTree::new(seed);
        let (mut sizes, mut old_rng, mut new_rng) =
            (tree.fork("sizes"), tree.fork("delete"), tree.fork("delete"));
        let mut lives: [Vec<String>; 2] = [Vec::new(), Vec::new()];
        let (mut made, mut sorted) = (0, None);
        for cycle in 0..6 {
            fill(&mut twins, &mut lives, &mut sizes, &mut made, 0.6);
            let [old, new] = &mut twins;
            lives[0] = old_delete_down_to(old, &mut old_rng, std::mem::take(&mut lives[0]), 0.4).unwrap();
            let names = std::mem::take(&mut lives[1]);
            lives[1] = match sorted {
                Some(n) => delete_down_to_appended(new, &mut new_rng, names, n, 0.4).unwrap(),
                None => delete_down_to(new, &mut new_rng, names, 0.4).unwrap(),
            };
            sorted = Some(lives[1].len());
            let at = format!("TRIMLAB_SEED={seed} cycle {cycle}");
            assert_eq!(lives[0], lives[1], "{at}: live names");
            let listed = |fs: &FileSystem<Ssd>| fs.names().map(|(n, _)| n.clone()).collect::<Vec<_>>();
            assert_eq!(listed(old), listed(new), "{at}: files");
            assert_eq!(old.utilization(), new.utilization(), "{at}");
            assert_eq!(old.now(), new.now(), "{at}: simulated time");
            assert_eq!(old.stats().trim_commands, new.stats().trim_commands, "{at}: TRIM commands");
        }
        for fs in &mut twins {
            fs.check().unwrap_or_else(|e| panic!("TRIMLAB_SEED={seed}: {e}"));
        }
    }
}
