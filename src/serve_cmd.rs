//! `trimlab serve`: the simulated SSD as an NBD export for real clients (the Linux kernel via
//! nbdfuse + loop, qemu, libnbd tools). Reads the same TOML as `trimlab run` (its `[device]`,
//! `[ftl]` and `[trim]` sections; `[workload]` is ignored), serves until SIGINT or SIGTERM,
//! then writes the metrics.
// The binary is the edge: serving real clients runs on threads and the wall clock.
#![allow(clippy::disallowed_methods)]

use crate::output;
use anyhow::{bail, Context, Result};
use std::io::Write;
use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use trimlab_nbd::command::CommandGroup;
use trimlab_nbd::server::{Clock, Listener};
use trimlab_nbd::{FileStore, Finished, Pace, Server, ServerConfig, ServerHandle, SparseStore, Store};
use trimlab_sim::{ByteSize, DurationNs};

/// `trimlab serve`'s flags.
#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// The configuration file ([device], [ftl], [trim]; [workload] is ignored).
    pub config: PathBuf,
    /// Override one key of the config (repeatable): --set trim.engine=delayed
    #[arg(long = "set", value_name = "KEY.PATH=VALUE")]
    pub set: Vec<String>,
    /// TCP address to listen on (default 127.0.0.1:10809; port 0 picks a free port).
    #[arg(long)]
    pub listen: Option<String>,
    /// Listen on a Unix socket instead of TCP.
    #[arg(long)]
    pub unix: Option<PathBuf>,
    /// "none": reply as soon as the model has computed a command; "real": reply when the
    /// wall clock reaches its simulated completion.
    #[arg(long, default_value = "none")]
    pub pace: String,
    /// Keep the data in this file (created at the export size) instead of memory. FLUSH and
    /// FUA sync it; TRIM and WRITE_ZEROES punch holes in it.
    #[arg(long)]
    pub backing: Option<PathBuf>,
    /// Let --backing change the size of an existing file of another size (else refused).
    #[arg(long)]
    pub resize: bool,
    /// Memory the in-memory store may hold (e.g. "4GiB"); past it WRITE gets ENOSPC. Default:
    /// 3/4 of the memory available at start, at most the export size.
    #[arg(long)]
    pub memory_max: Option<String>,
    /// Export read-only: WRITE, TRIM and WRITE_ZEROES get EPERM.
    #[arg(long)]
    pub read_only: bool,
    /// Data bytes of requests not yet answered, per connection (at least --max-request).
    #[arg(long, default_value = "64MiB")]
    pub inflight_max_per_connection: String,
    /// Data bytes of requests not yet answered, all connections together.
    #[arg(long, default_value = "512MiB")]
    pub inflight_max: String,
    /// Allow power cuts (POST /power-cut on --stats-http): keeps a copy of each page written
    /// since the last FLUSH while the drive may still lose it.
    #[arg(long)]
    pub power_loss: bool,
    /// Cut power once after this many commands (implies --power-loss).
    #[arg(long)]
    pub power_cut_after: Option<u64>,
    /// Run this shell command once the server listens, with $uri and $nbd set to the export's
    /// URI; stop when it exits and exit with its status (as `nbdkit --run`).
    #[arg(long)]
    pub run: Option<String>,
    /// The export's name (the empty default name selects it too).
    #[arg(long, default_value = "trimlab")]
    pub export_name: String,
    /// Largest READ/WRITE/WRITE_ZEROES accepted, advertised as the maximum block size.
    #[arg(long, default_value = "32MiB")]
    pub max_request: String,
    /// Print a metrics line to stderr this often (e.g. "5s").
    #[arg(long)]
    pub stats_interval: Option<String>,
    /// Serve GET /stats (JSON) and POST /phase/NAME (start a metrics phase) on this address.
    #[arg(long)]
    pub stats_http: Option<String>,
    /// Where metrics.json and metrics.csv go at shutdown (SIGINT/SIGTERM).
    #[arg(long, default_value = "out/serve")]
    pub out: PathBuf,
    /// Connections served at once; more are refused (logged).
    #[arg(long, default_value_t = 64)]
    pub connections_max: usize,
    /// No per-connection logs.
    #[arg(long)]
    pub quiet: bool,
    /// Record every command the model receives to this file as fio iolog v3 (replay it
    /// with `trimlab replay FILE`).
    #[arg(long)]
    pub record: Option<PathBuf>,
    /// Write OUT/timeseries.csv at shutdown, one row per this much simulated time (e.g. 100ms;
    /// overrides [output] interval).
    #[arg(long)]
    pub log_interval: Option<String>,
    /// Testing: make the N-th model command panic, as a bug in the model would, to see the
    /// export stop cleanly (docs/serve.md, "Model faults").
    #[arg(long, hide = true, value_name = "N")]
    pub inject_panic_after: Option<u64>,
}

