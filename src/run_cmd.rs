//! `trimlab run` and `trimlab presets`.

use crate::output;
use crate::progress::Bar;
use anyhow::{Context, Result};
use std::path::PathBuf;
use trimlab_jobs::fio_output::OutputFormat;
use trimlab_jobs::report::PageKind;
use trimlab_jobs::run::FioJob;

/// `trimlab run`'s arguments.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The configuration file (`-`: read it from stdin); every key has a default
    /// (docs/config.md). Optional with --fio, --filebench or --strace.
    #[arg(required_unless_present_any = ["fio", "filebench", "strace"])]
    pub config: Option<PathBuf>,
    /// Override one key (repeatable), checked like the same key in the file:
    /// --set device.spare_factor=0.1 --set trim.engine=delayed
    #[arg(long = "set", value_name = "KEY.PATH=VALUE")]
    pub set: Vec<String>,
    /// Take the workload from this fio job file (its jobs run as fio runs them, a phase per
    /// stonewall group; docs/config.md maps the options).
    #[arg(long)]
    pub fio: Option<PathBuf>,
    /// Take the workload from this Filebench model (.f; docs/config.md "Filebench workload
    /// models"), on the config's file system (ext4 if it has none).
    #[arg(long, value_name = "FILE.f", conflicts_with = "fio")]
    pub filebench: Option<PathBuf>,
    /// Replay this strace of a program (strace -f -ttt -o FILE) on the file system: sets
    /// workload.kind = "strace" and workload.strace (docs/config.md, "strace replay"); give
    /// --set workload.strace_root=/DIR unless the config does.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["fio", "filebench"])]
    pub strace: Option<PathBuf>,
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
    /// With --fio: fio's own report of each group on stdout, in fio 3.33's format: normal
    /// (the default, before trimlab's summary), terse, json or json+ (alone on stdout, for
    /// tools that read fio's output; docs/config.md "fio's output").
    #[arg(long, value_name = "FORMAT", requires = "fio", conflicts_with = "json")]
    pub output_format: Option<String>,
    /// Write every command the file system (or, without one, the block workload) sends to
    /// FILE, in `serve --record`'s format with
    /// a `# phase` line per phase (put it beside a kernel's with `trimlab compare`).
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
}

/// `--set`, after the keys `--strace` stands for (so a `--set` can still override them);
/// without a config file the file system is ext4 (a trace needs one).
fn strace_sets(args: &RunArgs) -> Result<Vec<String>> {
    let Some(file) = &args.strace else { return Ok(args.set.clone()) };
    let path = std::path::absolute(file).with_context(|| format!("--strace {}", file.display()))?;
    Ok(trimlab_jobs::run::strace_sets(&path.display().to_string(), None, args.config.is_some(), &args.set))
}

/// An strace replay's skips, by reason, on the terminal (they are in metrics.json's figures too):
/// a trace that mostly missed the root should not go unnoticed.
fn strace_skips(metrics: &serde_json::Value) {
    let phases = metrics["phases"].as_array().into_iter().flatten();
    for f in phases.map(|p| &p["figures"]).filter(|f| f.get("malformed_lines").is_some()) {
        let n = |k: &str| f[k].as_u64().unwrap_or(0);
        eprintln!(
            "trimlab run: strace: {} lines, {} file operations; skipped: {} outside the root, {} failed in the trace, {} on unknown descriptors, {} unknown calls, {} unsupported, {} refused by the model, {} malformed lines{}; {} pre-existing files",
            n("lines"), n("file_ops"), n("outside_root"), n("failed_calls"), n("unknown_fd"), n("unknown_syscalls"),
            n("unsupported"), n("refused_by_model"), n("malformed_lines"),
            match n("first_malformed_line") { 0 => String::new(), l => format!(" (the first at line {l})") },
            n("preexisting_files"),
        );
    }
    let phases = metrics["phases"].as_array().into_iter().flatten();
    for line in phases.filter_map(|p| trimlab_jobs::run::unknown_calls_text(&p["unknown_calls"])) {
        eprintln!("trimlab run: strace: {line}");
    }
}

/// `--record FILE`: where every command the device receives is written.
fn open_record(args: &RunArgs) -> Result<Option<Box<dyn std::io::Write + Send>>> {
    let Some(path) = &args.record else { return Ok(None) };
    let file = crate::output::create_file("--record", path)?;
    Ok(Some(Box::new(std::io::BufWriter::new(file))))
}

