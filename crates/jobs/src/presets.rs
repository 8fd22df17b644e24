//! `presets`: every device preset, resolved: as text lines for the terminal and as JSON
//! objects for Python; and `presets --from`: a device built from a drive's own reports
//! (nvme-cli, smartctl), with what was mapped and what was assumed.

use anyhow::{anyhow, Result};
use trimlab_device::config::nvme_id::Import;
use trimlab_device::config::Preset;
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
        lines.push(format!("{name}: {}", info.about));
        lines.extend(describe_config(&c));
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

/// A resolved device in three lines: shape, timing and host interface, TRIM costs.
fn describe_config(c: &SsdConfig) -> Vec<String> {
    let g = &c.geometry;
    let t = &c.trim_cost;
    vec![
        format!(
            "  {} ch x {} chips x {} dies x {} planes x {} blocks x {} pages x {} B; flash pages of {} B ({} pages), {}; logical {} B, spare factor {:.4} (seen by GC {:.4})",
            g.channels, g.chips_per_channel, g.dies_per_chip, g.planes_per_die, g.blocks_per_plane, g.pages_per_block, g.page_bytes,
            g.flash_page_bytes, g.pages_per_flash_page(), if c.multi_plane { "multi-plane programs" } else { "one plane per program" },
            c.logical_bytes(), c.spare_factor, c.spare_factor_seen_by_gc()
        ),
        format!(
            "  read {} ns, program {} ns, erase {} ns, bus {} ps/B; queue depth {}, trim {}; write buffer {} pages; GC below {} free blocks/plane",
            c.timing.read_ns, c.timing.program_ns, c.timing.erase_ns, c.timing.transfer_ps_per_byte, c.queue_depth,
            if c.trim_queued { "queued" } else { "non-queued" }, c.write_buffer_pages, c.gc_free_blocks_min
        ),
        format!(
            "  TRIM: {} ns per command + {} ns per range + {} ns per page looked up + {} ns per mapped page cleared (4 KiB: {:.1} us, 1 MiB: {:.1} us); at most {} ranges, {} B, granularity {} B; largest transfer {} B",
            t.command_ns, t.range_ns, t.buffer_lookup_ns + t.map_lookup_ns, t.map_invalidate_ns,
            t.single_range_ns(4096 / g.page_bytes as u64) as f64 / 1e3, t.single_range_ns((1 << 20) / g.page_bytes as u64) as f64 / 1e3,
            c.trim_max_ranges, c.trim_max_bytes, c.trim_granularity_bytes, c.max_transfer_bytes
        ),
    ]
}

/// The keys that name the reports or choose the layers: never "assumed".
const NOT_DEVICE_DATA: [&str; 6] = ["kind", "preset", "from", "from_nvm", "from_ns", "from_smart"];

/// What `trimlab presets --from ID-CTRL.json [--nvm ..] [--ns ..] [--smart ..]` prints: each key
/// the drive's reports gave (the field it came from and the specification that defines it),
/// what was read that no key takes, each key assumed from the closest preset with its value,
/// and the device resolved. `reports` are the files of `[device] from`, `from_nvm`, `from_ns`
/// and `from_smart`, in that order; `preset` chooses another preset than the closest.
pub fn describe_from(reports: [Option<String>; 4], preset: Option<String>) -> Result<Vec<String>> {
    let [ctrl, nvm, ns, smart] = reports;
    let files = &DeviceSection {
        r#from: ctrl,
        from_nvm: nvm,
        from_ns: ns,
        from_smart: smart,
        preset,
        ..Default::default()
    };
    let import = Import::of_section(files)?
        .ok_or_else(|| anyhow!("presets --from: no report given (--from, --nvm, --ns or --smart)"))?;
    let merged = import.under(files);
    let preset = Preset::named(merged.preset.as_deref().unwrap_or(import.preset))?;
    let config = SsdConfig::resolve(files, &FtlSection::default(), &TrimSection::default())?;
    let mut lines = vec![format!("device from {} ({})", import.model, import.files.join(", "))];
    lines.push("mapped from the drive's reports:".into());
    for m in &import.mapped {
        lines.push(format!("  {} = {}  <- {}  [{}]", m.key, m.value, m.from, m.cite));
    }
    if !import.read.is_empty() {
        lines.push("read, but no key takes it:".into());
        lines.extend(import.read.iter().map(|r| format!("  {r}")));
    }
    lines.push(format!(
        "assumed: preset {}'s (the closest; [device] preset = \"...\" chooses another), and the TRIM costs of [trim.cost]:",
        preset.name
    ));
    let data = serde_json::to_value(&preset.device)?;
    let given = merged.set_keys();
    for key in DeviceSection::KEYS.iter().filter(|k| !NOT_DEVICE_DATA.contains(k)) {
        if import.section.set_keys().contains(key) || (given.contains(key) && files.set_keys().contains(key))
        {
            continue;
        }
        let value = match &data[*key] {
            serde_json::Value::Null => "unset".to_string(),
            v => v.to_string(),
        };
        lines.push(format!("  {key} = {value}"));
    }
    lines.push(format!("resolved ({} mapped keys over preset {}):", import.mapped.len(), preset.name));
    lines.extend(describe_config(&config));
    lines.extend(config.spare_warning());
    if !config.geometry_note.is_empty() {
        lines.push(config.geometry_note.clone());
    }
    Ok(lines)
}
