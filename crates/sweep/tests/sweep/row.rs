//! Tests of src/row.rs (moved out of the lib so the crate compiles once).

use serde_json::json;
use trimlab_sweep::row::*;

#[test]
fn metrics_flatten_without_the_config_echo() {
    let m = json!({"seed": 3, "config_hash": "ab", "config": {"device": {"x": 1}},
                   "report": {"waf": 1.5, "gc": {"victims": 2}, "p": [10, 20]}, "ops": 7,
                   "phases": [{"name": "fill"}]});
    let cols = metric_columns(&m);
    let names: Vec<&str> = cols.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(
        names,
        [
            "ops",
            "phases.0.name",
            "report.gc.victims",
            "report.p.0",
            "report.p.1",
            "report.waf",
            "run_config_hash"
        ]
    );
    assert_eq!(cols[5].1, json!(1.5));
}