pub fn run(args: &RunArgs) -> Result<()> {
    let fio_format = fio_format(args)?;
    let set = strace_sets(args)?;
    let (mut config, origin) = match &args.config {
        Some(path) => (crate::config_arg::load(path, &set)?, path.display().to_string()),
        None => (crate::config_arg::defaults(&set)?, "defaults".to_string()),
    };
    let fio_text = match &args.fio {
        Some(fio) => Some(trimlab_jobs::input::read_text(fio, &fio.display().to_string())?),
        None => None,
    };
    if let Some(f) = &args.filebench {
        let text = trimlab_jobs::input::read_text(f, &f.display().to_string())?;
        trimlab_jobs::run::with_filebench(&mut config, text, &f.display().to_string(), args.config.is_some());
    }
    let fio_origin = args.fio.as_ref().map(|f| f.display().to_string()).unwrap_or_default();
    let fio = fio_text.as_deref().map(|text| FioJob { text, origin: &fio_origin });
    let unit = trimlab_jobs::run_report::mapping_unit_of(&config);
    let record = open_record(args)?;
    let mut bar = Bar::new("run");
    let ran = trimlab_jobs::run::run(
        config,
        args.config.is_some(),
        fio,
        args.seed,
        args.log_interval.as_deref(),
        &mut bar,
        record,
    );
    // A failed run's recording is a fragment that `advise` or `compare` would take for the
    // whole run: it goes.
    let ran = ran.inspect_err(|_| {
        if let Some(path) = &args.record {
            let _ = std::fs::remove_file(path);
        }
    })?;
    bar.finish();
    for note in &ran.notes {
        eprintln!("trimlab run: {note}");
    }
    strace_skips(&ran.result.metrics);
    let result = &ran.result;
    let fio = args.fio.as_ref().or(args.filebench.as_ref()).or(args.strace.as_ref());
    let fio = fio.map(|f| format!(", workload from {}", f.display())).unwrap_or_default();
    eprintln!("trimlab run: seed {}, config {} ({origin}{fio})", result.seed, result.config_hash);
    let out = &args.out;
    write_outputs(args, &ran, &format!("{origin}{fio}"), unit)?;
    if args.json {
        println!("{}", serde_json::to_string(&result.metrics)?);
        return script_failure(&result.metrics, out);
    }
    if let (Some(format), Some(report)) = (fio_format, &ran.fio) {
        print!("{}", format.render(report));
        if format != OutputFormat::Normal {
            eprintln!("trimlab run: wrote {}", out.join("metrics.json").display());
            return script_failure(&result.metrics, out);
        }
        println!();
    }
    if args.filebench.is_some() {
        for line in trimlab_jobs::filebench_summary::io_summary(&result.metrics) {
            println!("{line}");
        }
    }
    for line in trimlab_jobs::run::summary(result) {
        println!("{line}");
    }
    println!("wrote {}", out.join("metrics.json").display());
    script_failure(&result.metrics, out)
}

/// metrics.json, metrics.csv, the series and (with --html) the run's page under `--out`.
fn write_outputs(
    args: &RunArgs,
    ran: &trimlab_jobs::run::Ran,
    what: &str,
    unit: Option<(u64, u64)>,
) -> Result<()> {
    let (out, result) = (&args.out, &ran.result);
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    output::write_json(&out.join("metrics.json"), &result.metrics)?;
    output::write_flat_csv(&out.join("metrics.csv"), &result.metrics)?;
    if let Some(series) = &result.series {
        output::write_series(out, series)?;
    }
    if args.html {
        let title = format!("trimlab run: {what}, seed {}", result.seed);
        let rows = result.series.as_ref().and_then(|s| s.timeseries.as_deref()).unwrap_or(&[]);
        let workload = result.workload_latency.as_ref();
        let mut report =
            trimlab_jobs::run_report::run_report_with(&title, &result.report, rows, unit, workload);
        trimlab_jobs::steady_report::add_steady_state(&mut report, &result.metrics["steady_state"]);
        trimlab_jobs::run_report::add_run_context(&mut report, &result.metrics);
        trimlab_jobs::aging_report::add_aging(&mut report, &result.metrics["aging"]);
        let index = trimlab_jobs::run_report::write_job_page(out, PageKind::Run, &report, &[])?;
        if !args.json {
            println!("wrote {}", index.display());
        }
    }
    Ok(())
}

/// `--output-format` (fio's normal report by default with --fio).
fn fio_format(args: &RunArgs) -> Result<Option<OutputFormat>> {
    match (&args.output_format, &args.fio) {
        (Some(text), _) => Ok(Some(OutputFormat::parse(text).map_err(anyhow::Error::msg)?)),
        (None, Some(_)) => Ok(Some(OutputFormat::Normal)),
        (None, None) => Ok(None),
    }
}

/// A script's failing line ended the run early: the phases before it are in metrics.json, and
/// the run exits non-zero with the line's error.
fn script_failure(metrics: &serde_json::Value, out: &std::path::Path) -> Result<()> {
    match trimlab_jobs::run::script_error(metrics) {
        Some(e) => anyhow::bail!("{e} (the phases before it are in {})", out.join("metrics.json").display()),
        None => Ok(()),
    }
}

pub fn presets() -> Result<()> {
    for line in trimlab_jobs::presets::describe()? {
        println!("{line}");
    }
    Ok(())
}
