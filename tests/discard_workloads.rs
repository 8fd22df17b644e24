//! The host model against real kernels, workload by workload: every directory of
//! tests/data/discard-patterns/ that holds a `workload.ops` was recorded on Linux 6.18
//! (tests/realclient/record-workload.sh: the same script through ops_to_shell.py on a real
//! ext4, XFS or btrfs over `trimlab serve --record`; `meta.toml` says how). Here each script
//! runs in the model on the same drive (`trimlab run`), and every phase's TRIM commands and
//! bytes must be within 20 % of the kernel's (the NBD counters of `kernel.phases.json`, or of
//! a repeat run `kernel.runN.phases.json`: the kernel itself does not always split its TRIMs
//! between phases the same way, README.md in each directory says how much they vary) —
//! except the misses listed in tests/data/discard-patterns/known-misses.txt, each with its
//! reason. The list may only shrink: a listed miss that now holds fails the test too, so that
//! the list says what the model really gets wrong.

mod common;

use common::{scratch, stderr, trimlab};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The band every phase is held to.
const BAND: f64 = 0.20;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/discard-patterns")
}

/// `key = value` lines of meta.toml (strings unquoted).
fn meta(dir: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(dir.join("meta.toml")).expect("meta.toml");
    let table: toml::Table = toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    table
        .into_iter()
        .map(|(k, v)| (k, v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())))
        .collect()
}

/// The model's `[host]` section for what the kernel ran: Linux 6.18's ext4, XFS or btrfs with
/// the discard mode of its mount options (docs/host-fs.md maps each).
fn host_section(meta: &BTreeMap<String, String>) -> String {
    let fs = meta["fs"].as_str();
    let discard = meta["discard"].as_str();
    let policy = match (fs, discard) {
        (_, "nodiscard") => "nodiscard",
        ("ext4", "discard") => "ext4-discard",
        ("xfs", "discard") => "discard-batch",
        ("btrfs", "async") => "async",
        other => panic!("no model policy for {other:?}"),
    };
    let layout = match fs {
        "ext4" => "kernel = \"linux-6.18\"\n".to_string(),
        other => format!("layout = \"{other}\"\n"),
    };
    // mke2fs -E discard, mkfs.xfs and mkfs.btrfs all discard the whole device, unless told
    // not to (mke2fs -E nodiscard, the last -E wins; mkfs.xfs -K).
    let mkfs = meta.get("mkfs").map_or("", |s| s.as_str());
    let mkfs_discard = !(mkfs.ends_with("-E nodiscard") || mkfs.split_whitespace().any(|w| w == "-K"));
    format!("[host]\nfs = \"ext4\"\n{layout}discard = \"{policy}\"\nmkfs_discard = {mkfs_discard}\n")
}

/// (phase, TRIM commands, TRIM bytes) in order.
type Phases = Vec<(String, u64, u64)>;

/// Every recorded run of the kernel: `kernel.phases.json`, then `kernel.runN.phases.json`
/// (the repeats; the kernel does not always split its TRIMs between phases the same way).
fn kernel_runs(dir: &Path) -> Vec<Phases> {
    let mut files = vec![dir.join("kernel.phases.json")];
    files.extend((2..10).map(|n| dir.join(format!("kernel.run{n}.phases.json"))).filter(|f| f.is_file()));
    files.iter().map(|f| kernel_phases(f)).collect()
}

fn kernel_phases(file: &Path) -> Phases {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    v["phases"]
        .as_array()
        .expect("phases")
        .iter()
        .filter(|p| p["name"] != "start")
        .map(|p| {
            let n = |k: &str| p[k].as_u64().unwrap_or(0);
            (p["name"].as_str().unwrap_or("?").to_string(), n("trim_commands"), n("trim_bytes"))
        })
        .collect()
}

/// Runs `workload.ops` in the model, after the mount and settle time the kernel had; the
/// run's error if it failed.
fn model_phases(name: &str, dir: &Path) -> Result<Phases, String> {
    model_run(&format!("discard-workload-{name}"), dir).map(|(phases, _)| phases)
}