/// How long `--run`'s process group gets between SIGTERM and SIGKILL.
const RUN_STOP_GRACE: Duration = Duration::from_secs(5);

fn parse_pace(text: &str) -> Result<Pace> {
    match text {
        "none" => Ok(Pace::None),
        "real" => Ok(Pace::Real),
        other => bail!("--pace {other:?}: accepted values are \"none\" (answer at once) and \"real\" (answer at the simulated completion time)"),
    }
}

pub fn run(args: ServeArgs) -> Result<()> {
    let (text, origin) = crate::config_arg::read(&args.config)?;
    let config = trimlab_jobs::parse_config(&text, &origin, &args.set)?;
    let device = trimlab_jobs::serve::device_config(&config, &text, &origin, &args.set)?;
    let flags = Flags::parse(&args)?;
    let timeseries_interval_ns = config.output.interval_ns(args.log_interval.as_deref())?;
    let listener = open_listener(&args)?;
    let http = match &args.stats_http {
        Some(addr) => {
            Some(TcpListener::bind(addr).with_context(|| format!("--stats-http: cannot listen on {addr}"))?)
        }
        None => None,
    };
    std::fs::create_dir_all(&args.out).with_context(|| format!("cannot create {}", args.out.display()))?;
    let (size, page) = (device.logical_bytes(), device.geometry.page_bytes as u64);
    let store = open_store(&args, size, page)?;
    let record = open_record(&args)?;
    let description = format!(
        "trimlab simulated SSD: preset {}, {size} B logical, spare factor {:.3}, TRIM engine {:?}",
        device.preset, device.spare_factor, device.trim_engine
    );
    let server_config = server_config(&args, description, &flags, record, timeseries_interval_ns);
    let server = Server::new(device.clone(), store, server_config)?;
    let handle = server.handle();
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, stop.clone()).context("cannot install the signal handler")?;
    }
    let uri = listener.uri()?;
    let mut stdout = std::io::stdout();
    writeln!(
        stdout,
        "trimlab serve: listening on {} (export {:?}, {} bytes, pace {})",
        listener.describe(),
        args.export_name,
        size,
        args.pace
    )?;
    let http_thread = http.map(|l| start_stats_http(l, &handle, &mut stdout)).transpose()?;
    stdout.flush()?;

    let started = Instant::now();
    let server = Arc::new(server);
    let runner = {
        let server = server.clone();
        std::thread::spawn(move || server.run(listener))
    };
    let mut command = match &args.run {
        Some(cmd) => {
            Some(CommandGroup::spawn(cmd, &uri).with_context(|| format!("--run {cmd:?}: cannot start sh"))?)
        }
        None => None,
    };
    let mut command_status = supervise(&stop, &runner, command.as_mut(), &handle, flags.stats_interval)?;
    let finished = shut_down(&handle, runner, http_thread)?;
    // The command's whole process group ends with the server (a signal, a model fault, or the
    // command's own end, which may leave background processes behind).
    if let Some(child) = command.as_mut() {
        let status = child.stop(RUN_STOP_GRACE).context("--run: cannot stop the command")?;
        command_status = Some(status);
    }
    let wall_s = started.elapsed().as_secs_f64();
    report(&args, &device, &handle, &finished, wall_s, command_status)
}

