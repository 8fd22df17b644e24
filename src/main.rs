//! trimlab's command line: the only code that reads files, clocks and terminals.

mod advise_cmd;
mod compare_cmd;
mod config_arg;
mod help;
mod output;
mod progress;
mod reproduce_cmd;
mod run_cmd;
mod serve_cmd;
mod sweep_cmd;
mod trace_cmd;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "trimlab", version, about = "Deterministic simulator of flash storage and TRIM")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// `trimlab bench --ftl`.
#[derive(Clone, Copy, clap::ValueEnum)]
enum BenchFtl {
    Page,
    Hybrid,
}

#[derive(Subcommand)]
enum Command {
    /// Run one configuration (TOML) or fio job and write DIR/metrics.json, metrics.csv,
    /// latency_histogram.csv (and timeseries.csv, index.html when asked).
    Run(run_cmd::RunArgs),
    /// Reproduce paper results: tables (CSV, JSON), SVG plots and one index.html.
    Reproduce {
        /// Experiments to run (default: all). See the list below.
        names: Vec<String>,
        /// Output directory.
        #[arg(long, default_value = "out/reproduce")]
        out: PathBuf,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Scale of each experiment's device and workload (1 = the documented default size).
        #[arg(long, default_value_t = 1.0)]
        scale: f64,
        /// Exit with status 1 when any claim does not hold (in shape, or in band where it states one).
        #[arg(long)]
        strict: bool,
        /// Fail (status 1) when the verdicts differ from FILE's list of claims expected not to
        /// hold (`experiment: part of the claim`, one per line; tests/reproduce-expected.txt is
        /// the list at seed 1, scale 1).
        #[arg(long, value_name = "FILE", conflicts_with = "strict")]
        expect: Option<PathBuf>,
        /// Write the TOML of every point the experiments run to DIR/NAME/POINT.toml (each runs
        /// with `trimlab run` to the experiment's own numbers) instead of running them.
        #[arg(long, value_name = "DIR")]
        emit_configs: Option<PathBuf>,
    },
    /// Measure simulator speed (simulated page writes per wall second) and peak memory.
    Bench {
        /// Only the small device (skips the 256 GiB run).
        #[arg(long)]
        quick: bool,
        /// FTL kind of the device cases: page (default) or hybrid (run at 1/16 of the size).
        #[arg(long, value_enum, default_value = "page")]
        ftl: BenchFtl,
        /// Only the limit: the bare-map loop in Rust against the same loop in C (built with
        /// `cc -O2`), alternating rounds, their rates and ratio (docs/performance.md).
        #[arg(long, conflicts_with_all = ["quick", "ftl"])]
        limit: bool,
        /// Only the large drives at full size: 61.44 TB QLC with a 64 KiB mapping unit and
        /// 30.72 TB TLC with 16 KiB, each filled, then its capacity in random unit-sized writes;
        /// wall time, writes/s, peak RSS, bytes per unit. `--large 61T` or `--large 30T` runs one;
        /// `--large 1T-aged` (by name only) a 1 TiB ext4 aged to 80 % and run to steady state
        /// (issue 39; `--large 1T-aged=64GiB` the same case smaller) (docs/performance.md,
        /// "Large drives" and "Aged 1 TiB file system"; needs ~17 GB of RAM, tens of minutes).
        #[arg(long, value_name = "DRIVE", num_args = 0..=1, default_missing_value = "all",
              conflicts_with_all = ["quick", "ftl", "limit"])]
        large: Option<String>,
    },
    /// List device presets with their resolved parameters; with --from (and --nvm, --ns,
    /// --smart), build a device from a drive's nvme-cli / smartctl JSON and show what was
    /// mapped and what was assumed.
    Presets(PresetsArgs),
    /// Replay a block trace (blkparse, ftrace blk, fio iolog v2/v3, MSR, MQSim, DiskSim) on a device.
    Replay(trace_cmd::ReplayArgs),
    /// Online discard, periodic fstrim or none: replay a trace, or run a config's file workload
    /// (`advise CONFIG.toml`), each way and recommend one.
    Advise(advise_cmd::AdviseArgs),
    /// Serve the simulated SSD over NBD so real clients (ext4 via nbdfuse, qemu, nbdcopy) use it.
    Serve(serve_cmd::ServeArgs),
    /// Run a grid of configs x seeds on local workers into one results.csv (docs/sweeps.md).
    Sweep(sweep_cmd::SweepArgs),
    /// Two recordings (`serve --record`, `run --record`) side by side per phase: commands,
    /// bytes, TRIM sizes and times, and the relative error of B against A.
    Compare(compare_cmd::CompareArgs),
}