/// [`model_phases`] and the model's first TRIM of each phase (`run --record`), run in the
/// scratch folder `run_name` (one per test: the tests run at the same time).
fn model_run(run_name: &str, dir: &Path) -> Result<(Phases, FirstTrims), String> {
    let meta = meta(dir);
    let settle = meta.get("settle_s").map_or("10".to_string(), |s| s.clone());
    let ops = std::fs::read_to_string(dir.join("workload.ops")).expect("workload.ops");
    let device = std::fs::read_to_string(data_dir().join("device.toml")).expect("device.toml");
    let config = format!(
        "{device}\n{}[workload]\nkind = \"script\"\noperations = '''\nphase mount\nsleep {settle}s\n{ops}'''\n",
        host_section(&meta)
    );
    let scratch = scratch(run_name);
    let path = scratch.join("config.toml");
    std::fs::write(&path, config).expect("config");
    let out = scratch.join("out");
    let record = scratch.join("record.log");
    let o = trimlab(&[
        "run",
        path.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--record",
        record.to_str().unwrap(),
    ]);
    if !o.status.success() {
        return Err(stderr(&o));
    }
    let first = first_trims(&std::fs::read_to_string(&record).expect("record"));
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("metrics.json")).unwrap()).unwrap();
    let phases = m["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let d = &p["device"];
            let n = |k: &str| d[k].as_u64().unwrap_or(0);
            (p["name"].as_str().unwrap().to_string(), n("trim_commands"), n("trim_bytes"))
        })
        .collect();
    Ok((phases, first))
}

/// Microseconds from each phase's start to its first TRIM, for the phases that have one.
type FirstTrims = BTreeMap<String, u64>;

/// [`FirstTrims`] of a recording: `run --record`'s (`# phase NAME AT_US`, then
/// `AT_US trimlab trim OFFSET BYTES`) or a kernel's `kernel.trims` (`# phase NAME START_US
/// END_US`, then `AT_US OFFSET BYTES`).
fn first_trims(text: &str) -> FirstTrims {
    let mut out = FirstTrims::new();
    let mut phase: Option<(String, u64)> = None;
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f[..] {
            ["#", "phase", name, start, ..] => phase = Some((name.to_string(), start.parse().unwrap_or(0))),
            _ => {
                let trim_at = match f[..] {
                    [at, _, "trim", _, _] => at.parse::<u64>().ok(),
                    [at, off, len] if off.parse::<u64>().is_ok() && len.parse::<u64>().is_ok() => {
                        at.parse().ok()
                    }
                    _ => None,
                };
                if let (Some((name, start)), Some(at)) = (&phase, trim_at) {
                    out.entry(name.clone()).or_insert(at.saturating_sub(*start));
                }
            }
        }
    }
    out
}

/// The first-TRIM arrival of every recorded kernel run (kernel.trims, kernel.runN.trims).
fn kernel_first_trims(dir: &Path) -> Vec<FirstTrims> {
    let mut files = vec![dir.join("kernel.trims")];
    files.extend((2..10).map(|n| dir.join(format!("kernel.run{n}.trims"))).filter(|f| f.is_file()));
    files.iter().map(|f| first_trims(&std::fs::read_to_string(f).expect("kernel.trims"))).collect()
}

/// What the recording rig adds to a call's first TRIM that a host with a real drive does not:
/// from the `mark` request reaching `trimlab serve` (the phase's start), bash running the next
/// line (a program's fork and exec: 0.75-1.7 ms for coreutils on this machine under the
/// recordings' load), to the TRIM bio's trip loop -> FUSE -> nbdfuse -> NBD (the round trips of
/// docs/host-fs.md's btrfs traces: 0.2-1.2 ms). The model's first TRIM is compared after this
/// is added to it. Measured: the smallest call-to-first-TRIM gap in the Linux 6.18
/// recordings is 2.18 ms (btrfs-nodiscard-large-files run 2, fstrim: btrfs_trim_fs does no
/// I/O before its first discard), and every fstrim phase's first TRIM comes at least that late
/// ([`the_rig_floor_is_below_every_recorded_calls_first_trim`]); 2.0 ms keeps below it.
const RIG_CALL_TO_FIRST_TRIM_US: u64 = 2_000;

