//! `[ftl]`: which FTL the controller runs, its GC thresholds and the kinds' options, declared
//! once for its as-written form (`FtlSection`) and its complete form (`FtlSpec`); the GC
//! targets per plane that follow from the thresholds and the geometry.

use super::ConfigError;
use crate::ftl_kind::{FtlKind, StripingChoice};
use serde::{Deserialize, Serialize};
use trimlab_ftl::VictimPolicy;
use trimlab_sim::ByteSize;

/// `[ftl] backward_map`: when TRIM reaches the backward map (004 §4.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackwardMap {
    /// TRIM clears both maps and the valid count.
    #[default]
    Eager,
    /// TRIM clears the forward entry; the rest is reconciled later (`reconcile_every_pages`).
    Lazy,
}

trimlab_sim::config_section! {
    /// `[ftl]` resolved: the preset's values with the user's keys laid over them.
    pub struct FtlSpec;
    /// `[ftl]` as written. Unset keys come from the preset.
    pub struct FtlSection {
        /// "page" or "hybrid".
        pub kind: FtlKind,
        /// Free blocks per plane below which GC runs: a count ("2") or a share of the plane ("30%").
        pub gc_free_blocks: GcThreshold,
        pub gc_victim: VictimPolicy,
        pub track_data: bool,
        /// Idle-time GC: when the host is idle, reclaim blocks until each plane has
        /// `idle_gc_free_blocks` free (on for nvme-tlc and ufs-2018).
        pub idle_gc: bool,
        /// Idle GC's free-block target per plane: a count or a share ("5%"); unset: twice
        /// `gc_free_blocks`.
        pub idle_gc_free_blocks: GcThreshold = optional,
        /// "page" or "block" (004 §3.1); unset: page for the page FTL, block for hybrid.
        pub striping: StripingChoice = optional,
        /// Page FTL: "eager" or "lazy" (004 §4.1).
        pub backward_map: BackwardMap,
        /// Page FTL with `backward_map = "lazy"`: reconcile every this many trimmed pages.
        pub reconcile_every_pages: u32 = optional,
        pub erase_when_invalid: bool,
        /// Page FTL: a GC invocation stops after gaining this many blocks (unset: no limit).
        pub gc_gain_blocks_max: u32 = optional,
        /// Hybrid: log blocks per chip.
        pub log_blocks_sequential: u32,
        pub log_blocks_random: u32,
        /// Hybrid: TRIMs kept in the trimmed-range list or applied at once.
        pub trimmed_list: bool,
        pub trimmed_list_groups: u32,
        /// The indirection unit: what one map entry covers ("4KiB" to "64KiB"; unset: the
        /// device's `page_bytes`). Sub-unit writes are read-modify-writes of the unit; a TRIM
        /// deallocates only the whole units inside its ranges.
        pub mapping_unit: ByteSize = optional,
        /// Page FTL: static wear levelling (MQSim's; docs/lifetime.md), off when unset.
        pub static_wl: bool = optional,
        /// Static wear levelling's erase-count spread per plane that triggers a move (default
        /// 100, MQSim's `Static_Wearleveling_Threshold`).
        pub static_wl_threshold: u32 = optional,
    }
}

/// The mapping units `[ftl] mapping_unit` accepts (a drive's indirection unit).
pub const MAPPING_UNITS: [u64; 5] = [4096, 8192, 16384, 32768, 65536];

/// The mapping unit in bytes, checked: one of [`MAPPING_UNITS`], at least the device page
/// and a multiple of it, and a divisor of the erase block (`pages_per_block` device pages).
/// `None` when unset or equal to the page: the FTL maps device pages as it always did.
pub(super) fn mapping_unit(
    spec: &FtlSpec,
    page_bytes: u32,
    pages_per_block: u32,
) -> Result<Option<u32>, ConfigError> {
    let Some(unit) = spec.mapping_unit else { return Ok(None) };
    let block_bytes = page_bytes as u64 * pages_per_block as u64;
    let why = if !MAPPING_UNITS.contains(&unit.0) {
        Some("one of \"4KiB\", \"8KiB\", \"16KiB\", \"32KiB\", \"64KiB\"".to_string())
    } else if unit.0 < page_bytes as u64 || !unit.0.is_multiple_of(page_bytes as u64) {
        Some(format!("a multiple of device.page_bytes ({page_bytes}): a unit is whole device pages"))
    } else if !block_bytes.is_multiple_of(unit.0) {
        Some(format!("a divisor of the erase block ({pages_per_block} pages of {page_bytes} bytes): a block holds whole units"))
    } else {
        None
    };
    match why {
        Some(accepted) => Err(ConfigError::new("ftl.mapping_unit", format!("\"{unit}\""), accepted)),
        None => Ok((unit.0 != page_bytes as u64).then_some(unit.0 as u32)),
    }
}

