//! The page-mapping FTL kind (`[ftl] kind = "page"`): any logical page in any physical page,
//! greedy / cost-benefit / FIFO GC, its options from `[ftl]`'s page-only keys.

use super::{FtlChoice, FtlKind, FtlKindSpec, StripingChoice};
use trimlab_ftl::{BackwardUpdate, PageFtl, StripeUnit};

impl FtlKind {
    #[allow(non_upper_case_globals)]
    pub const Page: FtlKind = FtlKind("page");
}

pub const SPEC: FtlKindSpec = FtlKindSpec {
    kind: FtlKind::Page,
    help: "page mapping with greedy / cost-benefit / FIFO GC (default)",
    default_striping: StripingChoice::Page,
    own_keys: &[
        "backward_map",
        "erase_when_invalid",
        "gc_gain_blocks_max",
        "gc_victim",
        "gc_free_blocks",
        "static_wl",
        "static_wl_threshold",
    ],
    check: |_, geometry, ftl| PageFtl::check_config(geometry, ftl),
    build: |choice: &FtlChoice, geometry, timing, config| {
        let mut ftl = PageFtl::new(geometry.clone(), timing.clone(), config);
        // The defaults leave the FTL exactly as built; only non-default options are set.
        if choice.striping == StripingChoice::Block {
            ftl.set_stripe_unit(StripeUnit::Block);
        }
        if choice.backward_map != BackwardUpdate::Eager {
            ftl.set_backward_update(choice.backward_map);
        }
        ftl.set_erase_when_invalid(choice.erase_when_invalid);
        ftl.set_gc_gain_blocks_max(choice.gc_gain_blocks_max);
        ftl.set_static_wear_levelling(choice.static_wl_threshold);
        Box::new(ftl)
    },
};
