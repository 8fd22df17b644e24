//! The kernel's discard pattern (issue 12 item 7): the model file system runs the script a
//! real ext4 ran on `trimlab serve --record` (tests/realclient/discard-pattern.sh: mkfs -E
//! discard, first mount with -o discard, write, rm, fstrim, remount, fstrim) on the same 1 GiB
//! drive, and every phase's TRIM commands and bytes (overlaps included) must be within 20 % of
//! the recording kept in tests/data/discard-patterns/ (kernel and tool versions in
//! versions.txt there). What the model reproduces: the mkfs probe and whole-device discard,
//! lazy inode-table init at first mount (a TRIM per group), the online discards of Linux 6.8+
//! (each freed extent trimmed to the end of its free run: the 100 MiB TRIM after the last
//! deleted file), and fstrim trimming every group again after a remount.

use crate::common::Noting;
use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;
use trimlab_device::{Command, DeviceSection, FtlSection, Ssd, SsdConfig, TrimSection};
use trimlab_fs::{FileSystem, FsConfig, FsStats, PolicyKind};
use trimlab_sim::{ByteSize, SimTime};

const S: u64 = 1_000_000_000;

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/discard-patterns")
}

/// tests/data/discard-patterns/device.toml (examples/serve.toml), built without the TOML
/// layer (trimlab-fs sits below trimlab-scenario).
fn recorded_drive() -> Ssd {
    let device = DeviceSection {
        logical_bytes: Some(ByteSize(1 << 30)),
        spare_factor: Some(0.10),
        channels: Some(4),
        chips_per_channel: Some(1),
        dies_per_chip: Some(2),
        planes_per_die: Some(1),
        pages_per_block: Some(256),
        ..Default::default()
    };
    Ssd::new(SsdConfig::resolve(&device, &FtlSection::default(), &TrimSection::default()).expect("device"))
}

/// Each TRIM the drive got: its arrival (ns), bytes and first offset.
type Trims = Rc<RefCell<Vec<(u64, u64, u64)>>>;

/// The drive, noting every TRIM for the timing and placement checks.
fn noting_trims(ssd: Ssd, trims: &Trims) -> Noting {
    let trims = trims.clone();
    Noting::new(ssd, move |at, c| {
        if let Command::Trim { ranges } = c {
            // DUMP_TRIMS=1 prints the model's TRIMs in FS.trims' format (at_us offset bytes).
            if std::env::var_os("DUMP_TRIMS").is_some() {
                eprintln!("TRIM {} {} {}", at.0 / 1000, ranges[0].offset, ranges[0].bytes);
            }
            trims.borrow_mut().push((at.0, ranges.iter().map(|r| r.bytes).sum(), ranges[0].offset));
        }
    })
}

/// One phase's TRIMs: (name, commands, bytes).
type Phase = (String, u64, u64);

/// A model run: the phases and, for the rm phase, its start and its TRIMs' arrivals (ns) and
/// bytes.
struct Run {
    phases: Vec<Phase>,
    rm_start_ns: u64,
    rm_trims_ns: Vec<u64>,
    rm_trim_bytes: Vec<u64>,
}

/// The script of tests/realclient/discard-pattern.sh on the model.
fn run_model(config: FsConfig, policy: PolicyKind) -> Vec<Phase> {
    run_script(config, policy, 7).phases
}

fn run_script(config: FsConfig, policy: PolicyKind, rm_wait_s: u64) -> Run {
    let trims = Rc::new(RefCell::new(Vec::new()));
    let drive = noting_trims(recorded_drive(), &trims);
    let mut phases = Vec::new();
    let mut last = FsStats::default();
    let mut mark = |name: &str, s: &FsStats| {
        phases.push((name.to_string(), s.trim_commands - last.trim_commands, s.trim_bytes - last.trim_bytes));
        last = s.clone();
    };
    let mut fs = FileSystem::mkfs(drive, config.with_policy(policy), SimTime(S), true).unwrap();
    fs.set_verify(true);
    mark("mkfs", fs.stats());
    fs.idle_until(fs.now().after(10 * S));
    mark("mount", fs.stats());
    let mut n = 0;
    for i in 1..=64 {
        let s = fs.create(&format!("s{i}")).unwrap();
        fs.write(s, 0, 12288).unwrap();
        if i % 8 < 3 {
            n += 1;
            let f = fs.create(&format!("f{n}")).unwrap();
            fs.write(f, 0, 1 << 20).unwrap();
        }
    }
    fs.sync();
    mark("write", fs.stats());
    let rm_start_ns = fs.now().0;
    let trims_before = trims.borrow().len();
    for i in (2..=24).step_by(2) {
        fs.unlink(&format!("f{i}")).unwrap();
    }
    for i in (1..=63).step_by(2) {
        fs.unlink(&format!("s{i}")).unwrap();
    }
    fs.sync();
    fs.idle_until(fs.now().after(rm_wait_s * S));
    fs.sync();
    mark("rm", fs.stats());
    let rm_trims_ns = trims.borrow()[trims_before..].iter().map(|t| t.0).collect();
    let rm_trim_bytes = trims.borrow()[trims_before..].iter().map(|t| t.1).collect();
    fs.fstrim(0, u64::MAX, 0);
    mark("fstrim", fs.stats());
    fs.remount(policy);
    fs.idle_until(fs.now().after(2 * S));
    mark("remount", fs.stats());
    fs.fstrim(0, u64::MAX, 0);
    mark("fstrim2", fs.stats());
    fs.check().unwrap();
    Run { phases, rm_start_ns, rm_trims_ns, rm_trim_bytes }
}

