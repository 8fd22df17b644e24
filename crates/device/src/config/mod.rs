//! The `[device]`, `[ftl]` and `[trim]` sections of a config: a preset (data in
//! crates/device/presets/) with the user's keys laid over it, resolved and checked into an
//! [`SsdConfig`]. Each section's keys are declared once (`device.rs`, `ftl.rs`, `trim.rs`, and
//! `[trim.cost]` in `trimlab_trim::cost_model`); every error names the key and what it accepts.

mod bounds;
mod device;
mod endurance;
mod error;
mod flash;
mod ftl;
mod host_interface;
pub mod nvme_id;
// Public only for its tests in tests/device/ (the lib has no test harness); no API.
#[doc(hidden)]
pub mod preset;
mod trim;

pub use bounds::{at_most, ps_per_byte, OPERATION_NS_MAX, PER_PAGE_NS_MAX, PS_PER_BYTE_MAX};
pub use device::{DeviceKind, DeviceSection, DeviceSpec};
pub use error::ConfigError;
pub use flash::{spare_factor_seen_by_gc, MIN_SPARE_SEEN_SHARE};
pub use ftl::{BackwardMap, FtlSection, FtlSpec, GcThreshold, MAPPING_UNITS};
pub use preset::{preset_infos, preset_list, presets, Preset, PresetInfo, DEFAULT_PRESET};
pub use trim::{EngineKeys, TrimSection};
/// The types of `[trim.cost]` and `[trim.delayed]`, declared beside what they configure.
pub use trimlab_trim::{DelayedConfig, EngineKind, TrimCostModel, TrimCostOverrides};

use flash::Flash;
use host_interface::HostInterface;
use preset::Layered;
use serde::Serialize;
use trimlab_ftl::VictimPolicy;
use trimlab_nand::{Geometry, Timing};

/// A fully resolved, checked device configuration.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SsdConfig {
    pub preset: String,
    pub geometry: Geometry,
    pub timing: Timing,
    /// Multi-plane programs: one tPROG for a flash page on every plane of a die.
    pub multi_plane: bool,
    pub logical_pages: u32,
    /// (physical - logical) / physical, as resolved from the geometry.
    pub spare_factor: f64,
    pub queue_depth: u32,
    pub trim_queued: bool,
    pub trim_max_ranges: u32,
    pub trim_max_bytes: u64,
    pub trim_granularity_bytes: u64,
    pub max_transfer_bytes: u64,
    pub sector_bytes: u64,
    pub write_buffer_pages: u32,
    pub firmware_ns: u64,
    pub host_transfer_ps_per_byte: u64,
    pub idle_threshold_ns: u64,
    pub gc_free_blocks_min: u32,
    /// Idle-time GC's free-block target per plane; 0 when idle GC is off.
    pub idle_gc_free_blocks: u32,
    pub gc_victim: VictimPolicy,
    pub track_data: bool,
    /// The device page (`[device] page_bytes`): what the host's writes are counted in when
    /// `[ftl] mapping_unit` makes the FTL's page (`geometry.page_bytes`) a larger unit. Not
    /// serialized: the geometry already shows the unit, and configs keep their bytes.
    #[serde(skip)]
    pub host_page_bytes: u32,
    pub trim_engine: EngineKind,
    pub trim_cost: TrimCostModel,
    /// Every engine's own keys, completed (`trim_delayed`: `[trim.delayed]`).
    #[serde(flatten)]
    pub trim_keys: EngineKeys,
    /// What the capacity fit chose, when it changed the preset's shape (empty otherwise).
    #[serde(skip)]
    pub geometry_note: String,
    pub ftl: crate::ftl_kind::FtlChoice,
    /// The rated endurance and projection volume, the preset's under the user's (the lifetime
    /// projection's inputs; docs/lifetime.md). Not serialized: presets' ratings are data about
    /// the drive, not what a run simulates, so adding them changed no config hash.
    #[serde(skip)]
    pub rating: crate::lifetime::Rating,
    /// The `[device] rated_*` and `daily_host_bytes` keys the user set (unset ones serialize
    /// as nothing): the config hash follows a rating or volume the user chose, which changes
    /// the report's projection.
    pub rating_set: crate::lifetime::Rating,
    /// What `[device] from` (and its companions) mapped, for the run's notes; empty without.
    #[serde(skip)]
    pub source_note: String,
}

