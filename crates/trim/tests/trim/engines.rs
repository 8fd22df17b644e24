//! Tests of src/lib.rs: every engine through the common TrimEngine interface (moved out of the lib so the crate compiles once).

use serde::Deserialize;
use trimlab_trim::*;

#[test]
fn every_engine_is_unique_helped_and_round_trips() {
    let cost = TrimCostModel::default();
    for (i, spec) in ENGINES.iter().enumerate() {
        let figures = report_figures(Some(spec.kind));
        let name = spec.kind.name();
        assert!(ENGINES[..i].iter().all(|s| s.kind != spec.kind), "{name} registered twice");
        assert!(!spec.help.trim().is_empty(), "{name} has no help");
        assert_eq!(EngineKind::parse(name), Ok(spec.kind));
        assert_eq!(spec.kind.spec().kind, spec.kind);
        let mut keys = KeyTable::new();
        if let Some(section) = spec.keys {
            keys = (section.complete)(&spec.section(), &keys).expect("every key has a default");
            assert_eq!(EngineKind::with_section(&spec.section()), Some(spec.kind));
            let limits = EngineLimits { trim_max_ranges: 256 };
            assert_eq!((section.validate)(&spec.section(), &keys, &limits), Ok(()), "{name}'s defaults");
        }
        let engine = spec.kind.build(cost.clone(), &keys, 1024, 4096);
        assert_eq!(engine.name(), name, "the engine reports the name it is registered under");
        let own: Vec<&str> = engine.figures().iter().map(|(k, _)| *k).collect();
        let declared: Vec<&str> = spec.figures.iter().map(|f| f.key).collect();
        assert_eq!(own, declared, "{name} reports the figures its SPEC declares, in order");
        // A key two engines share is one measure: a count in both, or a gauge in both.
        for f in spec.figures {
            let same = figures.iter().any(|g| g.key == f.key && g.gauge == f.gauge);
            assert!(same, "{name}'s {} is counted as another engine counts it", f.key);
        }
        let text = serde::de::value::StrDeserializer::<serde::de::value::Error>::new(name);
        assert_eq!(EngineKind::deserialize(text), Ok(spec.kind), "the config's spelling");
    }
}

#[test]
fn a_bad_name_lists_the_engines_and_the_closest() {
    let e = EngineKind::parse("delayd").unwrap_err();
    assert!(e.contains("did you mean \"delayed\"?"), "{e}");
    assert!(e.contains("accepted: immediate, none, delayed"), "{e}");
    assert_eq!(format!("{:?}", EngineKind::Delayed), "Delayed", "Debug as the old enum variant");
}
