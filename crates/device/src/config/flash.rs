//! The flash array a config describes: its geometry (given, or fitted to the logical capacity
//! so that GC's reserve leaves it most of the spare), its NAND timing, and which geometry key
//! an error blames.

use super::bounds::{operation_ns, positive, ps_per_byte};
use super::device::{DeviceSection, DeviceSpec};
use super::ftl::{gc_min_for, FtlSection, GcThreshold};
use super::preset::Preset;
use super::ConfigError;
use trimlab_nand::{Geometry, Timing};

/// The geometry resolved with the logical capacity it holds.
pub(super) struct Flash {
    pub geometry: Geometry,
    pub logical_pages: u32,
    /// What the capacity fit chose, when it changed the preset's shape (empty otherwise).
    pub note: String,
}

/// Checks the nominal spare factor: (physical - logical) / physical.
pub(super) fn spare_factor(spec: &DeviceSpec) -> Result<f64, ConfigError> {
    let spare_factor = spec.spare_factor;
    if !(spare_factor > 0.0 && spare_factor < 1.0) {
        return Err(ConfigError::new(
            "device.spare_factor",
            spare_factor,
            "must be > 0 and < 1: (physical - logical) / physical",
        ));
    }
    Ok(spare_factor)
}

/// The shape of the array before its size: `blocks_per_plane` follows from the capacity.
/// With `[ftl] mapping_unit` (`unit`, checked to be whole device pages dividing the block),
/// the FTL's page is the unit: the same block bytes in fewer, larger pages.
fn shape(spec: &DeviceSpec, set: &DeviceSection, unit: Option<u32>) -> Result<Geometry, ConfigError> {
    let page_bytes = unit.unwrap_or(spec.page_bytes);
    let geometry = Geometry {
        channels: spec.channels,
        chips_per_channel: spec.chips_per_channel,
        dies_per_chip: spec.dies_per_chip,
        planes_per_die: spec.planes_per_die,
        blocks_per_plane: 1,
        // A page size of 0 is left for `validate` to name (no division by it here).
        pages_per_block: (spec.pages_per_block as u64 * spec.page_bytes as u64)
            .checked_div(page_bytes as u64)
            .map_or(spec.pages_per_block, |p| p as u32),
        page_bytes,
        // A mapping page larger than the preset's flash page makes the flash page follow it, so
        // configs written before flash pages existed keep working (and a unit larger than the
        // flash page is read and programmed as one: see docs/config.md, "Mapping units").
        flash_page_bytes: match set.flash_page_bytes {
            Some(bytes) if unit.is_some() => bytes.max(page_bytes),
            Some(bytes) => bytes,
            None => spec.flash_page_bytes.max(page_bytes),
        },
    };
    geometry.validate().map_err(geometry_error)?;
    Ok(geometry)
}

/// Either the logical size is given and the flash is sized to it, or the flash is given
/// (`blocks_per_plane`) and the logical size follows from the spare factor.
pub(super) fn resolve(
    spec: &DeviceSpec,
    set: &DeviceSection,
    preset: &Preset,
    gc_threshold: GcThreshold,
    unit: Option<u32>,
) -> Result<Flash, ConfigError> {
    let spare_factor = spare_factor(spec)?;
    let mut geometry = shape(spec, set, unit)?;
    let page_bytes = geometry.page_bytes as u64;
    let mut note = String::new();
    let preset_blocks =
        preset.device.logical_bytes.is_none().then_some(preset.device.blocks_per_plane).flatten();
    let logical_pages: u64 = match (set.logical_bytes, set.blocks_per_plane.or(preset_blocks)) {
        (Some(_), Some(_)) if set.blocks_per_plane.is_some() => {
            return Err(ConfigError::new(
                "device.blocks_per_plane",
                set.blocks_per_plane.unwrap_or(0),
                "set either device.logical_bytes or device.blocks_per_plane, not both: the other follows from spare_factor",
            ))
        }
        (Some(logical), _) => {
            let (pages, fitted) = sized_to(&mut geometry, set, logical, spare_factor, gc_threshold)?;
            note = fitted;
            pages
        }
        (None, Some(blocks)) => {
            geometry.blocks_per_plane = blocks;
            geometry.validate().map_err(|e| match e {
                // The user gave the flash's size, so that is the key to change.
                trimlab_nand::GeometryError::TooLarge { pages, max } => {
                    ConfigError::new("device.blocks_per_plane", blocks, format!("{pages} physical pages is too many: {}", too_large(max)))
                }
                e => geometry_error(e),
            })?;
            (geometry.physical_pages() as f64 * (1.0 - spare_factor)).floor() as u64
        }
        (None, None) => {
            let bad = |why: &str| ConfigError::new("device.preset", preset.name, why);
            let logical = preset.device.logical_bytes.ok_or_else(|| bad("its data gives neither logical_bytes nor blocks_per_plane"))?;
            let logical_pages = logical.0 / page_bytes;
            note = fit_to_capacity(&mut geometry, set, logical_pages, spare_factor, gc_threshold)
                .map_err(|_| bad("its default capacity does not fit its geometry"))?;
            logical_pages
        }
    };
    geometry.validate().map_err(geometry_error)?;
    let logical_pages = u32::try_from(logical_pages).ok().filter(|&p| p > 0).ok_or_else(|| {
        ConfigError::new("device.logical_bytes", logical_pages * page_bytes, "must hold 1 to 2^32-2 pages")
    })?;
    Ok(Flash { geometry, logical_pages, note })
}

