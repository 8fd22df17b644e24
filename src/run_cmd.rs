//! `trimlab run` and `trimlab presets`.

use crate::output;
use crate::progress::Bar;
use anyhow::{Context, Result};
use std::path::Path;
use trimlab_device::{DeviceSection, FtlSection, SsdConfig, TrimSection};

pub fn run(config_path: &Path, set: &[String], seed: Option<u64>, out: &Path, json: bool) -> Result<()> {
    let config = crate::config_arg::load(config_path, set)?;
    // What the capacity fit chose and whether GC is left too little spare: said before the run.
    if let Ok(resolved) = config.resolve() {
        if !resolved.device.geometry_note.is_empty() {
            eprintln!("trimlab run: {}", resolved.device.geometry_note);
        }
        if let Some(w) = resolved.device.spare_warning() {
            eprintln!("trimlab run: {w}");
        }
    }
    let mut bar = Bar::new("run");
    let result = trimlab_scenario::run(&config, seed, &mut bar)?;
    bar.finish();
    eprintln!("trimlab run: seed {}, config {} ({})", result.seed, result.config_hash, config_path.display());

    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    output::write_json(&out.join("metrics.json"), &result.metrics)?;
    output::write_flat_csv(&out.join("metrics.csv"), &result.metrics)?;
    if json {
        println!("{}", serde_json::to_string(&result.metrics)?);
        return Ok(());
    }
    if let Some(phases) = result.metrics["phases"].as_array() {
        for (i, p) in phases.iter().enumerate() {
            let d = &p["device"];
            println!(
                "phase[{i}] {:<14} {:>10.3} ms  TRIM {} commands, {} bytes; writes {} bytes",
                p["name"].as_str().unwrap_or("?"),
                p["elapsed_ns"].as_u64().unwrap_or(0) as f64 / 1e6,
                d["trim_commands"],
                d["trim_bytes"],
                d["write_bytes"]
            );
        }
    }
    if result.metrics.get("thin").is_some() {
        println!("thin volume: allocated {} bytes at the end", result.metrics["thin"]["allocated_bytes"]);
        println!("wrote {}", out.join("metrics.json").display());
        return Ok(());
    }
    let r = &result.report;
    println!(
        "WAF {:.3}  spare_factor_seen_by_gc {:.4}  host pages written {}  NAND programs {}  erases {}  GC victims {}  write p99 {} us  sim time {:.3} s",
        r.waf,
        r.spare_factor_seen_by_gc,
        r.host.pages_written,
        r.nand_pages_programmed,
        r.nand_blocks_erased,
        r.gc.victims,
        r.latency.write.p99_ns / 1000,
        r.sim_time_ns as f64 / 1e9
    );
    println!("wrote {}", out.join("metrics.json").display());
    Ok(())
}
pub fn presets() -> Result<()> {
    for info in trimlab_device::config::preset_infos() {
        let name = info.name;
        let device = DeviceSection { preset: Some(name.to_string()), ..Default::default() };
        let c = SsdConfig::resolve(&device, &FtlSection::default(), &TrimSection::default())?;
        let g = &c.geometry;
        println!("{name}: {}", info.about);
        println!(
            "  {} ch x {} chips x {} dies x {} planes x {} blocks x {} pages x {} B; logical {} B, spare factor {:.4} (seen by GC {:.4})",
            g.channels, g.chips_per_channel, g.dies_per_chip, g.planes_per_die, g.blocks_per_plane, g.pages_per_block, g.page_bytes,
            c.logical_bytes(), c.spare_factor, c.spare_factor_seen_by_gc()
        );
        println!(
            "  read {} ns, program {} ns, erase {} ns, bus {} ps/B; queue depth {}, trim {}; write buffer {} pages; GC below {} free blocks/plane",
            c.timing.read_ns, c.timing.program_ns, c.timing.erase_ns, c.timing.transfer_ps_per_byte, c.queue_depth,
            if c.trim_queued { "queued" } else { "non-queued" }, c.write_buffer_pages, c.gc_free_blocks_min
        );
        let t = &c.trim_cost;
        println!(
            "  TRIM: {} ns per command + {} ns per range + {} ns per page looked up + {} ns per mapped page cleared (4 KiB: {:.1} us, 1 MiB: {:.1} us); at most {} ranges, {} B",
            t.command_ns, t.range_ns, t.buffer_lookup_ns + t.map_lookup_ns, t.map_invalidate_ns,
            t.single_range_ns(4096 / g.page_bytes as u64) as f64 / 1e3, t.single_range_ns((1 << 20) / g.page_bytes as u64) as f64 / 1e3,
            c.trim_max_ranges, c.trim_max_bytes
        );
        println!("  TRIM cost source: {}", info.trim_source);
    }
    let thin = trimlab_device::ThinConfig::xtremio_like(10 << 40);
    println!(
        "thin-array (003, used by discard-vs-fstrim; not an SSD preset): {} lanes, {} B chunks",
        thin.lanes, thin.chunk_bytes
    );
    println!(
        "  TRIM: {} ns per command + {} ps per byte of range walked + {} ps per allocated byte released; at most {} B per command",
        thin.trim_command_ns, thin.trim_ps_per_byte, thin.unmap_ps_per_byte, thin.max_trim_bytes
    );
    println!("  TRIM cost source: {}", trimlab_device::ThinConfig::TRIM_SOURCE);
    Ok(())
}
