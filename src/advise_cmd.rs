//! `trimlab advise`: the operator's question of 003 (online discard, periodic fstrim, or
//! none?) answered for a block trace (`advise TRACE [--device CONFIG]`) or for the file-level
//! workload of a config (`advise CONFIG.toml`). The jobs are `trimlab_jobs::advise::advise`
//! and `advise_file`; this file reads the flags, picks the form and prints.

use crate::progress::Bars;
use crate::trace_cmd::TraceArgs;
use anyhow::{bail, Context, Result};
use clap::Args;
use std::path::{Path, PathBuf};
use trimlab_jobs::advise::Advice;
use trimlab_jobs::report::PageKind;
use trimlab_jobs::run_report::write_job_page;

#[derive(Args, Debug)]
pub struct AdviseArgs {
    #[command(flatten)]
    pub trace: TraceArgs,
    /// Periods of the fstrim scenarios, in trace (or simulated) time; a short trace needs short
    /// ones. Default: 1d,7d for a trace; for a config, a tenth and a third of the workload's
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
    #[arg(long, default_value = "out/advise")]
    pub out: PathBuf,
}

pub fn advise(args: &AdviseArgs) -> Result<()> {
    let advice = if is_config(&args.trace.trace) { advise_config(args)? } else { advise_trace(args)? };
    for warning in &advice.warnings {
        eprintln!("trimlab advise: warning: {warning}");
    }
    std::fs::create_dir_all(&args.out).with_context(|| format!("cannot create {}", args.out.display()))?;
    let index = write_job_page(&args.out, PageKind::Advise, &advice.report, &advice.warnings)?;
    println!("{}", trimlab_jobs::report::render_text(&advice.report));
    println!("wrote {}", index.display());
    Ok(())
}

/// A `.toml` file is a config (trace formats are never TOML).
fn is_config(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("toml"))
}

fn advise_trace(args: &AdviseArgs) -> Result<Advice> {
    if args.as_is
        || args.utilization != trimlab_jobs::advise::life::DEFAULT_UTILIZATION
        || args.rounds != 25
        || args.churn != trimlab_jobs::advise::life::DEFAULT_CHURN
    {
        bail!(
            "{}: --as-is, --utilization, --rounds and --churn shape a config's file workload (aged, then repeated); a trace is replayed as recorded",
            args.trace.trace.display()
        );
    }
    if args.trace.trace == Path::new("-") {
        bail!("advise replays the trace several times: give a file, not standard input");
    }
    let config = args.trace.device_config()?;
    let options = args.trace.options(None, "as-recorded");
    let trace = args.trace.trace.display().to_string();
    let open = || args.trace.open();
    let periods = if args.fstrim_periods.is_empty() {
        vec!["1d".into(), "7d".into()]
    } else {
        args.fstrim_periods.clone()
    };
    trimlab_jobs::advise::advise(&config, &trace, &open, &options, &periods, &args.mapping_units, &Bars)
}

/// `advise CONFIG.toml`: the trace flags do not apply, so setting one is an error.
fn advise_config(args: &AdviseArgs) -> Result<Advice> {
    let t = &args.trace;
    let trace_flags = [
        ("--device", t.device.is_some()),
        ("--format", t.format.is_some()),
        ("--blk-action", t.blk_action != "D"),
        ("--fio-time-unit", t.fio_time_unit != "us"),
        ("--skip-bad", t.skip_bad),
        ("--lba", t.lba != "check"),
        ("--speed", t.speed != 1.0),
    ];
    let set: Vec<&str> = trace_flags.iter().filter(|f| f.1).map(|f| f.0).collect();
    if !set.is_empty() {
        bail!(
            "{}: a config brings its own device and workload; {} {} only for a trace (accepted with a config: --set, --fstrim-periods, --mapping-units, --as-is, --utilization, --rounds, --out)",
            t.trace.display(),
            set.join(", "),
            if set.len() == 1 { "is" } else { "are" }
        );
    }
    let config = crate::config_arg::load(&t.trace, &t.set)?;
    let name = t.trace.display().to_string();
    let life = trimlab_jobs::advise::life::Life {
        utilization: args.utilization,
        rounds: args.rounds,
        churn: args.churn,
    };
    let life = (!args.as_is).then_some(&life);
    trimlab_jobs::advise::advise_file(&config, &name, &args.fstrim_periods, &args.mapping_units, life, &Bars)
}
