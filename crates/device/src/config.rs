//! The `[device]`, `[ftl]` and `[trim]` sections of a config: a preset plus overrides, resolved
//! and checked into an [`SsdConfig`]. Every error names the key and what it accepts.

use serde::{Deserialize, Serialize};
use trimlab_ftl::VictimPolicy;
use trimlab_nand::{Geometry, Timing};
use trimlab_sim::{ByteSize, DurationNs};
use trimlab_trim::{DelayedConfig, EngineKind, TrimCostModel, TrimCostOverrides};

/// A configuration value that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("config: {key} = {value} ({accepted})")]
pub struct ConfigError {
    pub key: String,
    pub value: String,
    pub accepted: String,
}

impl ConfigError {
    pub fn new(key: &str, value: impl ToString, accepted: impl ToString) -> Self {
        ConfigError { key: key.to_string(), value: value.to_string(), accepted: accepted.to_string() }
    }
}

/// `[device] kind`: the simulated SSD, or the thin-provisioned volume of 003 (its knobs are
/// the scenario's `[thin]` section; of `[device]` it reads only `logical_bytes`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceKind {
    #[default]
    Ssd,
    Thin,
}

/// When the GC threshold is out of range but the user never set `ftl.gc_free_blocks`, the
/// geometry keys they did set are at fault (issue 13: `page_bytes = 1048576` blamed the GC key).
fn geometry_key_at_fault(device: &DeviceSection, ftl: &FtlSection) -> Option<(&'static str, String)> {
    if ftl.gc_free_blocks.is_some() {
        return None;
    }
    let set: [(&'static str, Option<String>); 9] = [
        ("device.page_bytes", device.page_bytes.map(|v| v.to_string())),
        ("device.flash_page_bytes", device.flash_page_bytes.map(|v| v.to_string())),
        ("device.pages_per_block", device.pages_per_block.map(|v| v.to_string())),
        ("device.blocks_per_plane", device.blocks_per_plane.map(|v| v.to_string())),
        ("device.logical_bytes", device.logical_bytes.map(|v| v.to_string())),
        ("device.planes_per_die", device.planes_per_die.map(|v| v.to_string())),
        ("device.dies_per_chip", device.dies_per_chip.map(|v| v.to_string())),
        ("device.chips_per_channel", device.chips_per_channel.map(|v| v.to_string())),
        ("device.channels", device.channels.map(|v| v.to_string())),
    ];
    let preset = device.preset.clone().map(|p| ("device.preset", format!("\"{p}\"")));
    set.into_iter().find_map(|(k, v)| v.map(|v| (k, v))).or(preset)
}

/// `[device]`: the drive's shape, timing and host interface. Unset keys come from the preset.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceSection {
    pub kind: Option<DeviceKind>,
    pub preset: Option<String>,
    pub logical_bytes: Option<ByteSize>,
    pub spare_factor: Option<f64>,
    pub channels: Option<u32>,
    pub chips_per_channel: Option<u32>,
    pub dies_per_chip: Option<u32>,
    pub planes_per_die: Option<u32>,
    pub blocks_per_plane: Option<u32>,
    pub pages_per_block: Option<u32>,
    /// The mapping unit: what a logical page number addresses (4096 on the modern presets).
    pub page_bytes: Option<u32>,
    /// The NAND page: one tR reads it, one tPROG programs it; holds whole pages. Default: the
    /// preset's, or `page_bytes` when that is larger.
    pub flash_page_bytes: Option<u32>,
    /// Program a flash page on every plane of a die with one tPROG. Default: the preset's.
    pub multi_plane: Option<bool>,
    pub read_ns: Option<u64>,
    pub program_ns: Option<u64>,
    pub erase_ns: Option<u64>,
    pub transfer_ps_per_byte: Option<u64>,
    pub command_ns: Option<u64>,
    pub queue_depth: Option<u32>,
    pub trim_queued: Option<bool>,
    pub trim_max_ranges: Option<u32>,
    pub trim_max_bytes: Option<ByteSize>,
    pub trim_granularity_bytes: Option<ByteSize>,
    pub max_transfer_bytes: Option<ByteSize>,
    pub write_buffer_bytes: Option<ByteSize>,
    pub firmware_ns: Option<u64>,
    pub host_transfer_ps_per_byte: Option<u64>,
    pub idle_threshold: Option<DurationNs>,
}

/// `[ftl]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FtlSection {
    /// "page" (default) or "hybrid".
    pub kind: Option<crate::ftl_choice::FtlKind>,
    /// Free blocks per plane below which GC runs: a count ("2") or a share of the plane ("30%").
    pub gc_free_blocks: Option<GcThreshold>,
    pub gc_victim: Option<VictimPolicy>,
    pub track_data: Option<bool>,
    /// Idle-time GC: when the host is idle, reclaim blocks until each plane has
    /// `idle_gc_free_blocks` free. Default: the preset's (on for nvme-tlc and ufs-2018).
    pub idle_gc: Option<bool>,
    /// Idle GC's free-block target per plane: a count or a share ("5%"); default twice
    /// `gc_free_blocks`.
    pub idle_gc_free_blocks: Option<GcThreshold>,
    /// "page" or "block" (004 §3.1); default page for the page FTL, block for hybrid.
    pub striping: Option<crate::ftl_choice::StripingChoice>,
    /// Page FTL: "eager" (default) or "lazy" (004 §4.1).
    pub backward_map: Option<String>,
    pub reconcile_every_pages: Option<u32>,
    pub erase_when_invalid: Option<bool>,
    pub gc_gain_blocks_max: Option<u32>,
    /// Hybrid: log blocks per chip.
    pub log_blocks_sequential: Option<u32>,
    pub log_blocks_random: Option<u32>,
    /// Hybrid: TRIMs kept in the trimmed-range list (default true) or applied at once.
    pub trimmed_list: Option<bool>,
    pub trimmed_list_groups: Option<u32>,
}

