//! `presets`: every device preset, resolved: as text lines for the terminal and as JSON
//! objects for Python.

use anyhow::Result;
use trimlab_device::{DeviceSection, FtlSection, SsdConfig, TrimSection};

/// Every device preset resolved with its defaults, as JSON objects (name, about, geometry,
/// timing, host interface).
pub fn presets() -> Vec<serde_json::Value> {
    trimlab_scenario::presets()
}

/// What `trimlab presets` prints.
pub fn describe() -> Result<Vec<String>> {
    let mut lines = Vec::new();
    for info in trimlab_device::config::preset_infos() {
        let name = info.name;
        let device = DeviceSection { preset: Some(name.to_string()), ..Default::default() };
        let c = SsdConfig::resolve(&device, &FtlSection::default(), &TrimSection::default())?;
        let g = &c.geometry;
        lines.push(format!("{name}: {}", info.about));
        lines.push(format!(
            "  {} ch x {} chips x {} dies x {} planes x {} blocks x {} pages x {} B; flash pages of {} B ({} pages), {}; logical {} B, spare factor {:.4} (seen by GC {:.4})",
            g.channels, g.chips_per_channel, g.dies_per_chip, g.planes_per_die, g.blocks_per_plane, g.pages_per_block, g.page_bytes,
            g.flash_page_bytes, g.pages_per_flash_page(), if c.multi_plane { "multi-plane programs" } else { "one plane per program" },
            c.logical_bytes(), c.spare_factor, c.spare_factor_seen_by_gc()
        ));
        lines.push(format!(
            "  read {} ns, program {} ns, erase {} ns, bus {} ps/B; queue depth {}, trim {}; write buffer {} pages; GC below {} free blocks/plane",
            c.timing.read_ns, c.timing.program_ns, c.timing.erase_ns, c.timing.transfer_ps_per_byte, c.queue_depth,
            if c.trim_queued { "queued" } else { "non-queued" }, c.write_buffer_pages, c.gc_free_blocks_min
        ));
        let t = &c.trim_cost;
        lines.push(format!(
            "  TRIM: {} ns per command + {} ns per range + {} ns per page looked up + {} ns per mapped page cleared (4 KiB: {:.1} us, 1 MiB: {:.1} us); at most {} ranges, {} B",
            t.command_ns, t.range_ns, t.buffer_lookup_ns + t.map_lookup_ns, t.map_invalidate_ns,
            t.single_range_ns(4096 / g.page_bytes as u64) as f64 / 1e3, t.single_range_ns((1 << 20) / g.page_bytes as u64) as f64 / 1e3,
            c.trim_max_ranges, c.trim_max_bytes
        ));
        lines.push(format!("  TRIM cost source: {}", info.trim_source));
    }
    let thin = trimlab_device::ThinConfig::xtremio_like(10 << 40);
    lines.push(format!(
        "thin-array (003, used by discard-vs-fstrim; not an SSD preset): {} lanes, {} B chunks",
        thin.lanes, thin.chunk_bytes
    ));
    lines.push(format!(
        "  TRIM: {} ns per command + {} ps per byte of range walked + {} ps per allocated byte released; at most {} B per command",
        thin.trim_command_ns, thin.trim_ps_per_byte, thin.unmap_ps_per_byte, thin.trim_max_bytes
    ));
    lines.push(format!("  TRIM cost source: {}", trimlab_device::ThinConfig::TRIM_SOURCE));
    Ok(lines)
}
