//! What only one kind of FTL counts, as typed data on the `Ftl` seam: the page FTL's GC
//! counters and 004's options, the hybrid FAST FTL's merges and its trimmed-range list. The
//! device report carries it (metrics.json's `ftl.detail`) and 004's experiment reads its tables
//! from it, so no caller needs the concrete FTL. The hybrid FTL's counter types live here, not in
//! `trimlab-hybrid`, because the seam names them; that crate fills them in.

use crate::page_ftl::FtlStats;
use crate::variant::VariantStats;
use serde::ser::{Serialize, SerializeStruct, Serializer};

/// The counters of one FTL kind since the FTL was built (not since the measurement started:
/// 004's measures are whole-run).
#[derive(Clone, Debug, PartialEq)]
pub enum FtlDetail {
    /// The page-mapping FTL: its GC counters and 004's options (`VariantStats`).
    Page { stats: FtlStats, variant: VariantStats },
    /// The hybrid FAST FTL: its merges, and its trimmed-range list when it keeps one.
    Hybrid { merges: HybridStats, trimmed_range_list: Option<TrimmedListDetail> },
}

impl Serialize for FtlDetail {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            // metrics.json shows the page FTL's GC counters as the report's `gc` section (over
            // the measured phase); its detail has only ever been the options' counters, flat.
            FtlDetail::Page { variant, .. } => variant.serialize(s),
            FtlDetail::Hybrid { merges, trimmed_range_list } => {
                let mut m = s.serialize_struct("FtlDetail", 2)?;
                m.serialize_field("merges", merges)?;
                m.serialize_field("trimmed_range_list", trimmed_range_list)?;
                m.end()
            }
        }
    }
}

/// What the hybrid FTL has done since it was built.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct HybridStats {
    pub host_pages_programmed: u64,
    pub merge_pages_copied: u64,
    pub switch_merges: u64,
    pub partial_merges: u64,
    pub full_merges: u64,
    /// Full merges of a logical block that found no live page (everything trimmed): no copy,
    /// no new data block.
    pub full_merges_empty: u64,
    /// Sum over full merges of the distinct blocks read from (associativity).
    pub full_merge_source_blocks: u64,
    pub rw_victims: u64,
    /// Valid pages dropped because the trimmed-range list said they were trimmed.
    pub trimmed_pages_dropped: u64,
    /// Pages of RW victims that needed no merge because they were trimmed.
    pub victim_pages_trimmed: u64,
    /// Sum over merge episodes of the time from their start to their last NAND operation.
    pub merge_busy_ns: u64,
    /// Erased blocks taken for programming (data or log).
    pub blocks_opened: u64,
    /// Blocks taken from another chip because the preferred chip had none free.
    pub spilled_allocations: u64,
    pub trim_commands: u64,
    pub trimmed_pages_requested: u64,
}

impl HybridStats {
    /// Distinct blocks a full merge read from, on average: 004 §3.1's associativity.
    pub fn source_blocks_per_full_merge(&self) -> f64 {
        self.full_merge_source_blocks as f64 / self.full_merges.max(1) as f64
    }
}

/// The trimmed-range list (004 §3.2) at the end of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TrimmedListDetail {
    pub ranges: u64,
    pub pages: u64,
    pub memory_bytes: u64,
    pub walks: HblStats,
}

/// Counters of what the trimmed-range list has done; `walk_steps_*` are linked-list node visits.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct HblStats {
    pub inserts: u64,
    /// Pieces inserted after splitting at group boundaries.
    pub insert_pieces: u64,
    pub walk_steps_insert: u64,
    pub lookups: u64,
    pub walk_steps_lookup: u64,
    /// Removals that found an overlapping range (writes over trimmed pages, merges).
    pub removals: u64,
    pub walk_steps_remove: u64,
    pub ranges_max: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// metrics.json's `ftl.detail` keeps the shape it had as untyped JSON: the page FTL's
    /// options' counters flat, the hybrid FTL's merges and list under their names.
    #[test]
    fn detail_serializes_as_metrics_json_always_showed_it() {
        let variant = VariantStats { blocks_opened: 3, lazy_trims: 2, ..VariantStats::default() };
        let page = FtlDetail::Page { stats: FtlStats { gc_victims: 9, ..FtlStats::default() }, variant };
        let v = serde_json::to_value(&page).unwrap();
        assert_eq!(
            v,
            serde_json::to_value(VariantStats { blocks_opened: 3, lazy_trims: 2, ..Default::default() })
                .unwrap()
        );
        assert!(v.get("gc_victims").is_none(), "{v}");

        let merges = HybridStats { full_merges: 4, switch_merges: 1, ..HybridStats::default() };
        let list = TrimmedListDetail { ranges: 5, pages: 60, memory_bytes: 80, walks: HblStats::default() };
        let hybrid = FtlDetail::Hybrid { merges: merges.clone(), trimmed_range_list: Some(list.clone()) };
        assert_eq!(
            serde_json::to_value(&hybrid).unwrap(),
            json!({ "merges": merges, "trimmed_range_list": {
                "ranges": 5, "pages": 60, "memory_bytes": 80, "walks": HblStats::default() } })
        );
        let bare = FtlDetail::Hybrid { merges, trimmed_range_list: None };
        assert_eq!(serde_json::to_value(&bare).unwrap()["trimmed_range_list"], serde_json::Value::Null);
    }

    #[test]
    fn associativity_is_source_blocks_per_full_merge() {
        let merges = HybridStats { full_merges: 4, full_merge_source_blocks: 10, ..HybridStats::default() };
        assert_eq!(merges.source_blocks_per_full_merge(), 2.5);
        assert_eq!(HybridStats::default().source_blocks_per_full_merge(), 0.0, "no merge, no NaN");
    }
}