/// The timing band: 20 % of the kernel's median, but never under 5 ms (issue 40).
fn within_time(kernel_us: u64, model_us: u64) -> bool {
    model_us.abs_diff(kernel_us) as f64 <= (BAND * kernel_us as f64).max(5_000.0)
}

fn within(kernel: u64, model: u64) -> bool {
    match kernel {
        0 => model == 0,
        k => (model as f64 - k as f64).abs() / k as f64 <= BAND,
    }
}

/// `workload phase` keys of known-misses.txt (the reason follows a colon).
fn known_misses() -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(data_dir().join("known-misses.txt")).unwrap_or_default();
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (key, why) = l.split_once(':').unwrap_or((l, ""));
            (key.trim().to_string(), why.trim().to_string())
        })
        .collect()
}

fn recorded_workloads() -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(data_dir())
        .expect("tests/data/discard-patterns")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.join("workload.ops").is_file() && p.join("kernel.phases.json").is_file())
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), p))
        .collect();
    out.sort();
    out
}

#[test]
fn every_recorded_workload_is_within_20_percent_per_phase_or_a_known_miss() {
    let workloads = recorded_workloads();
    assert!(
        workloads.len() >= 8,
        "issue 22 asks for at least eight recorded workloads, found {}",
        workloads.len()
    );
    let known = known_misses();
    let (mut unexpected, mut now_held, mut report) = (Vec::new(), Vec::new(), Vec::new());
    let mut held = 0;
    let mut total = 0;
    for (name, dir) in &workloads {
        let runs = kernel_runs(dir);
        let model = match model_phases(name, dir) {
            Ok(m) => m,
            Err(e) => {
                unexpected.push(format!("{name}: the model run failed: {e}"));
                continue;
            }
        };
        for (phase, k_cmds, k_bytes) in &runs[0] {
            let (m_cmds, m_bytes) = model.iter().find(|m| &m.0 == phase).map_or((0, 0), |m| (m.1, m.2));
            // Held when within the band of any recorded run of the kernel.
            let ok = runs.iter().any(|run| {
                let (c, b) = run.iter().find(|k| &k.0 == phase).map_or((0, 0), |k| (k.1, k.2));
                within(c, m_cmds) && within(b, m_bytes)
            });
            let key = format!("{name} {phase}");
            total += 1;
            held += ok as usize;
            let others: Vec<String> = runs[1..]
                .iter()
                .filter_map(|run| run.iter().find(|k| &k.0 == phase))
                .filter(|k| (k.1, k.2) != (*k_cmds, *k_bytes))
                .map(|k| format!("{}/{}", k.1, k.2))
                .collect();
            report.push(format!(
                "{:<4} {key:<48} kernel {k_cmds:>5} TRIMs {k_bytes:>11} B   model {m_cmds:>5} TRIMs {m_bytes:>11} B{}",
                if ok { "ok" } else { "MISS" },
                if others.is_empty() { String::new() } else { format!("   (other runs: {})", others.join(", ")) }
            ));
            match (ok, known.contains_key(&key)) {
                (false, false) => unexpected.push(key),
                (true, true) => now_held.push(key),
                _ => {}
            }
        }
    }
    let report = report.join("\n");
    eprintln!("{held} of {total} phases within 20 %\n{report}");
    assert!(
        unexpected.is_empty(),
        "phases outside 20 % and not in known-misses.txt: {unexpected:?}\n{report}"
    );
    assert!(
        now_held.is_empty(),
        "known misses that now hold (remove them from known-misses.txt): {now_held:?}\n{report}"
    );
    let stale: Vec<&String> =
        known.keys().filter(|k| !k.ends_with(" first-trim") && !report.contains(&format!(" {k} "))).collect();
    assert!(stale.is_empty(), "known-misses.txt names phases no recording has: {stale:?}");
}

