//! The FTL kinds' registry: unique, helped, and round-tripping through the config's spelling.

use serde::Deserialize;
use trimlab_device::ftl_kind::*;

#[test]
fn every_kind_is_unique_helped_and_round_trips() {
    for (i, spec) in FTL_KINDS.iter().enumerate() {
        let name = spec.kind.name();
        assert!(FTL_KINDS[..i].iter().all(|s| s.kind != spec.kind), "{name} registered twice");
        assert!(!spec.help.trim().is_empty(), "{name} has no help");
        assert_eq!(FtlKind::parse(name), Ok(spec.kind));
        assert_eq!(FtlKind::ALL[i], (spec.kind, name, spec.help));
        let text = serde::de::value::StrDeserializer::<serde::de::value::Error>::new(name);
        assert_eq!(FtlKind::deserialize(text), Ok(spec.kind), "the config's spelling");
    }
    let e = FtlKind::parse("hybird").unwrap_err();
    assert!(e.contains("did you mean \"hybrid\"?"), "{e}");
    assert_eq!(format!("{:?}", FtlKind::Hybrid), "Hybrid", "Debug as the old enum variant");
}