impl SsdConfig {
    /// The user's sections laid over their preset, completed, derived (geometry fitted to the
    /// capacity, GC targets) and checked.
    pub fn resolve(
        device: &DeviceSection,
        ftl: &FtlSection,
        trim: &TrimSection,
    ) -> Result<SsdConfig, ConfigError> {
        // The drive's own reports lie between the user's keys and the preset's.
        let import = nvme_id::Import::of_section(device)?;
        let merged;
        let user = device;
        let device = match &import {
            Some(import) => {
                merged = import.under(device);
                &merged
            }
            None => device,
        };
        let preset = Preset::named(device.preset.as_deref().unwrap_or(DEFAULT_PRESET))?;
        let spec = preset.under(device, ftl, trim)?;
        let unit = ftl::mapping_unit(&spec.ftl, spec.device.page_bytes, spec.device.pages_per_block)?;
        let flash = flash::resolve(&spec.device, device, preset, spec.ftl.gc_free_blocks, unit)?;
        let timing = flash::timing(&spec.device)?;
        let link = HostInterface::resolve(&spec.device, flash.geometry.page_bytes as u64)?;
        let mut config = SsdConfig::assemble(preset, &spec, ftl, flash, timing, link)?;
        config.host_page_bytes = spec.device.page_bytes;
        config.rating = endurance::rating(&endurance::Keys::of_spec(&spec.device), true)?;
        config.rating_set = endurance::rating(&endurance::Keys::of_section(device), false)?;
        config.check(&spec, device, ftl)?;
        if let Some(import) = &import {
            config.source_note = import.note(user, preset.name);
        }
        Ok(config)
    }

    /// The resolved parts as one config: the GC targets per plane and the FTL choice derived.
    fn assemble(
        preset: &Preset,
        spec: &Layered,
        ftl: &FtlSection,
        flash: Flash,
        timing: Timing,
        link: HostInterface,
    ) -> Result<SsdConfig, ConfigError> {
        let blocks_per_plane = flash.geometry.blocks_per_plane;
        let gc_free_blocks_min = ftl::gc_free_blocks_min(spec.ftl.gc_free_blocks, blocks_per_plane)?;
        let idle_gc_free_blocks = ftl::idle_gc_free_blocks(&spec.ftl, gc_free_blocks_min, blocks_per_plane)?;
        Ok(SsdConfig {
            preset: preset.name.to_string(),
            multi_plane: spec.device.multi_plane,
            spare_factor: 1.0 - flash.logical_pages as f64 / flash.geometry.physical_pages() as f64,
            logical_pages: flash.logical_pages,
            queue_depth: link.queue_depth,
            trim_queued: spec.device.trim_queued,
            trim_max_ranges: link.trim_max_ranges,
            trim_max_bytes: link.trim_max_bytes,
            trim_granularity_bytes: link.trim_granularity_bytes,
            max_transfer_bytes: link.max_transfer_bytes,
            sector_bytes: 512,
            write_buffer_pages: link.write_buffer_pages,
            firmware_ns: link.firmware_ns,
            host_transfer_ps_per_byte: link.host_transfer_ps_per_byte,
            idle_threshold_ns: link.idle_threshold_ns,
            gc_free_blocks_min,
            idle_gc_free_blocks,
            gc_victim: spec.ftl.gc_victim,
            track_data: spec.ftl.track_data,
            host_page_bytes: flash.geometry.page_bytes,
            trim_engine: spec.trim_engine,
            trim_cost: spec.trim_cost.clone(),
            trim_keys: spec.trim_keys.clone(),
            geometry_note: flash.note,
            ftl: crate::ftl_kind::FtlChoice::resolve(&spec.ftl, ftl)?,
            rating: Default::default(),
            rating_set: Default::default(),
            source_note: String::new(),
            geometry: flash.geometry,
            timing,
        })
    }

