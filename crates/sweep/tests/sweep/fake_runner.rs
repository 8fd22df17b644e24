//! Sweeps end to end on a fake runner: order, shards, resume, failed rows, bad grids, workers.
//!
//! The fake knows three keys (device.spare_factor: float in (0, 1), trim.engine: one of three
//! names, workload.writes: integer) and answers a "WAF" computed from them and the seed, so
//! every property is checked without simulating.

use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use trimlab_sweep::{run_in_dir, run_in_memory, Grid, Runner, Shard, SweepOptions, Table};

#[derive(Default)]
struct Fake {
    runs: AtomicUsize,
}

fn configure(base: &str, set: &[String]) -> Result<toml::Table, String> {
    let mut doc: toml::Table = toml::from_str(base).map_err(|e| e.to_string())?;
    for assignment in set {
        let (key, value) = assignment.split_once('=').ok_or("no =")?;
        let value: toml::Table = toml::from_str(&format!("v = {value}")).map_err(|e| e.to_string())?;
        let (section, field) = key.split_once('.').ok_or(format!("unknown field `{key}`"))?;
        let known =
            matches!(key, "device.spare_factor" | "trim.engine" | "workload.writes" | "workload.panic");
        if !known {
            return Err(format!("unknown field `{field}` in [{section}]"));
        }
        let table = doc.entry(section).or_insert(toml::Value::Table(toml::Table::new()));
        table.as_table_mut().ok_or("not a table")?.insert(field.to_string(), value["v"].clone());
    }
    let device = doc.get("device").and_then(|d| d.get("spare_factor"));
    if let Some(v) = device {
        let f = v.as_float().ok_or(format!("device.spare_factor = {v}: expected a number"))?;
        if !(0.0..1.0).contains(&f) {
            return Err(format!("device.spare_factor = {f} (must be in 0..1)"));
        }
    }
    if let Some(v) = doc.get("trim").and_then(|d| d.get("engine")) {
        if !matches!(v.as_str(), Some("immediate" | "none" | "delayed")) {
            return Err(format!("trim.engine = {v} (accepted: immediate, none, delayed)"));
        }
    }
    Ok(doc)
}

impl Runner for Fake {
    fn check(&self, base: &str, _origin: &str, set: &[String]) -> Result<(), String> {
        configure(base, set).map(|_| ())
    }

    fn run(&self, base: &str, origin: &str, seed: u64, set: &[String]) -> Result<Value, String> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        let doc = configure(base, set).map_err(|e| format!("{origin}: {e}"))?;
        if doc.get("workload").and_then(|w| w.get("panic")).is_some() {
            panic!("boom");
        }
        let spare =
            doc.get("device").and_then(|d| d.get("spare_factor")).and_then(|v| v.as_float()).unwrap_or(0.1);
        let engine =
            doc.get("trim").and_then(|d| d.get("engine")).and_then(|v| v.as_str()).unwrap_or("immediate");
        let trimmed = if engine == "none" { 0.0 } else { 0.05 };
        Ok(json!({
            "seed": seed, "config_hash": "resolved", "config": {"device": {"spare_factor": spare}},
            "report": {"waf": 1.0 / (spare + trimmed) + seed as f64 / 1000.0, "engine": engine},
            "ops": 1000 + seed,
        }))
    }
}

const GRID: &str = r#"
seeds = [1, 2]
[base.device]
spare_factor = 0.1
[grid]
"device.spare_factor" = [0.07, 0.1, 0.2, 0.3, 0.5]
"trim.engine" = ["immediate", "none", "delayed"]
"#;

fn grid(text: &str) -> Grid {
    Grid::parse(text, "grid.toml", |_| unreachable!("inline base")).unwrap()
}

