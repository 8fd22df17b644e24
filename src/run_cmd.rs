//! `trimlab run` and `trimlab presets`.

use crate::config_file::RunConfig;
use crate::output;
use crate::progress::Bar;
use anyhow::{Context, Result};
use std::path::PathBuf;
use trimlab_device::{DeviceReport, DeviceSection, FtlSection, Ssd, SsdConfig, TrimSection};
use trimlab_sim::SeedTree;

/// `trimlab run`'s arguments.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The configuration file; every key has a default (docs/config.md). Optional with --fio.
    #[arg(required_unless_present = "fio")]
    pub config: Option<PathBuf>,
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
        Some(path) => (RunConfig::load(path)?, path.display().to_string()),
        None => (RunConfig::default(), "defaults".to_string()),
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
    let resolved = config.resolve()?;
    let interval_ns = config.output.interval_ns(args.log_interval.as_deref())?;
    let seed = args.seed.or(config.seed).unwrap_or(1);
    let config_json = serde_json::json!({ "device": resolved.device, "workload": resolved.workload });
    let hash = output::config_hash(&config_json);
    let fio = args.fio.as_ref().map(|f| format!(", workload from {}", f.display())).unwrap_or_default();
    eprintln!("trimlab run: seed {seed}, config {hash} ({origin}{fio})");

    let mut ssd = Ssd::new(resolved.device.clone());
    if let Some(ns) = interval_ns {
        ssd.enable_timeseries(ns, trimlab_sim::SimTime::ZERO);
    }
    let mut bar = Bar::new("run");
    let outcome =
        trimlab_workload::run_workload(&mut ssd, &resolved.workload, &SeedTree::new(seed), &mut bar)
            .context("the workload sent a command the device refused")?;
    bar.finish();
    ssd.finish_timeseries(outcome.measured.end);

    let out = &args.out;
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let metrics = serde_json::json!({
        "trimlab_version": env!("CARGO_PKG_VERSION"),
        "seed": seed,
        "config_hash": hash,
        "config": config_json,
        "precondition_end_ns": outcome.precondition_end.ns(),
        "ops": outcome.measured.ops,
        "report": outcome.report,
    });
    output::write_json(&out.join("metrics.json"), &metrics)?;
    output::write_flat_csv(&out.join("metrics.csv"), &metrics)?;
    output::write_series(out, &output::Series::of(&ssd, interval_ns.is_some()))?;
    let r = &outcome.report;
    println!(
        "WAF {}  host pages written {}  NAND programs {}  erases {}  GC victims {}  write p99 {} us  sim time {:.3} s",
        waf_text(r),
        r.host.pages_written,
        r.nand_pages_programmed,
        r.nand_blocks_erased,
        r.gc.victims,
        r.latency.write.p99_ns / 1000,
        r.sim_time_ns as f64 / 1e9
    );
    if args.html {
        let title = format!("trimlab run: {origin}{fio}, seed {seed}");
        let report = crate::run_report::run_report(&title, r, ssd.timeseries());
        trimlab_report::write_experiment(out, &report)?;
        let index = trimlab_report::write_index(out, std::slice::from_ref(&report))?;
        println!("wrote {}", index.display());
    }
    println!("wrote {}", out.join("metrics.json").display());
    Ok(())
}

pub fn presets() -> Result<()> {
    for (name, about) in trimlab_device::config::preset_list() {
        let device = DeviceSection { preset: Some(name.to_string()), ..Default::default() };
        let c = SsdConfig::resolve(&device, &FtlSection::default(), &TrimSection::default())?;
        let g = &c.geometry;
        println!("{name}: {about}");
        println!(
            "  {} ch x {} chips x {} dies x {} planes x {} blocks x {} pages x {} B; logical {} B, spare factor {:.4}",
            g.channels, g.chips_per_channel, g.dies_per_chip, g.planes_per_die, g.blocks_per_plane, g.pages_per_block, g.page_bytes,
            c.logical_bytes(), c.spare_factor
        );
        println!(
            "  read {} ns, program {} ns, erase {} ns, bus {} ps/B; queue depth {}, trim {}; write buffer {} pages; GC below {} free blocks/plane",
            c.timing.read_ns, c.timing.program_ns, c.timing.erase_ns, c.timing.transfer_ps_per_byte, c.queue_depth,
            if c.trim_queued { "queued" } else { "non-queued" }, c.write_buffer_pages, c.gc_free_blocks_min
        );
    }
    Ok(())
}
