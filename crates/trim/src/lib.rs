//! Device-side TRIM engines behind one interface. An engine decides which of the three TRIM
//! steps of 002 (1: receive and DMA the range list, 2: invalidate the write buffer, 3: invalidate
//! the L2P and P2L maps) run in the foreground and which are deferred, and charges controller time
//! for each from the [`TrimCostModel`].

pub mod cost_model;
pub mod delayed;
pub mod engine;
pub mod immediate;
pub mod none;
pub mod trim_bitmap;
pub mod trim_buffer;

pub use cost_model::{TrimCostModel, TrimCostOverrides};
pub use delayed::{BeforeGcCap, DelayedConfig, DelayedTrim};
pub use engine::{Controller, DeferredStats, PageRange, TrimEngine, TrimStats, TrimSteps};
pub use immediate::ImmediateTrim;
pub use none::NoTrim;
pub use trim_bitmap::{full_bitmap_bytes, BitmapKind};

use serde::{Deserialize, Serialize};

/// The engines a config can name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum EngineKind {
    /// Steps 1-3 at once, before the TRIM completes (the conventional baseline of 002).
    #[default]
    Immediate,
    /// TRIM is acknowledged and ignored: a drive without TRIM support.
    None,
    /// Delayed TRIM of 002: step 1 at once, steps 2-3 at idle or before GC.
    Delayed,
}

impl EngineKind {
    pub fn build(
        self,
        cost: TrimCostModel,
        delayed: &DelayedConfig,
        logical_pages: u32,
        page_bytes: u64,
    ) -> Box<dyn TrimEngine + Send> {
        match self {
            EngineKind::Immediate => Box::new(ImmediateTrim::new(cost)),
            EngineKind::None => Box::new(NoTrim::new(cost)),
            EngineKind::Delayed => Box::new(DelayedTrim::new(cost, delayed, logical_pages, page_bytes)),
        }
    }

    /// Every engine with a one-line description (the CLI help lists these).
    pub const ALL: &'static [(&'static str, &'static str)] = &[
        ("immediate", "steps 1-3 in the foreground (conventional TRIM)"),
        ("none", "TRIM acknowledged and ignored (no TRIM support)"),
        ("delayed", "Delayed TRIM: step 1 now, steps 2-3 at idle or before GC ([trim.delayed])"),
    ];
}
