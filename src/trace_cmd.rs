//! `trimlab replay`: a block trace on a device configuration, and the trace flags `trimlab
//! advise TRACE` shares (src/advise_cmd.rs). The job itself is `trimlab_jobs::replay`; this
//! file reads the flags, opens the trace and prints.

use crate::output;
use anyhow::{Context, Result};
use clap::Args;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use trimlab_jobs::replay::TraceInput;
use trimlab_jobs::report::PageKind;
use trimlab_jobs::run_report::write_job_page;
use trimlab_jobs::trace_options::TraceOptions;
use trimlab_jobs::RunConfig;

/// What every trace command needs to read a trace and build the device.
#[derive(Args, Clone, Debug)]
pub struct TraceArgs {
    /// The trace file (`-` for standard input, `replay` only; blktrace's binary output as a
    /// folder, NAME or NAME.blktrace.N); for `advise`, or a config (`*.toml`) whose workload
    /// is file-level, or a fio job / strace / Filebench model file (taken as --fio / --strace
    /// / --filebench would).
    pub trace: Option<PathBuf>,
    /// Device, FTL and TRIM engine as in `trimlab run` configs ([workload] is ignored), or a
    /// preset's name (`trimlab presets` lists them); default: the nvme-tlc preset.
    #[arg(long)]
    pub device: Option<PathBuf>,
    /// Override one key of the device config (repeatable): --set ftl.kind=hybrid
    #[arg(long = "set", value_name = "KEY.PATH=VALUE")]
    pub set: Vec<String>,
    /// Trace format (default: detected): blkparse, blktrace (binary; found by its files),
    /// ftrace-blk, fio-v2, fio-v3, msr, mqsim, disksim.
    #[arg(long)]
    pub format: Option<String>,
    /// blkparse / ftrace events to replay: Q (queued), D (issued to the device), C (completed).
    #[arg(long, default_value = "D")]
    pub blk_action: String,
    /// Unit of fio iolog v3 timestamps: us (what fio writes) or ms (older fio).
    #[arg(long, default_value = "us")]
    pub fio_time_unit: String,
    /// Skip malformed lines (counted in the report) instead of stopping at the first.
    #[arg(long)]
    pub skip_bad: bool,
    /// Requests past the device's end: check (error) or remap (wrap around).
    #[arg(long, default_value = "check")]
    pub lba: String,
    /// Divide the trace's inter-arrival times by this factor (open loop).
    #[arg(long, default_value_t = 1.0)]
    pub speed: f64,
}

impl TraceArgs {
    /// The flags as the jobs take them (`closed_loop` and `trims` are replay's own).
    pub(crate) fn options(&self, closed_loop: Option<u32>, trims: &str) -> TraceOptions {
        TraceOptions {
            format: self.format.clone(),
            blk_action: self.blk_action.clone(),
            fio_time_unit: self.fio_time_unit.clone(),
            skip_bad: self.skip_bad,
            lba: self.lba.clone(),
            speed: self.speed,
            closed_loop,
            trims: trims.to_string(),
        }
    }

    pub(crate) fn device_config(&self) -> Result<RunConfig> {
        match self.device_text()? {
            Some((text, origin)) => Ok(trimlab_jobs::parse_config(&text, &origin, &self.set)?),
            None => crate::config_arg::defaults(&self.set),
        }
    }

    /// `--device`'s config text and name: a file, or a preset's name (`--device nvme-qlc`)
    /// when no file of that name exists.
    pub(crate) fn device_text(&self) -> Result<Option<(String, String)>> {
        let Some(path) = &self.device else { return Ok(None) };
        if !path.exists() {
            if let Some(text) = path.to_str().and_then(trimlab_jobs::advise_request::preset_device_text) {
                return Ok(Some((text, format!("preset {}", path.display()))));
            }
        }
        crate::config_arg::read(path).map(Some)
    }

    /// The trace file, which `replay` needs.
    pub(crate) fn path(&self) -> Result<&Path> {
        match &self.trace {
            Some(p) => Ok(p),
            None => anyhow::bail!("give the trace file to replay (`-` for standard input)"),
        }
    }

    pub(crate) fn open(&self) -> Result<TraceInput> {
        open_trace(self.path()?)
    }
}

/// Opens a trace file (`-`: standard input) behind a 1 MiB buffer; blktrace's binary per-CPU
/// files (a folder of them, `NAME` or `NAME.blktrace.N`, as `blkparse -i` takes them) are
/// merged into one trace.
pub fn open_trace(path: &Path) -> Result<TraceInput> {
    let name = path.display().to_string();
    if let Some(files) = blktrace_files(path)? {
        let mut inputs: Vec<(String, Box<dyn std::io::Read + Send>)> = Vec::new();
        for file in &files {
            let shown = file.display().to_string();
            let opened = File::open(file).with_context(|| format!("cannot read {shown}"))?;
            inputs.push((shown, Box::new(BufReader::with_capacity(1 << 16, opened))));
        }
        let lines = trimlab_jobs::replay::BlktraceLines::new(inputs)
            .with_context(|| format!("{name}: binary blktrace"))?;
        return Ok(TraceInput { reader: Box::new(lines), name });
    }
    let reader: Box<dyn BufRead + Send> = if name == "-" {
        Box::new(BufReader::with_capacity(1 << 20, std::io::stdin()))
    } else {
        let file = File::open(path).with_context(|| format!("cannot read {name}"))?;
        Box::new(BufReader::with_capacity(1 << 20, file))
    };
    Ok(TraceInput { reader, name })
}

