//! `trimlab run` and `trimlab presets`.

use crate::output;
use crate::progress::Bar;
use anyhow::{Context, Result};
use std::path::PathBuf;
use trimlab_device::{DeviceReport, DeviceSection, FtlSection, SsdConfig, TrimSection};

/// `trimlab run`'s arguments.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The configuration file (`-`: read it from stdin); every key has a default
    /// (docs/config.md). Optional with --fio.
    #[arg(required_unless_present = "fio")]
    pub config: Option<PathBuf>,
    /// Override one key (repeatable), checked like the same key in the file:
    /// --set device.spare_factor=0.1 --set trim.engine=delayed
    #[arg(long = "set", value_name = "KEY.PATH=VALUE")]
    pub set: Vec<String>,
    /// Take the workload from this fio job file (one job; docs/config.md maps the options).
    #[arg(long)]
    pub fio: Option<PathBuf>,
    /// Seed of every random stream of the run (default: the config's `seed`, else 1).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Output directory.
    #[arg(long, default_value = "out/run")]
    pub out: PathBuf,
    /// Write DIR/timeseries.csv with one row per this much simulated time, e.g. 100ms
    /// (overrides [output] interval).
    #[arg(long)]
    pub log_interval: Option<String>,
    /// Also write DIR/index.html with the totals and plots of the time series.
    #[arg(long)]
    pub html: bool,
    /// Print the run's metrics as one JSON object on stdout instead of the summary line.
    #[arg(long)]
    pub json: bool,
}

/// "n/a" when no host page was written: a WAF of 0 would read as a perfect drive.
pub fn waf_text(report: &DeviceReport) -> String {
    if report.host.pages_written == 0 {
        "n/a (no host writes)".into()
    } else {
        format!("{:.3}", report.waf)
    }
}

pub fn run(args: &RunArgs) -> Result<()> {
    let (mut config, origin) = match &args.config {
        Some(path) => (crate::config_arg::load(path, &args.set)?, path.display().to_string()),
        None => (crate::config_arg::defaults(&args.set)?, "defaults".to_string()),
    };
    if let Some(fio) = &args.fio {
        let text = std::fs::read_to_string(fio).with_context(|| format!("cannot read {}", fio.display()))?;
        // Without a config, start from an unconditioned drive as fio would find a new one.
        let mut base = config.workload.clone();
        if args.config.is_none() {
            base.precondition = trimlab_workload::Precondition::None;
        }
        let job = trimlab_workload::parse_fio_job(&text, &fio.display().to_string(), &base)?;
        for ignored in &job.ignored {
            eprintln!("trimlab run: {ignored} ignored (no effect on a simulated drive)");
        }
        config.workload = job.workload;
    }
    // --log-interval wins over [output] interval; the run samples what the config says.
    config.output.interval =
        config.output.interval_ns(args.log_interval.as_deref())?.map(trimlab_sim::DurationNs);
    // What the capacity fit chose and whether GC is left too little spare: said before the run.
    if let Ok(resolved) = config.resolve() {
        if !resolved.device.geometry_note.is_empty() {
            eprintln!("trimlab run: {}", resolved.device.geometry_note);
        }
        if let Some(w) = resolved.device.spare_warning() {
            eprintln!("trimlab run: {w}");
        }
    }
    let out = &args.out;
    let mut bar = Bar::new("run");
    let result = trimlab_scenario::run(&config, args.seed, &mut bar)?;
    bar.finish();
    let fio = args.fio.as_ref().map(|f| format!(", workload from {}", f.display())).unwrap_or_default();
    eprintln!("trimlab run: seed {}, config {} ({origin}{fio})", result.seed, result.config_hash);

    if config.output.interval.is_some() && result.series.is_none() {
        eprintln!(
            "trimlab run: no timeseries.csv: a thin volume has no time series yet (an SSD has one, with or without a file system)"
        );
    }
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    output::write_json(&out.join("metrics.json"), &result.metrics)?;
    output::write_flat_csv(&out.join("metrics.csv"), &result.metrics)?;
    if let Some(series) = &result.series {
        output::write_series(out, series)?;
    }
    if args.html {
        let title = format!("trimlab run: {origin}{fio}, seed {}", result.seed);
        let rows = result.series.as_ref().and_then(|s| s.timeseries.as_deref()).unwrap_or(&[]);
        let report = crate::run_report::run_report(&title, &result.report, rows);
        trimlab_report::write_experiment(out, &report)?;
        let index = trimlab_report::write_index(out, std::slice::from_ref(&report))?;
        if !args.json {
            println!("wrote {}", index.display());
        }
    }
    if args.json {
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
        "WAF {}  spare_factor_seen_by_gc {:.4}  host pages written {}  NAND programs {}  erases {}  GC victims {}  write p99 {} us  sim time {:.3} s",
        waf_text(r),
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
            "  {} ch x {} chips x {} dies x {} planes x {} blocks x {} pages x {} B; flash pages of {} B ({} pages), {}; logical {} B, spare factor {:.4} (seen by GC {:.4})",
            g.channels, g.chips_per_channel, g.dies_per_chip, g.planes_per_die, g.blocks_per_plane, g.pages_per_block, g.page_bytes,
            g.flash_page_bytes, g.pages_per_flash_page(), if c.multi_plane { "multi-plane programs" } else { "one plane per program" },
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
