//! The FAST hybrid FTL kind of 004 (`[ftl] kind = "hybrid"`): block-mapped data blocks,
//! page-mapped SW and RW log blocks, switch / partial / full merges, an optional trimmed-range
//! list; its options from `[ftl]`'s hybrid-only keys.

use super::{FtlChoice, FtlKind, FtlKindSpec, StripingChoice};
use trimlab_ftl::FtlConfig;
use trimlab_hybrid::{HybridConfig, HybridFtl, Striping};

impl FtlKind {
    #[allow(non_upper_case_globals)]
    pub const Hybrid: FtlKind = FtlKind("hybrid");
}

pub const SPEC: FtlKindSpec = FtlKindSpec {
    kind: FtlKind::Hybrid,
    help: "FAST hybrid mapping with log blocks and merges, optional trimmed-range list (004)",
    default_striping: StripingChoice::Block,
    own_keys: &["log_blocks_sequential", "log_blocks_random", "trimmed_list", "trimmed_list_groups"],
    check: |choice, geometry, ftl| HybridFtl::check_config(geometry, &hybrid_config(choice, ftl)),
    build: |choice, geometry, timing, ftl| {
        Box::new(HybridFtl::new(geometry.clone(), timing.clone(), hybrid_config(choice, &ftl)))
    },
};

fn hybrid_config(choice: &FtlChoice, ftl: &FtlConfig) -> HybridConfig {
    HybridConfig {
        logical_pages: ftl.logical_pages,
        sequential_logs: choice.log_blocks_sequential,
        random_logs: choice.log_blocks_random,
        striping: match choice.striping {
            StripingChoice::Page => Striping::Page,
            StripingChoice::Block => Striping::Block,
        },
        trim_groups: choice.trimmed_list_groups,
        track_data: ftl.track_data,
    }
}
