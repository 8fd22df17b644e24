//! Which FTL the controller runs (`[ftl] kind`) and its kind-specific options, resolved from
//! `[ftl]` into an [`FtlChoice`]; the kinds themselves are registered in crate::ftl_kind.

use crate::config::{BackwardMap, ConfigError, FtlSection, FtlSpec};
/// The kinds and the resolved options, declared with the registry.
pub use crate::ftl_kind::{FtlChoice, FtlKind, StripingChoice, FTL_KINDS};
use trimlab_ftl::BackwardUpdate;

/// Resolution from `[ftl]` (the kinds' files build what it resolves).
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
            striping: spec.striping.unwrap_or(kind.spec().default_striping),
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

    /// A key that only another kind reads is an error, not silently ignored.
    fn check_kind_keys(&self, ftl: &FtlSection) -> Result<(), ConfigError> {
        let set = ftl.set_keys();
        let own = self.kind.spec().own_keys;
        for other in FTL_KINDS.iter().filter(|s| s.kind != self.kind) {
            if let Some(key) = other.own_keys.iter().find(|k| !own.contains(k) && set.contains(k)) {
                return Err(ConfigError::new(
                    &format!("ftl.{key}"),
                    "set",
                    format!("only read by ftl.kind = \"{}\"", other.kind.name()),
                ));
            }
        }
        Ok(())
    }
}
