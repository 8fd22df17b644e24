//! Options of the page-mapping FTL that 004 §4 describes and the device does not use by
//! default: block-level striping, a backward map that TRIM updates lazily, and erasing a block
//! as soon as its last page is invalidated.

use serde::Serialize;

/// How host writes are spread over planes (004 §3.1, Fig. 1 and Fig. 2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StripeUnit {
    /// Each page goes to the next plane in striping order, channels first (the default).
    #[default]
    Page,
    /// Every page of logical block `lpn / pages_per_block` goes to channel `block % channels`,
    /// round-robin over that channel's planes.
    Block,
}

/// When TRIM reaches the backward (PPA -> LPN) map and the blocks' valid counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BackwardUpdate {
    /// Both maps and the valid count change at once (the default).
    #[default]
    Eager,
    /// 004 §4.1: TRIM clears only the forward entry. The backward map and valid counts are
    /// reconciled every `reconcile_every_pages` trimmed pages (0: never periodically), and for
    /// a block whenever GC examines it, so until then greedy GC sees stale valid counts.
    Lazy { reconcile_every_pages: u32 },
}

/// Counters of the 004 options; kept apart from `FtlStats` so device reports do not change.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct VariantStats {
    /// Erased blocks taken for programming (host or GC open blocks): 004's N_pb.
    pub blocks_opened: u64,
    /// Blocks erased as soon as their last valid page was invalidated (no GC needed).
    pub eager_erases: u64,
    /// TRIMmed pages whose backward entry was left stale (lazy mode).
    pub lazy_trims: u64,
    pub reconciled_periodic: u64,
    pub reconciled_at_gc: u64,
    /// GC found only apparently full blocks and reconciled everything pending to go on.
    pub forced_reconciles: u64,
    /// GC victims chosen on stale counts that were not the block with the fewest truly valid
    /// pages in their plane.
    pub victims_misjudged: u64,
    /// Sum over misjudged victims of (true valid pages of the victim - fewest in the plane):
    /// copies greedy GC would have saved with an exact backward map.
    pub misjudged_extra_pages: u64,
}