/// The per-CPU files of a binary blktrace at `path`, in CPU order, or `None` when `path` is
/// another trace: a folder holding `NAME.blktrace.N` files of one NAME, `NAME.blktrace.N`
/// itself (all of NAME's files), `NAME` when `NAME.blktrace.0` exists, or a file that starts
/// with a blk_io_trace record.
fn blktrace_files(path: &Path) -> Result<Option<Vec<PathBuf>>> {
    use trimlab_jobs::replay::{cpu_file_name, is_blktrace};
    let (folder, prefix) = if path.is_dir() {
        (path.to_path_buf(), None)
    } else {
        let file_name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let folder = path.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        let folder = if folder.as_os_str().is_empty() { PathBuf::from(".") } else { folder };
        match cpu_file_name(file_name) {
            Some((prefix, _)) => (folder, Some(prefix.to_string())),
            None if !path.exists() && folder.join(format!("{file_name}.blktrace.0")).exists() => {
                (folder, Some(file_name.to_string()))
            }
            None => {
                let mut head = [0u8; 4];
                let starts = File::open(path).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head));
                return Ok((starts.is_ok() && is_blktrace(&head)).then(|| vec![path.to_path_buf()]));
            }
        }
    };
    let mut found: std::collections::BTreeMap<String, Vec<(u32, PathBuf)>> = Default::default();
    let entries = std::fs::read_dir(&folder).with_context(|| format!("cannot read {}", folder.display()))?;
    for entry in entries.flatten() {
        let file_name = entry.file_name().to_string_lossy().into_owned();
        if let Some((p, cpu)) = cpu_file_name(&file_name) {
            if prefix.as_deref().is_none_or(|want| want == p) {
                found.entry(p.to_string()).or_default().push((cpu, entry.path()));
            }
        }
    }
    match found.len() {
        0 if prefix.is_none() => anyhow::bail!(
            "{}: a folder holds no NAME.blktrace.N files (blktrace's per-CPU output); give a trace file",
            path.display()
        ),
        0 => Ok(None),
        1 => {
            let mut files = found.into_values().next().unwrap_or_default();
            files.sort();
            Ok(Some(files.into_iter().map(|(_, p)| p).collect()))
        }
        _ => anyhow::bail!(
            "{}: holds the blktrace files of several traces ({}): give one as {}/NAME",
            path.display(),
            found.keys().cloned().collect::<Vec<_>>().join(", "),
            path.display()
        ),
    }
}

#[derive(Args, Debug)]
pub struct ReplayArgs {
    #[command(flatten)]
    pub trace: TraceArgs,
    /// Closed loop with this many requests outstanding instead of the trace's times.
    #[arg(long)]
    pub closed_loop: Option<u32>,
    /// The trace's TRIMs: as-recorded (online discard), drop (no discard), or fstrim:PERIOD
    /// (collected and sent every PERIOD of trace time, e.g. fstrim:1d, fstrim:10s).
    #[arg(long, default_value = "as-recorded")]
    pub trims: String,
    #[arg(long, default_value = "out/replay")]
    pub out: PathBuf,
    /// Write OUT/timeseries.csv with one row per this much simulated time, e.g. 100ms
    /// (overrides [output] interval of --device).
    #[arg(long)]
    pub log_interval: Option<String>,
    /// Also write OUT/index.html: the totals, the time series' plots (with --log-interval) and
    /// a warning when the drive could not keep up with the trace.
    #[arg(long)]
    pub html: bool,
}

pub fn replay(args: &ReplayArgs) -> Result<()> {
    args.trace.path()?;
    let config = args.trace.device_config()?;
    let options = args.trace.options(args.closed_loop, &args.trims);
    let r =
        trimlab_jobs::replay::replay(&config, args.trace.open()?, &options, args.log_interval.as_deref())?;
    let metrics = r.metrics(&args.trace.path()?.display().to_string());
    std::fs::create_dir_all(&args.out).with_context(|| format!("cannot create {}", args.out.display()))?;
    output::write_json(&args.out.join("metrics.json"), &metrics)?;
    output::write_flat_csv(&args.out.join("metrics.csv"), &metrics)?;
    output::write_series(&args.out, &r.series)?;
    for line in r.summary() {
        println!("{line}");
    }
    println!("wrote {}", args.out.join("metrics.json").display());
    if args.html {
        let title = format!("trimlab replay: {}", args.trace.path()?.display());
        let rows = r.series.timeseries.as_deref().unwrap_or(&[]);
        let report = trimlab_jobs::run_report::run_report(
            &title,
            &r.report,
            rows,
            trimlab_jobs::run_report::mapping_unit(&r.device),
        );
        let warnings: Vec<String> = r.saturation_warning().into_iter().collect();
        println!("wrote {}", write_job_page(&args.out, PageKind::Replay, &report, &warnings)?.display());
    }
    Ok(())
}
