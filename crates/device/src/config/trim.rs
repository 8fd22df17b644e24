//! `[trim]`: the TRIM engine, its costs (`[trim.cost]`, laid over the preset's) and the
//! delayed engine's options (`[trim.delayed]`), and the bounds every cost must keep.

use super::bounds::{at_most, operation_ns, PER_PAGE_NS_MAX};
use super::ConfigError;
use serde::{Deserialize, Serialize};
use trimlab_trim::{DelayedConfig, EngineKind, TrimCostModel, TrimCostOverrides};

/// `[trim]`. Its sub-tables are typed where they live: the costs in `trimlab_trim::cost_model`,
/// the delayed engine's knobs beside the engine.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrimSection {
    pub engine: Option<EngineKind>,
    /// `[trim.cost]`: the keys given replace the preset's TRIM costs.
    pub cost: Option<TrimCostOverrides>,
    /// `[trim.delayed]`: used when `engine = "delayed"`.
    pub delayed: Option<DelayedConfig>,
}

/// Checks every TRIM cost: per command and per range at most `OPERATION_NS_MAX`, per page or
/// bitmap word at most [`PER_PAGE_NS_MAX`].
pub(super) fn check_trim_cost(cost: &TrimCostModel) -> Result<(), ConfigError> {
    for (key, value) in [
        ("trim.cost.command_ns", cost.command_ns),
        ("trim.cost.range_ns", cost.range_ns),
        ("trim.cost.trim_buffer_append_ns", cost.trim_buffer_append_ns),
    ] {
        operation_ns(key, value)?;
    }
    for (key, value) in [
        ("trim.cost.buffer_lookup_ns", cost.buffer_lookup_ns),
        ("trim.cost.map_lookup_ns", cost.map_lookup_ns),
        ("trim.cost.map_invalidate_ns", cost.map_invalidate_ns),
        ("trim.cost.bitmap_word_ns", cost.bitmap_word_ns),
        ("trim.cost.bitmap_check_ns", cost.bitmap_check_ns),
    ] {
        at_most(key, value, PER_PAGE_NS_MAX, "1 ms per page or bitmap word (a TRIM may name 2^32 pages)")?;
    }
    Ok(())
}