/// The NAND timing, each value checked by its key.
pub(super) fn timing(spec: &DeviceSpec) -> Result<Timing, ConfigError> {
    let nand_op = |key: &str, value: u64| positive(key, operation_ns(key, value)?, "must be > 0");
    Ok(Timing {
        read_ns: nand_op("device.read_ns", spec.read_ns)?,
        program_ns: nand_op("device.program_ns", spec.program_ns)?,
        erase_ns: nand_op("device.erase_ns", spec.erase_ns)?,
        transfer_ps_per_byte: ps_per_byte("device.transfer_ps_per_byte", spec.transfer_ps_per_byte)?,
        command_ns: operation_ns("device.command_ns", spec.command_ns)?,
    })
}

/// When the GC threshold is out of range but the user never set `ftl.gc_free_blocks`, the
/// geometry keys they did set are at fault (issue 13: `page_bytes = 1048576` blamed the GC key).
pub(super) fn geometry_key_at_fault(
    device: &DeviceSection,
    ftl: &FtlSection,
) -> Option<(&'static str, String)> {
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

/// The flash sized to a given logical capacity: its page count and the fitting's note. Errors
/// name `device.logical_bytes`, the key the user set, not a size derived from it.
fn sized_to(
    geometry: &mut Geometry,
    set: &DeviceSection,
    logical: trimlab_sim::ByteSize,
    spare_factor: f64,
    gc_threshold: GcThreshold,
) -> Result<(u64, String), ConfigError> {
    let page_bytes = geometry.page_bytes as u64;
    let too_big = |why: String| ConfigError::new("device.logical_bytes", logical, why);
    if logical.0 < page_bytes || !logical.0.is_multiple_of(page_bytes) {
        return Err(too_big(format!("must be a positive multiple of the {page_bytes}-byte page")));
    }
    let logical_pages = logical.0 / page_bytes;
    if logical_pages > u64::from(u32::MAX - 1) {
        return Err(too_big(format!(
            "is {logical_pages} mapping units of {page_bytes} bytes; at most 4294967294 are addressable (32-bit page addresses): set a larger [ftl] mapping_unit (up to \"64KiB\") or a smaller device"
        )));
    }
    let note = fit_to_capacity(geometry, set, logical_pages, spare_factor, gc_threshold)
        .map_err(|_| too_big("too large for this geometry".into()))?;
    geometry.validate().map_err(|e| match e {
        trimlab_nand::GeometryError::OutOfRange { field: "device.blocks_per_plane", value, accepted } => too_big(format!(
            "needs {value} blocks per plane with this geometry ({accepted}): set more device.channels, chips_per_channel, dies_per_chip or planes_per_die, more pages_per_block, or a smaller device"
        )),
        e => geometry_error(e),
    })?;
    Ok((logical_pages, note))
}

/// Sizes the flash to `logical_pages` at `spare_factor`: blocks per plane follow from the
/// capacity. When GC's reserve (gc_free_blocks + 1/2 per plane) would leave GC under 70 % of the
/// nominal spare (a small drive with many planes), halve the parallelism the user did not set
/// (channels, then chips, dies, planes; then pages per block) until it does not. Returns what was
/// chosen, empty when the preset's shape was kept.
pub(super) fn fit_to_capacity(
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

/// What a drive beyond 32-bit page addresses can change: the map's entries are `u32`, so a
/// drive of more than `max` mapping units needs a larger unit (issue 27: 30.72 TB in 16 KiB
/// units, 61.44 TB in 64 KiB units fit; neither does in 4 KiB units).
fn too_large(max: u64) -> String {
    format!(
        "at most {max} physical pages (mapping units) are addressable, 32-bit page addresses: set a larger [ftl] mapping_unit (up to \"64KiB\") or a smaller device"
    )
}

pub(super) fn geometry_error(e: trimlab_nand::GeometryError) -> ConfigError {
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
            too_large(max),
        ),
    }
}