/// A GC threshold: an absolute block count or a percentage of each plane's blocks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum GcThreshold {
    Blocks(u32),
    Percent(f64),
}

impl Serialize for GcThreshold {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            GcThreshold::Blocks(n) => s.serialize_u32(*n),
            GcThreshold::Percent(p) => s.serialize_str(&format!("{p}%")),
        }
    }
}

impl<'de> Deserialize<'de> for GcThreshold {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(u32),
            Text(String),
        }
        const ACCEPTED: &str = "a block count like 2 or a share of the plane like \"30%\"";
        match Raw::deserialize(d).map_err(|_| serde::de::Error::custom(ACCEPTED))? {
            Raw::Int(n) => Ok(GcThreshold::Blocks(n)),
            Raw::Text(t) => {
                let trimmed = t.trim();
                if let Some(p) = trimmed.strip_suffix('%') {
                    p.trim()
                        .parse::<f64>()
                        .map(GcThreshold::Percent)
                        .map_err(|_| serde::de::Error::custom(format!("\"{t}\" is not {ACCEPTED}")))
                } else {
                    trimmed
                        .parse::<u32>()
                        .map(GcThreshold::Blocks)
                        .map_err(|_| serde::de::Error::custom(format!("\"{t}\" is not {ACCEPTED}")))
                }
            }
        }
    }
}

/// GC's free-block target per plane for a threshold and a plane of `blocks_per_plane` blocks.
pub(super) fn gc_min_for(threshold: GcThreshold, blocks_per_plane: u32) -> u32 {
    match threshold {
        GcThreshold::Blocks(n) => n,
        GcThreshold::Percent(p) => ((blocks_per_plane as f64 * p / 100.0).ceil() as u32).max(2),
    }
}

/// GC's free-block target per plane, with a percentage checked (its range is the key's; a
/// count is checked against the plane by the FTL, which knows its reserve).
pub(super) fn gc_free_blocks_min(threshold: GcThreshold, blocks_per_plane: u32) -> Result<u32, ConfigError> {
    if let GcThreshold::Percent(p) = threshold {
        if !(p > 0.0 && p < 50.0) {
            return Err(ConfigError::new(
                "ftl.gc_free_blocks",
                format!("\"{p}%\""),
                "a percentage must be > 0 and < 50",
            ));
        }
    }
    Ok(gc_min_for(threshold, blocks_per_plane))
}

/// Idle GC's free-block target per plane; 0 when idle GC is off.
pub(super) fn idle_gc_free_blocks(
    spec: &FtlSpec,
    gc_free_blocks_min: u32,
    blocks_per_plane: u32,
) -> Result<u32, ConfigError> {
    let half_plane = blocks_per_plane / 2;
    Ok(match (spec.idle_gc, spec.idle_gc_free_blocks) {
        (false, _) => 0,
        (true, Some(t)) => {
            let target = gc_min_for(t, blocks_per_plane);
            if target <= gc_free_blocks_min || target > half_plane {
                return Err(ConfigError::new(
                    "ftl.idle_gc_free_blocks",
                    target,
                    format!("must be more than gc_free_blocks ({gc_free_blocks_min}) and at most half a plane ({half_plane} blocks)"),
                ));
            }
            target
        }
        // The default target (twice the GC threshold, an assumption) on a plane too small
        // to hold it leaves idle GC off rather than refusing the preset.
        (true, None) => {
            Some((2 * gc_free_blocks_min).min(half_plane)).filter(|&t| t > gc_free_blocks_min).unwrap_or(0)
        }
    })
}
