//! Which FTL the controller runs (`[ftl] kind`) and its kind-specific options, resolved from
//! `[ftl]` into an [`FtlChoice`]; the kinds themselves are registered in crate::ftl_kind.

use crate::config::{BackwardMap, ConfigError, FtlSection, FtlSpec};
/// The kinds and the resolved options, declared with the registry.
pub use crate::ftl_kind::{FtlChoice, FtlKind, StripingChoice, FTL_KINDS};
use trimlab_ftl::{BackwardUpdate, VictimPolicy, STATIC_WL_THRESHOLD_DEFAULT};

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
        let static_wl_threshold = static_wl_threshold(spec)?;
        let choice = FtlChoice {
            kind,
            striping: spec.striping.unwrap_or(kind.spec().default_striping),
            backward_map,
            erase_when_invalid: spec.erase_when_invalid,
            gc_gain_blocks_max: spec.gc_gain_blocks_max,
            log_blocks_sequential: spec.log_blocks_sequential,
            log_blocks_random: spec.log_blocks_random,
            trimmed_list_groups: spec.trimmed_list.then_some(spec.trimmed_list_groups),
            static_wl_threshold,
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

/// `[ftl] static_wl` and its threshold: `None` when off. The threshold alone, a threshold of 0
/// and FIFO victims (whose GC cycles every block in log order, levelling wear by itself, and
/// whose log a move would break) are refused by name.
fn static_wl_threshold(spec: &FtlSpec) -> Result<Option<u32>, ConfigError> {
    match (spec.static_wl, spec.static_wl_threshold) {
        (Some(true), _) if spec.gc_victim == VictimPolicy::Fifo => Err(ConfigError::new(
            "ftl.static_wl",
            true,
            "not with ftl.gc_victim = \"fifo\": FIFO GC erases every block in turn, which levels wear by itself",
        )),
        (Some(true), Some(0)) => Err(ConfigError::new("ftl.static_wl_threshold", 0, "must be at least 1 erase")),
        (Some(true), t) => Ok(Some(t.unwrap_or(STATIC_WL_THRESHOLD_DEFAULT))),
        (_, Some(t)) => Err(ConfigError::new("ftl.static_wl_threshold", t, "only with ftl.static_wl = true")),
        (_, None) => Ok(None),
    }
}
