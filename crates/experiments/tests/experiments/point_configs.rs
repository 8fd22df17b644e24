//! Every experiment's points round-trip through `--emit-configs`: the configs an experiment
//! emits are exactly the points its run ran, and each one, written as TOML, parsed back and run
//! through the scenario entry (as `trimlab run` would), gives the metrics the experiment's own
//! run got for it.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use trimlab_experiments::point::PointLog;
use trimlab_experiments::{point_configs, Options, EXPERIMENTS};
use trimlab_scenario::RunConfig;

const SEED: u64 = 3;

/// Each experiment's scale and which emitted points are run back: every point, or every third
/// of selective-trim's 80 (its Postmark points are the slow ones; the whole file takes about
/// 14 s of CPU in release).
const CASES: [(&str, f64, usize); 6] = [
    ("waf", 0.03, 1),
    ("delayed-trim", 0.03, 1),
    ("ftl-trim", 1.0 / 32.0, 1),
    ("lazy-trim", 0.03, 1),
    ("selective-trim", 0.03, 3),
    ("discard-vs-fstrim", 0.03, 1),
];

/// Runs experiment `name` at its scale with a point log, then checks its emitted configs against
/// the log: the same set of configs, and every `rerun_every`-th emitted file (in file order)
/// run back from its text to the same metrics.
fn check(name: &str) {
    let (_, scale, rerun_every) = *CASES.iter().find(|c| c.0 == name).expect("a case per experiment");
    let experiment = EXPERIMENTS.iter().find(|e| e.name == name).expect("a registered experiment");
    let log = Arc::new(PointLog::default());
    let o = Options { point_log: Some(log.clone()), ..Options::new(SEED, scale) };
    (experiment.run)(&o).unwrap_or_else(|e| panic!("{name} at scale {scale}: {e:#}"));
    let mut ran: BTreeMap<String, Value> = BTreeMap::new();
    for (config, metrics) in log.take() {
        let text = config.to_toml().unwrap();
        // A config the experiment runs twice must give the same metrics twice.
        if let Some(earlier) = ran.insert(text.clone(), metrics) {
            assert!(earlier == ran[&text], "{name}: one config ran twice to different metrics:\n{text}");
        }
    }
    let files = experiment.config_files(&o).unwrap_or_else(|e| panic!("{name}: {e:#}"));
    let emitted: BTreeSet<&String> = files.iter().map(|(_, text)| text).collect();
    let not_run: Vec<&str> =
        files.iter().filter(|(_, text)| !ran.contains_key(text)).map(|(file, _)| file.as_str()).collect();
    assert!(not_run.is_empty(), "{name}: emitted but not run by the experiment: {not_run:?}");
    let not_emitted: Vec<&String> = ran.keys().filter(|text| !emitted.contains(text)).collect();
    assert!(
        not_emitted.is_empty(),
        "{name}: {} points run but not emitted, e.g.\n{}",
        not_emitted.len(),
        not_emitted[0]
    );
    let mut rerun = 0;
    for (file, text) in files.iter().step_by(rerun_every) {
        let config = RunConfig::parse(text, file).unwrap_or_else(|e| panic!("{name}/{file}: {e}\n{text}"));
        assert_eq!(&config.to_toml().unwrap(), text, "{name}/{file} does not round-trip");
        let metrics = trimlab_scenario::run(&config, None, &mut ())
            .unwrap_or_else(|e| panic!("{name}/{file}: {e}"))
            .metrics;
        let theirs = &ran[text];
        let differing: Vec<&String> = metrics
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, v)| theirs.get(k.as_str()) != Some(v))
            .map(|(k, _)| k)
            .collect();
        assert!(
            metrics == *theirs,
            "{name}/{file}: the emitted config's metrics differ from the experiment's run in {differing:?}"
        );
        rerun += 1;
    }
    assert!(rerun > 0, "{name}: no point was run back");
}

#[test]
fn waf_points_round_trip() {
    check("waf");
}

#[test]
fn delayed_trim_points_round_trip() {
    check("delayed-trim");
}

#[test]
fn ftl_trim_points_round_trip() {
    check("ftl-trim");
}

#[test]
fn lazy_trim_points_round_trip() {
    check("lazy-trim");
}

#[test]
fn selective_trim_points_round_trip() {
    check("selective-trim");
}

#[test]
fn discard_vs_fstrim_points_round_trip() {
    check("discard-vs-fstrim");
}

/// Every registered experiment has a case, in registry order (a new case needs its test above).
#[test]
fn every_experiment_is_checked() {
    let names: Vec<&str> = EXPERIMENTS.iter().map(|e| e.name).collect();
    let cases: Vec<&str> = CASES.iter().map(|c| c.0).collect();
    assert_eq!(names, cases);
    assert!(point_configs("no-such-experiment", &Options::new(1, 1.0)).is_none());
}

/// The ftl-trim report's shape at a small scale: every table and verdict is there, Table 2
/// has its rows, and a second run gives the same report (determinism). Here rather than in the
/// crate's unit tests: a unit test that runs an experiment compiles the whole stack into the
/// lib's test binary a second time.
#[test]
fn ftl_trim_small_scale_report_has_every_table_and_is_deterministic() {
    let experiment = EXPERIMENTS.iter().find(|e| e.name == "ftl-trim").expect("ftl-trim is listed");
    let options = Options::new(7, 1.0 / 32.0);
    let report = (experiment.run)(&options).expect("ftl-trim runs at scale 1/32");
    let names: Vec<&str> = report.tables.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["table2", "e_ftl", "table3", "table4", "runs", "hybrid_merges", "page_gc"]);
    assert_eq!(report.tables[0].rows.len(), 8);
    assert_eq!(report.tables[3].rows.len(), 6);
    assert_eq!(report.verdicts.len(), 8);
    for table in &report.tables {
        for row in &table.rows {
            assert_eq!(row.len(), table.columns.len(), "table {}", table.name);
        }
    }
    let again = (experiment.run)(&options).expect("second run");
    assert_eq!(report, again);
}