    /// The checks that need the whole config: TRIM costs, the engines' keys against the
    /// device's limits, and the FTL against the geometry, blaming the key the user set.
    fn check(&self, spec: &Layered, device: &DeviceSection, ftl: &FtlSection) -> Result<(), ConfigError> {
        trim::check_trim_cost(&self.trim_cost)?;
        self.trim_keys.check(&trimlab_trim::EngineLimits { trim_max_ranges: self.trim_max_ranges })?;
        self.ftl.check(&self.geometry, &self.ftl_config()).map_err(|message| {
            if message.starts_with("ftl.gc_free_blocks") {
                match flash::geometry_key_at_fault(device, ftl) {
                    // The threshold was not set: the geometry left too few blocks per plane.
                    Some((key, value)) => ConfigError::new(
                        key,
                        value,
                        format!(
                            "this leaves {} blocks per plane; the FTL needs at least 4 (ftl.gc_free_blocks must be 2..=blocks per plane / 2): use a smaller page or block, fewer planes, or a larger device.logical_bytes",
                            self.geometry.blocks_per_plane
                        ),
                    ),
                    None => ConfigError::new("ftl.gc_free_blocks", self.gc_free_blocks_min, message),
                }
            } else if message.starts_with("hybrid:") {
                ConfigError::new("ftl.kind", "\"hybrid\"", message)
            } else {
                ConfigError::new("device.spare_factor", spec.device.spare_factor, message)
            }
        })
    }

    /// Pages the write buffer hands the FTL per flush: one flash page on every plane (with
    /// multi-plane programs, one tPROG per die), whole flash pages as a drive's buffer fills them.
    pub fn flush_batch_pages(&self) -> usize {
        self.geometry.plane_count() * self.geometry.pages_per_flash_page() as usize
    }

    /// The FTL this config chooses, over an erased array.
    pub fn build_ftl(&self) -> Box<dyn trimlab_ftl::Ftl> {
        self.ftl.build(&self.geometry, &self.timing, self.ftl_config())
    }

    pub fn ftl_config(&self) -> trimlab_ftl::FtlConfig {
        trimlab_ftl::FtlConfig {
            logical_pages: self.logical_pages,
            gc_free_blocks_min: self.gc_free_blocks_min,
            victim: self.gc_victim,
            track_data: self.track_data,
            multi_plane: self.multi_plane,
        }
    }

    /// The spare factor GC works with (see [`spare_factor_seen_by_gc`]).
    pub fn spare_factor_seen_by_gc(&self) -> f64 {
        spare_factor_seen_by_gc(&self.geometry, self.logical_pages as u64, self.gc_free_blocks_min)
    }

    /// A warning when GC sees under 70 % of the nominal spare factor, else `None`. A GC target
    /// above the spare (004's 30 %) is deliberate and not warned about.
    pub fn spare_warning(&self) -> Option<String> {
        let seen = self.spare_factor_seen_by_gc();
        let reserve_share = self.gc_free_blocks_min as f64 / self.geometry.blocks_per_plane as f64;
        (seen < MIN_SPARE_SEEN_SHARE * self.spare_factor && reserve_share < self.spare_factor).then(|| {
            format!(
                "warning: GC sees a spare factor of {seen:.4}, under {:.0} % of the nominal {:.4}: each of the {} planes parks {} free blocks of {} (raise spare_factor or logical_bytes, or leave channels/chips/dies/planes/pages_per_block unset so the fit can shrink them)",
                MIN_SPARE_SEEN_SHARE * 100.0,
                self.spare_factor,
                self.geometry.plane_count(),
                self.gc_free_blocks_min,
                self.geometry.blocks_per_plane
            )
        })
    }

    /// Device pages per mapping unit: 1 unless `[ftl] mapping_unit` is larger than the page.
    pub fn pages_per_unit(&self) -> u64 {
        (self.geometry.page_bytes / self.host_page_bytes.max(1)).max(1) as u64
    }

    pub fn logical_bytes(&self) -> u64 {
        self.logical_pages as u64 * self.geometry.page_bytes as u64
    }
}