fn options(jobs: usize, shard: &str) -> SweepOptions {
    SweepOptions { jobs, shard: shard.parse().unwrap() }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("trimlab-sweep-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn cell<'t>(t: &'t Table, row: usize, column: &str) -> &'t Value {
    &t.data[row][t.column(column).unwrap_or_else(|| panic!("no column {column}"))]
}

#[test]
fn the_table_has_a_row_per_run_in_order_whatever_the_workers() {
    let one = run_in_memory(&grid(GRID), &Fake::default(), options(1, "1/1"), |_, _, _| {}).unwrap();
    let four = run_in_memory(&grid(GRID), &Fake::default(), options(4, "1/1"), |_, _, _| {}).unwrap();
    assert_eq!(one, four);
    assert_eq!(one.data.len(), 30);
    assert_eq!(
        one.columns.join(","),
        "run,device.spare_factor,trim.engine,seed,config_hash,status,error,ops,report.engine,report.waf,run_config_hash"
    );
    assert_eq!(cell(&one, 3, "trim.engine"), "none");
    assert_eq!(cell(&one, 3, "seed"), 2);
    assert_eq!(cell(&one, 3, "device.spare_factor"), 0.07);
    assert_eq!(cell(&one, 3, "report.waf"), &json!(1.0 / 0.07 + 0.002));
    assert!(one.data.iter().enumerate().all(|(i, r)| r[0] == i && r[5] == "ok"));
}

#[test]
fn shards_put_together_equal_the_whole_sweep_byte_for_byte() {
    let whole_dir = scratch("whole");
    let whole =
        run_in_dir(&grid(GRID), &Fake::default(), options(2, "1/1"), &whole_dir, |_, _, _| {}).unwrap();
    let merged_dir = scratch("merged");
    std::fs::create_dir_all(&merged_dir).unwrap();
    let mut journals = String::new();
    let mut rows = Vec::new();
    for k in 1..=3 {
        let dir = scratch(&format!("shard{k}"));
        let part =
            run_in_dir(&grid(GRID), &Fake::default(), options(2, &format!("{k}/3")), &dir, |_, _, _| {})
                .unwrap();
        assert_eq!(part.table.data.len(), 10);
        assert_eq!(part.table.columns, whole.table.columns);
        rows.extend(part.table.data.clone());
        journals.push_str(&std::fs::read_to_string(dir.join("rows.jsonl")).unwrap());
        std::fs::remove_dir_all(dir).unwrap();
    }
    rows.sort_by_key(|r| r[0].as_u64());
    assert_eq!(rows, whole.table.data);
    // Concatenated journals resume into the whole table without running anything.
    std::fs::write(merged_dir.join("rows.jsonl"), journals).unwrap();
    let fake = Fake::default();
    let merged = run_in_dir(&grid(GRID), &fake, options(2, "1/1"), &merged_dir, |_, _, _| {}).unwrap();
    assert_eq!((merged.ran, merged.skipped, fake.runs.load(Ordering::SeqCst)), (0, 30, 0));
    for file in ["results.csv", "results.json"] {
        assert_eq!(
            std::fs::read(merged_dir.join(file)).unwrap(),
            std::fs::read(whole_dir.join(file)).unwrap()
        );
    }
    std::fs::remove_dir_all(whole_dir).unwrap();
    std::fs::remove_dir_all(merged_dir).unwrap();
}

#[test]
fn a_killed_sweep_resumes_without_redoing_rows() {
    let dir = scratch("resume");
    let whole_dir = scratch("resume-whole");
    let whole =
        run_in_dir(&grid(GRID), &Fake::default(), options(2, "1/1"), &whole_dir, |_, _, _| {}).unwrap();
    // Simulate a kill: a journal holding 11 finished rows and half of a twelfth.
    let journal = std::fs::read_to_string(whole_dir.join("rows.jsonl")).unwrap();
    let lines: Vec<&str> = journal.lines().collect();
    std::fs::create_dir_all(&dir).unwrap();
    let cut = format!("{}\n{}", lines[..11].join("\n"), &lines[11][..20]);
    std::fs::write(dir.join("rows.jsonl"), cut).unwrap();

    let fake = Fake::default();
    let resumed = run_in_dir(&grid(GRID), &fake, options(2, "1/1"), &dir, |_, _, _| {}).unwrap();
    assert_eq!((resumed.skipped, resumed.ran, fake.runs.load(Ordering::SeqCst)), (11, 19, 19));
    assert_eq!(resumed.table, whole.table);
    assert_eq!(
        std::fs::read(dir.join("results.csv")).unwrap(),
        std::fs::read(whole_dir.join("results.csv")).unwrap()
    );
    // A third run has nothing left to do.
    let again = run_in_dir(&grid(GRID), &fake, options(2, "1/1"), &dir, |_, _, _| {}).unwrap();
    assert_eq!((again.skipped, again.ran, fake.runs.load(Ordering::SeqCst)), (30, 0, 19));
    // Growing the grid runs only the new points, renumbered in the new order.
    let grown = GRID.replace("[0.07, 0.1,", "[0.05, 0.07, 0.1,");
    let more = run_in_dir(&grid(&grown), &fake, options(2, "1/1"), &dir, |_, _, _| {}).unwrap();
    assert_eq!((more.skipped, more.ran), (30, 6));
    assert_eq!(cell(&more.table, 6, "device.spare_factor"), 0.07);
    std::fs::remove_dir_all(dir).unwrap();
    std::fs::remove_dir_all(whole_dir).unwrap();
}

#[test]
fn a_bad_value_fails_its_row_and_the_sweep_goes_on() {
    let text = "[grid]\n\"device.spare_factor\" = [0.1, \"lots\", 1.5]\n\"workload.writes\" = [1, 2]\n";
    let t = run_in_memory(&grid(text), &Fake::default(), options(2, "1/1"), |_, _, _| {}).unwrap();
    let status: Vec<&str> = (0..6).map(|r| cell(&t, r, "status").as_str().unwrap()).collect();
    assert_eq!(status, ["ok", "ok", "failed", "failed", "failed", "failed"]);
    assert_eq!(cell(&t, 2, "error"), "grid.toml (run 2): device.spare_factor = \"lots\": expected a number");
    assert_eq!(cell(&t, 4, "error"), "grid.toml (run 4): device.spare_factor = 1.5 (must be in 0..1)");
    assert_eq!(cell(&t, 4, "report.waf"), &Value::Null);
    assert!(t.to_csv().lines().nth(3).unwrap().starts_with("2,lots,1,1,"));
}

#[test]
fn a_panic_in_the_simulator_is_a_failed_row_not_a_crash() {
    let text = "[grid]\n\"workload.panic\" = [1]\n\"device.spare_factor\" = [0.1]\n";
    let t = run_in_memory(&grid(text), &Fake::default(), options(1, "1/1"), |_, _, _| {}).unwrap();
    assert_eq!(cell(&t, 0, "status"), "failed");
    assert!(cell(&t, 0, "error").as_str().unwrap().contains("trimlab panicked (a bug"), "{:?}", t.data[0]);
}

#[test]
fn a_grid_with_no_valid_point_stops_before_any_run() {
    let fake = Fake::default();
    let unknown = "[grid]\n\"device.spare_factr\" = [0.1, 0.2]\n\"trim.engine\" = [\"none\"]\n";
    let e = run_in_memory(&grid(unknown), &fake, options(1, "1/1"), |_, _, _| {}).unwrap_err().to_string();
    assert_eq!(
        e,
        "grid.toml:2: grid key `device.spare_factr`: no point of the grid is a valid config, so nothing was run (is every key spelled right? see docs/config.md); run 0 (device.spare_factr=0.1 trim.engine=\"none\"): unknown field `spare_factr` in [device]"
    );
    let all_bad = "[grid]\n\"trim.engine\" = [\"sometimes\"]\n";
    let e = run_in_memory(&grid(all_bad), &fake, options(1, "1/1"), |_, _, _| {}).unwrap_err().to_string();
    assert!(e.ends_with("run 0 (trim.engine=\"sometimes\"): trim.engine = \"sometimes\" (accepted: immediate, none, delayed)"), "{e}");
    // A base no grid value repairs; the message cannot name a grid key, so it names the file.
    let bad_base = "[base.trim]\nengine = 3\n[grid]\n\"device.spare_factor\" = [0.1]\n";
    let e = run_in_memory(&grid(bad_base), &fake, options(1, "1/1"), |_, _, _| {}).unwrap_err().to_string();
    assert!(e.starts_with("grid.toml: no point of the grid is a valid config"), "{e}");
    assert_eq!(fake.runs.load(Ordering::SeqCst), 0);
    // A bad base that every point repairs is fine.
    let repaired = "[base.trim]\nengine = 3\n[grid]\n\"trim.engine\" = [\"none\"]\n";
    let t = run_in_memory(&grid(repaired), &fake, options(1, "1/1"), |_, _, _| {}).unwrap();
    assert_eq!(cell(&t, 0, "status"), "ok");
}

#[test]
fn a_shard_in_memory_is_its_slice_of_the_whole() {
    let whole = run_in_memory(&grid(GRID), &Fake::default(), options(2, "1/1"), |_, _, _| {}).unwrap();
    let shard: Shard = "2/4".parse().unwrap();
    let part =
        run_in_memory(&grid(GRID), &Fake::default(), SweepOptions { jobs: 2, shard }, |_, _, _| {}).unwrap();
    let expected: Vec<_> =
        whole.data.iter().filter(|r| shard.contains(r[0].as_u64().unwrap() as usize)).cloned().collect();
    assert_eq!(part.data, expected);
}