/// The recording's rm phase: (phase start, TRIM arrivals) in ns, from FS.trims.
fn recorded_rm_trims(fs: &str) -> (u64, Vec<u64>) {
    let (start, trims) = recorded_rm_trims_with_bytes(fs);
    (start, trims.iter().map(|t| t.0).collect())
}

/// The recording's rm phase: its start (ns) and its TRIMs' (arrival ns, bytes), from FS.trims.
fn recorded_rm_trims_with_bytes(fs: &str) -> (u64, Vec<(u64, u64)>) {
    let path = data_dir().join(format!("{fs}.trims"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut start = None;
    let mut at = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# phase ") {
            let f: Vec<&str> = rest.split_whitespace().collect();
            inside = f[0] == "rm";
            if inside {
                start = Some(f[1].parse::<u64>().unwrap() * 1000);
            }
        } else if inside && !line.starts_with('#') {
            let f: Vec<u64> = line.split_whitespace().map(|x| x.parse::<u64>().unwrap()).collect();
            at.push((f[0] * 1000, f[2]));
        }
    }
    (start.unwrap_or_else(|| panic!("{fs}: no rm phase")), at)
}

/// The recording's per-phase NBD TRIM counters (WRITE_ZEROES are counted apart there).
fn recorded(fs: &str) -> Vec<Phase> {
    let path = data_dir().join(format!("{fs}.phases.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_string(),
                p["trim_commands"].as_u64().unwrap(),
                p["trim_bytes"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// A phase outside the band: its name, whether commands and bytes are within, the line.
struct Miss {
    name: String,
    commands_ok: bool,
    bytes_ok: bool,
    line: String,
}

/// Every phase of the script within `band` of the recording in TRIM commands and bytes (a phase
/// without TRIMs in the recording must have none in the model); returns the phases outside.
fn compare(fs: &str, model: &[Phase], band: f64) -> Vec<Miss> {
    let real = recorded(fs);
    let mut bad = Vec::new();
    for (name, n, bytes) in model {
        let (_, rn, rbytes) =
            real.iter().find(|p| &p.0 == name).unwrap_or_else(|| panic!("{fs}: phase {name} not recorded"));
        let within = |m: u64, r: u64| {
            if r == 0 {
                m == 0
            } else {
                (m as f64 / r as f64 - 1.0).abs() <= band
            }
        };
        let line = format!(
            "{fs} {name:8} TRIM commands model {n:5} real {rn:5}   bytes model {bytes:11} real {rbytes:11} ({:+.1} %)",
            if *rbytes > 0 { (*bytes as f64 / *rbytes as f64 - 1.0) * 100.0 } else { 0.0 }
        );
        eprintln!("{line}");
        let (commands_ok, bytes_ok) = (within(*n, *rn), within(*bytes, *rbytes));
        if !commands_ok || !bytes_ok {
            bad.push(Miss { name: name.clone(), commands_ok, bytes_ok, line });
        }
    }
    bad
}

fn lines(bad: &[Miss]) -> String {
    bad.iter().map(|m| m.line.as_str()).collect::<Vec<_>>().join("\n")
}

#[test]
fn ext4_discard_pattern_matches_the_recording_per_phase() {
    let model = run_model(FsConfig::default().ext4_defaults(), PolicyKind::Ext4Discard);
    let bad = compare("ext4", &model, 0.20);
    assert!(bad.is_empty(), "outside 20 % of the recording:\n{}", lines(&bad));
}

#[test]
fn the_recording_is_small_and_names_its_kernel() {
    let versions = std::fs::read_to_string(data_dir().join("versions.txt")).unwrap();
    assert!(versions.contains("kernel: Linux") && versions.contains("e2fsprogs"), "{versions}");
    let total: u64 =
        std::fs::read_dir(data_dir()).unwrap().map(|e| e.unwrap().metadata().unwrap().len()).sum();
    assert!(total < 1 << 20, "test data is {total} bytes");
}

/// XFS `-o discard` on the same script (`FsConfig::xfs_defaults`): the `discard-batch` policy
/// (a log checkpoint's discards issued together, the extents busy until they complete:
/// xlog_discard_busy_extents) trims exactly the freed extents, merged when adjacent; groups
/// of 65536 blocks stand for mkfs.xfs's four 256 MiB allocation groups; mkfs.xfs discards
/// without a probe. XFS keeps no "trimmed" state, so both fstrims trim all free space, as the
/// model's remount does.
#[test]
fn xfs_discard_pattern_matches_the_recording_per_phase() {
    let model = run_model(FsConfig::default().xfs_defaults(), PolicyKind::DiscardBatch);
    let bad = compare("xfs", &model, 0.20);
    assert!(bad.is_empty(), "outside 20 % of the recording:\n{}", lines(&bad));
}

/// A phase's TRIMs (arrival ns, bytes) split into bursts where the gap exceeds 1 s; each
/// burst as (first arrival ns, commands, bytes).
fn bursts(trims: &[(u64, u64)]) -> Vec<(u64, u64, u64)> {
    let mut out: Vec<(u64, u64, u64)> = Vec::new();
    let mut last = None;
    for &(at, bytes) in trims {
        match out.last_mut() {
            Some(b) if last.is_some_and(|l: u64| at - l <= S) => {
                b.1 += 1;
                b.2 += bytes;
            }
            _ => out.push((at, 1, bytes)),
        }
        last = Some(at);
    }
    out
}

fn xfs_rm_bursts(config: FsConfig) -> Vec<(u64, u64, u64)> {
    let run = run_script(config, PolicyKind::DiscardBatch, 7);
    let trims: Vec<(u64, u64)> =
        run.rm_trims_ns.iter().copied().zip(run.rm_trim_bytes.iter().copied()).collect();
    bursts(&trims)
}

/// Per burst, the rm phase (issue 12 item 7's timing): XFS sent 26 TRIMs (12840960 bytes) at
/// the rm's sync and 11 (135168 bytes: eleven 12 KiB files) at the sync 7.006 s later. The
/// split is deferred inode inactivation (fs/xfs/xfs_icache.c, crates/fs/src/fs/inodegc.rs):
/// the 34th unlinked inode on a CPU kicks the inodegc worker, which frees the first 34; the
/// rest wait for a one-jiffy delayed work that fires 4-8 ms after the last unlink, after the
/// sync's log force, so their extents are discarded with the next checkpoint. The model
/// (one queue): 34 inodes in the first burst, 10 in the second. Held: commands and bytes of
/// each burst and the gap between them within 20 % of the kept recording. The split point
/// varies between runs with the CPUs the unlinking `rm` processes ran on (per-CPU lists, each
/// with its own count and timer) and whether a timer fired between two of them: ten traced
/// runs sent 26/10 TRIMs (three times, the model's exact extents), 27/9, 27/9, 27/10, 28/8,
/// 28/8, 30/4 and 18/24, an untraced one 9/33, the kept one 26/11 (docs/host-fs.md); the
/// model's single queue is within 20 % of the kept one and of six of the ten traced (not of
/// 28/8, 30/4, 18/24), and its gap of all of them (7.005-7.007 s). The scheduler's choice of CPU is not modelled.
#[test]
fn xfs_rm_discards_come_in_two_bursts_as_inodegc_defers_them() {
    let model = xfs_rm_bursts(FsConfig::default().xfs_defaults());
    let (_, real_trims) = recorded_rm_trims_with_bytes("xfs");
    let real = bursts(&real_trims);
    let gap = |b: &[(u64, u64, u64)]| b[1].0 - b[0].0;
    eprintln!(
        "xfs rm bursts model {:?} real {:?} (first arrival ns, TRIMs, bytes); gap model {} ns real {} ns",
        model,
        real,
        gap(&model),
        gap(&real)
    );
    assert_eq!(real.len(), 2, "the recording's rm has two bursts: {real:?}");
    assert_eq!(model.len(), 2, "the model's rm must send two bursts: {model:?}");
    let within = |m: u64, r: u64| (m as f64 / r as f64 - 1.0).abs() <= 0.20;
    for (i, (m, r)) in model.iter().zip(&real).enumerate() {
        assert!(within(m.1, r.1), "burst {i}: {} TRIMs, real {}", m.1, r.1);
        assert!(within(m.2, r.2), "burst {i}: {} bytes, real {}", m.2, r.2);
    }
    assert!(within(gap(&model), gap(&real)), "gap {} ns, real {} ns", gap(&model), gap(&real));
}

/// The XFS burst comparison can fail: without deferred inactivation (every unlinked file freed
/// in the unlink's transaction, as before) the rm sends one burst of 33 TRIMs.
#[test]
fn xfs_without_inodegc_sends_one_burst() {
    let config = FsConfig { inodegc: None, ..FsConfig::default().xfs_defaults() };
    let model = xfs_rm_bursts(config);
    assert_eq!(model.len(), 1, "{model:?}");
}

/// What moves the split: the worker is kicked once the queue holds more than `kick_inodes`;
/// with a larger cluster (64 inodes, e.g. 256-byte inodes) no kick comes in 44 unlinks, and
/// every file waits for the timer, after the sync: one burst, at the second sync.
#[test]
fn xfs_inodegc_without_a_kick_defers_the_whole_rm() {
    let mut config = FsConfig::default().xfs_defaults();
    config.inodegc.as_mut().unwrap().kick_inodes = 64;
    let run = run_script(config, PolicyKind::DiscardBatch, 7);
    let trims: Vec<(u64, u64)> =
        run.rm_trims_ns.iter().copied().zip(run.rm_trim_bytes.iter().copied()).collect();
    let b = bursts(&trims);
    assert_eq!(b.len(), 1, "{b:?}");
    assert!(
        b[0].0 - run.rm_start_ns > 7 * S,
        "the rm's discards came {} ns after it",
        b[0].0 - run.rm_start_ns
    );
}

/// btrfs `discard=async` on the same script (rm waits 200 s), `FsConfig::btrfs_defaults`:
/// mkfs.btrfs 6.2's block groups (8 MiB data, system and metadata DUP) and a kernel data
/// chunk of 112 MiB, data size classes (the 12 KiB files in the first data block group, the
/// 1 MiB files in the second), the `async` policy with btrfs' free-space merging inside a
/// block group (the last file's extent went out with the free tail of its block group, as a
/// 64 MiB and a 25 MiB TRIM), 64 MiB pieces, the 32 KiB filter (the 12 KiB files are left
/// to fstrim), the 30 s commit interval; FITRIM per block group (DUP ones on both copies),
/// the metadata cluster hidden from the first fstrim, then the unallocated device space.
/// Held: TRIM commands and bytes of every phase within 20 %; the delay from the rm to the
/// first async TRIM within one timer-wheel granule (2.048 s): 120 s (BTRFS_DISCARD_DELAY)
/// from when the cleaner, 30 s after mount, took the new block group off the unused list and
/// queued it for discard again; the span of the burst from its second TRIM to its last
/// within 20 %. Not held, and why: the gap from the first TRIM to the second (real 4.3 ms,
/// model 0.3 ms). btrfs re-arms its work item with 0 ticks (see the next test), and a
/// kernel trace of a second run of the script (docs/host-fs.md) shows the first discard's
/// round trip through loop, FUSE, nbdfuse and `trimlab serve` at 1.2 ms and the later ones
/// at 0.1-0.3 ms, with 10-67 us of btrfs, workqueue and loop between a completion and the
/// next discard: the gaps are the recording rig's, and they do not repeat (that run's burst
/// took 4.2 ms, its first gap 0.8 ms).
#[test]
fn btrfs_async_discard_matches_the_recording() {
    let config = FsConfig::default().btrfs_defaults();
    let run = run_script(config, PolicyKind::Async, 200);
    let bad = compare("btrfs", &run.phases, 0.20);
    assert!(bad.is_empty(), "outside 20 % of the recording:\n{}", lines(&bad));
    let (real_start, real) = recorded_rm_trims("btrfs");
    let real_delay = real[0] - real_start;
    let model_delay = run.rm_trims_ns[0] - run.rm_start_ns;
    let span = |v: &[u64]| v[v.len() - 1] - v[0];
    let (model_rest, real_rest) = (span(&run.rm_trims_ns[1..]), span(&real[1..]));
    eprintln!(
        "btrfs rm: first async TRIM {:.1} s after the rm (real {:.1} s); {} TRIMs in {:.2} ms (real {} in {:.2} ms), \
         first gap {:.2} ms (real {:.2} ms), second to last {:.2} ms (real {:.2} ms)",
        model_delay as f64 / 1e9,
        real_delay as f64 / 1e9,
        run.rm_trims_ns.len(),
        span(&run.rm_trims_ns) as f64 / 1e6,
        real.len(),
        span(&real) as f64 / 1e6,
        (run.rm_trims_ns[1] - run.rm_trims_ns[0]) as f64 / 1e6,
        (real[1] - real[0]) as f64 / 1e6,
        model_rest as f64 / 1e6,
        real_rest as f64 / 1e6,
    );
    // The delay: 120 s (BTRFS_DISCARD_DELAY) from the cleaner's requeue of the 112 MiB block
    // group 30 s after mount; what is left is the timer wheel, which fires a 120 s timeout at
    // CONFIG_HZ = 250 on the next 512-tick boundary (up to 2.048 s late).
    assert!(model_delay.abs_diff(real_delay) <= 2_048_000_000, "delay {model_delay} vs {real_delay}");
    assert!(
        (model_rest as f64 / real_rest as f64 - 1.0).abs() <= 0.20,
        "burst span from the second TRIM: model {model_rest} ns, real {real_rest} ns"
    );
}

/// What paces btrfs' async discards (fs/btrfs/discard.c): after each discard the work item
/// re-arms itself with iops_limit's delay_ms (1 ms at the default 1000) through
/// nsecs_to_jiffies, which rounds down: 0 ticks at CONFIG_HZ = 250 (the recording's kernel),
/// so the next discard follows the completion of the previous one; at HZ = 1000 it is one
/// tick. The model's gaps: below one 4 ms tick with `async_tick = 4 ms` (each is the
/// previous TRIM's service time plus the host's submit and complete costs), at least 1 ms with
/// 1 ms ticks.
#[test]
fn btrfs_async_discards_wait_for_a_tick_only_when_the_iops_delay_rounds_to_one() {
    let gaps = |tick_ns: u64| {
        let mut config = FsConfig::default().btrfs_defaults();
        config.params.set(&trimlab_fs::policy::btrfs_async::TICK, tick_ns);
        let run = run_script(config, PolicyKind::Async, 200);
        run.rm_trims_ns.windows(2).map(|w| w[1] - w[0]).collect::<Vec<u64>>()
    };
    let hz250 = gaps(4_000_000);
    assert!(hz250.len() == 12 && hz250.iter().all(|&g| g < 4_000_000), "{hz250:?}");
    let hz1000 = gaps(1_000_000);
    assert!(hz1000.len() == 12 && hz1000.iter().all(|&g| g >= 1_000_000), "{hz1000:?}");
}

/// The btrfs comparison can fail: on the ext4-like layout (no block groups, no size classes)
/// the same policy misses the fstrims' command counts (40 against 59 and 63) and sends the
/// rm's discards as 1 MiB + 12 KiB runs.
#[test]
fn btrfs_without_its_block_groups_misses_the_fstrims() {
    let config = FsConfig { btrfs_layout: false, ..FsConfig::default().btrfs_defaults() };
    let bad = compare("btrfs", &run_script(config, PolicyKind::Async, 200).phases, 0.20);
    assert!(bad.iter().any(|m| m.name == "fstrim" && !m.commands_ok && m.bytes_ok), "{}", lines(&bad));
}

/// The comparison can fail: the old model (ext4 4.x's exact-extent discard, no lazy init, the
/// paper experiments' allocation) misses the recording's mount and rm phases by far.
#[test]
fn the_paper_era_discard_does_not_match_a_6_18_kernel() {
    let model = run_model(FsConfig::default(), PolicyKind::DiscardBatch);
    let bad = compare("ext4", &model, 0.20);
    assert!(bad.iter().any(|m| m.name == "mount") && bad.iter().any(|m| m.name == "rm"), "{}", lines(&bad));
}

/// One kernel trace of issue 22's workload A (tests/realclient/trace-ext4-rm-dir.sh): the
/// files of d3 in the order ext4 freed them (creation index d*50+f), and its discards as
/// (group, start block, blocks).
struct RmDirTrace {
    unlinked: Vec<usize>,
    frees: Vec<(usize, u64, u64)>,
    trims: Vec<(u64, u64, u64)>,
}

fn rm_dir_trace(n: usize) -> RmDirTrace {
    let path = data_dir().join(format!("ext4-rm-dir-{n}.txt"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut t = RmDirTrace { unlinked: Vec::new(), frees: Vec::new(), trims: Vec::new() };
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let num = |i: usize| f[i].parse::<u64>().unwrap_or_else(|e| panic!("{line}: {e}"));
        match f[0] {
            // The directory's own block (file -1) is not in the model, which has no directories.
            "free" if f[1] == "-1" => {}
            "free" => {
                let file = f[1].parse::<usize>().unwrap();
                t.unlinked.push(file);
                t.frees.push((file, num(2) * 32768 + num(3), num(4)));
            }
            "trim" => t.trims.push((num(1), num(2), num(3))),
            other => panic!("{line}: unknown record {other}"),
        }
    }
    t
}

/// Workload A on the model: ext4 `-o discard` (`ext4_defaults`), 10 s, 8 x 50 files of 24 KiB
/// created d0/f0 .. d7/f49 (the model has no directories: names d{d}f{f}), sync; then d3's
/// files unlinked in `order`, sync, 7 s, sync. Returns the rm's TRIMs as (start block, blocks)
/// and each file's first block.
fn rm_dir_model(order: &[usize]) -> (Vec<(u64, u64)>, Vec<u64>) {
    let trims = Rc::new(RefCell::new(Vec::new()));
    let drive = noting_trims(recorded_drive(), &trims);
    let config = FsConfig::default().ext4_defaults().with_policy(PolicyKind::Ext4Discard);
    let mut fs = FileSystem::mkfs(drive, config, SimTime(S), true).unwrap();
    fs.set_verify(true);
    fs.idle_until(fs.now().after(10 * S));
    let name = |i: usize| format!("d{}f{}", i / 50, i % 50);
    for i in 0..400 {
        let ino = fs.create(&name(i)).unwrap();
        fs.write(ino, 0, 24576).unwrap();
    }
    fs.sync();
    let first_block: Vec<u64> =
        (0..400).map(|i| fs.file_runs(fs.lookup(&name(i)).unwrap())[0].start).collect();
    let before = trims.borrow().len();
    for &i in order {
        fs.unlink(&name(i)).unwrap();
    }
    fs.sync();
    fs.idle_until(fs.now().after(7 * S));
    fs.sync();
    fs.check().unwrap();
    let rm =
        trims.borrow()[before..].iter().map(|&(_, bytes, offset)| (offset / 4096, bytes / 4096)).collect();
    (rm, first_block)
}

/// Issue 22's defect: ext4 `-o discard`, `rm -rf` of a directory of 50 small contiguous files.
/// Linux 6.18 sent 11, 13 and 15 TRIMs in three traced runs (the run: 10 TRIMs, 3.33 MB), each
/// from a freed extent to the end of its free run, where the model sent 2 (it merged every
/// adjacent freed extent). Why: since Linux 6.17 `ext4_mb_free_metadata` merges a freed extent
/// only with the node its red-black tree descent stops at (trimlab-discard's ext4_free_data.rs), and rm frees
/// the files in readdir's hash order, so most merges do not happen; the discard worker then
/// trims every entry of the list with `ext4_try_to_trim_range`. Held, per kernel trace, with
/// the model unlinking the files in the traced order: the same TRIMs in the same order, each
/// named by the file whose first block it starts at (the layouts differ, the files' order on
/// disk is the same), their count exactly, and where each ends, so the bytes too.
#[test]
fn ext4_rm_dir_trims_each_entry_of_the_freed_extents_tree() {
    // Trace 2's kernel put the locality group's chunk boundary (a 2-block gap) after file 184,
    // the model (as traces 1 and 3) after file 169: different neighbours, different merges.
    // trimlab-discard's ext4_free_data.rs tests replay all three traces on the kernel's own blocks.
    for n in [1, 3] {
        let trace = rm_dir_trace(n);
        let (model, first_block) = rm_dir_model(&trace.unlinked);
        let file_at = |block: u64, starts: &dyn Fn(usize) -> u64| {
            trace.unlinked.iter().copied().find(|&f| starts(f) == block)
        };
        let kernel_start = |f: usize| trace.frees.iter().find(|fr| fr.0 == f).map_or(u64::MAX, |fr| fr.1);
        // The kernel's last TRIM is the directory's block (group 0), which the model lacks.
        let kernel: Vec<Option<usize>> = trace
            .trims
            .iter()
            .filter(|t| t.0 != 0)
            .map(|t| file_at(t.0 * 32768 + t.1, &kernel_start))
            .collect();
        let ours: Vec<Option<usize>> = model.iter().map(|t| file_at(t.0, &|f| first_block[f])).collect();
        let kernel_bytes: u64 = trace.trims.iter().filter(|t| t.0 != 0).map(|t| t.2 * 4096).sum();
        let model_bytes: u64 = model.iter().map(|t| t.1 * 4096).sum();
        eprintln!(
            "rm-dir-{n}: TRIMs model {} kernel {}, bytes model {model_bytes} kernel {kernel_bytes}; files model {ours:?} kernel {kernel:?}",
            model.len(),
            kernel.len()
        );
        if std::env::var_os("DUMP_TRIMS").is_some() {
            let base = first_block[150];
            eprintln!(
                "model (from d3f0): {:?}",
                model.iter().map(|t| (t.0 as i64 - base as i64, t.1)).collect::<Vec<_>>()
            );
            eprintln!(
                "model files: {:?}",
                (145..205).map(|f| first_block[f] as i64 - base as i64).collect::<Vec<_>>()
            );
            let kbase = kernel_start(150);
            eprintln!(
                "kernel (from d3f0): {:?}",
                trace
                    .trims
                    .iter()
                    .map(|t| ((t.0 * 32768 + t.1) as i64 - kbase as i64, t.2))
                    .collect::<Vec<_>>()
            );
        }
        assert_eq!(ours, kernel, "rm-dir-{n}: the TRIMs, by the file each starts at");
        // Each TRIM runs to the end of its free run, which stops at the unused 2-block tail of
        // a locality-group preallocation between two 512-block chunks (kept used until the
        // preallocation is discarded: fs/lg_prealloc.rs; before, the model's TRIMs there ran
        // on to the end of the freed files, 83 % and 54 % more bytes than the kernel's).
        let model_base = first_block[150];
        for (i, (m, k)) in model.iter().zip(trace.trims.iter().filter(|t| t.0 != 0)).enumerate() {
            let (m_end, k_end) = (m.0 + m.1 - model_base, k.0 * 32768 + k.1 + k.2 - kernel_start(150));
            assert_eq!(m_end, k_end, "rm-dir-{n}: TRIM {i} ends at {m_end}, kernel {k_end}");
        }
        assert_eq!(model_bytes, kernel_bytes, "rm-dir-{n}: TRIM bytes");
    }
}

/// A TRIM: (seconds after a phase's start, offset, bytes).
type TimedTrim = (f64, u64, u64);

/// Issue 22's workload D on the model: btrfs `discard=async` (`btrfs_defaults`), 40 files of
/// 3 MiB, sync, rm of every third (f2, f5, ...), sync, 200 s. Returns each file's extents and
/// the rm phase's TRIMs as (seconds after the rm, offset, bytes).
fn btrfs_workload_d() -> (Vec<Vec<(u64, u64)>>, Vec<TimedTrim>) {
    let trims = Rc::new(RefCell::new(Vec::new()));
    let drive = noting_trims(recorded_drive(), &trims);
    let config = FsConfig::default().btrfs_defaults().with_policy(PolicyKind::Async);
    let mut fs = FileSystem::mkfs(drive, config, SimTime(S), true).unwrap();
    fs.set_verify(true);
    for i in 0..40 {
        let ino = fs.create(&format!("f{i}")).unwrap();
        fs.write(ino, 0, 3 << 20).unwrap();
    }
    fs.sync();
    let extents = (0..40)
        .map(|i| {
            fs.file_runs(fs.lookup(&format!("f{i}")).unwrap()).iter().map(|r| (r.start, r.len)).collect()
        })
        .collect();
    let before = trims.borrow().len();
    for i in (2..40).step_by(3) {
        fs.unlink(&format!("f{i}")).unwrap();
    }
    fs.sync();
    let rm_at = fs.now().0;
    fs.idle_until(fs.now().after(200 * S));
    fs.check().unwrap();
    let rm = trims.borrow()[before..]
        .iter()
        .map(|&(at, bytes, off)| ((at - rm_at) as f64 / 1e9, off, bytes))
        .collect();
    (extents, rm)
}

/// Issue 22's defect: btrfs sent an extra 2 MiB TRIM about 120 s after the rm that the kernel
/// does not. The model's allocator took a block group's largest free extent whatever its size,
/// so the third 3 MiB file went 2 MiB into mkfs' 8 MiB data block group (which held two files
/// and 2 MiB) and 1 MiB into the kernel's new chunk; deleted, its 2 MiB piece got an async
/// discard of its own 120 s after the rm. btrfs keeps a file's extent whole
/// (btrfs_find_space_for_alloc returns only a free-space entry of at least the request, and
/// find_free_extent adds a chunk before btrfs_reserve_extent shrinks the request): on Linux
/// 6.18 (`filefrag` here) each file is one extent of 768 blocks, f0 and f1 in the 8 MiB
/// group, f2 onwards in a new 112 MiB chunk, whose last 1 MiB stays free, and f39 in a second
/// chunk. Held: every file one extent; f39 starts a chunk 256 blocks after f38's end; no TRIM
/// of the rm phase touches the 8 MiB group (13..21 MiB), none of whose files was deleted; and
/// the rm phase's TRIMs are the kernel's: a trace of the same script on Linux 6.18.44 here
/// (block_rq_issue of the loop device under ftrace) sent these 13, 150.23-150.27 s after the
/// rm (the new chunk waited for the cleaner, 30 s after mount, as in the recording above),
/// the last one f38 with the chunk's free 1 MiB; held to the byte, the first within a
/// timer-wheel granule (2.048 s).
const BTRFS_D_KERNEL_RM_TRIMS: [(u64, u64); 13] = [
    (146145280, 3145728),
    (155582464, 3145728),
    (165019648, 3145728),
    (174456832, 3145728),
    (183894016, 3145728),
    (193331200, 3145728),
    (202768384, 3145728),
    (212205568, 3145728),
    (221642752, 3145728),
    (231079936, 3145728),
    (240517120, 3145728),
    (249954304, 3145728),
    (259391488, 4194304),
];

#[test]
fn btrfs_keeps_each_file_one_extent_and_sends_no_trim_for_a_split_piece() {
    let (extents, rm) = btrfs_workload_d();
    for (i, e) in extents.iter().enumerate() {
        assert_eq!(e.len(), 1, "f{i} is one extent: {e:?}");
        assert_eq!(e[0].1, 768, "f{i}: {e:?}");
    }
    assert_eq!(
        extents[39][0].0 - (extents[38][0].0 + 768),
        256,
        "f38 {:?} f39 {:?}",
        extents[38],
        extents[39]
    );
    let group = (13 << 20)..(21 << 20);
    let inside: Vec<&TimedTrim> = rm.iter().filter(|t| group.contains(&t.1)).collect();
    eprintln!("btrfs workload D: rm TRIMs {:?}", rm);
    assert!(inside.is_empty(), "TRIMs in the 8 MiB data block group: {inside:?}");
    let ranges: Vec<(u64, u64)> = rm.iter().map(|t| (t.1, t.2)).collect();
    assert_eq!(ranges, BTRFS_D_KERNEL_RM_TRIMS, "the rm phase's TRIMs");
    assert!(
        (rm[0].0 - 150.226).abs() <= 2.048,
        "first async TRIM {} s after the rm, kernel 150.226 s",
        rm[0].0
    );
}

/// Issue 22: btrfs' first fstrim trims holes in the metadata block group that the trees'
/// copy-on-write left below the metadata allocation cluster (fs/btrfs.rs, btrfs_tree.rs).
/// tests/data/discard-patterns/btrfs-nodiscard-large-files (4 x 96 MiB, rm two, fstrim twice;
/// identical in 3 runs on Linux 6.18) sent 25 TRIMs, 14 of them 7 holes on each copy of the
/// metadata group (37 MiB and 88.1875 MiB, 51.1875 MiB each); the model without tree nodes sent
/// 11 and none there. Held: TRIMs in the metadata group come in pairs, one per DUP copy at the
/// same offset, at least 3 holes, and the fstrim within 20 % of the kernel's 25.
#[test]
fn btrfs_fstrim_trims_the_metadata_holes_copy_on_write_leaves() {
    let trims = Rc::new(RefCell::new(Vec::new()));
    let drive = noting_trims(recorded_drive(), &trims);
    let config = FsConfig::default().btrfs_defaults().with_policy(PolicyKind::NoDiscard);
    let mut fs = FileSystem::mkfs(drive, config, SimTime(S), true).unwrap();
    fs.set_verify(true);
    fs.idle_until(fs.now().after(5 * S));
    for i in 0..4 {
        let ino = fs.create(&format!("L{i}")).unwrap();
        fs.write(ino, 0, 96 << 20).unwrap();
    }
    fs.sync();
    fs.unlink("L1").unwrap();
    fs.unlink("L2").unwrap();
    fs.sync();
    let before = trims.borrow().len();
    fs.fstrim(0, u64::MAX, 0);
    fs.check().unwrap();
    let got: Vec<(u64, u64)> = trims.borrow()[before..].iter().map(|&(_, bytes, off)| (off, bytes)).collect();
    let (meta, stripe) = (37u64 << 20, 53673984u64);
    let copy0: Vec<(u64, u64)> =
        got.iter().copied().filter(|&(o, _)| o >= meta && o < meta + stripe).collect();
    let copy1: Vec<(u64, u64)> =
        got.iter().copied().filter(|&(o, _)| o >= meta + stripe && o < meta + 2 * stripe).collect();
    let shifted: Vec<(u64, u64)> = copy1.iter().map(|&(o, b)| (o - stripe, b)).collect();
    assert_eq!(copy0, shifted, "each metadata hole on both DUP copies: {got:?}");
    assert!(copy0.len() >= 3, "metadata holes left by copy-on-write: {copy0:?}");
    let n = got.len() as f64;
    assert!((n - 25.0).abs() <= 0.2 * 25.0, "fstrim: {n} TRIMs, kernel 25: {got:?}");
}
