//! trimlab's command line: the only code that reads files, clocks and terminals.

mod bench;
mod config_file;
mod output;
mod progress;
mod reproduce;
mod run_cmd;
mod serve_cmd;
mod trace_cmd;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

const AFTER_HELP: &str = "\
EXPERIMENTS (trimlab reproduce NAME):
  waf            uniform random 4 KiB writes in steady state over spare factors and pages per
                 block, with and without TRIM, beside the analytic greedy-GC models
                 (Desnoyers 2012, Van Houdt 2013, Frankie et al. 2013)
  delayed-trim   Delayed TRIM (002 Figs. 2-4): WAF, GC time and foreground TRIM overhead of
                 Baseline, DT-512MB, DT-1GB, DT-ALL and Write-Only on a 32 GB drive
  ftl-trim       004: hybrid FAST FTL with a trimmed-range list vs page mapping, with and
                 without TRIM, on 4 channels of K9LAG08U0M (Tables 2-4, E_ftl, GC regime,
                 page- vs block-level striping, lazy backward map)
  lazy-trim      000: fsync latency and TRIM issue time after unlinking a fragmented file,
                 discard vs Lazy TRIM vs Lazy + Reuse (Fig. 3, 4); Table II write latency
  selective-trim 001: Postmark vs utilization with TRIM on/off after aging (Fig. 1a);
                 SeT watermarks on the 60/40/70/60 % schedule (Fig. 1b)
  discard-vs-fstrim
                 003: mkfs, bulk rm and fstrim on a thin volume with and without discard;
                 WAF and wear of nodiscard / discard / fstrim / async on an SSD

HOST TRIM POLICIES (file-system layer, trimlab-fs; docs/host-fs.md):
  nodiscard      no online TRIM; freed blocks reusable at commit
  discard        ext4 -o discard (4.4): one synchronous TRIM per freed extent at commit
  discard-batch  ext4 -o discard (4.x+): a commit's TRIMs issued together, one wait
  lazy           Lazy TRIM (000): TRIM queue + adaptive background workers
  lazy-reuse     Lazy + Reuse TRIM (000): allocator reuses queued blocks, cancels TRIM
  selective:L:H  Selective TRIM (001), watermarks in % (selective = 40:90)
  async          btrfs discard=async: reuse delay, size-ordered lists, IOPS limit, max size
  fstrim         no online TRIM; periodic FITRIM with minlen, skipping trimmed groups

TRIM ENGINES ([trim] engine = ...):
  immediate      steps 1-3 of 002 in the foreground (conventional TRIM)
  none           TRIM acknowledged and ignored (a drive without TRIM)
  delayed        Delayed TRIM (002): step 1 now; steps 2-3 at idle or before GC, up to a
                 cap ([trim.delayed] before_gc = \"all\" | \"512MiB\" ...)

DEVICE PRESETS ([device] preset = ...):
  nvme-tlc       a modern 4 KiB-page TLC NVMe drive (default)
  sata-mlc-2011  a 2011 SATA MLC SSD, non-queued ms-scale TRIM (001's era)
  ufs-2018       a 64 GB mobile UFS 2.1 device (000's era)
  k9lag08u0m-4ch the 4-channel K9LAG08U0M MLC SSD of 004
  (trimlab presets prints each one resolved, with its TRIM costs and their source)

TRACES (trimlab replay / trimlab advise TRACE): blkparse, ftrace-blk, fio-v2, fio-v3, msr,
  mqsim, disksim (detected or --format); see docs/traces.md.
SERVING (trimlab serve CONFIG.toml): the simulated SSD as an NBD export for real clients
  (ext4 via nbdfuse + loop, qemu-io, nbdcopy); see docs/serve.md.

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
        /// Exit with status 1 when any claim does not hold (in shape, or in band where it states one).
        #[arg(long)]
        strict: bool,
    },
    /// Measure simulator speed (simulated page writes per wall second) and peak memory.
    Bench {
        /// Only the small device (skips the 256 GiB run).
        #[arg(long)]
        quick: bool,
    },
    /// List device presets with their resolved parameters.
    Presets,
    /// Replay a block trace (blkparse, ftrace blk, fio iolog v2/v3, MSR, MQSim, DiskSim) on a device.
    Replay(trace_cmd::ReplayArgs),
    /// Online discard, periodic fstrim or none: replay a trace each way and recommend one.
    Advise(trace_cmd::AdviseArgs),
    /// Serve the simulated SSD over NBD so real clients (ext4 via nbdfuse, qemu, nbdcopy) use it.
    Serve(serve_cmd::ServeArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run { config, seed, out } => run_cmd::run(&config, seed, &out),
        Command::Reproduce { names, out, seed, scale, strict } => {
            reproduce::run(&names, &out, seed, scale, strict)
        }
        Command::Bench { quick } => bench::run(quick),
        Command::Presets => run_cmd::presets(),
        Command::Replay(args) => trace_cmd::replay(&args),
        Command::Advise(args) => trace_cmd::advise(&args),
        Command::Serve(args) => serve_cmd::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.downcast_ref::<reproduce::ClaimsFailed>().is_some() => {
            eprintln!("trimlab: {e:#}");
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("trimlab: {e:#}");
            ExitCode::from(2)
        }
    }
}
