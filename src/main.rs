//! trimlab's command line: the only code that reads files, clocks and terminals.

mod bench;
mod config_file;
mod output;
mod progress;
mod reproduce;
mod run_cmd;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

const AFTER_HELP: &str = "\
EXPERIMENTS (trimlab reproduce NAME):
  waf            uniform random 4 KiB writes in steady state over spare factors and pages per
                 block, with and without TRIM, beside the analytic greedy-GC models
                 (Desnoyers 2012, Van Houdt 2013, Frankie et al. 2013)
  ftl-trim       004: hybrid FAST FTL with a trimmed-range list vs page mapping, with and
                 without TRIM, on 4 channels of K9LAG08U0M (Tables 2-4, E_ftl, GC regime,
                 page- vs block-level striping, lazy backward map)

TRIM ENGINES ([trim] engine = ...):
  immediate      steps 1-3 of 002 in the foreground (conventional TRIM)
  none           TRIM acknowledged and ignored (a drive without TRIM)

DEVICE PRESETS ([device] preset = ...):
  nvme-tlc       a modern 4 KiB-page TLC NVMe drive (default)
  k9lag08u0m-4ch the 4-channel K9LAG08U0M MLC SSD of 004

Config keys and defaults: docs/config.md. Replay any run: same config and --seed.";

#[derive(Parser)]
#[command(name = "trimlab", version, about = "Deterministic simulator of flash storage and TRIM", after_help = AFTER_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one configuration (TOML) and write DIR/metrics.json and DIR/metrics.csv.
    Run {
        /// The configuration file; every key has a default (docs/config.md).
        config: PathBuf,
        /// Seed of every random stream of the run (default: the config's `seed`, else 1).
        #[arg(long)]
        seed: Option<u64>,
        /// Output directory.
        #[arg(long, default_value = "out/run")]
        out: PathBuf,
    },
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
    },
    /// Measure simulator speed (simulated page writes per wall second) and peak memory.
    Bench {
        /// Only the small device (skips the 256 GiB run).
        #[arg(long)]
        quick: bool,
    },
    /// List device presets with their resolved parameters.
    Presets,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run { config, seed, out } => run_cmd::run(&config, seed, &out),
        Command::Reproduce { names, out, seed, scale } => reproduce::run(&names, &out, seed, scale),
        Command::Bench { quick } => bench::run(quick),
        Command::Presets => run_cmd::presets(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("trimlab: {e:#}");
            ExitCode::from(2)
        }
    }
}