/// `[trim]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrimSection {
    pub engine: Option<EngineKind>,
    /// `[trim.cost]`: the keys given replace the preset's TRIM costs.
    pub cost: Option<TrimCostOverrides>,
    /// `[trim.delayed]`: used when `engine = "delayed"`.
    pub delayed: Option<DelayedConfig>,
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
    pub trim_engine: EngineKind,
    pub trim_cost: TrimCostModel,
    pub trim_delayed: DelayedConfig,
    /// What the capacity fit chose, when it changed the preset's shape (empty otherwise).
    #[serde(skip)]
    pub geometry_note: String,
    pub ftl: crate::ftl_choice::FtlChoice,
}

struct Preset {
    name: &'static str,
    about: &'static str,
    geometry: Geometry,
    timing: Timing,
    /// Whether the FTL programs the planes of a die together (the part supports it and the
    /// firmware uses it).
    multi_plane: bool,
    logical_bytes: u64,
    spare_factor: f64,
    queue_depth: u32,
    trim_queued: bool,
    trim_max_ranges: u32,
    trim_max_bytes: u64,
    write_buffer_bytes: u64,
    host_transfer_ps_per_byte: u64,
    gc_free_blocks: GcThreshold,
    /// Background GC when the host is idle (modern drives do it; 004's FTL and the 2011 drive
    /// are modelled without it: an assumption).
    idle_gc: bool,
    /// What one TRIM costs this drive's controller.
    trim_cost: TrimCostModel,
    /// Where `trim_cost` comes from: a public measurement, or the word "assumption".
    trim_source: &'static str,
}

/// ATA DATA SET MANAGEMENT: 64 ranges per 512-byte block of entries, 65535 sectors each.
const ATA_TRIM_MAX_RANGES: u32 = 64;
const ATA_TRIM_MAX_BYTES: u64 = 64 * 65_535 * 512;
/// SATA II, 300 MB/s.
const SATA2_PS_PER_BYTE: u64 = 3_333;

fn presets() -> [Preset; 4] {
    [
        Preset {
            name: "nvme-tlc",
            about: "a modern TLC NVMe drive: 8 channels x 2 chips x 2 dies x 2 planes, 16 KiB flash pages of four 4 KiB mapping pages programmed two planes at a time, 256 pages (1 MiB)/block, 4 MiB DRAM write buffer, queued deallocate",
            geometry: Geometry {
                channels: 8,
                chips_per_channel: 2,
                dies_per_chip: 2,
                planes_per_die: 2,
                blocks_per_plane: 0,
                pages_per_block: 256,
                page_bytes: 4096,
                // 3D TLC parts of the 2020s have 16 KiB pages (Timing::tlc_nvme).
                flash_page_bytes: 16384,
            },
            timing: Timing::tlc_nvme(),
            multi_plane: true,
            logical_bytes: 8 << 30,
            spare_factor: 0.07,
            queue_depth: 64,
            trim_queued: true,
            // NVMe Dataset Management: up to 256 ranges of up to 2^32 blocks each.
            trim_max_ranges: 256,
            trim_max_bytes: 1 << 40,
            write_buffer_bytes: 4 << 20,
            // PCIe 3.0 x4, ~3.5 GB/s usable.
            host_transfer_ps_per_byte: 285,
            gc_free_blocks: GcThreshold::Blocks(2),
            idle_gc: true,
            trim_cost: TrimCostModel::nvme_fio(),
            trim_source: "U.2 NVMe drives measured with fio: 63-71 us per 4 KiB TRIM with the sync engine (github.com/axboe/fio/issues/764); 74 GiB in 512 KiB TRIMs in 27 s, ~178 us each (github.com/axboe/fio/issues/396); the split of the 4 KiB figure between host and drive is an assumption",
        },
        Preset {
            name: "sata-mlc-2011",
            about: "a 2011 60 GB-class SATA II MLC SSD (001's era): 8 channels x 1 die x 2 planes, 8 KiB flash pages of two 4 KiB mapping pages programmed two planes at a time, 256 pages (1 MiB)/block, no DRAM write buffer (only the controller's page buffer), non-queued TRIM that drains the queue",
            geometry: Geometry {
                channels: 8,
                chips_per_channel: 1,
                dies_per_chip: 1,
                planes_per_die: 2,
                blocks_per_plane: 0,
                pages_per_block: 256,
                page_bytes: 4096,
                // 25 nm MLC of 2011 has 8 KiB pages (Timing::mlc_sata_2011).
                flash_page_bytes: 8192,
            },
            timing: Timing::mlc_sata_2011(),
            multi_plane: true,
            logical_bytes: 56 << 30,
            spare_factor: 0.07,
            // NCQ: 32 tags.
            queue_depth: 32,
            trim_queued: false,
            trim_max_ranges: ATA_TRIM_MAX_RANGES,
            trim_max_bytes: ATA_TRIM_MAX_BYTES,
            write_buffer_bytes: 0,
            host_transfer_ps_per_byte: SATA2_PS_PER_BYTE,
            gc_free_blocks: GcThreshold::Blocks(2),
            idle_gc: false,
            trim_cost: TrimCostModel::sata_2011(),
            trim_source: "assumption: 1 ms per TRIM command + 1 us per mapped 4 KiB page; non-queued because queued TRIM came only with SATA 3.1 (July 2011) and Linux 3.12; no public per-command measurement of a drive of the era was found",
        },
        Preset {
            name: "ufs-2018",
            about: "a 64 GB mobile UFS 2.1 device (000's Galaxy S8): 2 channels x 1 die x 4 planes of TLC, 16 KiB flash pages of four 4 KiB mapping pages programmed four planes at a time, 256 pages (1 MiB)/block, 512 KiB write buffer, 32 command slots",
            geometry: Geometry {
                channels: 2,
                chips_per_channel: 1,
                dies_per_chip: 1,
                planes_per_die: 4,
                blocks_per_plane: 0,
                pages_per_block: 256,
                page_bytes: 4096,
                flash_page_bytes: 16384,
            },
            timing: Timing::tlc_nvme(),
            multi_plane: true,
            logical_bytes: 56 << 30,
            spare_factor: 0.07,
            // UFS 2.1: 32 command-queue slots.
            queue_depth: 32,
            // UNMAP is a SCSI command and goes through the command queue.
            trim_queued: true,
            trim_max_ranges: 64,
            trim_max_bytes: 64 << 20,
            write_buffer_bytes: 512 << 10,
            // UFS 2.1 HS-G3 x 2 lanes: 2 x 5.83 Gb/s, 8b/10b: ~1.17 GB/s.
            host_transfer_ps_per_byte: 858,
            gc_free_blocks: GcThreshold::Blocks(2),
            idle_gc: true,
            trim_cost: TrimCostModel::ufs_2018(),
            trim_source: "assumption: 1 ms per UNMAP + 1 us per mapped 4 KiB page (mobile UFS/eMMC discard is known to be slow, but no public per-command figure for a UFS 2.1 part was found)",
        },
        Preset {
            name: "k9lag08u0m-4ch",
            about: "the 004 SSD: 4 channels, one K9LAG08U0M MLC chip each (4 planes, 2048 blocks/plane, 128 x 2 KiB pages/block), no write buffer, SATA non-queued TRIM, GC below 30 % free blocks",
            geometry: Geometry {
                channels: 4,
                chips_per_channel: 1,
                dies_per_chip: 1,
                planes_per_die: 4,
                blocks_per_plane: 2048,
                pages_per_block: 128,
                page_bytes: 2048,
                // 004's FTL maps whole 2 KiB NAND pages.
                flash_page_bytes: 2048,
            },
            timing: Timing::k9lag08u0m(),
            // Assumption: 004 gives one-page timings (Table 1) and does not say its FTL
            // programs planes together.
            multi_plane: false,
            logical_bytes: 0,
            spare_factor: 0.07,
            queue_depth: 32,
            trim_queued: false,
            trim_max_ranges: ATA_TRIM_MAX_RANGES,
            trim_max_bytes: ATA_TRIM_MAX_BYTES,
            write_buffer_bytes: 0,
            host_transfer_ps_per_byte: SATA2_PS_PER_BYTE,
            gc_free_blocks: GcThreshold::Percent(30.0),
            idle_gc: false,
            trim_cost: TrimCostModel::sata_2011(),
            trim_source: "assumption: as sata-mlc-2011 (004 does not measure TRIM time; its ftl-trim experiment runs its own command driver and does not use this cost)",
        },
    ]
}

