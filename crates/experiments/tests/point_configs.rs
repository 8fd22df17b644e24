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

/// Runs experiment `name` at `scale` with a point log, then checks its emitted configs against
/// the log: the same set of configs, and every `rerun_every`-th emitted file (in file order)
/// run back from its text to the same metrics.
fn check(name: &str, scale: f64, rerun_every: usize) {
    let experiment = EXPERIMENTS.iter().find(|e| e.name == name).expect("a registered experiment");
    let log = Arc::new(PointLog::default());
    let o = Options { point_log: Some(log.clone()), ..Options::new(SEED, scale) };
    (experiment.run)(&o).unwrap_or_else(|e| panic!("{name} at scale {scale}: {e:#}"));
    let ran: BTreeMap<String, Value> =
        log.take().into_iter().map(|(config, metrics)| (config.to_toml().unwrap(), metrics)).collect();
    let files = experiment.config_files(&o).unwrap_or_else(|e| panic!("{name}: {e:#}"));
    let emitted: BTreeSet<&String> = files.iter().map(|(_, text)| text).collect();
    let not_run: Vec<&str> =
        files.iter().filter(|(_, text)| !ran.contains_key(text)).map(|(file, _)| file.as_str()).collect();
    assert!(not_run.is_empty(), "{name}: emitted but not run by the experiment: {not_run:?}");
    let not_emitted = ran.keys().filter(|text| !emitted.contains(text)).count();
    assert_eq!(
        not_emitted,
        0,
        "{name}: {not_emitted} points run but not emitted, e.g.\n{:?}",
        ran.keys().find(|text| !emitted.contains(text))
    );
    let mut rerun = 0;
    for (file, text) in files.iter().step_by(rerun_every) {
        let config = RunConfig::parse(text, file).unwrap_or_else(|e| panic!("{name}/{file}: {e}\n{text}"));
        config.resolve().unwrap_or_else(|e| panic!("{name}/{file}: {e}\n{text}"));
        assert_eq!(&config.to_toml().unwrap(), text, "{name}/{file} does not round-trip");
        let metrics = trimlab_scenario::run(&config, None, &mut ())
            .unwrap_or_else(|e| panic!("{name}/{file}: {e}"))
            .metrics;
        assert!(
            metrics == ran[text],
            "{name}/{file}: the emitted config's metrics differ from the experiment's run"
        );
        rerun += 1;
    }
    assert!(rerun > 0, "{name}: no point was run back");
}

#[test]
fn waf_points_round_trip() {
    check("waf", 0.03, 1);
}

#[test]
fn delayed_trim_points_round_trip() {
    check("delayed-trim", 0.03, 1);
}

#[test]
fn ftl_trim_points_round_trip() {
    check("ftl-trim", 1.0 / 32.0, 1);
}

#[test]
fn lazy_trim_points_round_trip() {
    check("lazy-trim", 0.03, 1);
}

#[test]
fn selective_trim_points_round_trip() {
    check("selective-trim", 0.03, 3);
}

#[test]
fn discard_vs_fstrim_points_round_trip() {
    check("discard-vs-fstrim", 0.03, 1);
}

/// Every registered experiment has a test above.
#[test]
fn every_experiment_is_checked() {
    let source = include_str!("point_configs.rs");
    for e in EXPERIMENTS {
        assert!(source.contains(&format!("check(\"{}\",", e.name)), "{} has no round-trip test", e.name);
    }
    assert!(point_configs("no-such-experiment", &Options::new(1, 1.0)).is_none());
}
