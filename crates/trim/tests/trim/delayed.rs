//! Tests of src/delayed.rs (moved out of the lib so the crate compiles once).

use trimlab_trim::*;

#[test]
fn cap_labels_and_parsing() {
    assert_eq!(BeforeGcCap::parse("all"), Ok(BeforeGcCap::All));
    assert_eq!(BeforeGcCap::parse("512MiB"), Ok(BeforeGcCap::Bytes(512 << 20)));
    assert_eq!(BeforeGcCap::parse("1GiB").map(BeforeGcCap::label), Ok("DT-1GB".into()));
    assert_eq!(BeforeGcCap::Bytes(512 << 20).label(), "DT-512MB");
    assert!(BeforeGcCap::parse("lots").unwrap_err().contains("512MiB"));
}

#[test]
fn validation_names_the_key() {
    use trimlab_trim::engine_keys::{table_of, EngineConfig, EngineLimits};
    let limits = |trim_max_ranges| EngineLimits { trim_max_ranges };
    let c = DelayedConfig { trim_buffer_entries: 8, ..DelayedConfig::default() };
    assert_eq!(c.validate(&limits(64)).unwrap_err().0, "trim_buffer_entries");
    let c = DelayedConfig { partial_region_pages: 100, ..DelayedConfig::default() };
    let e = (delayed_spec().keys.unwrap().validate)("trim.delayed", &table_of(&c), &limits(64)).unwrap_err();
    assert_eq!(e.key, "trim.delayed.partial_region_pages");
    assert!(DelayedConfig::default().validate(&limits(256)).is_ok());
}

#[test]
fn keys_are_read_and_refused_by_name() {
    let complete = delayed_spec().keys.unwrap().complete;
    let keys: trimlab_trim::KeyTable = toml::from_str("before_gc = \"512MiB\"").unwrap();
    let full = complete("trim.delayed", &keys).unwrap();
    assert_eq!(full["before_gc"].as_str(), Some("512MiB"));
    assert_eq!(full["idle_chunk_pages"].as_integer(), Some(1024), "defaults filled in");
    let bad: trimlab_trim::KeyTable = toml::from_str("before_gc = \"lots\"").unwrap();
    let e = complete("trim.delayed", &bad).unwrap_err();
    assert_eq!(e.key, "trim.delayed.before_gc");
    assert!(e.accepted.contains("512MiB"), "{e}");
    let unknown: trimlab_trim::KeyTable = toml::from_str("before_gcc = 1").unwrap();
    let e = complete("trim.delayed", &unknown).unwrap_err();
    assert_eq!(e.key, "trim.delayed.before_gcc");
    assert!(e.accepted.contains("before_gc, bitmap"), "{e}");
}

/// The delayed engine's registered spec (its module is private; the registry is the way in).
fn delayed_spec() -> &'static EngineSpec {
    EngineKind::parse("delayed").unwrap().spec()
}
