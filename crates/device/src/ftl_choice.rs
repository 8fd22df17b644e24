//! Which FTL the controller runs (`[ftl] kind`) and its kind-specific options, resolved into
//! an [`FtlChoice`] and built behind the one `Ftl` seam.

use crate::config::{BackwardMap, ConfigError, FtlSection, FtlSpec};
/// The `[ftl]` keys' types, declared with the section.
pub use crate::config::{FtlKind, StripingChoice};
use serde::Serialize;
use trimlab_ftl::{BackwardUpdate, Ftl, FtlConfig, PageFtl, StripeUnit};
use trimlab_hybrid::{HybridConfig, HybridFtl, Striping};
use trimlab_nand::{Geometry, Timing};

/// The resolved FTL: kind plus every option of that kind (the others keep their defaults).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FtlChoice {
    pub kind: FtlKind,
    /// Page FTL default: page; hybrid default: block (004's setup).
    pub striping: StripingChoice,
    /// Page FTL (004 §4.1): "eager" or "lazy" (with reconcile_every_pages).
    pub backward_map: BackwardUpdate,
    /// Page FTL: erase a full block as soon as its last valid page is invalidated.
    pub erase_when_invalid: bool,
    /// Page FTL: at most this many blocks gained per GC invocation (None: up to the threshold).
    pub gc_gain_blocks_max: Option<u32>,
    /// Hybrid: SW and RW log blocks per chip (004: 1 and 4).
    pub log_blocks_sequential: u32,
    pub log_blocks_random: u32,
    /// Hybrid: keep TRIMs in 004's trimmed-range list (merges drop listed pages) with this many
    /// hash groups; `None` unmaps trimmed pages at once.
    pub trimmed_list_groups: Option<u32>,
}

impl FtlChoice {
    /// The FTL of `spec` (the user's keys over the preset's); `set` (the user's keys) says
    /// which keys were written, so that a key of the other kind is refused.
    pub fn resolve(spec: &FtlSpec, set: &FtlSection) -> Result<FtlChoice, ConfigError> {
        let kind = spec.kind;
        let backward_map = match spec.backward_map {
            BackwardMap::Eager => BackwardUpdate::Eager,
            BackwardMap::Lazy => {
                BackwardUpdate::Lazy { reconcile_every_pages: spec.reconcile_every_pages.unwrap_or(0) }
            }
        };
        if let (Some(pages), BackwardMap::Eager) = (spec.reconcile_every_pages, spec.backward_map) {
            return Err(ConfigError::new(
                "ftl.reconcile_every_pages",
                pages,
                "only with ftl.backward_map = \"lazy\"",
            ));
        }
        if spec.trimmed_list_groups == 0 {
            return Err(ConfigError::new("ftl.trimmed_list_groups", 0, "must be at least 1"));
        }
        let choice = FtlChoice {
            kind,
            striping: spec.striping.unwrap_or(match kind {
                FtlKind::Page => StripingChoice::Page,
                FtlKind::Hybrid => StripingChoice::Block,
            }),
            backward_map,
            erase_when_invalid: spec.erase_when_invalid,
            gc_gain_blocks_max: spec.gc_gain_blocks_max,
            log_blocks_sequential: spec.log_blocks_sequential,
            log_blocks_random: spec.log_blocks_random,
            trimmed_list_groups: spec.trimmed_list.then_some(spec.trimmed_list_groups),
        };
        choice.check_kind_keys(set)?;
        Ok(choice)
    }

    /// A key that only the other kind reads is an error, not silently ignored.
    fn check_kind_keys(&self, ftl: &FtlSection) -> Result<(), ConfigError> {
        let hybrid_only = [
            ("ftl.log_blocks_sequential", ftl.log_blocks_sequential.is_some()),
            ("ftl.log_blocks_random", ftl.log_blocks_random.is_some()),
            ("ftl.trimmed_list", ftl.trimmed_list.is_some()),
            ("ftl.trimmed_list_groups", ftl.trimmed_list_groups.is_some()),
        ];
        let page_only = [
            ("ftl.backward_map", ftl.backward_map.is_some()),
            ("ftl.erase_when_invalid", ftl.erase_when_invalid.is_some()),
            ("ftl.gc_gain_blocks_max", ftl.gc_gain_blocks_max.is_some()),
            ("ftl.gc_victim", ftl.gc_victim.is_some()),
            ("ftl.gc_free_blocks", ftl.gc_free_blocks.is_some()),
        ];
        let (wrong, other) = match self.kind {
            FtlKind::Page => (&hybrid_only[..], "hybrid"),
            FtlKind::Hybrid => (&page_only[..], "page"),
        };
        if let Some((key, _)) = wrong.iter().find(|(_, set)| *set) {
            return Err(ConfigError::new(key, "set", format!("only read by ftl.kind = \"{other}\"")));
        }
        Ok(())
    }

    fn hybrid_config(&self, ftl: &FtlConfig) -> HybridConfig {
        HybridConfig {
            logical_pages: ftl.logical_pages,
            sequential_logs: self.log_blocks_sequential,
            random_logs: self.log_blocks_random,
            striping: match self.striping {
                StripingChoice::Page => Striping::Page,
                StripingChoice::Block => Striping::Block,
            },
            trim_groups: self.trimmed_list_groups,
            track_data: ftl.track_data,
        }
    }

    /// Checks the chosen kind fits the geometry; the message names the setting.
    pub(crate) fn check(&self, geometry: &Geometry, ftl: &FtlConfig) -> Result<(), String> {
        match self.kind {
            FtlKind::Page => PageFtl::check_config(geometry, ftl),
            FtlKind::Hybrid => HybridFtl::check_config(geometry, &self.hybrid_config(ftl)),
        }
    }

    /// Builds the FTL over an erased array.
    pub fn build(&self, geometry: &Geometry, timing: &Timing, ftl: FtlConfig) -> Box<dyn Ftl> {
        match self.kind {
            FtlKind::Page => {
                let mut ftl = PageFtl::new(geometry.clone(), timing.clone(), ftl);
                // The defaults leave the FTL exactly as built; only non-default options are set.
                if self.striping == StripingChoice::Block {
                    ftl.set_stripe_unit(StripeUnit::Block);
                }
                if self.backward_map != BackwardUpdate::Eager {
                    ftl.set_backward_update(self.backward_map);
                }
                ftl.set_erase_when_invalid(self.erase_when_invalid);
                ftl.set_gc_gain_blocks_max(self.gc_gain_blocks_max);
                Box::new(ftl)
            }
            FtlKind::Hybrid => {
                Box::new(HybridFtl::new(geometry.clone(), timing.clone(), self.hybrid_config(&ftl)))
            }
        }
    }
}
