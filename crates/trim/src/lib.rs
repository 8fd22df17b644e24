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

impl Default for EngineKind {
    /// Conventional TRIM, 002's baseline.
    fn default() -> Self {
        EngineKind::Immediate
    }
}
