//! Tests of src/grid.rs (moved out of the lib so the crate compiles once).

use toml::{Table, Value};
use trimlab_sweep::grid::*;
use trimlab_sweep::SweepError;

fn parse(text: &str) -> Result<Grid, SweepError> {
    Grid::parse(text, "g.toml", |path| Ok((format!("[device]\nlogical_bytes = \"{path}\"\n"), path.into())))
}

fn error(text: &str) -> String {
    parse(text).expect_err("grid was accepted").to_string()
}

#[test]
fn reads_axes_sorted_with_nested_tables_and_seeds() {
    let g = parse(
        "seeds = [3, 1]\n[grid]\n\"trim.engine\" = [\"none\", \"immediate\"]\n[grid.device]\nspare_factor = [0.1, 0.2]\n",
    )
    .unwrap();
    let keys: Vec<_> = g.axes.iter().map(|a| a.key.as_str()).collect();
    assert_eq!(keys, ["device.spare_factor", "trim.engine"]);
    assert_eq!(g.axes[1].values, [Value::from("none"), Value::from("immediate")]);
    assert_eq!(g.axes[1].line, Some(3));
    assert_eq!(g.seeds, [3, 1]);
    assert_eq!(g.run_count(), 8);
}

#[test]
fn base_is_a_path_or_an_inline_table_and_gives_the_default_seed() {
    let g = parse("base = \"64MiB\"\n[grid]\na = [1]\n").unwrap();
    assert_eq!(g.base["device"]["logical_bytes"].as_str(), Some("64MiB"));
    assert_eq!(g.seeds, [1]);
    let g = parse("[base]\nseed = 42\n[base.device]\nspare_factor = 0.1\n[grid]\na = [1]\n").unwrap();
    assert_eq!(g.base["device"]["spare_factor"].as_float(), Some(0.1));
    assert_eq!(g.seeds, [42]);
}

#[test]
fn bad_grids_say_where_and_what_is_accepted() {
    assert_eq!(
        error("[grid]\n\"device.spare_factor\" = []\n"),
        "g.toml:2: grid key `device.spare_factor` has an empty list of values (give at least one value)"
    );
    assert_eq!(
        error("[grid]\nx = 0.1\n"),
        "g.toml:2: grid key `x` = 0.1 is not a list of values (write [0.1] to fix it at one value)"
    );
    assert!(error("sedes = [1]\n").contains("unknown field `sedes`"), "{}", error("sedes = [1]\n"));
    assert_eq!(error("seeds = []\n"), "g.toml: seeds is an empty list (give at least one seed)");
    assert_eq!(error("seeds = [2, 2]\n"), "g.toml: seed 2 is listed twice in seeds");
    assert!(error("seeds = [-1]\n").contains("g.toml"));
    assert_eq!(
        error("base = 3\n"),
        "g.toml: base = 3 (accepted: a path to a config file, or a [base] table)"
    );
    assert_eq!(
        error("[grid]\nseed = [1, 2]\n"),
        "g.toml:2: `seed` cannot be a grid key; list the seeds in `seeds = [...]`"
    );
    assert_eq!(
        error("[grid]\n\"a.b\" = [1]\na = [{ b = 1 }]\n"),
        "g.toml: grid keys `a` and `a.b` overlap (one is inside the other)"
    );
    assert!(error("[grid]\n\"a..b\" = [1]\n").contains("`a..b` is not a dotted config path"));
}

/// A base that cannot be read names the grid file and its `base` line, and the reason
/// once (an error chain printed the I/O error twice).
#[test]
fn a_missing_base_names_the_grid_file() {
    let dir = std::env::temp_dir().join(format!("trimlab-grid-base-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let grid = dir.join("g.toml");
    std::fs::write(&grid, "base = \"no-such-base.toml\"\nseeds = [1]\n").unwrap();
    let e = Grid::load(&grid).expect_err("a missing base was accepted");
    // What `anyhow`'s "{:#}" prints: the error and each source after it.
    let mut chain = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        chain += &format!(": {s}");
        source = s.source();
    }
    assert!(chain.contains("g.toml: base = \"no-such-base.toml\""), "{chain}");
    assert_eq!(chain.matches("os error").count(), 1, "{chain}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 26: NaN, inf and -inf all became JSON null and shared one config_hash.
#[test]
fn non_finite_values_are_refused() {
    for v in ["nan", "inf", "-inf", "+inf", "-nan"] {
        let e = error(&format!("[grid]\n\"device.spare_factor\" = [0.1, {v}]\n"));
        assert!(e.starts_with("g.toml:2: grid key `device.spare_factor` = ") && e.contains("finite"), "{e}");
    }
    let e = error("[grid]\n\"a\" = [{ b = [1.0, nan] }]\n");
    assert!(e.contains("finite"), "{e}");
}

/// Issue 26: 2^64 points reported "0 runs" and spun, 10^20 spun, 10^8 aborted on an 8.8 GB
/// allocation; the count is checked before the plan exists.
#[test]
fn a_grid_too_large_is_refused_before_it_is_expanded() {
    let axis = |i: usize, n: usize| Axis {
        key: format!("k{i:02}"),
        values: (0..n as i64).map(Value::from).collect(),
        line: None,
    };
    for (axes, seeds) in [
        ((0..64).map(|i| axis(i, 2)).collect::<Vec<_>>(), 1u64),
        ((0..20).map(|i| axis(i, 10)).collect(), 1),
        ((0..8).map(|i| axis(i, 10)).collect(), 1),
        ((0..6).map(|i| axis(i, 10)).collect(), 2),
    ] {
        let e = Grid::new(Table::new(), "g", axes, (1..=seeds).collect()).unwrap_err().to_string();
        assert!(e.contains(&format!("more than the {RUNS_MAX} a sweep may have")), "{e}");
    }
    let g = Grid::new(Table::new(), "g", (0..6).map(|i| axis(i, 10)).collect(), vec![1]).unwrap();
    assert_eq!(g.run_count(), RUNS_MAX);
}
