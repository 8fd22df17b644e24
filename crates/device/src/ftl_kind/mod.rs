//! The FTL kinds a controller can run (`[ftl] kind`): the registry ([`FTL_KINDS`]) and what
//! each kind declares ([`FtlKindSpec`]: its name, help, default striping, the `[ftl]` keys only
//! it reads, its geometry check and its constructor behind the one `Ftl` seam), and the
//! resolved options every kind is built from ([`FtlChoice`]).
//!
//! Adding a kind: one file that defines its `FtlKind` constant and its `SPEC`, and its module's
//! name in the `registry!` list of [`FTL_KINDS`] (one line).

use serde::{Deserialize, Serialize};
use trimlab_ftl::{BackwardUpdate, Ftl, FtlConfig};
use trimlab_nand::{Geometry, Timing};

trimlab_sim::registry! {
    /// Every FTL kind a config can name, in the order help and docs list them.
    pub const FTL_KINDS: FtlKindSpec = [
        pub page, // page mapping (the default)
        pub hybrid, // 004's FAST hybrid mapping
    ];
}

/// An FTL kind's identity: its name in `[ftl] kind = ...`. Values come from a kind's file
/// (`FtlKind::Page`) or from [`FtlKind::parse`], so each names a registered kind.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FtlKind(&'static str);

trimlab_sim::registry_handle!(FtlKind, FtlKindSpec, FTL_KINDS, "FTL kind");

impl Default for FtlKind {
    /// Page mapping.
    fn default() -> Self {
        FtlKind::Page
    }
}

const COUNT: usize = FTL_KINDS.len();

impl FtlKind {
    /// Every kind with its name and one-line description, in [`FTL_KINDS`] order.
    pub const ALL: [(FtlKind, &'static str, &'static str); COUNT] = {
        let mut all = [(FtlKind(""), "", ""); COUNT];
        let mut i = 0;
        while i < COUNT {
            all[i] = (FTL_KINDS[i].kind, FTL_KINDS[i].kind.0, FTL_KINDS[i].help);
            i += 1;
        }
        all
    };
}

/// An FTL kind as the registry knows it. Help, the catalog, docs, parsing and the key checks
/// read it.
pub struct FtlKindSpec {
    pub kind: FtlKind,
    /// One line for `--help`, the catalog and docs/config.md.
    pub help: &'static str,
    /// `[ftl] striping` when the config leaves it unset.
    pub default_striping: StripingChoice,
    /// The `[ftl]` keys only this kind reads: setting one under another kind is an error.
    pub own_keys: &'static [&'static str],
    /// Whether the kind fits the geometry; the message names the setting.
    pub check: fn(&FtlChoice, &Geometry, &FtlConfig) -> Result<(), String>,
    /// The FTL over an erased array.
    pub build: fn(&FtlChoice, &Geometry, &Timing, FtlConfig) -> Box<dyn Ftl>,
}

/// `[ftl] striping`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StripingChoice {
    Page,
    Block,
}

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
    /// Page FTL: static wear levelling's erase-count spread per plane (`None`: off; not
    /// serialized then, so configs without it keep their hash).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub static_wl_threshold: Option<u32>,
}

impl FtlChoice {
    /// Checks the chosen kind fits the geometry; the message names the setting.
    pub(crate) fn check(&self, geometry: &Geometry, ftl: &FtlConfig) -> Result<(), String> {
        (self.kind.spec().check)(self, geometry, ftl)
    }

    /// Builds the FTL over an erased array.
    pub fn build(&self, geometry: &Geometry, timing: &Timing, ftl: FtlConfig) -> Box<dyn Ftl> {
        (self.kind.spec().build)(self, geometry, timing, ftl)
    }
}
