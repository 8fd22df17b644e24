//! `trimlab advise`: the operator's question of 003 (online discard, periodic fstrim, or
//! none?) answered for a block trace (`advise TRACE [--device CONFIG]`) or for the file-level
//! workload of a config (`advise CONFIG.toml`). The jobs are `trimlab_jobs::advise::advise`
//! and `advise_file`; this file reads the flags, picks the form and prints.

use crate::progress::QuietBars as Bars;
use crate::trace_cmd::TraceArgs;
use anyhow::{bail, Context, Result};
use clap::Args;
use std::path::{Path, PathBuf};
use trimlab_jobs::advise::Advice;
use trimlab_jobs::advise_request::{self, Brought, Request};
use trimlab_jobs::report::PageKind;
use trimlab_jobs::run_report::write_job_page;

#[derive(Args, Debug)]
pub struct AdviseArgs {
    #[command(flatten)]
    pub trace: TraceArgs,
    /// Periods of the fstrim scenarios, in trace (or simulated) time; a short trace needs short
    /// ones. Default: 1d,7d for a trace or a fio job; for a config, a tenth and a third of the workload's
    /// run without discard.
    #[arg(long, value_delimiter = ',')]
    pub fstrim_periods: Vec<String>,
    /// Mapping units to compare what discard buys at (`4KiB,16KiB,64KiB`; `none`: no
    /// comparison): each way of handling discards runs again with `[ftl] mapping_unit` set to
    /// each. Default: none on a drive that maps its pages; on one with a larger unit, its page,
    /// 16KiB, 64KiB and its own unit.
    #[arg(long, value_delimiter = ',')]
    pub mapping_units: Vec<String>,
    /// A config's file workload: run it once on a freshly made file system, as it is, instead
    /// of the default (the file system aged to --utilization, then the workload repeated until
    /// its WAF is steady).
    #[arg(long)]
    pub as_is: bool,
    /// A config's file workload: how full the aged file system is before the rounds.
    #[arg(long, default_value_t = trimlab_jobs::advise::life::DEFAULT_UTILIZATION)]
    pub utilization: f64,
    /// A config's file workload: at most this many rounds (runs of the workload) toward
    /// steady state.
    #[arg(long, default_value_t = 25)]
    pub rounds: u32,
    /// A config's file workload: capacities of file turnover the aging writes after its fill
    /// (SNIA PTS preconditions with 2).
    #[arg(long, default_value_t = trimlab_jobs::advise::life::DEFAULT_CHURN)]
    pub churn: f64,
    /// A fio job file: the job runs once on the device (--device) with its commands recorded,
    /// and the recording is advised on as a block trace.
    #[arg(long, value_name = "JOB.fio")]
    pub fio: Option<PathBuf>,
    /// An strace of a program (strace -f -ttt -o FILE), replayed under --root on the file
    /// system of --device (default: ext4 on the default drive), aged and repeated.
    #[arg(long, value_name = "FILE")]
    pub strace: Option<PathBuf>,
    /// With --strace: the directory the program's paths are under (files outside it are skipped).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// A Filebench model (.f) as the file workload, aged and repeated.
    #[arg(long, value_name = "FILE.f")]
    pub filebench: Option<PathBuf>,
    #[arg(long, default_value = "out/advise")]
    pub out: PathBuf,
}