/// One preset as `trimlab presets` and `--help` describe it.
pub struct PresetInfo {
    pub name: &'static str,
    pub about: &'static str,
    pub trim_source: &'static str,
}

/// Preset names and one-line descriptions, for `--help` and docs.
pub fn preset_list() -> Vec<(&'static str, &'static str)> {
    presets().iter().map(|p| (p.name, p.about)).collect()
}

/// Every preset with the source of its TRIM costs.
pub fn preset_infos() -> Vec<PresetInfo> {
    presets()
        .iter()
        .map(|p| PresetInfo { name: p.name, about: p.about, trim_source: p.trim_source })
        .collect()
}

/// The largest cost of one operation a config may give (NAND read, program, erase, command
/// cycles, firmware time, a TRIM's per-command and per-range costs): 1 s. The simulated clock
/// counts u64 nanoseconds (584 years); i64::MAX as `firmware_ns` wrapped it on the second
/// command and panicked the event queue (issue 26). Real values are micro- to milliseconds.
pub const OPERATION_NS_MAX: u64 = 1_000_000_000;
/// The largest per-page or per-bitmap-word TRIM cost: 1 ms (a TRIM may name 2^32 pages).
pub const PER_PAGE_NS_MAX: u64 = 1_000_000;
/// The slowest link a config may give, in picoseconds per byte: 1 us per byte (1 MB/s), so
/// that a transfer of up to 2^40 bytes still takes a representable time.
pub const PS_PER_BYTE_MAX: u64 = 1_000_000;

/// `value` when it is at most `max`, else the error naming `key`.
pub fn at_most(key: &str, value: u64, max: u64, what: &str) -> Result<u64, ConfigError> {
    if value <= max {
        Ok(value)
    } else {
        Err(ConfigError::new(key, value, format!("must be at most {max}: {what}")))
    }
}

/// Checks a cost in nanoseconds of one operation against [`OPERATION_NS_MAX`].
fn operation_ns(key: &str, value: u64) -> Result<u64, ConfigError> {
    at_most(key, value, OPERATION_NS_MAX, "1 s per operation, the longest the simulated clock is sized for")
}

/// Checks a link or bus rate against [`PS_PER_BYTE_MAX`].
pub fn ps_per_byte(key: &str, value: u64) -> Result<u64, ConfigError> {
    at_most(
        key,
        value,
        PS_PER_BYTE_MAX,
        "1 us per byte (1 MB/s), the slowest link the simulated clock is sized for",
    )
}

/// Checks every TRIM cost: per command and per range at most [`OPERATION_NS_MAX`], per page or
/// bitmap word at most [`PER_PAGE_NS_MAX`].
fn check_trim_cost(cost: &TrimCostModel) -> Result<(), ConfigError> {
    for (key, value) in [
        ("trim.cost.command_ns", cost.command_ns),
        ("trim.cost.range_ns", cost.range_ns),
        ("trim.cost.trim_buffer_append_ns", cost.trim_buffer_append_ns),
    ] {
        operation_ns(key, value)?;
    }
    for (key, value) in [
        ("trim.cost.buffer_lookup_ns", cost.buffer_lookup_ns),
        ("trim.cost.map_lookup_ns", cost.map_lookup_ns),
        ("trim.cost.map_invalidate_ns", cost.map_invalidate_ns),
        ("trim.cost.bitmap_word_ns", cost.bitmap_word_ns),
        ("trim.cost.bitmap_check_ns", cost.bitmap_check_ns),
    ] {
        at_most(key, value, PER_PAGE_NS_MAX, "1 ms per page or bitmap word (a TRIM may name 2^32 pages)")?;
    }
    Ok(())
}

