//! Bounded fuzzing of the grid expander (issue 26): arbitrary grid files never panic the
//! parser, the run count, the expansion or the check of each point's config.
//!
//! Strategy: a grid file of optional `seeds` and `base` lines and up to 8 `[grid]` keys (real
//! config paths, nested tables, odd paths), each with a list of values drawn from edge values
//! (huge and negative integers, NaN, infinities, empty strings, arrays, inline tables, dates),
//! or an arbitrary line. What parses is counted; a grid of at most 2000 runs is expanded into
//! its plan, and every point's `--set` assignments are applied to the base and resolved.
//!
//! Invariants: no panic; a grid over the run limit is refused before expansion; the plan has
//! exactly `run_count` points; each point's config hash is a 16-digit hex string, and points
//! with different values have different hashes.
//!
//! Time: 4000 grids, about a second; the runner's random stream is fixed.

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use trimlab_sweep::{grid::RUNS_MAX, Grid, Plan, Runner, ScenarioRunner};

const KEYS: &[&str] = &[
    "\"device.spare_factor\"",
    "\"device.logical_bytes\"",
    "\"device.firmware_ns\"",
    "\"device.pages_per_block\"",
    "\"trim.engine\"",
    "\"trim.cost.command_ns\"",
    "\"workload.writes\"",
    "\"workload.trim_fraction\"",
    "\"workload.think_time\"",
    "\"ftl.gc_free_blocks\"",
    "\"device.x\"",
    "\"workload.kind\"",
];

/// Values every grid must refuse, drawn less often so that most grids parse.
const ODD: &[&str] = &["nan", "inf", "-inf", "[1, nan]", "{ b = inf }", "18446744073709551616"];

const VALUES: &[&str] = &[
    "0",
    "1",
    "-1",
    "0.2",
    "1.5",
    "9223372036854775807",
    "-9223372036854775808",
    "1e308",
    "true",
    "\"\"",
    "\"immediate\"",
    "\"none\"",
    "\"16MiB\"",
    "\"16777216TiB\"",
    "\"1e30x\"",
    "\"2x\"",
    "\"366d\"",
    "\"30%\"",
    "[]",
    "{ a = 1 }",
    "1979-05-27T07:32:00Z",
];

fn grid_text() -> impl Strategy<Value = String> {
    let values = prop_oneof![
        1 => Just(Vec::new()),
        12 => prop::collection::vec(prop_oneof![10 => prop::sample::select(VALUES), 1 => prop::sample::select(ODD)], 1..6),
    ]
    .prop_map(|v| format!("[{}]", v.join(", ")));
    // Distinct keys (a key given twice is a TOML error, which is tested once is enough).
    let axes = prop::sample::subsequence(KEYS, 0..6)
        .prop_flat_map(move |keys| {
            let n = keys.len();
            (Just(keys), prop::collection::vec(values.clone(), n))
        })
        .prop_map(|(keys, values)| {
            keys.iter().zip(values).map(|(k, v)| format!("{k} = {v}")).collect::<Vec<_>>()
        });
    let extra = prop_oneof![
        20 => Just(String::new()),
        1 => "[ -~]{0,30}",
        1 => Just("[grid.device]\npages_per_block = [16, 32]".to_string()),
        1 => Just("\"a..b\" = [1]".to_string()),
        1 => Just("\"\" = [1]".to_string()),
        1 => Just("seed = [1, 2]".to_string()),
    ];
    let seeds = prop_oneof![
        6 => Just(String::new()),
        6 => Just("seeds = [1, 2]\n".to_string()),
        1 => Just("seeds = [1, 1]\n".to_string()),
        1 => Just("seeds = []\n".to_string()),
        1 => Just("seeds = [-1]\n".to_string()),
        1 => Just("seeds = [18446744073709551615]\n".to_string()),
        3 => Just("seeds = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\n".to_string()),
    ];
    let base = prop_oneof![
        6 => Just("[base.device]\nlogical_bytes = \"16MiB\"\nchannels = 1\npages_per_block = 32\n".to_string()),
        1 => Just("base = 3\n".to_string()),
        3 => Just(String::new()),
    ];
    (seeds, base, axes, extra)
        .prop_map(|(seeds, base, axes, extra)| format!("{seeds}{base}[grid]\n{}\n{extra}\n", axes.join("\n")))
}

#[test]
fn arbitrary_grids_never_panic_the_expander() {
    let config =
        Config { cases: 4000, failure_persistence: None, max_shrink_iters: 256, ..Config::default() };
    let mut runner = TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    let counts = std::cell::Cell::new((0u32, 0u32));
    let result = runner.run(&grid_text(), |text| {
        let grid = match Grid::parse(&text, "fuzz.toml", |_| {
            Err(trimlab_sweep::SweepError::Grid("no files".into()))
        }) {
            Ok(grid) => grid,
            Err(e) => {
                prop_assert!(e.to_string().contains("fuzz.toml") || e.to_string() == "no files", "{e}");
                return Ok(());
            }
        };
        counts.set((counts.get().0 + 1, counts.get().1));
        let runs = grid.run_count();
        prop_assert!(runs <= RUNS_MAX);
        if runs > 2000 {
            return Ok(());
        }
        counts.set((counts.get().0, counts.get().1 + 1));
        let plan = Plan::new(&grid);
        prop_assert_eq!(plan.points.len(), runs);
        // Points that differ in their values differ in their hash (NaN, inf and -inf once
        // shared one, issue 26).
        let mut hashes = std::collections::BTreeMap::new();
        for point in &plan.points {
            let set = hashes.entry(point.config_hash.clone()).or_insert_with(|| point.set.clone());
            prop_assert_eq!(&*set, &point.set, "two points share config_hash {}", point.config_hash);
        }
        for point in plan.points.iter().filter(|p| p.seed == grid.seeds[0]).take(50) {
            prop_assert!(
                point.config_hash.len() == 16 && point.config_hash.chars().all(|c| c.is_ascii_hexdigit())
            );
            let _ = ScenarioRunner.check(&plan.base_text, &plan.origin, &point.set);
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    // Grids that parsed, and that were expanded.
    let (parsed, expanded) = counts.get();
    eprintln!("fuzz_grid: {parsed} grids parsed, {expanded} expanded");
    assert!(parsed >= 300 && expanded >= 200, "too few grids get far: {parsed} parsed, {expanded} expanded");
}