/// `trimlab presets --from`: a drive's own reports (the `[device] from*` keys' files).
#[derive(clap::Args, Debug)]
struct PresetsArgs {
    /// `nvme id-ctrl DEV -o json` output.
    #[arg(long, value_name = "ID-CTRL.json")]
    from: Option<String>,
    /// `nvme nvm-id-ctrl DEV -o json` output (the Dataset Management limits DMRL, DMRSL, DMSL).
    #[arg(long, value_name = "NVM-ID-CTRL.json")]
    nvm: Option<String>,
    /// `nvme id-ns DEV -o json` output (size, LBA format, NPDG, DLFEAT).
    #[arg(long, value_name = "ID-NS.json")]
    ns: Option<String>,
    /// `smartctl -a -j DEV` output (size, the wear counters).
    #[arg(long, value_name = "SMARTCTL.json")]
    smart: Option<String>,
    /// The preset the keys no report gives come from (default: the closest).
    #[arg(long)]
    preset: Option<String>,
}

impl PresetsArgs {
    fn is_empty(&self) -> bool {
        [&self.from, &self.nvm, &self.ns, &self.smart, &self.preset].iter().all(|f| f.is_none())
    }

    fn describe(&self) -> anyhow::Result<()> {
        let reports = [self.from.clone(), self.nvm.clone(), self.ns.clone(), self.smart.clone()];
        for line in trimlab_jobs::presets::describe_from(reports, self.preset.clone())? {
            println!("{line}");
        }
        Ok(())
    }
}

fn main() -> ExitCode {
    // The help's lists come from the registries at run time (src/help.rs).
    let matches = Cli::command().after_help(help::after_help()).get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let result = match cli.command {
        Command::Run(args) => run_cmd::run(&args),
        Command::Reproduce { names, seed, scale, emit_configs: Some(dir), .. } => {
            reproduce_cmd::emit_configs(&names, &dir, seed, scale)
        }
        Command::Reproduce { names, out, seed, scale, emit_configs: None, strict, expect } => {
            reproduce_cmd::run(&names, &out, seed, scale, strict, expect.as_deref())
        }
        Command::Bench { limit: true, .. } => trimlab_jobs::bench::run_limit(&mut progress::BenchTerminal),
        Command::Bench { large: Some(drive), .. } => trimlab_jobs::bench::run_large(
            Some(drive.as_str()).filter(|d| *d != "all"),
            &mut progress::BenchTerminal,
        ),
        Command::Bench { quick, ftl, limit: false, large: None } => trimlab_jobs::bench::run(
            quick,
            match ftl {
                BenchFtl::Page => trimlab_jobs::catalog::FtlKind::Page,
                BenchFtl::Hybrid => trimlab_jobs::catalog::FtlKind::Hybrid,
            },
            &mut progress::BenchTerminal,
        ),
        Command::Presets(args) if args.is_empty() => run_cmd::presets(),
        Command::Presets(args) => args.describe(),
        Command::Replay(args) => trace_cmd::replay(&args),
        Command::Advise(args) => advise_cmd::advise(&args),
        Command::Serve(args) => serve_cmd::run(args),
        Command::Sweep(args) => sweep_cmd::run(&args),
        Command::Compare(args) => compare_cmd::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.downcast_ref::<reproduce_cmd::ClaimsFailed>().is_some() => {
            eprintln!("trimlab: {e:#}");
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("trimlab: {e:#}");
            ExitCode::from(2)
        }
    }
}
