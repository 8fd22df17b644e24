//! Filebench's personalities (examples/filebench/) as scenarios: fileserver, varmail and
//! webserver run to completion on ext4 under each host discard policy, each run's operation
//! mix is what its model file's flowop loop implies, and bad models are errors naming the line.

use serde_json::Value;
use std::collections::BTreeMap;
use trimlab_workload::filebench::{self, FlowopKind};

const SSD: &str = r#"
[device]
preset = "nvme-tlc"
logical_bytes = "256MiB"
channels = 2
spare_factor = 0.15
pages_per_block = 64
[host]
fs = "ext4"
commit_interval = "100ms"
"#;

const POLICIES: &[&str] = &["nodiscard", "discard", "fstrim:300ms", "lazy", "selective"];

fn shipped(name: &str) -> String {
    let path = format!("{}/../../examples/filebench/{name}.f", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The shipped model scaled down as its header says a user would: its `set` lines (and, for
/// the two whose `run 60` is not a variable, that line) changed, nothing else.
fn scaled(name: &str) -> String {
    let mut out = String::new();
    for line in shipped(name).lines() {
        let l = match line.split('=').next().unwrap_or("") {
            "set $nfiles" => "set $nfiles=300",
            "set $nthreads" => "set $nthreads=4",
            "set $runtime" => "set $runtime=1",
            _ if line == "run 60" => "run 1",
            _ => line,
        };
        out.push_str(l);
        out.push('\n');
    }
    out
}

fn config(name: &str, model: &str, discard: &str) -> String {
    format!("{SSD}discard = \"{discard}\"\n[workload]\nkind = \"filebench\"\nfilebench = \"{name}.f\"\noperations = '''\n{model}'''\n")
}

fn run(name: &str, model: &str, discard: &str) -> Value {
    let text = config(name, model, discard);
    trimlab_scenario::run_text(&text, "test.toml", None, &[])
        .unwrap_or_else(|e| panic!("{name} {discard}: {e}"))
}

fn figures(m: &Value) -> &serde_json::Map<String, Value> {
    let p = m["phases"].as_array().and_then(|p| p.iter().find(|p| p["kind"] == "workload"));
    p.and_then(|p| p["figures"].as_object()).unwrap_or_else(|| panic!("no workload figures: {m}"))
}

/// Each flowop kind's count must be its occurrences per loop times the loops run, give or
/// take the loops the threads were in the middle of when the run's time was up.
fn check_mix(name: &str, model_text: &str, f: &serde_json::Map<String, Value>) {
    let model = filebench::parse(model_text, name).unwrap();
    assert_eq!(model.threads.len(), 1, "{name}: one thread definition");
    let t = &model.threads[0];
    let mut per_loop: BTreeMap<FlowopKind, u64> = BTreeMap::new();
    for op in &t.flowops {
        *per_loop.entry(op.kind).or_default() += 1;
    }
    let count = |k: &FlowopKind| f.get(k.name()).and_then(Value::as_u64).unwrap_or(0);
    let skipped = f["deletes_skipped"].as_u64().unwrap_or(0);
    let loops = per_loop.iter().map(|(k, occ)| count(k).div_ceil(*occ)).max().unwrap_or(0);
    assert!(loops > 20 * t.instances, "{name}: only {loops} loops ran: {f:?}");
    for (k, occ) in &per_loop {
        let n = count(k) + if *k == FlowopKind::DeleteFile { skipped } else { 0 };
        let low = occ * (loops - t.instances);
        assert!(
            (low..=occ * loops).contains(&n),
            "{name}: {} ran {n} times, expected {occ} per loop over {loops} loops ± {} threads: {f:?}",
            k.name(),
            t.instances
        );
    }
    for (k, v) in f {
        if let Some(kind) = FlowopKind::parse(k) {
            assert!(per_loop.contains_key(&kind) || v == 0, "{name}: {k} ran but is not in the model");
        }
    }
    assert_eq!(f["stopped_early_line"], 0, "{name} ran its whole time");
    assert!(f["run_ns"].as_u64().unwrap_or(0) >= 1_000_000_000, "{name}: run 1 is one simulated second");
}

#[test]
fn personalities_run_under_every_discard_policy_with_their_flowop_mix() {
    for name in ["fileserver", "varmail", "webserver"] {
        let model = scaled(name);
        for discard in POLICIES {
            let m = run(name, &model, discard);
            assert!(m.get("error").is_none(), "{name} {discard}: {}", m["error"]);
            let f = figures(&m);
            check_mix(name, &model, f);
            let trims: u64 = m["phases"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["device"]["trim_commands"].as_u64().unwrap_or(0))
                .sum();
            // webserver deletes nothing; the others free blocks that online, lazy and periodic
            // discard trim, and nodiscard never does (selective trims only above its low
            // utilization mark, 40 %, which these small sets stay under).
            match (*discard, name) {
                ("nodiscard", _) => assert_eq!(trims, 0, "{name}"),
                (_, "webserver") | ("selective", _) => {}
                _ => assert!(trims > 0, "{name} {discard}: no TRIM reached the device"),
            }
        }
    }
}

#[test]
fn fileserver_figures_follow_the_model_and_repeat() {
    let model = scaled("fileserver");
    let a = run("fileserver", &model, "discard");
    let f = figures(&a);
    // prealloc=80 of 300 entries, sizes gamma with mean 128 KiB.
    let pre = f["prealloc_files"].as_u64().unwrap();
    assert!((200..=280).contains(&pre), "{pre} preallocated");
    let mean = f["prealloc_bytes"].as_u64().unwrap() as f64 / pre as f64;
    assert!((90e3..170e3).contains(&mean), "mean preallocated size {mean}");
    // writewholefile writes the created entry's size: the same gamma mean.
    let whole = (f["bytes_written"].as_u64().unwrap() as f64
        - f["appendfilerand"].as_u64().unwrap() as f64 * 8192.0)
        / f["writewholefile"].as_u64().unwrap() as f64;
    assert!((90e3..170e3).contains(&whole), "mean whole-file write {whole}");
    assert_eq!(run("fileserver", &model, "discard"), a, "same seed, same run");
}

#[test]
fn quit_modes_and_early_stops_end_as_filebench_ends_them() {
    let small = |name: &str| scaled(name).replace("set $nfiles=50000", "set $nfiles=300");
    // createfiles (quit firstdone): every entry created once, then the run ends.
    let f = figures(&run("createfiles", &small("createfiles"), "discard")).clone();
    assert_eq!((f["createfile"].as_u64(), f["stopped_early_line"].as_u64()), (Some(300), Some(0)), "{f:?}");
    // deletefiles (timed, no quit mode): deletes all, then stops early at its deletefile line.
    let model = small("deletefiles");
    let line = model.lines().position(|l| l.contains("flowop deletefile")).unwrap() + 1;
    let f = figures(&run("deletefiles", &model, "lazy")).clone();
    assert_eq!(f["deletefile"].as_u64(), Some(300));
    assert_eq!(f["stopped_early_line"].as_u64(), Some(line as u64));
    // copyfiles: each source read once and copied into a new file of its size.
    let f = figures(&run("copyfiles", &small("copyfiles"), "nodiscard")).clone();
    assert_eq!(f["createfile"].as_u64(), Some(300));
    assert_eq!(f["bytes_written"], f["prealloc_bytes"], "{f:?}");
}

#[test]
fn bad_models_name_file_line_and_what_is_accepted() {
    let err = |model: &str| {
        let text = config("bad", model, "nodiscard");
        trimlab_scenario::run_text(&text, "test.toml", None, &[])
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    let fs = scaled("fileserver");
    let e = err(&fs.replace("flowop statfile", "flowop hog"));
    assert!(
        e.contains("bad.f:") && e.contains("flowop \"hog\" is not modelled (accepted: createfile"),
        "{e}"
    );
    let e = err(&fs.replace(
        "filesetname=bigfileset,fd=1\n    flowop writewholefile",
        "filesetname=nosuch,fd=1\n    flowop writewholefile",
    ));
    assert!(e.contains("no fileset \"nosuch\" (defined: bigfileset)"), "{e}");
    let e = err(&fs.replace("iosize=$iosize", "iosize=$iosize,colour=red"));
    assert!(e.contains("unknown attribute \"colour\""), "{e}");
    let e = err(&fs.replace("run $runtime", "system \"sync\"\nrun $runtime"));
    assert!(e.contains("is a Filebench command trimlab does not model"), "{e}");
    let line = fs.lines().position(|l| l.starts_with("define fileset")).unwrap() + 1;
    let e = err(&fs.replace("entries=$nfiles,", ""));
    assert!(e.contains(&format!("bad.f:{line}:")) && e.contains("entries=N"), "{e}");
    // A run-time failure (a write to a readonly set) ends the run with the flowop's line.
    let web = scaled("webserver")
        .replace("flowop readwholefile name=readfile1,fd=1", "flowop appendfile name=readfile1,fd=1");
    let text = config("webserver", &web, "nodiscard");
    let m = trimlab_scenario::run_text(&text, "test.toml", None, &[]);
    let e = match m {
        Err(e) => e.to_string(),
        Ok(m) => m["error"].to_string(),
    };
    assert!(e.contains("webserver.f:") && e.contains("readonly"), "{e}");
}
