//! Device-side TRIM engines behind one interface. An engine decides which of the three TRIM
//! steps of 002 (1: receive and DMA the range list, 2: invalidate the write buffer, 3: invalidate
//! the L2P and P2L maps) run in the foreground and which are deferred, and charges controller time
//! for each from the [`TrimCostModel`].
//!
//! Adding an engine: one file that defines the engine, its `EngineKind` constant and its
//! `SPEC` ([`EngineSpec`]: name, help, config table, constructor), and its module's name in the
//! `registry!` list of [`ENGINES`] (one line).

pub mod cost_model;
pub mod delayed_config;
pub mod engine;
pub mod trim_bitmap;
pub mod trim_buffer;

pub use cost_model::{TrimCostModel, TrimCostOverrides};
pub use delayed::DelayedTrim;
pub use delayed_config::{BeforeGcCap, DelayedConfig};
pub use engine::{
    Controller, DeferredStats, EngineInputs, EngineKind, EngineSpec, PageRange, TrimEngine, TrimStats,
    TrimSteps,
};
pub use immediate::ImmediateTrim;
pub use none::NoTrim;
pub use trim_bitmap::{full_bitmap_bytes, BitmapKind};

trimlab_sim::registry! {
    /// Every engine a config can name, in the order help and docs list them.
    pub const ENGINES: EngineSpec = [
        pub immediate, // steps 1-3 at once
        pub none, // no TRIM support
        pub delayed, // 002's Delayed TRIM
    ];
}

trimlab_sim::registry_handle!(EngineKind, EngineSpec, ENGINES, "TRIM engine");

impl EngineKind {
    pub fn build(
        self,
        cost: TrimCostModel,
        delayed: &DelayedConfig,
        logical_pages: u32,
        page_bytes: u64,
    ) -> Box<dyn TrimEngine + Send> {
        (self.spec().build)(EngineInputs { cost, delayed, logical_pages, page_bytes })
    }
}

impl Default for EngineKind {
    /// Conventional TRIM, 002's baseline.
    fn default() -> Self {
        EngineKind::Immediate
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[test]
    fn every_engine_is_unique_helped_and_round_trips() {
        let cost = TrimCostModel::default();
        let delayed = DelayedConfig::default();
        for (i, spec) in ENGINES.iter().enumerate() {
            let name = spec.kind.name();
            assert!(ENGINES[..i].iter().all(|s| s.kind != spec.kind), "{name} registered twice");
            assert!(!spec.help.trim().is_empty(), "{name} has no help");
            assert_eq!(EngineKind::parse(name), Ok(spec.kind));
            assert_eq!(spec.kind.spec().kind, spec.kind);
            let engine = spec.kind.build(cost.clone(), &delayed, 1024, 4096);
            assert_eq!(engine.name(), name, "the engine reports the name it is registered under");
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
}
