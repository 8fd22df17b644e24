//! Tests of src/plan.rs (moved out of the lib so the crate compiles once).

use toml::Value;
use trimlab_sweep::grid::{Axis, Grid};
use trimlab_sweep::plan::*;

fn grid(seeds: Vec<u64>) -> Grid {
    let axes = vec![
        Axis { key: "b.y".into(), values: vec![Value::from("p"), Value::from("q")], line: None },
        Axis {
            key: "a.x".into(),
            values: vec![Value::from(0.1), Value::from(0.2), Value::from(0.3)],
            line: None,
        },
    ];
    Grid::new(toml::from_str("[a]\nz = 1\n").unwrap(), "t", axes, seeds).unwrap()
}

#[test]
fn last_axis_fastest_seeds_innermost() {
    let plan = Plan::new(&grid(vec![7, 5]));
    assert_eq!(plan.keys, ["a.x", "b.y"]);
    assert_eq!(plan.points.len(), 12);
    let order: Vec<String> = plan.points.iter().map(|p| format!("{} {}", p.set.join(" "), p.seed)).collect();
    assert_eq!(
        order[..5],
        [
            "a.x=0.1 b.y=\"p\" 7",
            "a.x=0.1 b.y=\"p\" 5",
            "a.x=0.1 b.y=\"q\" 7",
            "a.x=0.1 b.y=\"q\" 5",
            "a.x=0.2 b.y=\"p\" 7"
        ]
    );
    assert!(plan.points.iter().enumerate().all(|(i, p)| p.run == i));
    assert_eq!(plan.points[0].values[0], ("a.x".to_string(), serde_json::json!(0.1)));
}

#[test]
fn hash_depends_on_base_and_values_not_on_seed() {
    let plan = Plan::new(&grid(vec![1, 2]));
    assert_eq!(plan.points[0].config_hash, plan.points[1].config_hash);
    assert_ne!(plan.points[0].config_hash, plan.points[2].config_hash);
    let mut other = grid(vec![1, 2]);
    other.base.insert("seed".into(), Value::from(3));
    assert_ne!(Plan::new(&other).points[0].config_hash, plan.points[0].config_hash);
    // Fixed: a change here would orphan every journal written so far.
    assert_eq!(plan.points[0].config_hash, "f54ece33f9b17b35");
}

#[test]
fn a_grid_without_axes_is_one_point_per_seed() {
    let g = Grid::new(toml::Table::new(), "t", vec![], vec![1, 2, 3]).unwrap();
    let plan = Plan::new(&g);
    assert_eq!(plan.points.len(), 3);
    assert!(plan.points[0].set.is_empty());
}