fn start_stats_http(
    listener: TcpListener,
    handle: &ServerHandle,
    stdout: &mut std::io::Stdout,
) -> Result<std::thread::JoinHandle<std::io::Result<()>>> {
    writeln!(
        stdout,
        "trimlab serve: stats on http://{}/stats, phases via POST /phase/NAME",
        listener.local_addr()?
    )?;
    let h = handle.clone();
    Ok(std::thread::spawn(move || trimlab_nbd::stats_http::run(listener, h)))
}

/// Stops accepting, ends every connection and finishes the drive (its final check).
fn shut_down(
    handle: &ServerHandle,
    runner: std::thread::JoinHandle<std::io::Result<()>>,
    http_thread: Option<std::thread::JoinHandle<std::io::Result<()>>>,
) -> Result<Finished> {
    eprintln!("trimlab serve: shutting down");
    handle.shutdown();
    runner.join().map_err(|_| anyhow::anyhow!("the accept loop panicked"))?.context("serving failed")?;
    let finished = handle.finish().context("the drive was already finished")?;
    // The stats endpoint answered until now (with the fault, if any); it stops here.
    if let Some(t) = http_thread {
        let _ = t.join();
    }
    Ok(finished)
}

/// The flags that are numbers with limits, checked together before anything is opened.
struct Flags {
    pace: Pace,
    block_max: u64,
    stats_interval: Option<Duration>,
    inflight_per_connection: u64,
    inflight_total: u64,
}

fn size_flag(flag: &str, text: &str) -> Result<u64> {
    ByteSize::parse(text).map(|b| b.0).map_err(|e| anyhow::anyhow!("{flag} {text:?}: {e}"))
}

impl Flags {
    fn parse(args: &ServeArgs) -> Result<Flags> {
        let pace = parse_pace(&args.pace)?;
        let block_max =
            ByteSize::parse(&args.max_request).map_err(|e| anyhow::anyhow!("--max-request: {e}"))?.0;
        if !(4096..=(32 << 20)).contains(&block_max) || block_max % 512 != 0 {
            bail!("--max-request {block_max}: must be a multiple of 512 between 4KiB and 32MiB");
        }
        let stats_interval = match &args.stats_interval {
            Some(t) => {
                let d = DurationNs::parse(t).map_err(|e| anyhow::anyhow!("--stats-interval: {e}"))?;
                if d.0 < 100_000_000 {
                    bail!("--stats-interval {t}: must be at least 100ms");
                }
                Some(Duration::from_nanos(d.0))
            }
            None => None,
        };
        let inflight_per_connection =
            size_flag("--inflight-max-per-connection", &args.inflight_max_per_connection)?;
        let inflight_total = size_flag("--inflight-max", &args.inflight_max)?;
        if inflight_per_connection < block_max || inflight_total < inflight_per_connection {
            bail!(
                "--inflight-max-per-connection {inflight_per_connection} and --inflight-max {inflight_total}: need --max-request ({block_max}) <= per connection <= total"
            );
        }
        check_counts(args)?;
        Ok(Flags { pace, block_max, stats_interval, inflight_per_connection, inflight_total })
    }
}

/// The flags whose zero or combination means nothing.
fn check_counts(args: &ServeArgs) -> Result<()> {
    if args.connections_max == 0 {
        bail!("--connections-max 0: at least one connection must be allowed");
    }
    if args.power_cut_after == Some(0) {
        bail!("--power-cut-after 0: give the number of commands after which power is cut (at least 1)");
    }
    if args.export_name.len() > trimlab_nbd::server::EXPORT_NAME_MAX_BYTES {
        bail!(
            "--export-name: {} bytes; the NBD protocol allows at most {} (a longer name cannot be listed or selected)",
            args.export_name.len(),
            trimlab_nbd::server::EXPORT_NAME_MAX_BYTES
        );
    }
    if args.inject_panic_after == Some(0) {
        bail!("--inject-panic-after 0: commands are counted from 1");
    }
    if args.backing.is_some() && args.memory_max.is_some() {
        bail!("--memory-max limits the in-memory store; with --backing the data is in the file");
    }
    Ok(())
}

