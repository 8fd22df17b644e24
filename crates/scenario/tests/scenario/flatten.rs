//! Flattening a JSON value into dotted keys in order (the config hash and `--set` listing).

use trimlab_scenario::flatten;

#[test]
fn flattens_nested_values_in_order() {
    let v = serde_json::json!({"a": {"b": 1, "c": "x"}, "d": [true]});
    let keys: Vec<_> = flatten(&v).into_iter().map(|(k, _)| k).collect();
    assert_eq!(keys, ["a.b", "a.c", "d.0"]);
}
