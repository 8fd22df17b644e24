//! `--set KEY.PATH=VALUE` overrides: values parsed as TOML or kept as bare strings, malformed ones explained.

use trimlab_scenario::{apply_set, ScenarioError};

fn set(text: &str, assignment: &str) -> Result<toml::Table, ScenarioError> {
    let mut doc: toml::Table = toml::from_str(text).unwrap();
    apply_set(&mut doc, assignment).map(|_| doc)
}

#[test]
fn numbers_booleans_and_bare_strings() {
    let doc = set("[device]\nspare_factor = 0.2\n", "device.spare_factor=0.1").unwrap();
    assert_eq!(doc["device"]["spare_factor"].as_float(), Some(0.1));
    let doc = set("", "device.logical_bytes=8GiB").unwrap();
    assert_eq!(doc["device"]["logical_bytes"].as_str(), Some("8GiB"));
    let doc = set("", "ftl.track_data = true").unwrap();
    assert_eq!(doc["ftl"]["track_data"].as_bool(), Some(true));
    let doc = set("", "trim.delayed.before_gc=\"512MiB\"").unwrap();
    assert_eq!(doc["trim"]["delayed"]["before_gc"].as_str(), Some("512MiB"));
}

#[test]
fn malformed_assignments_say_what_is_expected() {
    let e = set("", "device.spare_factor").unwrap_err().to_string();
    assert!(e.contains("KEY.PATH=VALUE"), "{e}");
    let e = set("", "device..x=1").unwrap_err().to_string();
    assert!(e.contains("empty part"), "{e}");
    let e = set("seed = 3\n", "seed.x=1").unwrap_err().to_string();
    assert!(e.contains("`seed` is a value"), "{e}");
}
