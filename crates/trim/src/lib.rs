//! Device-side TRIM engines behind one interface. An engine decides which of the three TRIM
//! steps of 002 (1: receive and DMA the range list, 2: invalidate the write buffer, 3: invalidate
//! the L2P and P2L maps) run in the foreground and which are deferred, and charges controller time
//! for each from the [`TrimCostModel`].
//!
//! Adding an engine: one file that defines the engine, its `EngineKind` constant, its keys (a
//! serde struct implementing [`EngineConfig`]), and its `SPEC` ([`EngineSpec`]: name, help,
//! keys, report figures, constructor), and its module's name in the `registry!` list of
//! [`ENGINES`] (one line).

pub mod cost_model;
pub mod delayed_config;
pub mod engine;
pub mod engine_keys;
pub mod trim_bitmap;
pub mod trim_buffer;

pub use cost_model::{TrimCostModel, TrimCostOverrides};
pub use delayed::{DeferredStats, DelayedTrim};
pub use delayed_config::{BeforeGcCap, DelayedConfig};
pub use engine::{
    Controller, EngineInputs, EngineKind, EngineSpec, Figure, PageRange, TrimEngine, TrimStats, TrimSteps,
};
pub use engine_keys::{EngineConfig, EngineLimits, EngineSection, KeyError, KeyTable};
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
    /// The engine, built with its own keys (`keys`: its section as resolution completed it).
    pub fn build(
        self,
        cost: TrimCostModel,
        keys: &KeyTable,
        logical_pages: u32,
        unit_bytes: u64,
    ) -> Box<dyn TrimEngine + Send> {
        (self.spec().build)(EngineInputs { cost, keys, logical_pages, unit_bytes })
    }

    /// The registered engine whose keys are the config table `section` (`"trim.delayed"`).
    pub fn with_section(section: &str) -> Option<EngineKind> {
        ENGINES.iter().find(|s| s.keys.is_some() && s.section() == section).map(|s| s.kind)
    }
}

/// The figures a report of a run of `engine` carries, each key once, in registry order: the
/// running engine's own, and those every report carries ([`Figure::every_report`], 0 where
/// another engine runs). A newly registered engine's figures thus appear in its runs only.
pub fn report_figures(engine: Option<EngineKind>) -> Vec<Figure> {
    let mut all: Vec<Figure> = Vec::new();
    let reported = ENGINES
        .iter()
        .flat_map(|s| s.figures.iter().filter(move |f| f.every_report || Some(s.kind) == engine));
    for figure in reported {
        if !all.iter().any(|f| f.key == figure.key) {
            all.push(*figure);
        }
    }
    all
}

/// The config tables of the engines that have keys (`trim.delayed`), for messages.
pub fn engine_sections() -> Vec<String> {
    ENGINES.iter().filter(|s| s.keys.is_some()).map(|s| s.section()).collect()
}

/// A small page FTL (no write buffer) for engines' unit tests: an engine's file tests the
/// engine against real controller state.
#[cfg(test)]
pub(crate) fn test_controller_state(logical_pages: u32) -> (trimlab_ftl::PageFtl, trimlab_ftl::WriteBuffer) {
    let geometry = trimlab_nand::Geometry {
        channels: 1,
        chips_per_channel: 1,
        dies_per_chip: 1,
        planes_per_die: 1,
        blocks_per_plane: 32,
        pages_per_block: 16,
        page_bytes: 4096,
        flash_page_bytes: 4096,
    };
    let config = trimlab_ftl::FtlConfig {
        logical_pages,
        gc_free_blocks_min: 2,
        victim: trimlab_ftl::VictimPolicy::Greedy,
        track_data: true,
        multi_plane: false,
    };
    trimlab_ftl::PageFtl::check_config(&geometry, &config)
        .expect("the test geometry holds the logical pages");
    let ftl = trimlab_ftl::PageFtl::new(geometry, trimlab_nand::Timing::tlc_nvme(), config);
    (ftl, trimlab_ftl::WriteBuffer::new(0, 1))
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
}