fn positive<T: PartialOrd + Default + ToString + Copy>(
    key: &str,
    value: T,
    accepted: &str,
) -> Result<T, ConfigError> {
    if value > T::default() {
        Ok(value)
    } else {
        Err(ConfigError::new(key, value, accepted))
    }
}

impl SsdConfig {
    pub fn resolve(
        device: &DeviceSection,
        ftl: &FtlSection,
        trim: &TrimSection,
    ) -> Result<SsdConfig, ConfigError> {
        let preset_name = device.preset.as_deref().unwrap_or("nvme-tlc");
        let all = presets();
        let names: Vec<_> = all.iter().map(|p| p.name).collect();
        let preset = all.into_iter().find(|p| p.name == preset_name).ok_or_else(|| {
            ConfigError::new(
                "device.preset",
                format!("\"{preset_name}\""),
                format!("one of: {}", names.join(", ")),
            )
        })?;

        let spare_factor = device.spare_factor.unwrap_or(preset.spare_factor);
        if !(spare_factor > 0.0 && spare_factor < 1.0) {
            return Err(ConfigError::new(
                "device.spare_factor",
                spare_factor,
                "must be > 0 and < 1: (physical - logical) / physical",
            ));
        }
        let mut geometry = Geometry {
            channels: device.channels.unwrap_or(preset.geometry.channels),
            chips_per_channel: device.chips_per_channel.unwrap_or(preset.geometry.chips_per_channel),
            dies_per_chip: device.dies_per_chip.unwrap_or(preset.geometry.dies_per_chip),
            planes_per_die: device.planes_per_die.unwrap_or(preset.geometry.planes_per_die),
            blocks_per_plane: 1,
            pages_per_block: device.pages_per_block.unwrap_or(preset.geometry.pages_per_block),
            page_bytes: device.page_bytes.unwrap_or(preset.geometry.page_bytes),
            flash_page_bytes: 0,
        };
        // A mapping page larger than the preset's flash page makes the flash page follow it, so
        // configs written before flash pages existed keep working.
        geometry.flash_page_bytes =
            device.flash_page_bytes.unwrap_or(preset.geometry.flash_page_bytes.max(geometry.page_bytes));
        geometry.validate().map_err(geometry_error)?;
        let page_bytes = geometry.page_bytes as u64;

        // Either the logical size is given and the flash is sized to it, or the flash is given
        // (blocks_per_plane) and the logical size follows from the spare factor.
        let gc_threshold = ftl.gc_free_blocks.unwrap_or(preset.gc_free_blocks);
        let mut geometry_note = String::new();
        let explicit_blocks = device
            .blocks_per_plane
            .or((preset.logical_bytes == 0).then_some(preset.geometry.blocks_per_plane));
        let logical_pages: u64 = match (device.logical_bytes, explicit_blocks) {
            (Some(_), Some(_)) if device.blocks_per_plane.is_some() => {
                return Err(ConfigError::new(
                    "device.blocks_per_plane",
                    device.blocks_per_plane.unwrap_or(0),
                    "set either device.logical_bytes or device.blocks_per_plane, not both: the other follows from spare_factor",
                ))
            }
            (Some(logical), _) => {
                if logical.0 < page_bytes || logical.0 % page_bytes != 0 {
                    return Err(ConfigError::new("device.logical_bytes", logical, format!("must be a positive multiple of the {page_bytes}-byte page")));
                }
                let logical_pages = logical.0 / page_bytes;
                geometry_note = fit_to_capacity(&mut geometry, device, logical_pages, spare_factor, gc_threshold)
                    .map_err(|_| ConfigError::new("device.logical_bytes", logical, "too large for this geometry"))?;
                logical_pages
            }
            (None, Some(blocks)) => {
                geometry.blocks_per_plane = blocks;
                geometry.validate().map_err(geometry_error)?;
                (geometry.physical_pages() as f64 * (1.0 - spare_factor)).floor() as u64
            }
            (None, None) => {
                let logical_pages = preset.logical_bytes / page_bytes;
                geometry_note = fit_to_capacity(&mut geometry, device, logical_pages, spare_factor, gc_threshold)
                    .map_err(|_| ConfigError::new("device.preset", preset.name, "its default capacity does not fit its geometry"))?;
                logical_pages
            }
        };
        geometry.validate().map_err(geometry_error)?;
        let logical_pages = u32::try_from(logical_pages).ok().filter(|&p| p > 0).ok_or_else(|| {
            ConfigError::new(
                "device.logical_bytes",
                logical_pages * page_bytes,
                "must hold 1 to 2^32-2 pages",
            )
        })?;

        let timing = Timing {
            read_ns: positive(
                "device.read_ns",
                operation_ns("device.read_ns", device.read_ns.unwrap_or(preset.timing.read_ns))?,
                "must be > 0",
            )?,
            program_ns: positive(
                "device.program_ns",
                operation_ns("device.program_ns", device.program_ns.unwrap_or(preset.timing.program_ns))?,
                "must be > 0",
            )?,
            erase_ns: positive(
                "device.erase_ns",
                operation_ns("device.erase_ns", device.erase_ns.unwrap_or(preset.timing.erase_ns))?,
                "must be > 0",
            )?,
            transfer_ps_per_byte: ps_per_byte(
                "device.transfer_ps_per_byte",
                device.transfer_ps_per_byte.unwrap_or(preset.timing.transfer_ps_per_byte),
            )?,
            command_ns: operation_ns(
                "device.command_ns",
                device.command_ns.unwrap_or(preset.timing.command_ns),
            )?,
        };
        let firmware_ns = operation_ns("device.firmware_ns", device.firmware_ns.unwrap_or(1_000))?;
        let host_transfer_ps_per_byte = ps_per_byte(
            "device.host_transfer_ps_per_byte",
            device.host_transfer_ps_per_byte.unwrap_or(preset.host_transfer_ps_per_byte),
        )?;

        let queue_depth = device.queue_depth.unwrap_or(preset.queue_depth);
        if !(1..=65_536).contains(&queue_depth) {
            return Err(ConfigError::new("device.queue_depth", queue_depth, "must be 1..=65536"));
        }
        let trim_max_ranges = device.trim_max_ranges.unwrap_or(preset.trim_max_ranges);
        if !(1..=65_536).contains(&trim_max_ranges) {
            return Err(ConfigError::new("device.trim_max_ranges", trim_max_ranges, "must be 1..=65536"));
        }
        let trim_granularity_bytes = device.trim_granularity_bytes.map_or(page_bytes, |b| b.0);
        if trim_granularity_bytes == 0 || !trim_granularity_bytes.is_multiple_of(page_bytes) {
            return Err(ConfigError::new(
                "device.trim_granularity_bytes",
                trim_granularity_bytes,
                format!("must be a positive multiple of the {page_bytes}-byte page"),
            ));
        }
        let trim_max_bytes = device.trim_max_bytes.map_or(preset.trim_max_bytes, |b| b.0);
        if trim_max_bytes < trim_granularity_bytes {
            return Err(ConfigError::new(
                "device.trim_max_bytes",
                trim_max_bytes,
                format!("must be at least the TRIM granularity of {trim_granularity_bytes} bytes"),
            ));
        }
        let max_transfer_bytes = device.max_transfer_bytes.map_or(2 << 20, |b| b.0);
        if max_transfer_bytes < page_bytes || max_transfer_bytes > 1 << 30 {
            return Err(ConfigError::new(
                "device.max_transfer_bytes",
                max_transfer_bytes,
                format!("must be at least one {page_bytes}-byte page and at most 1 GiB"),
            ));
        }
        let write_buffer_bytes = device.write_buffer_bytes.map_or(preset.write_buffer_bytes, |b| b.0);
        if !write_buffer_bytes.is_multiple_of(page_bytes) || write_buffer_bytes / page_bytes > 1 << 24 {
            return Err(ConfigError::new(
                "device.write_buffer_bytes",
                write_buffer_bytes,
                format!("must be 0 or a multiple of the {page_bytes}-byte page, at most 2^24 pages"),
            ));
        }

        let gc_free_blocks_min = match gc_threshold {
            GcThreshold::Blocks(n) => n,
            GcThreshold::Percent(p) => {
                if !(p > 0.0 && p < 50.0) {
                    return Err(ConfigError::new(
                        "ftl.gc_free_blocks",
                        format!("\"{p}%\""),
                        "a percentage must be > 0 and < 50",
                    ));
                }
                gc_min_for(gc_threshold, geometry.blocks_per_plane)
            }
        };
        let half_plane = geometry.blocks_per_plane / 2;
        let idle_gc_free_blocks = match (ftl.idle_gc.unwrap_or(preset.idle_gc), ftl.idle_gc_free_blocks) {
            (false, _) => 0,
            (true, Some(t)) => {
                let target = gc_min_for(t, geometry.blocks_per_plane);
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
            (true, None) => Some((2 * gc_free_blocks_min).min(half_plane))
                .filter(|&t| t > gc_free_blocks_min)
                .unwrap_or(0),
        };
        let config = SsdConfig {
            preset: preset.name.to_string(),
            multi_plane: device.multi_plane.unwrap_or(preset.multi_plane),
            spare_factor: 1.0 - logical_pages as f64 / geometry.physical_pages() as f64,
            logical_pages,
            queue_depth,
            trim_queued: device.trim_queued.unwrap_or(preset.trim_queued),
            trim_max_ranges,
            trim_max_bytes,
            trim_granularity_bytes,
            max_transfer_bytes,
            sector_bytes: 512,
            write_buffer_pages: (write_buffer_bytes / page_bytes) as u32,
            firmware_ns,
            host_transfer_ps_per_byte,
            idle_threshold_ns: device.idle_threshold.map_or(100_000_000, |d| d.0),
            gc_free_blocks_min,
            idle_gc_free_blocks,
            gc_victim: ftl.gc_victim.unwrap_or_default(),
            track_data: ftl.track_data.unwrap_or(false),
            trim_engine: trim.engine.unwrap_or_default(),
            trim_cost: trim
                .cost
                .as_ref()
                .map_or(preset.trim_cost.clone(), |o| o.apply(preset.trim_cost.clone())),
            trim_delayed: trim.delayed.clone().unwrap_or_default(),
            geometry_note,
            ftl: crate::ftl_choice::FtlChoice::resolve(ftl)?,
            geometry,
            timing,
        };
        check_trim_cost(&config.trim_cost)?;
        config
            .trim_delayed
            .validate(config.trim_max_ranges)
            .map_err(|(key, value, accepted)| ConfigError::new(key, value, accepted))?;
        config.ftl.check(&config).map_err(|message| {
            if message.starts_with("ftl.gc_free_blocks") {
                match geometry_key_at_fault(device, ftl) {
                    // The threshold was not set: the geometry left too few blocks per plane.
                    Some((key, value)) => ConfigError::new(
                        key,
                        value,
                        format!(
                            "this leaves {} blocks per plane; the FTL needs at least 4 (ftl.gc_free_blocks must be 2..=blocks per plane / 2): use a smaller page or block, fewer planes, or a larger device.logical_bytes",
                            config.geometry.blocks_per_plane
                        ),
                    ),
                    None => ConfigError::new("ftl.gc_free_blocks", gc_free_blocks_min, message),
                }
            } else if message.starts_with("hybrid:") {
                ConfigError::new("ftl.kind", "\"hybrid\"", message)
            } else {
                ConfigError::new("device.spare_factor", spare_factor, message)
            }
        })?;
        Ok(config)
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

    pub fn logical_bytes(&self) -> u64 {
        self.logical_pages as u64 * self.geometry.page_bytes as u64
    }
}

/// GC's free-block target per plane for a threshold and a plane of `blocks_per_plane` blocks.
fn gc_min_for(threshold: GcThreshold, blocks_per_plane: u32) -> u32 {
    match threshold {
        GcThreshold::Blocks(n) => n,
        GcThreshold::Percent(p) => ((blocks_per_plane as f64 * p / 100.0).ceil() as u32).max(2),
    }
}

/// The spare factor garbage collection works with: the erased pages parked in each plane's
/// free-block reserve (about `gc_free_blocks - 1/2` blocks on average) and the unwritten half of
/// its two open blocks hold no data, so they are not spare (trimlab-analytic's
/// `spare_factor_seen_by_gc`).
pub fn spare_factor_seen_by_gc(geometry: &Geometry, logical_pages: u64, gc_free_blocks_min: u32) -> f64 {
    let idle_blocks_per_plane = gc_free_blocks_min as f64 - 0.5 + 1.0;
    let idle_pages = idle_blocks_per_plane * geometry.plane_count() as f64 * geometry.pages_per_block as f64;
    // When the GC target exceeds the spare space (004's "GC below 30 % free"), GC never
    // reaches it and nothing is left for it to work with beyond what it reclaims at once.
    (1.0 - logical_pages as f64 / (geometry.physical_pages() as f64 - idle_pages)).max(0.0)
}

/// Below this share of the nominal spare factor, GC's reserve eats too much of the spare: the
/// fit shrinks parallelism, and a run warns.
pub const MIN_SPARE_SEEN_SHARE: f64 = 0.7;
/// Blocks per plane no fitting goes below, whatever the spare (the FTL keeps 4 in reserve).
const MIN_FITTED_BLOCKS_PER_PLANE: u32 = 16;
/// Pages per block no fitting goes below.
const MIN_FITTED_PAGES_PER_BLOCK: u32 = 32;

/// Sizes the flash to `logical_pages` at `spare_factor`: blocks per plane follow from the
/// capacity. When GC's reserve (gc_free_blocks + 1/2 per plane) would leave GC under 70 % of the
/// nominal spare (a small drive with many planes), halve the parallelism the user did not set
/// (channels, then chips, dies, planes; then pages per block) until it does not. Returns what was
/// chosen, empty when the preset's shape was kept.
fn fit_to_capacity(
    geometry: &mut Geometry,
    device: &DeviceSection,
    logical_pages: u64,
    spare_factor: f64,
    gc_threshold: GcThreshold,
) -> Result<String, ()> {
    let from = geometry.clone();
    let size = |g: &mut Geometry| -> Result<(), ()> {
        let physical_pages = (logical_pages as f64 / (1.0 - spare_factor)).ceil() as u64;
        let per_block_row = g.plane_count() as u64 * g.pages_per_block as u64;
        g.blocks_per_plane = u32::try_from(physical_pages.div_ceil(per_block_row)).map_err(|_| ())?;
        Ok(())
    };
    size(geometry)?;
    loop {
        let gc_min = gc_min_for(gc_threshold, geometry.blocks_per_plane);
        // The FTL's fixed reserve of 4 blocks per plane (PageFtl::check_config) must leave room.
        let fits = logical_pages
            < (geometry.blocks_per_plane as u64).saturating_sub(4)
                * geometry.plane_count() as u64
                * geometry.pages_per_block as u64;
        // A percentage target (004's "GC below 30 % free") reserves the same share at any
        // parallelism: shrinking cannot raise the spare GC sees, only make the drive fit.
        let spare_ok = matches!(gc_threshold, GcThreshold::Percent(_))
            || spare_factor_seen_by_gc(geometry, logical_pages, gc_min)
                >= MIN_SPARE_SEEN_SHARE * spare_factor;
        if fits && spare_ok && geometry.blocks_per_plane >= MIN_FITTED_BLOCKS_PER_PLANE {
            break;
        }
        let shrunk = if device.channels.is_none() && geometry.channels > 1 {
            geometry.channels /= 2;
            true
        } else if device.chips_per_channel.is_none() && geometry.chips_per_channel > 1 {
            geometry.chips_per_channel /= 2;
            true
        } else if device.dies_per_chip.is_none() && geometry.dies_per_chip > 1 {
            geometry.dies_per_chip /= 2;
            true
        } else if device.planes_per_die.is_none() && geometry.planes_per_die > 1 {
            geometry.planes_per_die /= 2;
            true
        } else if device.pages_per_block.is_none()
            && geometry.pages_per_block / 2 >= MIN_FITTED_PAGES_PER_BLOCK.max(geometry.pages_per_flash_page())
        {
            geometry.pages_per_block /= 2;
            true
        } else {
            false
        };
        if !shrunk {
            break;
        }
        size(geometry)?;
    }
    let g = &*geometry;
    Ok(if g.plane_count() != from.plane_count() || g.pages_per_block != from.pages_per_block {
        format!(
            "fitted to {} logical pages: {} ch x {} chips x {} dies x {} planes x {} pages/block (preset: {} x {} x {} x {} x {}) so that GC's reserve leaves it at least {:.0} % of the nominal spare",
            logical_pages, g.channels, g.chips_per_channel, g.dies_per_chip, g.planes_per_die, g.pages_per_block,
            from.channels, from.chips_per_channel, from.dies_per_chip, from.planes_per_die, from.pages_per_block,
            MIN_SPARE_SEEN_SHARE * 100.0
        )
    } else {
        String::new()
    })
}

fn geometry_error(e: trimlab_nand::GeometryError) -> ConfigError {
    match e {
        trimlab_nand::GeometryError::OutOfRange { field, value, accepted } => {
            ConfigError::new(field, value, format!("must be {accepted}"))
        }
        trimlab_nand::GeometryError::FlashPage { flash_page_bytes, page_bytes } => ConfigError::new(
            "device.flash_page_bytes",
            flash_page_bytes,
            format!("must be a power of two, at most 1048576, and a multiple of device.page_bytes = {page_bytes}: a flash page holds whole mapping pages"),
        ),
        trimlab_nand::GeometryError::BlockNotWholeFlashPages { pages_per_block, pages_per_flash_page } => {
            ConfigError::new(
                "device.pages_per_block",
                pages_per_block,
                format!("must be a multiple of the {pages_per_flash_page} pages a flash page holds: a block is whole flash pages"),
            )
        }
        trimlab_nand::GeometryError::TooLarge { pages, max } => ConfigError::new(
            "device.logical_bytes",
            format!("{pages} physical pages"),
            format!("at most {max} physical pages are addressable"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(device: DeviceSection) -> Result<SsdConfig, ConfigError> {
        SsdConfig::resolve(&device, &FtlSection::default(), &TrimSection::default())
    }

    /// Issue 26: i64::MAX as a cost wrapped the simulated clock (an event-queue panic in run,
    /// sweep and Python); every cost is bounded and the error names its key.
    #[test]
    fn costs_the_clock_cannot_hold_are_refused_with_their_key() {
        let big = i64::MAX as u64;
        let small = || DeviceSection { logical_bytes: Some(ByteSize(64 << 20)), ..Default::default() };
        let cases: [(&str, DeviceSection); 8] = [
            ("device.firmware_ns", DeviceSection { firmware_ns: Some(big), ..small() }),
            ("device.read_ns", DeviceSection { read_ns: Some(big), ..small() }),
            ("device.program_ns", DeviceSection { program_ns: Some(big), ..small() }),
            ("device.erase_ns", DeviceSection { erase_ns: Some(big), ..small() }),
            ("device.command_ns", DeviceSection { command_ns: Some(big), ..small() }),
            ("device.transfer_ps_per_byte", DeviceSection { transfer_ps_per_byte: Some(big), ..small() }),
            (
                "device.host_transfer_ps_per_byte",
                DeviceSection { host_transfer_ps_per_byte: Some(big), ..small() },
            ),
            (
                "device.max_transfer_bytes",
                DeviceSection { max_transfer_bytes: Some(ByteSize(big)), ..small() },
            ),
        ];
        for (key, device) in cases {
            let e = resolve(device).unwrap_err();
            assert_eq!(e.key, key, "{e}");
            assert_eq!(e.value, big.to_string());
            assert!(e.to_string().contains("at most"), "{e}");
        }
        let trim = TrimSection {
            cost: Some(TrimCostOverrides { map_invalidate_ns: Some(big), ..Default::default() }),
            ..Default::default()
        };
        let e = SsdConfig::resolve(&small(), &FtlSection::default(), &trim).unwrap_err();
        assert_eq!(e.key, "trim.cost.map_invalidate_ns", "{e}");
        let at_limit = DeviceSection { firmware_ns: Some(OPERATION_NS_MAX), ..small() };
        assert_eq!(resolve(at_limit).unwrap().firmware_ns, OPERATION_NS_MAX);
    }

    #[test]
    fn default_preset_sizes_flash_from_logical_and_spare() {
        let c = resolve(DeviceSection { spare_factor: Some(0.10), ..Default::default() }).unwrap();
        assert_eq!(c.logical_bytes(), 8 << 30);
        // Flash comes in whole rows of one block per plane (64 MiB here), so the resolved spare
        // factor is the requested one rounded up to the next row.
        let row = (c.geometry.plane_count() * c.geometry.pages_per_block as usize) as f64;
        let slack = row / c.geometry.physical_pages() as f64;
        assert!(c.spare_factor >= 0.10 && c.spare_factor < 0.10 + slack, "{}", c.spare_factor);
    }

    #[test]
    fn k9lag_preset_derives_logical_from_flash() {
        let c =
            resolve(DeviceSection { preset: Some("k9lag08u0m-4ch".into()), ..Default::default() }).unwrap();
        assert_eq!(c.geometry.physical_bytes(), 8 << 30);
        assert_eq!(c.gc_free_blocks_min, 615); // 30 % of 2048, rounded up
        assert!(!c.trim_queued);
    }

    #[test]
    fn spare_factor_of_one_is_refused_by_name() {
        let e = resolve(DeviceSection { spare_factor: Some(1.0), ..Default::default() }).unwrap_err();
        assert_eq!(e.key, "device.spare_factor");
        assert!(e.to_string().contains("must be > 0 and < 1"), "{e}");
    }

    #[test]
    fn zero_pages_per_block_is_refused_by_name() {
        let e = resolve(DeviceSection { pages_per_block: Some(0), ..Default::default() }).unwrap_err();
        assert_eq!(e.to_string(), "config: device.pages_per_block = 0 (must be 1..=65536)");
    }

    #[test]
    fn unknown_preset_lists_the_choices() {
        let e = resolve(DeviceSection { preset: Some("floppy".into()), ..Default::default() }).unwrap_err();
        assert!(e.to_string().contains("nvme-tlc") && e.to_string().contains("k9lag08u0m-4ch"), "{e}");
    }

    #[test]
    fn both_logical_and_blocks_is_refused() {
        let e = resolve(DeviceSection {
            logical_bytes: Some(ByteSize(1 << 30)),
            blocks_per_plane: Some(100),
            ..Default::default()
        })
        .unwrap_err();
        assert_eq!(e.key, "device.blocks_per_plane");
    }

    #[test]
    fn every_preset_fits_64_mib_to_4_tib_with_only_logical_and_spare() {
        for info in preset_infos() {
            let mut logical: u64 = 64 << 20;
            while logical <= 4 << 40 {
                let c = resolve(DeviceSection {
                    preset: Some(info.name.into()),
                    logical_bytes: Some(ByteSize(logical)),
                    spare_factor: Some(0.07),
                    ..Default::default()
                })
                .unwrap_or_else(|e| panic!("{} at {logical} B: {e}", info.name));
                assert_eq!(c.logical_bytes(), logical);
                assert!(c.spare_warning().is_none(), "{} at {logical} B: {:?}", info.name, c.spare_warning());
                logical *= 4;
            }
        }
    }

    #[test]
    fn one_gib_on_the_default_preset_is_fitted_and_says_so() {
        let c =
            resolve(DeviceSection { logical_bytes: Some(ByteSize(1 << 30)), ..Default::default() }).unwrap();
        assert!(
            c.spare_factor_seen_by_gc() >= MIN_SPARE_SEEN_SHARE * 0.07,
            "{}",
            c.spare_factor_seen_by_gc()
        );
        assert!(c.geometry.plane_count() < 64, "{:?}", c.geometry);
        assert!(c.geometry_note.contains("fitted"), "{}", c.geometry_note);
        // The preset's own capacity keeps the preset's shape.
        let d = resolve(DeviceSection::default()).unwrap();
        assert_eq!(d.geometry.plane_count(), 64);
        assert!(d.geometry_note.is_empty());
    }

    #[test]
    fn four_gib_no_longer_hides_a_halved_spare() {
        // Before the fit, GC saw 0.030 of the 0.07 asked for here, silently.
        let c =
            resolve(DeviceSection { logical_bytes: Some(ByteSize(4 << 30)), ..Default::default() }).unwrap();
        assert!(c.spare_factor_seen_by_gc() >= 0.049, "{}", c.spare_factor_seen_by_gc());
    }

    #[test]
    fn a_pinned_shape_that_starves_gc_warns() {
        let device = DeviceSection {
            logical_bytes: Some(ByteSize(1 << 30)),
            channels: Some(8),
            chips_per_channel: Some(2),
            dies_per_chip: Some(2),
            planes_per_die: Some(2),
            pages_per_block: Some(256),
            spare_factor: Some(0.25),
            ..Default::default()
        };
        let ftl = FtlSection { gc_free_blocks: Some(GcThreshold::Blocks(4)), ..Default::default() };
        let c = SsdConfig::resolve(&device, &ftl, &TrimSection::default()).unwrap();
        let w = c.spare_warning().expect("22 blocks a plane with 4.5 idle is a visible share");
        assert!(w.contains("nominal") && w.contains("64 planes"), "{w}");
    }

    #[test]
    fn presets_carry_trim_costs_and_their_sources() {
        for info in preset_infos() {
            assert!(!info.trim_source.is_empty(), "{}", info.name);
            assert!(
                info.trim_source.contains("github.com") || info.trim_source.contains("assumption"),
                "{}: a source must cite a measurement or say assumption",
                info.name
            );
        }
        let nvme = resolve(DeviceSection::default()).unwrap();
        assert_eq!(nvme.trim_cost, TrimCostModel::nvme_fio());
        let sata =
            resolve(DeviceSection { preset: Some("sata-mlc-2011".into()), ..Default::default() }).unwrap();
        assert!(!sata.trim_queued);
        assert!(sata.trim_cost.command_ns >= 1_000_000);
        // An explicit [trim] cost still wins over the preset's.
        let own = SsdConfig::resolve(
            &DeviceSection::default(),
            &FtlSection::default(),
            &TrimSection {
                cost: Some(TrimCostOverrides::all(&TrimCostModel::openssd_002())),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(own.trim_cost, TrimCostModel::default());
    }

    #[test]
    fn flash_pages_come_from_the_preset_and_bad_combinations_name_their_key() {
        let c = resolve(DeviceSection::default()).unwrap();
        assert_eq!((c.geometry.page_bytes, c.geometry.flash_page_bytes), (4096, 16384));
        assert!(c.multi_plane);
        // A config written before flash pages existed keeps its meaning.
        let old = resolve(DeviceSection {
            page_bytes: Some(4096),
            pages_per_block: Some(64),
            ..Default::default()
        })
        .unwrap();
        assert_eq!((old.geometry.pages_per_block, old.geometry.pages_per_flash_page()), (64, 4));
        // A mapping page larger than the preset's flash page takes the flash page with it.
        let big = resolve(DeviceSection { page_bytes: Some(65536), ..Default::default() }).unwrap();
        assert_eq!(big.geometry.flash_page_bytes, 65536);
        let e = resolve(DeviceSection { flash_page_bytes: Some(2048), ..Default::default() }).unwrap_err();
        assert_eq!(e.key, "device.flash_page_bytes");
        assert!(e.to_string().contains("multiple of device.page_bytes = 4096"), "{e}");
        let e = resolve(DeviceSection { pages_per_block: Some(6), ..Default::default() }).unwrap_err();
        assert_eq!(
            e.to_string(),
            "config: device.pages_per_block = 6 (must be a multiple of the 4 pages a flash page holds: a block is whole flash pages)"
        );
        let k9 =
            resolve(DeviceSection { preset: Some("k9lag08u0m-4ch".into()), ..Default::default() }).unwrap();
        assert_eq!(k9.geometry.pages_per_flash_page(), 1);
        assert!(!k9.multi_plane);
    }

    #[test]
    fn a_huge_page_blames_page_bytes_not_the_gc_threshold() {
        // Issue 13 item 11: this reported `ftl.gc_free_blocks = 2`. Since the flash shape is
        // fitted to the capacity (fidelity), a 1 MiB page fits the preset's 8 GiB on fewer
        // planes instead of failing, and says so.
        let c = resolve(DeviceSection { page_bytes: Some(1 << 20), ..Default::default() }).unwrap();
        assert!(c.geometry_note.contains("fitted"), "{}", c.geometry_note);
        // A GC threshold the user did set is still the key named.
        let ftl = FtlSection { gc_free_blocks: Some(GcThreshold::Blocks(100_000)), ..Default::default() };
        let e = SsdConfig::resolve(&DeviceSection::default(), &ftl, &TrimSection::default()).unwrap_err();
        assert_eq!(e.key, "ftl.gc_free_blocks");
    }
}