/// Issue 40 item 3: when the first TRIM of a phase reaches the device, counted from the
/// phase's start (the kernel's `mark`, the model's `phase` line). Compared where every
/// recorded kernel run has a TRIM in the phase and the runs agree with their median within
/// 20 % (or 5 ms); the model must land within 20 % (or 5 ms) of that median, or be a known
/// miss (`WORKLOAD PHASE first-trim:` in known-misses.txt). The mkfs phase is left out: the
/// model's mkfs is not timed as mke2fs is.
#[test]
fn first_trim_arrives_within_20_percent_of_the_kernels_or_a_known_miss() {
    let known = known_misses();
    let (mut unexpected, mut now_held, mut report) = (Vec::new(), Vec::new(), Vec::new());
    let (mut held, mut total, mut unsteady) = (0, 0, 0);
    for (name, dir) in recorded_workloads() {
        let runs = kernel_first_trims(&dir);
        let model = match model_run(&format!("first-trim-{name}"), &dir) {
            Ok((_, first)) => first,
            Err(e) => {
                unexpected.push(format!("{name}: the model run failed: {e}"));
                continue;
            }
        };
        for phase in runs[0].keys().filter(|p| *p != "mkfs") {
            let mut times: Vec<u64> = runs.iter().filter_map(|r| r.get(phase).copied()).collect();
            times.sort_unstable();
            let median = times[times.len() / 2];
            let key = format!("{name} {phase} first-trim");
            let ms = |us: u64| format!("{:.1} ms", us as f64 / 1000.0);
            let all: Vec<String> = times.iter().map(|t| ms(*t)).collect();
            if times.len() < runs.len() || !times.iter().all(|t| within_time(median, *t)) {
                unsteady += 1;
                let m = model.get(phase).map_or("no TRIM".to_string(), |m| ms(m + RIG_CALL_TO_FIRST_TRIM_US));
                report.push(format!("--   {key:<56} kernel runs {} disagree  model {m}", all.join(" / ")));
                continue;
            }
            total += 1;
            // The kernel's time was taken through the rig: the model's is compared with the
            // rig's share added (for a TRIM of a background worker seconds later it is noise).
            let m = model.get(phase).map(|m| m + RIG_CALL_TO_FIRST_TRIM_US);
            let ok = m.is_some_and(|m| within_time(median, m));
            held += ok as usize;
            report.push(format!(
                "{:<4} {key:<56} kernel {} ({})  model {}",
                if ok { "ok" } else { "MISS" },
                ms(median),
                all.join(" / "),
                m.map_or("no TRIM".to_string(), ms)
            ));
            match (ok, known.contains_key(&key)) {
                (false, false) => unexpected.push(key),
                (true, true) => now_held.push(key),
                _ => {}
            }
        }
    }
    let report = report.join("\n");
    eprintln!(
        "{held} of {total} first TRIMs within 20 % or 5 ms ({unsteady} phases where the kernel's runs disagree)\n{report}"
    );
    assert!(
        unexpected.is_empty(),
        "first TRIMs outside the band and not in known-misses.txt: {unexpected:?}\n{report}"
    );
    assert!(now_held.is_empty(), "known misses that now hold (remove them): {now_held:?}\n{report}");
}

/// [`RIG_CALL_TO_FIRST_TRIM_US`] is a floor of what the rig adds: no fstrim phase of any
/// recording (a call whose first TRIM needs no I/O before it) has its first TRIM sooner.
#[test]
fn the_rig_floor_is_below_every_recorded_calls_first_trim() {
    let mut seen = 0;
    for (name, dir) in recorded_workloads() {
        for run in kernel_first_trims(&dir) {
            for (phase, us) in run.iter().filter(|(p, _)| p.starts_with("fstrim")) {
                seen += 1;
                assert!(
                    *us >= RIG_CALL_TO_FIRST_TRIM_US,
                    "{name} {phase}: the kernel's first TRIM came {us} us after the phase's start, below the rig's floor {RIG_CALL_TO_FIRST_TRIM_US} us"
                );
            }
        }
    }
    assert!(seen >= 50, "only {seen} fstrim phases with a TRIM in the recordings");
}