fn open_listener(args: &ServeArgs) -> Result<Listener> {
    Ok(match (&args.listen, &args.unix) {
        (Some(_), Some(_)) => bail!("give either --listen ADDR:PORT or --unix PATH, not both"),
        (None, Some(path)) => {
            if path.exists() {
                bail!("--unix {}: the path exists; remove it or choose another", path.display());
            }
            let l =
                UnixListener::bind(path).with_context(|| format!("cannot listen on {}", path.display()))?;
            Listener::Unix(l, path.clone())
        }
        (listen, None) => {
            let addr = listen.as_deref().unwrap_or("127.0.0.1:10809");
            Listener::Tcp(TcpListener::bind(addr).with_context(|| format!("cannot listen on {addr}"))?)
        }
    })
}

/// Where the export's data lives: the `--backing` file, or memory up to `--memory-max`.
fn open_store(args: &ServeArgs, size: u64, page: u64) -> Result<Box<dyn Store>> {
    Ok(match &args.backing {
        Some(path) => Box::new(
            FileStore::open(path, size, page, args.resize)
                .with_context(|| format!("--backing {}", path.display()))?,
        ),
        None => {
            let memory_max = match &args.memory_max {
                Some(text) => size_flag("--memory-max", text)?,
                None => default_memory_max(size),
            };
            if memory_max < page {
                bail!("--memory-max {memory_max}: must hold at least one {page}-byte page");
            }
            Box::new(
                SparseStore::new(size, page.max(512), memory_max)
                    .context("cannot create the in-memory store")?,
            )
        }
    })
}

fn open_record(args: &ServeArgs) -> Result<Option<Box<dyn std::io::Write + Send>>> {
    Ok(match &args.record {
        Some(path) => Some(Box::new(std::io::BufWriter::new(crate::output::create_file("--record", path)?))),
        None => None,
    })
}

fn server_config(
    args: &ServeArgs,
    description: String,
    flags: &Flags,
    record: Option<Box<dyn std::io::Write + Send>>,
    timeseries_interval_ns: Option<u64>,
) -> ServerConfig {
    ServerConfig {
        export_name: args.export_name.clone(),
        description,
        block_max_bytes: flags.block_max as u32,
        pace: flags.pace,
        clock: Clock::wall(),
        connections_max: args.connections_max,
        handshake_timeout: trimlab_nbd::server::HANDSHAKE_TIMEOUT_DEFAULT,
        handshakes_per_address_max: trimlab_nbd::server::HANDSHAKES_PER_ADDRESS_DEFAULT,
        io_timeout: trimlab_nbd::server::IO_TIMEOUT_DEFAULT,
        stall_timeout: trimlab_nbd::server::STALL_TIMEOUT_DEFAULT,
        log: !args.quiet,
        record,
        timeseries_interval_ns,
        read_only: args.read_only,
        inflight_per_connection_bytes: flags.inflight_per_connection,
        inflight_total_bytes: flags.inflight_total,
        power_loss: args.power_loss,
        power_cut_after: args.power_cut_after,
        inject_panic_after: args.inject_panic_after,
    }
}

/// Waits until a signal, the server's end or the `--run` command's end, printing stats lines
/// every `stats_interval`; the command's exit status when it ended.
fn supervise(
    stop: &AtomicBool,
    runner: &std::thread::JoinHandle<std::io::Result<()>>,
    mut command: Option<&mut CommandGroup>,
    handle: &ServerHandle,
    stats_interval: Option<Duration>,
) -> Result<Option<std::process::ExitStatus>> {
    let mut command_status = None;
    let mut next_stats = stats_interval.map(|d| Instant::now() + d);
    while !stop.load(Ordering::SeqCst) && !runner.is_finished() && command_status.is_none() {
        if let Some(child) = command.as_mut() {
            command_status = child.try_wait().context("--run: cannot wait for the command")?;
        }
        std::thread::sleep(Duration::from_millis(50));
        if let (Some(at), Some(every)) = (next_stats, stats_interval) {
            if Instant::now() >= at {
                next_stats = Some(at + every);
                if let Some(s) = handle.stats() {
                    eprintln!("{}", stats_line(&s, handle.open_connections()));
                }
            }
        }
    }
    Ok(command_status)
}

