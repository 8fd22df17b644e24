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

/// The costs charged once per command or per range; every other cost is per page or per
/// bitmap word, so a new cost gets the tighter bound unless it is listed here.
const PER_OPERATION_COSTS: [&str; 3] = ["command_ns", "range_ns", "trim_buffer_append_ns"];

/// Checks every TRIM cost: per command and per range at most `OPERATION_NS_MAX`, per page or
/// bitmap word at most [`PER_PAGE_NS_MAX`]. The keys come from the model's own fields.
pub(super) fn check_trim_cost(cost: &TrimCostModel) -> Result<(), ConfigError> {
    let overrides = TrimCostOverrides::all(cost);
    let costs = serde_json::to_value(&overrides).unwrap_or_default();
    for key in TrimCostOverrides::KEYS {
        let Some(value) = costs.get(key).and_then(|v| v.as_u64()) else {
            unreachable!("trim.cost.{key} is a u64 cost: {costs}")
        };
        let name = format!("trim.cost.{key}");
        if PER_OPERATION_COSTS.contains(key) {
            operation_ns(&name, value)?;
        } else {
            at_most(
                &name,
                value,
                PER_PAGE_NS_MAX,
                "1 ms per page or bitmap word (a TRIM may name 2^32 pages)",
            )?;
        }
    }
    Ok(())
}