pub fn advise(args: &AdviseArgs) -> Result<()> {
    #[allow(clippy::disallowed_methods)] // the binary is the edge: wall time on stderr only
    let started = std::time::Instant::now();
    let advice = advise_brought(args)?;
    for warning in &advice.warnings {
        eprintln!("trimlab advise: warning: {warning}");
    }
    std::fs::create_dir_all(&args.out).with_context(|| format!("cannot create {}", args.out.display()))?;
    let index = write_job_page(&args.out, PageKind::Advise, &advice.report, &advice.warnings)?;
    println!("{}", trimlab_jobs::report::render_text(&advice.report));
    println!("wrote {}", index.display());
    eprintln!("trimlab advise: done in {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// What the user brought, by flag or by the positional file's look.
enum Kind {
    Trace,
    Config,
    Fio(PathBuf),
    Strace(PathBuf),
    Filebench(PathBuf),
}

fn kind(args: &AdviseArgs) -> Result<Kind> {
    let flags = [(&args.fio, "--fio"), (&args.strace, "--strace"), (&args.filebench, "--filebench")];
    let given: Vec<&str> = flags.iter().filter(|f| f.0.is_some()).map(|f| f.1).collect();
    let Some(positional) = &args.trace.trace else {
        return match (&args.fio, &args.strace, &args.filebench) {
            (Some(f), None, None) => Ok(Kind::Fio(f.clone())),
            (None, Some(f), None) => Ok(Kind::Strace(f.clone())),
            (None, None, Some(f)) => Ok(Kind::Filebench(f.clone())),
            (None, None, None) => bail!("give what to advise on: a block trace, a config (*.toml), --fio JOB, --strace FILE --root DIR or --filebench FILE.f"),
            _ => bail!("{} each bring a workload: give one", given.join(" and ")),
        };
    };
    if !given.is_empty() {
        bail!("{} and {} each bring a workload: give one", positional.display(), given.join(" and "));
    }
    if is_config(positional) {
        return Ok(Kind::Config);
    }
    // Standard input, and blktrace's binary output given as a folder or as the NAME of its
    // NAME.blktrace.N files, are traces.
    if positional == Path::new("-") || !positional.is_file() {
        return Ok(Kind::Trace);
    }
    Ok(match crate::config_arg::workload_file_flag(positional, &head(positional)?) {
        Some("--fio") => Kind::Fio(positional.clone()),
        Some("--strace") => Kind::Strace(positional.clone()),
        Some("--filebench") => Kind::Filebench(positional.clone()),
        _ => Kind::Trace,
    })
}

/// The first 64 KiB of `path` (enough to tell a workload file from a trace), or an error for
/// an empty file: a 0-byte trace (a failed `run --record` can leave one) has nothing to advise.
fn head(path: &Path) -> Result<String> {
    use std::io::Read;
    let file = std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(64 << 10).read_to_end(&mut bytes).with_context(|| format!("cannot read {}", path.display()))?;
    if bytes.is_empty() {
        bail!("{}: the file is empty (0 bytes): there is no workload to advise on (a run that failed before writing its --record leaves such a file)", path.display());
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// A `.toml` file is a config (trace formats are never TOML).
fn is_config(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("toml"))
}

fn advise_brought(args: &AdviseArgs) -> Result<Advice> {
    let kind = kind(args)?;
    if !matches!(kind, Kind::Strace(_)) && args.root.is_some() {
        bail!("--root is the directory an strace's paths are under: it goes with --strace");
    }
    let life = trimlab_jobs::advise::life::Life {
        utilization: args.utilization,
        rounds: args.rounds,
        churn: args.churn,
    };
    let file_level = matches!(kind, Kind::Config | Kind::Strace(_) | Kind::Filebench(_));
    if !file_level {
        refuse_life_flags(args)?;
    }
    let device = args.trace.device_text()?;
    let device = device.as_ref().map(|(t, o)| (t.as_str(), o.as_str()));
    let life = (file_level && !args.as_is).then_some(life);
    let request = |brought| request(args, device, life.clone(), brought);
    match kind {
        Kind::Trace => advise_trace(args, device),
        Kind::Config => {
            refuse_trace_flags(args, true)?;
            let (text, origin) =
                crate::config_arg::read(args.trace.trace.as_deref().unwrap_or(Path::new("-")))?;
            advise_request::advise(&request(Brought::Config { text: &text, origin: &origin }), &Bars)
        }
        Kind::Fio(job) => {
            refuse_trace_flags(args, false)?;
            let origin = job.display().to_string();
            let text = trimlab_jobs::input::read_text(&job, &origin)?;
            advise_request::advise(&request(Brought::Fio { text: &text, origin: &origin }), &Bars)
        }
        Kind::Strace(file) => {
            refuse_trace_flags(args, false)?;
            let Some(root) = &args.root else {
                bail!("{}: an strace needs --root DIR, the directory under which the program's paths are replayed (its files outside it are skipped)", file.display());
            };
            head(&file)?;
            let path = std::path::absolute(&file).with_context(|| format!("--strace {}", file.display()))?;
            let (path, root) = (path.display().to_string(), root.display().to_string());
            advise_request::advise(&request(Brought::Strace { path: &path, root: &root }), &Bars)
        }
        Kind::Filebench(model) => {
            refuse_trace_flags(args, false)?;
            let origin = model.display().to_string();
            let text = trimlab_jobs::input::read_text(&model, &origin)?;
            advise_request::advise(&request(Brought::Filebench { text: &text, origin: &origin }), &Bars)
        }
    }
}

/// --as-is, --utilization, --rounds and --churn shape a file workload (aged, then repeated).
fn refuse_life_flags(args: &AdviseArgs) -> Result<()> {
    if args.as_is
        || args.utilization != trimlab_jobs::advise::life::DEFAULT_UTILIZATION
        || args.rounds != 25
        || args.churn != trimlab_jobs::advise::life::DEFAULT_CHURN
    {
        bail!("--as-is, --utilization, --rounds and --churn shape a file workload (a config's, an strace's or a Filebench model's: aged, then repeated); a trace or a fio job's commands are replayed as they were sent");
    }
    Ok(())
}

fn request<'a>(
    args: &'a AdviseArgs,
    device: Option<(&'a str, &'a str)>,
    life: Option<trimlab_jobs::advise::life::Life>,
    brought: Brought<'a>,
) -> Request<'a> {
    Request {
        brought,
        device,
        set: &args.trace.set,
        fstrim_periods: &args.fstrim_periods,
        mapping_units: &args.mapping_units,
        life,
    }
}

fn advise_trace(args: &AdviseArgs, device: Option<(&str, &str)>) -> Result<Advice> {
    let path = args.trace.path()?;
    if path == Path::new("-") {
        bail!("advise replays the trace several times: give a file, not standard input");
    }
    if path.is_file() {
        head(path)?;
    }
    let options = args.trace.options(None, "as-recorded");
    let trace = path.display().to_string();
    let open = || args.trace.open();
    advise_request::advise(
        &request(args, device, None, Brought::Trace { name: &trace, open: &open, options }),
        &Bars,
    )
}

/// The trace-reading flags apply to a trace only (`--device` also to a fio job, an strace or
/// a Filebench model, which bring no device of their own).
fn refuse_trace_flags(args: &AdviseArgs, config: bool) -> Result<()> {
    let t = &args.trace;
    let trace_flags = [
        ("--device", config && t.device.is_some()),
        ("--format", t.format.is_some()),
        ("--blk-action", t.blk_action != "D"),
        ("--fio-time-unit", t.fio_time_unit != "us"),
        ("--skip-bad", t.skip_bad),
        ("--lba", t.lba != "check"),
        ("--speed", t.speed != 1.0),
    ];
    let set: Vec<&str> = trace_flags.iter().filter(|f| f.1).map(|f| f.0).collect();
    if !set.is_empty() {
        let what = if config {
            "a config brings its own device and workload"
        } else {
            "this is a workload, not a trace"
        };
        bail!(
            "{what}; {} {} only for a trace (accepted here: --set, --fstrim-periods, --mapping-units, --as-is, --utilization, --rounds, --churn, --out{})",
            set.join(", "),
            if set.len() == 1 { "is" } else { "are" },
            if config { "" } else { ", --device" }
        );
    }
    Ok(())
}