/// Writes metrics.json (and the series) and turns the outcome into the exit status: 1 when
/// the model failed (a fault while serving, or its final check), 2 for an I/O error of
/// --record, else the --run command's.
fn report(
    args: &ServeArgs,
    device: &impl serde::Serialize,
    handle: &ServerHandle,
    finished: &Finished,
    wall_s: f64,
    command_status: Option<std::process::ExitStatus>,
) -> Result<()> {
    let text = |r: &Result<(), String>| match r {
        Ok(()) => "ok".to_string(),
        Err(e) => e.clone(),
    };
    let metrics = serde_json::json!({
        "trimlab_version": env!("CARGO_PKG_VERSION"),
        "command": "serve",
        "config": { "device": device },
        "pace": args.pace,
        "wall_seconds": wall_s,
        "model_check": text(&finished.model_check),
        "fault": finished.fault,
        "record": text(&finished.record),
        "connections": handle.connections(),
        "stats": finished.stats,
    });
    write_metrics(&args.out, &metrics)?;
    if let Some(stats) = &finished.stats {
        if let Some((histogram, timeseries)) = &stats.series {
            output::write_series_csv(&args.out, histogram, timeseries.as_deref())?;
        }
        eprintln!("{}", stats_line(stats, 0));
    }
    // stderr: whoever read the listening line may have closed stdout by now.
    eprintln!("trimlab serve: wrote {}", args.out.join("metrics.json").display());
    if let Some(status) = command_status.filter(|s| !s.success()) {
        eprintln!("trimlab serve: --run command exited with {status}");
    }
    if let Some(fault) = &finished.fault {
        eprintln!(
            "trimlab: the device model failed while serving: {fault} (metrics.json has the report up to it)"
        );
        std::process::exit(1);
    }
    if let Err(e) = &finished.model_check {
        eprintln!("trimlab: the device model failed its consistency check: {e}");
        std::process::exit(1);
    }
    if let (Err(e), Some(path)) = (&finished.record, &args.record) {
        bail!("--record {}: I/O error: {e} (the recording is incomplete; the model is fine)", path.display());
    }
    if let Some(status) = command_status.filter(|s| !s.success()) {
        std::process::exit(status.code().unwrap_or(1));
    }
    Ok(())
}

/// 3/4 of MemAvailable at start, at most the export size (the export size when unknown).
fn default_memory_max(export_bytes: u64) -> u64 {
    let available = std::fs::read_to_string("/proc/meminfo").ok().and_then(|text| {
        text.lines()
            .find_map(|l| l.strip_prefix("MemAvailable:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kib| kib * 1024)
    });
    available.map_or(export_bytes, |a| (a / 4 * 3).min(export_bytes))
}

fn write_metrics(out: &Path, metrics: &serde_json::Value) -> Result<()> {
    output::write_json(&out.join("metrics.json"), metrics)?;
    output::write_flat_csv(&out.join("metrics.csv"), metrics)
}

fn stats_line(s: &trimlab_nbd::drive::DriveStats, open: usize) -> String {
    let n = &s.nbd;
    let d = &s.device;
    format!(
        "trimlab serve: sim {:.3} s, {open} open; nbd read {}/{} MiB write {}/{} MiB trim {}/{} MiB zero {}/{} MiB flush {} refused {}; \
         WAF {:.3} NAND programs {} erases {} GC victims {} TRIM pages {} unmapped {}; store {} MiB",
        s.sim_time_ns as f64 / 1e9,
        n.read_commands,
        n.read_bytes >> 20,
        n.write_commands,
        n.write_bytes >> 20,
        n.trim_commands,
        n.trim_bytes >> 20,
        n.write_zeroes_commands,
        n.write_zeroes_bytes >> 20,
        n.flush_commands,
        n.refused_commands,
        d.waf,
        d.nand_pages_programmed,
        d.nand_blocks_erased,
        d.gc.victims,
        d.trim.pages_requested,
        d.trim.pages_unmapped,
        s.store_resident_bytes >> 20
    )
}
