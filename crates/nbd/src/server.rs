//! The NBD server: listeners, one thread per connection, the wall clock, pacing, limits and
//! logs. The only part of trimlab-nbd that does I/O or reads a clock.
//!
//! Threads. One thread per connection parses requests and receives their data; the [`Drive`]
//! sits behind one lock, and the connection's thread runs each request on it while holding the
//! lock, in the order the lock is taken. Several connections therefore share one device, and a
//! command is applied whole before the next one starts. (Until issue 15 a device thread owned
//! the drive and every request was handed to it and back over channels: two thread wake-ups
//! per request, a third of the server's CPU time under nbdcopy.)
//!
//! Model faults (issue 26). Every call into the drive runs under `catch_unwind`: a panic in the
//! model (or a command the model refuses although the request was valid, a trimlab bug) is a
//! fault. The request gets `EIO`, its connection ends once that reply is out, the export stops
//! as at SIGTERM (other connections get the replies already computed, then are closed, and new
//! requests get `EIO`), the stats endpoint answers with the fault, and [`ServerHandle::finish`]
//! reports it, so `trimlab serve` writes metrics.json and exits non-zero. Until then a panic
//! left its client waiting forever and the drive's lock poisoned.
//!
//! Time. A request's simulated arrival is the wall-clock time since the server started, read
//! under the drive's lock when the request runs (so arrivals never go backwards). The gaps between requests are therefore the host's real idle time, and they
//! reach the model as idle (`Ssd::submit` offers the TRIM engine the gap before a command that
//! arrives after `idle_threshold`), so an engine that works at idle drains while ext4 sleeps.
//! With `--pace none` the reply goes out as soon as the model has computed it; a host faster
//! than the model then queues inside the model (its latency metrics show the backlog) without
//! waiting for it. With `--pace real` each reply is held until the wall clock reaches the
//! model's completion instant, so the host feels the simulated drive's latency and throughput.
//!
//! Limits (issues 13 and 26; docs/serve.md lists them with what a client sees):
//! - Handshakes: one deadline for the whole negotiation, enforced by the accept loop (a
//!   per-read timeout let a client trickling a byte at a time stay forever). At most
//!   `handshakes_per_address_max` handshakes from one source address at once, and a new
//!   connection that finds every slot taken cuts the oldest handshake instead of being refused,
//!   so idle handshakes cannot lock clients out.
//! - Budgets ([`crate::budget`]): every request holds a charge of what it keeps in memory from
//!   the moment it is read until its reply has been written, against a per-connection and a
//!   server-wide budget; a WRITE's payload is charged server-wide as it arrives. A connection
//!   that cannot get its charge stops reading requests.
//! - Transfers ([`crate::watch`]): a WRITE's payload and each reply must be transferred within
//!   `io_timeout` in all, and while a request waits for the server-wide budget a connection that
//!   holds budget and has not moved its payload or reply for `stall_timeout` is cut.
//! - Descriptors: one per connection; accept errors (out of descriptors, aborted connections)
//!   are logged and backed off, never fatal, and with no descriptor left the pending client is
//!   accepted on a reserved one and closed at once instead of waiting in the backlog.
//!
//! Power cuts ([`ServerHandle::power_cut`], `--power-cut-after`): under the drive's lock, the
//! drive's power is cut between two commands and starts a new power epoch; requests from connections
//! negotiated before it get `EIO` until the client reconnects, as from a drive that went away.

use crate::budget::{Budget, Charge};
use crate::drive::{Drive, DriveStats, PowerCutReport};
use crate::handshake::{self, ExportInfo, Negotiation, Next, PayloadPolicy};
use crate::payload::{PagePool, Payload, ReceiveHooks};
use crate::reply;
use crate::request::{self, Limits, Refusal, Request, RequestHeader, WRITE_DRAIN_MAX_BYTES};
use crate::sink::{Sink, REPLY_HOLD_BYTES};
use crate::store::Store;
use crate::watch::{Conn, ConnStream, Cut, Transfer, Watch};
use crate::wire::*;
use rustix::event::{poll, PollFd, PollFlags, Timespec};
use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::net::{IpAddr, TcpListener};
use std::os::fd::AsFd;
use std::os::unix::net::UnixListener;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use trimlab_device::{Ssd, SsdConfig};
use trimlab_sim::SimTime;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pace {
    /// Reply as soon as the model has computed the command.
    None,
    /// Reply when the wall clock reaches the model's completion instant.
    Real,
}

/// Where simulated arrivals come from.
pub enum Clock {
    /// Wall-clock nanoseconds since the server started.
    Wall(Instant),
    /// Each reading advances by a fixed step: deterministic runs for tests and fuzzing.
    Step { next_ns: AtomicU64, step_ns: u64 },
}

impl Clock {
    pub fn wall() -> Clock {
        Clock::Wall(Instant::now())
    }

    pub fn step(step_ns: u64) -> Clock {
        Clock::Step { next_ns: AtomicU64::new(0), step_ns }
    }

    fn now(&self) -> SimTime {
        match self {
            Clock::Wall(start) => SimTime(start.elapsed().as_nanos() as u64),
            Clock::Step { next_ns, step_ns } => SimTime(next_ns.fetch_add(*step_ns, Ordering::Relaxed)),
        }
    }

    /// The wall instant at which simulated time `t` is reached (pacing).
    fn wall_of(&self, t: SimTime) -> Option<Instant> {
        match self {
            Clock::Wall(start) => Some(*start + Duration::from_nanos(t.ns())),
            Clock::Step { .. } => None,
        }
    }
}

pub struct ServerConfig {
    /// Name and description of the export; size and block sizes are filled in from the drive.
    /// The name is at most [`EXPORT_NAME_MAX_BYTES`].
    pub export_name: String,
    pub description: String,
    /// Largest READ / WRITE / WRITE_ZEROES accepted (advertised as the maximum block size).
    pub block_max_bytes: u32,
    pub pace: Pace,
    pub clock: Clock,
    pub connections_max: usize,
    /// A client must finish the handshake within this time (idle clients in transmission are
    /// fine: the kernel keeps quiet connections for long periods).
    pub handshake_timeout: Duration,
    /// Handshakes in progress from one source address (all Unix-socket clients count as one);
    /// a newer connection cuts the oldest.
    pub handshakes_per_address_max: usize,
    /// A WRITE's payload, and each reply, must be transferred within this time in all (not
    /// counting time the server made the payload wait for budget).
    pub io_timeout: Duration,
    /// While a request waits for the server-wide budget, a connection that holds budget and
    /// whose payload or reply has not moved for this long is cut.
    pub stall_timeout: Duration,
    /// Print connection and refusal logs to stderr.
    pub log: bool,
    /// Write every model command here as fio iolog v3 (`trimlab serve --record`).
    pub record: Option<Box<dyn Write + Send>>,
    /// Sample the device's time series this often (simulated ns); handed back at finish.
    pub timeseries_interval_ns: Option<u64>,
    /// Export read-only: WRITE, TRIM and WRITE_ZEROES get EPERM.
    pub read_only: bool,
    /// Bytes held by requests read but not yet answered, per connection and in all; a request
    /// larger than a budget still runs when nothing else holds it.
    pub inflight_per_connection_bytes: u64,
    pub inflight_total_bytes: u64,
    /// Keep what a power cut needs ([`ServerHandle::power_cut`] works without it, but then
    /// only the model loses state, not the bytes).
    pub power_loss: bool,
    /// Cut power once, right after this many commands have been executed.
    pub power_cut_after: Option<u64>,
    /// For tests of the fault path: the model command with this number (from 1) panics, as a
    /// bug in the model would (`trimlab serve --inject-panic-after`).
    pub inject_panic_after: Option<u64>,
}

/// Defaults of the limits (docs/serve.md lists them).
pub const INFLIGHT_PER_CONNECTION_DEFAULT: u64 = 64 << 20;
pub const INFLIGHT_TOTAL_DEFAULT: u64 = 512 << 20;
pub const HANDSHAKE_TIMEOUT_DEFAULT: Duration = Duration::from_secs(30);
/// Assumption: more than any one client opens at once (nbdfuse opens 4 with multi-conn).
pub const HANDSHAKES_PER_ADDRESS_DEFAULT: usize = 16;
/// A payload or a reply must be transferred within this (a reply used to have 60 s per send).
pub const IO_TIMEOUT_DEFAULT: Duration = Duration::from_secs(60);
/// Under budget pressure, a holder whose transfer has not moved for this long is cut.
pub const STALL_TIMEOUT_DEFAULT: Duration = Duration::from_secs(5);
/// The NBD protocol's limit on an export name (doc/proto.md: strings are at most 4096 bytes).
pub const EXPORT_NAME_MAX_BYTES: usize = 4096;
/// A connection's request buffer is given back after a request larger than this.
const KEEP_BUFFER_BYTES: usize = 1 << 20;

/// Refusals logged per connection; later ones are only counted (a fuzzing peer would flood).
const REFUSALS_LOGGED_MAX: u64 = 16;

/// Server-wide connection counters (the drive counts commands).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ConnectionCounters {
    pub accepted: u64,
    pub refused_too_many: u64,
    pub handshakes_completed: u64,
    pub handshakes_failed: u64,
    pub options_refused: u64,
    pub disconnects_clean: u64,
    pub disconnects_abrupt: u64,
    pub protocol_violations: u64,
    /// Handshakes cut at their deadline (slow or silent clients).
    pub handshakes_timed_out: u64,
    /// Handshakes cut to make room for a newer connection (per address, or the last slots).
    pub handshakes_evicted: u64,
    /// Connections cut because a payload or a reply was not transferred within the deadline.
    pub cut_io_deadline: u64,
    /// Connections cut because they held budget without progress while others waited for it.
    pub cut_stalled: u64,
    /// Accept errors (out of descriptors, aborted connections ...); the server carried on.
    pub accept_errors: u64,
    /// Clients accepted on the reserved descriptor and closed at once (no descriptor left), or
    /// whose thread could not be started.
    pub refused_no_resources: u64,
    /// The most data bytes held by requests at once, server-wide and on any one connection.
    pub inflight_bytes_peak: u64,
    pub inflight_bytes_peak_connection: u64,
    /// Requests refused because power was cut after their connection was negotiated.
    pub refused_after_power_cut: u64,
}

/// Why the drive could not be used.
enum Stopped {
    /// [`ServerHandle::finish`] has run.
    Finished,
    /// The model failed (this message); see the module comment.
    Fault(String),
}

struct Shared {
    /// `None` once finished.
    device: Mutex<Option<Device>>,
    /// The first model fault, if any.
    fault: Mutex<Option<String>>,
    /// The report [`ServerHandle::finish`] made, for the stats endpoint afterwards.
    final_stats: Mutex<Option<DriveStats>>,
    finished: AtomicBool,
    /// Where WRITE payloads are received, when the store takes whole pages.
    page_pool: Option<Arc<PagePool>>,
    export: ExportInfo,
    pace: Pace,
    clock: Arc<Clock>,
    log: bool,
    connections_max: usize,
    handshake_timeout: Duration,
    handshakes_per_address_max: usize,
    io_timeout: Duration,
    stall_timeout: Duration,
    /// The base of the connections' watch instants.
    started: Instant,
    shutting_down: AtomicBool,
    next_connection: AtomicU64,
    /// Open connections (those cut stay until their thread ends).
    open: Mutex<BTreeMap<u64, Arc<Watch>>>,
    counters: Mutex<ConnectionCounters>,
    inflight_per_connection_bytes: u64,
    inflight_total: Arc<Budget>,
    /// Bumped at each power cut.
    power_epoch: Arc<AtomicU64>,
}

/// A panic payload's message.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    /// Runs `f` on the device under the drive's lock (the clock is read there, so arrivals
    /// never go backwards). A panic in `f`, or a model error the drive reports, becomes the
    /// server's fault; a faulted or finished drive is not run at all.
    fn with_device<T>(&self, f: impl FnOnce(&mut Device, &Clock) -> T) -> Result<T, Stopped> {
        let mut guard = lock(&self.device);
        let device = guard.as_mut().ok_or(Stopped::Finished)?;
        if let Some(fault) = self.fault() {
            return Err(Stopped::Fault(fault));
        }
        let fault = match catch_unwind(AssertUnwindSafe(|| f(device, &self.clock))) {
            Ok(value) => match device.drive.take_fault() {
                None => return Ok(value),
                Some(error) => format!("model error: {error}"),
            },
            Err(panic) => format!("panic: {}", panic_message(&*panic)),
        };
        drop(guard);
        Err(Stopped::Fault(self.fault_found(fault)))
    }

    /// Runs `f` on the device even after a fault (reports); `None` once finished or if `f`
    /// panics (which is a fault too).
    fn inspect_device<T>(&self, f: impl FnOnce(&mut Device, &Clock) -> T) -> Option<T> {
        let mut guard = lock(&self.device);
        let device = guard.as_mut()?;
        match catch_unwind(AssertUnwindSafe(|| f(device, &self.clock))) {
            Ok(value) => Some(value),
            Err(panic) => {
                drop(guard);
                self.fault_found(format!("panic: {}", panic_message(&*panic)));
                None
            }
        }
    }

    fn fault(&self) -> Option<String> {
        lock(&self.fault).clone()
    }

    /// Records the first fault and stops the export; returns the fault that stands.
    fn fault_found(&self, message: String) -> String {
        let first = {
            let mut fault = lock(&self.fault);
            if fault.is_none() {
                *fault = Some(message.clone());
            }
            fault.clone().expect("set above")
        };
        if first == message {
            eprintln!("trimlab serve: the device model failed ({message}); stopping the export");
        }
        self.shutdown();
        first
    }

    fn shutdown(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
        for w in lock(&self.open).values() {
            w.shutdown_read();
        }
    }

    fn count(&self, f: impl FnOnce(&mut ConnectionCounters)) {
        f(&mut lock(&self.counters));
    }

    fn log(&self, id: u64, peer: &str, message: &str) {
        if self.log {
            eprintln!("trimlab serve: conn {id} {peer}: {message}");
        }
    }

    /// Cuts `w` (once) and says why.
    fn cut(&self, w: &Watch, why: Cut) {
        if !w.cut() {
            return;
        }
        let message = match why {
            Cut::HandshakeDeadline => {
                self.count(|c| c.handshakes_timed_out += 1);
                "handshake deadline passed; disconnecting".to_string()
            }
            Cut::HandshakeEvicted => {
                self.count(|c| c.handshakes_evicted += 1);
                "handshake cut to make room for a newer connection".to_string()
            }
            Cut::Deadline(t) => {
                self.count(|c| c.cut_io_deadline += 1);
                format!("{} not transferred within {:?}; disconnecting", transfer_name(t), self.io_timeout)
            }
            Cut::Stalled(t) => {
                self.count(|c| c.cut_stalled += 1);
                format!(
                    "{} made no progress for {:?} while holding budget others wait for; disconnecting",
                    transfer_name(t),
                    self.stall_timeout
                )
            }
        };
        self.log(w.id, "", &message);
    }

    /// Cuts every connection past a deadline (the accept loop calls this every few ms).
    fn police(&self) {
        let open = lock(&self.open);
        for w in open.values().filter(|w| !w.is_cut()) {
            if let Some(why) = w.overdue(w.now_ns(), self.io_timeout) {
                self.cut(w, why);
            }
        }
    }

    /// A request waits for the server-wide budget: connections that hold budget without
    /// moving their payload or reply give it back.
    fn relieve_pressure(&self) {
        let open = lock(&self.open);
        for w in open.values().filter(|w| !w.is_cut()) {
            if let Some(why) = w.stalled(w.now_ns(), self.stall_timeout) {
                self.cut(w, why);
            }
        }
    }
}

fn transfer_name(t: Transfer) -> &'static str {
    match t {
        Transfer::Payload => "WRITE payload",
        Transfer::Reply => "reply",
    }
}

/// What [`ServerHandle::finish`] found.
pub struct Finished {
    /// The final report (`None` if the model could not produce one after a fault).
    pub stats: Option<DriveStats>,
    /// The model's full consistency check (not run after a fault).
    pub model_check: Result<(), String>,
    /// The `--record` file: its first write error.
    pub record: Result<(), String>,
    /// The model fault that stopped the export, if any.
    pub fault: Option<String>,
}

/// A cheap handle for the CLI: stats, phases and shutdown from other threads.
#[derive(Clone)]
pub struct ServerHandle {
    shared: Arc<Shared>,
}

impl ServerHandle {
    /// The live time series since `since_ns` (see [`crate::drive::Drive::series_rows`]);
    /// `None` when it is off or the model cannot answer.
    pub fn series(&self, since_ns: u64, max: usize) -> Option<Vec<trimlab_device::timeseries::Row>> {
        self.shared.inspect_device(|d, _| d.drive.series_rows(since_ns, max)).flatten()
    }

    /// The live report (after [`ServerHandle::finish`], the final one; `None` if the model
    /// cannot produce one).
    pub fn stats(&self) -> Option<DriveStats> {
        self.shared
            .inspect_device(|d, clock| d.drive.stats(clock.now()))
            .or_else(|| lock(&self.shared.final_stats).clone())
    }

    /// The model fault that stopped the export, if any.
    pub fn fault(&self) -> Option<String> {
        self.shared.fault()
    }

    pub fn connections(&self) -> ConnectionCounters {
        let mut c = lock(&self.shared.counters).clone();
        c.inflight_bytes_peak = self.shared.inflight_total.peak();
        c
    }

    /// Bytes held now by requests, server-wide.
    pub fn inflight_bytes(&self) -> u64 {
        self.shared.inflight_total.used()
    }

    pub fn open_connections(&self) -> usize {
        lock(&self.shared.open).len()
    }

    /// Ends the current measurement phase and starts `name` (refused past the phase limit).
    pub fn start_phase(&self, name: &str) -> Result<(), String> {
        self.run_on_device(|d, clock| d.drive.start_phase(name, clock.now()))
    }

    /// Cuts the drive's power now (between two commands): see the module comment.
    pub fn power_cut(&self) -> Result<PowerCutReport, String> {
        self.run_on_device(|d, clock| d.cut(clock.now()))
    }

    fn run_on_device<T>(
        &self,
        f: impl FnOnce(&mut Device, &Clock) -> Result<T, String>,
    ) -> Result<T, String> {
        match self.shared.with_device(f) {
            Ok(result) => result,
            Err(Stopped::Finished) => Err("the server has stopped".into()),
            Err(Stopped::Fault(fault)) => Err(format!("the device model failed: {fault}")),
        }
    }

    /// Stops accepting, ends every connection's reading side (replies already computed are
    /// still sent) and lets [`Server::run`] return.
    pub fn shutdown(&self) {
        self.shared.shutdown();
    }

    pub fn is_shutting_down(&self) -> bool {
        self.shared.shutting_down.load(Ordering::SeqCst)
    }

    /// Whether [`ServerHandle::finish`] has run.
    pub fn is_finished(&self) -> bool {
        self.shared.finished.load(Ordering::SeqCst)
    }

    /// Gives the model the final idle period, checks its invariants, closes the recording,
    /// returns the report and drops the drive (call after [`Server::run`] returned). After a
    /// fault only the report is attempted. `None` if already done.
    pub fn finish(&self) -> Option<Finished> {
        let mut device = lock(&self.shared.device).take()?;
        let now = self.shared.clock.now();
        let record = device.drive.finish_recording().map_err(|e| e.to_string());
        let drive = &mut device.drive;
        let (stats, model_check) = match self.shared.fault() {
            Some(fault) => {
                let stats = catch_unwind(AssertUnwindSafe(|| {
                    let mut stats = drive.stats(now);
                    stats.series = Some(drive.finish_series(now));
                    stats
                }))
                .ok();
                (stats, Err(format!("not run: the model failed while serving ({fault})")))
            }
            None => match catch_unwind(AssertUnwindSafe(|| {
                drive.idle_until(now);
                let check = drive.check();
                let mut stats = drive.stats(now);
                stats.series = Some(drive.finish_series(now));
                (stats, check)
            })) {
                Ok((stats, check)) => (Some(stats), check),
                Err(panic) => {
                    let fault = self.shared.fault_found(format!("panic: {}", panic_message(&*panic)));
                    (None, Err(format!("not run: the model failed at shutdown ({fault})")))
                }
            },
        };
        *lock(&self.shared.final_stats) = stats.clone();
        self.shared.finished.store(true, Ordering::SeqCst);
        Some(Finished { stats, model_check, record, fault: self.shared.fault() })
    }
}

pub enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener, PathBuf),
}

impl Listener {
    pub fn describe(&self) -> String {
        match self {
            Listener::Tcp(l) => l.local_addr().map_or("tcp ?".into(), |a| a.to_string()),
            Listener::Unix(_, p) => format!("unix:{}", p.display()),
        }
    }

    /// The export's NBD URI (doc/uri.md): `nbd://HOST:PORT`, or `nbd+unix:///?socket=PATH` with
    /// the path percent-encoded (a space, `#`, `?`, `&` or `%` in it would change the URI).
    pub fn uri(&self) -> io::Result<String> {
        Ok(match self {
            Listener::Tcp(l) => format!("nbd://{}", l.local_addr()?),
            Listener::Unix(_, path) => {
                use std::os::unix::ffi::OsStrExt;
                format!("nbd+unix:///?socket={}", percent_encode(path.as_os_str().as_bytes()))
            }
        })
    }

    fn set_nonblocking(&self) -> io::Result<()> {
        match self {
            Listener::Tcp(l) => l.set_nonblocking(true),
            Listener::Unix(l, _) => l.set_nonblocking(true),
        }
    }

    /// One connection: its socket, its source address (`None` for a Unix socket) and a name
    /// for the logs.
    fn accept(&self) -> io::Result<(Conn, Option<IpAddr>, String)> {
        match self {
            Listener::Tcp(l) => l.accept().map(|(s, a)| {
                let _ = s.set_nodelay(true);
                (Conn::Tcp(s), Some(a.ip()), a.to_string())
            }),
            Listener::Unix(l, p) => {
                l.accept().map(|(s, _)| (Conn::Unix(s), None, format!("unix:{}", p.display())))
            }
        }
    }

    fn wait(&self, timeout: Duration) {
        match self {
            Listener::Tcp(l) => wait_for_connection(l, timeout),
            Listener::Unix(l, _) => wait_for_connection(l, timeout),
        }
    }
}

/// Percent-encodes every byte but the unreserved characters of RFC 3986 and `/`.
pub fn percent_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Waits until a connection is ready to be accepted on `listener` or `timeout` has passed.
/// The accept loops used to sleep 20 ms between tries instead, and every client paid up to
/// that per connection before its handshake began: 23 ms of a 4 KiB nbdcopy, 5 % of a 1 GiB
/// one (issue 15).
pub(crate) fn wait_for_connection(listener: impl AsFd, timeout: Duration) {
    let mut fds = [PollFd::new(&listener, PollFlags::IN)];
    let timeout = Timespec { tv_sec: timeout.as_secs() as i64, tv_nsec: timeout.subsec_nanos() as i64 };
    // An error (EINTR) only ends this wait early: the loop tries accept again.
    let _ = poll(&mut fds, Some(&timeout));
}

/// How long an accept loop waits for a connection before it looks at shutdown requests (and
/// deadlines) again.
pub(crate) const ACCEPT_POLL: Duration = Duration::from_millis(20);
/// The longest pause after repeated accept errors.
const ACCEPT_BACKOFF_MAX: Duration = Duration::from_millis(200);
/// Accept errors logged one by one; then every 1000th.
const ACCEPT_ERRORS_LOGGED: u64 = 10;

pub struct Server {
    shared: Arc<Shared>,
}

impl Server {
    /// Builds the model from `device` over `store`.
    pub fn new(device: SsdConfig, store: Box<dyn Store>, config: ServerConfig) -> io::Result<Server> {
        let page = device.geometry.page_bytes.max(512);
        let sector = device.sector_bytes.max(512) as u32;
        let size_bytes = device.logical_bytes();
        if store.size_bytes() != size_bytes {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("store holds {} bytes, the device {size_bytes}", store.size_bytes()),
            ));
        }
        if config.export_name.len() > EXPORT_NAME_MAX_BYTES {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "export name of {} bytes: the NBD protocol allows at most {EXPORT_NAME_MAX_BYTES}",
                    config.export_name.len()
                ),
            ));
        }
        let mut ssd = Ssd::new(device);
        if let Some(ns) = config.timeseries_interval_ns {
            ssd.enable_timeseries(ns, SimTime::ZERO);
        }
        let page_pool = store.page_pool();
        let mut drive = Drive::new(ssd, store);
        if let Some(out) = config.record {
            drive.record_to(out)?;
        }
        if config.power_loss || config.power_cut_after.is_some() {
            drive.track_power_loss();
        }
        if let Some(n) = config.inject_panic_after {
            drive.inject_panic_after(n);
        }
        let clock = Arc::new(config.clock);
        let power_epoch = Arc::new(AtomicU64::new(0));
        let device =
            Device { drive, epoch: power_epoch.clone(), cut_after: config.power_cut_after, executed: 0 };
        let export = ExportInfo {
            name: config.export_name,
            description: config.description.chars().take(EXPORT_NAME_MAX_BYTES / 4).collect(),
            size_bytes,
            block_min_bytes: sector,
            block_preferred_bytes: page,
            block_max_bytes: config.block_max_bytes / sector * sector,
            read_only: config.read_only,
        };
        Ok(Server {
            shared: Arc::new(Shared {
                device: Mutex::new(Some(device)),
                fault: Mutex::new(None),
                final_stats: Mutex::new(None),
                finished: AtomicBool::new(false),
                page_pool,
                export,
                pace: config.pace,
                clock,
                log: config.log,
                connections_max: config.connections_max.max(1),
                handshake_timeout: config.handshake_timeout,
                handshakes_per_address_max: config.handshakes_per_address_max.max(1),
                io_timeout: config.io_timeout,
                stall_timeout: config.stall_timeout,
                started: Instant::now(),
                shutting_down: AtomicBool::new(false),
                next_connection: AtomicU64::new(1),
                open: Mutex::new(BTreeMap::new()),
                counters: Mutex::new(ConnectionCounters::default()),
                inflight_per_connection_bytes: config.inflight_per_connection_bytes.max(1),
                inflight_total: Arc::new(Budget::new(config.inflight_total_bytes.max(1))),
                power_epoch,
            }),
        })
    }

    pub fn handle(&self) -> ServerHandle {
        ServerHandle { shared: self.shared.clone() }
    }

    pub fn export(&self) -> &ExportInfo {
        &self.shared.export
    }

    /// Accepts connections until [`ServerHandle::shutdown`] (or a model fault), then waits for
    /// every connection. Accept errors never end it.
    pub fn run(&self, listener: Listener) -> io::Result<()> {
        listener.set_nonblocking()?;
        let mut threads: Vec<JoinHandle<()>> = Vec::new();
        // A descriptor kept for the moment there is none left: the pending client is accepted
        // on it and closed, instead of waiting in the backlog while accept fails in a loop.
        let mut reserve = std::fs::File::open("/dev/null").ok();
        let mut backoff = Duration::ZERO;
        while !self.shared.shutting_down.load(Ordering::SeqCst) {
            self.shared.police();
            match listener.accept() {
                Ok((conn, ip, peer)) => {
                    backoff = Duration::ZERO;
                    if reserve.is_none() {
                        reserve = std::fs::File::open("/dev/null").ok();
                    }
                    threads.retain(|t| !t.is_finished());
                    if let Some(t) = self.spawn(conn, ip, peer) {
                        threads.push(t);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::Interrupted => {
                    listener.wait(ACCEPT_POLL);
                }
                Err(e) => {
                    let errors = {
                        let mut c = lock(&self.shared.counters);
                        c.accept_errors += 1;
                        c.accept_errors
                    };
                    if errors <= ACCEPT_ERRORS_LOGGED || errors.is_multiple_of(1000) {
                        eprintln!("trimlab serve: accept failed ({errors} so far): {e}; still serving");
                    }
                    let no_descriptor = [rustix::io::Errno::MFILE, rustix::io::Errno::NFILE]
                        .iter()
                        .any(|errno| e.raw_os_error() == Some(errno.raw_os_error()));
                    if no_descriptor && reserve.take().is_some() {
                        if let Ok((conn, _, peer)) = listener.accept() {
                            self.shared.count(|c| c.refused_no_resources += 1);
                            self.shared.log(0, &peer, "refused: no file descriptor left");
                            drop(conn);
                        }
                        reserve = std::fs::File::open("/dev/null").ok();
                    }
                    if e.kind() != io::ErrorKind::ConnectionAborted {
                        backoff = (backoff * 2).clamp(Duration::from_millis(5), ACCEPT_BACKOFF_MAX);
                        std::thread::sleep(backoff);
                    }
                }
            }
        }
        // Connections finish their last replies; a client that stopped reading them cannot
        // hold the shutdown for more than a few seconds.
        let deadline = Instant::now() + Duration::from_secs(5);
        while threads.iter().any(|t| !t.is_finished()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        for w in lock(&self.shared.open).values() {
            w.cut();
        }
        for t in threads {
            let _ = t.join();
        }
        if let Listener::Unix(_, path) = &listener {
            let _ = std::fs::remove_file(path);
        }
        Ok(())
    }

    /// Whether a new connection from `ip` may take a slot, cutting handshakes that hold the
    /// slots: the oldest handshake from its address when the address has its fill, and the
    /// oldest handshake anywhere when every slot is taken (issue 26: 64 idle handshakes locked
    /// every client out for the 30 s of their deadline). Refused only when every slot is in
    /// transmission.
    fn admit(&self, open: &BTreeMap<u64, Arc<Watch>>, ip: Option<IpAddr>) -> Result<(), usize> {
        let live = || open.values().filter(|w| !w.is_cut());
        let oldest_handshake = |same_address: bool| {
            live()
                .filter(|w| w.in_handshake() && (!same_address || w.ip == ip))
                .min_by_key(|w| w.handshake_started_ns())
                .cloned()
        };
        if live().filter(|w| w.in_handshake() && w.ip == ip).count() >= self.shared.handshakes_per_address_max
        {
            if let Some(w) = oldest_handshake(true) {
                self.shared.cut(&w, Cut::HandshakeEvicted);
            }
        }
        let count = live().count();
        if count >= self.shared.connections_max {
            match oldest_handshake(false) {
                Some(w) => self.shared.cut(&w, Cut::HandshakeEvicted),
                None => return Err(count),
            }
        }
        Ok(())
    }

    fn spawn(&self, conn: Conn, ip: Option<IpAddr>, peer: String) -> Option<JoinHandle<()>> {
        let id = self.shared.next_connection.fetch_add(1, Ordering::SeqCst);
        if let Err(e) = conn.set_nonblocking(false) {
            self.shared.log(id, &peer, &format!("refused: {e}"));
            return None;
        }
        let conn = Arc::new(conn);
        let budget = Arc::new(Budget::new(self.shared.inflight_per_connection_bytes));
        let watch = Arc::new(Watch::new(
            id,
            ip,
            self.shared.started,
            Some(conn.clone()),
            self.shared.handshake_timeout,
            budget,
        ));
        {
            let mut open = lock(&self.shared.open);
            if let Err(count) = self.admit(&open, ip) {
                drop(open);
                self.shared.count(|c| c.refused_too_many += 1);
                self.shared.log(
                    id,
                    &peer,
                    &format!("refused: {count} connections already open (--connections-max)"),
                );
                return None;
            }
            open.insert(id, watch.clone());
        }
        self.shared.count(|c| c.accepted += 1);
        self.shared.log(id, &peer, "connected");
        let shared = self.shared.clone();
        let thread_peer = peer.clone();
        let spawned = std::thread::Builder::new().name(format!("nbd-conn-{id}")).spawn(move || {
            let summary = serve(&shared, &watch, &thread_peer, ConnStream(conn.clone()), ConnStream(conn));
            lock(&shared.open).remove(&id);
            shared.log(id, &thread_peer, &summary);
        });
        match spawned {
            Ok(thread) => Some(thread),
            Err(e) => {
                lock(&self.shared.open).remove(&id);
                self.shared.count(|c| c.refused_no_resources += 1);
                self.shared.log(id, &peer, &format!("refused: cannot start its thread: {e}"));
                None
            }
        }
    }
}

/// The drive and the power-cut bookkeeping that goes with it.
struct Device {
    drive: Drive,
    /// The power epoch, shared with the connections (which read it when they negotiate).
    epoch: Arc<AtomicU64>,
    cut_after: Option<u64>,
    executed: u64,
}

impl Device {
    fn cut(&mut self, now: SimTime) -> Result<PowerCutReport, String> {
        let report = self.drive.power_cut(now);
        self.epoch.fetch_add(1, Ordering::SeqCst);
        report
    }

    /// Runs one request (refused if power was cut since its connection was negotiated), then
    /// cuts power if `--power-cut-after` says this was the last one.
    fn execute(
        &mut self,
        clock: &Clock,
        request: Request,
        buf: &mut Vec<u8>,
        payload: &mut Payload,
        epoch: u64,
    ) -> Result<(SimTime, u32), Refusal> {
        let result = if epoch != self.epoch.load(Ordering::SeqCst) {
            Err(Refusal::new(EIO, "power was cut since this connection was made; reconnect"))
        } else {
            execute(&mut self.drive, clock.now(), request, buf, payload)
        };
        self.executed += 1;
        if self.cut_after == Some(self.executed) {
            if let Err(e) = self.cut(clock.now()) {
                eprintln!("trimlab serve: --power-cut-after: {e}");
            }
        }
        result
    }
}

/// Serves one connection over any byte stream (sockets, or in-memory buffers in the fuzz
/// test). Returns a one-line summary of how it ended.
pub fn serve_stream(server: &Server, reader: impl Read, writer: impl Write + Send + 'static) -> String {
    let shared = &server.shared;
    let id = shared.next_connection.fetch_add(1, Ordering::SeqCst);
    let budget = Arc::new(Budget::new(shared.inflight_per_connection_bytes));
    let watch = Arc::new(Watch::new(id, None, shared.started, None, shared.handshake_timeout, budget));
    serve(shared, &watch, "stream", reader, writer)
}

/// Reads exactly `buf.len()` bytes; `Ok(false)` on a clean EOF before the first byte.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<bool> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) if got == 0 => return Ok(false),
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("peer vanished after {got} of {} bytes", buf.len()),
                ))
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Reads and drops `bytes` bytes, telling `watch` (when given) of the progress.
fn drain(r: &mut impl Read, mut bytes: u64, watch: Option<&Watch>) -> io::Result<()> {
    let mut buf = [0u8; 64 * 1024];
    while bytes > 0 {
        let n = bytes.min(buf.len() as u64) as usize;
        if !read_full(r, &mut buf[..n])? {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "peer vanished inside a payload"));
        }
        if let Some(w) = watch {
            w.progress(Transfer::Payload);
        }
        bytes -= n as u64;
    }
    Ok(())
}

fn serve(
    shared: &Shared,
    watch: &Arc<Watch>,
    peer: &str,
    mut reader: impl Read,
    mut writer: impl Write + Send + 'static,
) -> String {
    let id = watch.id;
    let negotiation = match handshake(shared, watch, peer, &mut reader, &mut writer) {
        Ok(Some(n)) => n,
        Ok(None) => {
            shared.count(|c| c.handshakes_failed += 1);
            return "closed during the handshake".into();
        }
        Err(e) => {
            shared.count(|c| c.handshakes_failed += 1);
            return format!("closed during the handshake: {e}");
        }
    };
    shared.count(|c| c.handshakes_completed += 1);
    shared.log(
        id,
        peer,
        &format!(
            "transmission: {} bytes, flags {:#x}, {} replies",
            shared.export.size_bytes,
            negotiation.transmission_flags(),
            if negotiation.structured_replies() { "structured" } else { "simple" }
        ),
    );
    let limits = Limits {
        size_bytes: shared.export.size_bytes,
        block_min_bytes: shared.export.block_min_bytes,
        block_max_bytes: shared.export.block_max_bytes,
        read_only: shared.export.read_only,
        structured_replies: negotiation.structured_replies(),
        block_status: negotiation.block_status(),
    };
    let mut sink = if shared.pace == Pace::None || matches!(*shared.clock, Clock::Step { .. }) {
        Sink::direct(writer, watch.clone())
    } else {
        match Sink::paced(writer, watch.clone()) {
            Ok(sink) => sink,
            Err(e) => return format!("closed: cannot start its reply writer: {e}"),
        }
    };
    let (summary, clean) = transmission_loop(shared, watch, peer, &mut reader, &mut sink, &limits);
    let flushed = sink.finish();
    let peak = watch.budget.peak();
    shared.count(|c| {
        c.inflight_bytes_peak_connection = c.inflight_bytes_peak_connection.max(peak);
        if clean {
            c.disconnects_clean += 1
        } else {
            c.disconnects_abrupt += 1
        }
    });
    match flushed {
        Ok(()) => summary,
        Err(e) => format!("{summary}; sending the last replies failed: {e}"),
    }
}

/// Option haggling. `Ok(None)`: the session ended (abort, refusal, EOF), already logged.
fn handshake(
    shared: &Shared,
    watch: &Watch,
    peer: &str,
    reader: &mut impl Read,
    writer: &mut impl Write,
) -> io::Result<Option<Negotiation>> {
    let id = watch.id;
    writer.write_all(&handshake::greeting())?;
    writer.flush()?;
    let mut flags = [0u8; 4];
    if !read_full(reader, &mut flags)? {
        return Ok(None);
    }
    let mut negotiation = match Negotiation::new(shared.export.clone(), u32::from_be_bytes(flags)) {
        Ok(n) => n,
        Err(e) => {
            shared.count(|c| c.protocol_violations += 1);
            shared.log(id, peer, &format!("refused: {e}"));
            return Ok(None);
        }
    };
    loop {
        let mut header = [0u8; OPTION_HEADER_BYTES];
        if !read_full(reader, &mut header)? {
            return Ok(None);
        }
        let (option, length) = match handshake::parse_option_header(&header) {
            Ok(x) => x,
            Err(e) => {
                shared.count(|c| c.protocol_violations += 1);
                shared.log(id, peer, &format!("refused: {e}; disconnecting"));
                return Ok(None);
            }
        };
        let Some(outcome) = option_outcome(shared, id, peer, reader, &mut negotiation, option, length)?
        else {
            return Ok(None);
        };
        if let Some(why) = &outcome.refused {
            shared.count(|c| c.options_refused += 1);
            shared.log(id, peer, &format!("refused option: {why}"));
        }
        if outcome.next == Next::Transmission {
            // In transmission before the client can know it: once it reads this reply it may
            // open another connection, and admission must count this one as transmitting,
            // not as a handshake it may evict.
            watch.negotiated();
        }
        writer.write_all(&outcome.reply)?;
        writer.flush()?;
        match outcome.next {
            Next::Options => {}
            Next::Transmission => return Ok(Some(negotiation)),
            Next::Close => return Ok(None),
        }
    }
}

/// The reply to one option and what comes after it; `None` when the client is disconnected
/// (a payload too large to drain, or the peer gone mid-option).
fn option_outcome(
    shared: &Shared,
    id: u64,
    peer: &str,
    reader: &mut impl Read,
    negotiation: &mut Negotiation,
    option: u32,
    length: u32,
) -> io::Result<Option<handshake::OptionOutcome>> {
    Ok(Some(if shared.shutting_down.load(Ordering::SeqCst) && option != OPT_ABORT {
        drain(reader, length as u64, None)?;
        let mut reply = Vec::new();
        handshake::option_reply(option, REP_ERR_SHUTDOWN, b"server is shutting down", &mut reply);
        handshake::OptionOutcome { reply, next: Next::Options, refused: Some("shutting down".into()) }
    } else {
        match handshake::payload_policy(length) {
            PayloadPolicy::Read => {
                let mut data = vec![0u8; length as usize];
                if !read_full(reader, &mut data)? && length > 0 {
                    return Ok(None);
                }
                negotiation.handle(option, &data)
            }
            PayloadPolicy::DrainAndRefuse => {
                drain(reader, length as u64, None)?;
                negotiation.too_big(option, length)
            }
            PayloadPolicy::Disconnect => {
                shared.count(|c| c.protocol_violations += 1);
                shared.log(
                    id,
                    peer,
                    &format!("refused: {} with a {length}-byte payload; disconnecting", option_name(option)),
                );
                return Ok(None);
            }
        }
    }))
}

/// Offset in the reply buffer where a READ's data starts: room for the longest header.
const DATA_AT: usize = 28;
/// Extents in one BLOCK_STATUS reply (the protocol lets the server describe less than asked).
const BLOCK_STATUS_EXTENTS_MAX: usize = 1024;

/// What a request's reply holds until it is written: its data (a READ's, a BLOCK_STATUS's
/// extents at most), its header, and what holding it costs.
fn reply_charge(checked: &Result<Request, Refusal>) -> u64 {
    let data = match checked {
        Ok(Request::Read { length, .. }) => *length as u64,
        Ok(Request::BlockStatus { .. }) => 4 + 8 * BLOCK_STATUS_EXTENTS_MAX as u64,
        _ => 0,
    };
    data + DATA_AT as u64 + REPLY_HOLD_BYTES
}

/// Charges a WRITE's payload to the server-wide budget window by window as it arrives, and
/// tells the watch of its progress.
struct PayloadHooks<'a, W: Write + Send + 'static> {
    shared: &'a Shared,
    watch: &'a Watch,
    sink: &'a mut Sink<W>,
    charge: &'a mut Charge,
}

impl<W: Write + Send + 'static> ReceiveHooks for PayloadHooks<'_, W> {
    fn window(&mut self, bytes: u64, first: bool) -> io::Result<()> {
        let total = &self.shared.inflight_total;
        if total.try_take(bytes) {
            self.charge.add_total(bytes, None);
            return Ok(());
        }
        // It waits: the held replies go out first (their charges may be what it waits for),
        // and time spent waiting for budget does not count against the payload's deadline.
        self.sink.release()?;
        self.watch.end(Transfer::Payload);
        let (stop, id) = (&self.shared.shutting_down, self.watch.id);
        let mut relieve = || self.shared.relieve_pressure();
        let got = if first {
            total.take(bytes, stop, &mut relieve)
        } else {
            total.take_more(bytes, id, stop, &mut relieve)
        };
        self.watch.begin(Transfer::Payload);
        if !got {
            return Err(io::Error::new(io::ErrorKind::Interrupted, "the server is shutting down"));
        }
        self.charge.add_total(bytes, (!first).then_some(id));
        Ok(())
    }

    fn progress(&mut self) {
        self.watch.progress(Transfer::Payload);
    }
}

/// The transmission phase. Returns a summary and whether the client ended it with DISC.
/// Why a connection's transmission phase ended, and whether the client said goodbye
/// (NBD_CMD_DISC).
type Ending = (String, bool);

/// One connection's transmission phase: the request it reads, the buffers it reuses and what
/// it has counted. Each step returns `Err(Ending)` when the connection is over.
struct Transmission<'a, W: Write + Send + 'static, R: Read> {
    shared: &'a Shared,
    watch: &'a Watch,
    peer: &'a str,
    reader: &'a mut R,
    sink: &'a mut Sink<W>,
    limits: &'a Limits,
    buf: Vec<u8>,
    payload: Payload,
    /// The start of the next request's header, when it arrived with a WRITE's payload (one
    /// `recv` per request saved under a client that keeps requests queued).
    next_header: [u8; REQUEST_HEADER_BYTES],
    carried: usize,
    /// The power epoch the connection was made in: after a power cut its requests are refused.
    epoch: u64,
    requests: u64,
    refusals: u64,
}

fn transmission_loop<W: Write + Send + 'static>(
    shared: &Shared,
    watch: &Watch,
    peer: &str,
    reader: &mut impl Read,
    sink: &mut Sink<W>,
    limits: &Limits,
) -> Ending {
    let mut connection = Transmission {
        shared,
        watch,
        peer,
        reader,
        sink,
        limits,
        buf: Vec::new(),
        payload: Payload::default(),
        next_header: [0u8; REQUEST_HEADER_BYTES],
        carried: 0,
        epoch: shared.power_epoch.load(Ordering::SeqCst),
        requests: 0,
        refusals: 0,
    };
    loop {
        if let Err(ending) = connection.serve_one() {
            return ending;
        }
    }
}

impl<W: Write + Send + 'static, R: Read> Transmission<'_, W, R> {
    fn end(&self, how: &str, clean: bool) -> Ending {
        (format!("{how} after {} requests ({} refused)", self.requests, self.refusals), clean)
    }

    fn unanswered(&self, e: io::Error) -> Ending {
        self.end(&format!("client vanished before its reply ({e})"), false)
    }

    /// Reads, checks, executes and answers one request.
    fn serve_one(&mut self) -> Result<(), Ending> {
        let header = self.read_header()?;
        self.requests += 1;
        let mut checked = request::validate(&header, self.limits);
        // The reply is charged now, to both budgets, until it is written; a client that
        // leaves replies unread stops here, and its requests stay unread. A WRITE's payload is
        // charged to the connection now and server-wide as it arrives (PayloadHooks).
        let payload_bytes = header.payload_bytes() as usize;
        let reply_bytes = reply_charge(&checked);
        let connection_bytes = reply_bytes + if checked.is_ok() { payload_bytes as u64 } else { 0 };
        let budget = &self.watch.budget;
        match take_budgets(self.shared, budget, connection_bytes, reply_bytes, self.sink) {
            Ok(true) => {}
            Ok(false) => return Err(self.end("closed by server shutdown", false)),
            Err(e) => return Err(self.unanswered(e)),
        }
        let inflight = self.shared.inflight_total.clone();
        let mut charge = Charge::new(budget.clone(), inflight, connection_bytes, reply_bytes);
        if payload_bytes > 0 {
            self.take_payload(&header, checked.is_ok(), payload_bytes, &mut charge)?;
        }
        if let Ok(Request::Disconnect) = checked {
            return Err(self.end("clean disconnect (NBD_CMD_DISC)", true));
        }
        let mut fault = self.screen(&mut checked);
        let outcome = self.execute(checked, &mut fault)?;
        // The payload's pages are in the store now (or dropped): only the reply stays held.
        charge.shrink_to(reply_bytes, reply_bytes);
        self.reply(&header, outcome, charge, fault)
    }

    /// The next request's header. A clean end is one before the header's first byte, which
    /// may have come with the previous payload.
    fn read_header(&mut self) -> Result<RequestHeader, Ending> {
        let carried = std::mem::take(&mut self.carried);
        if carried < REQUEST_HEADER_BYTES {
            if let Err(e) = self.sink.release() {
                return Err(self.unanswered(e));
            }
        }
        let mut raw = [0u8; REQUEST_HEADER_BYTES];
        raw[..carried].copy_from_slice(&self.next_header[..carried]);
        let header_read = read_full(self.reader, &mut raw[carried..]).and_then(|full| {
            if full || carried == 0 {
                Ok(full)
            } else {
                Err(io::Error::new(io::ErrorKind::UnexpectedEof, "peer vanished inside a request header"))
            }
        });
        match header_read {
            Ok(true) => {}
            Ok(false) if self.shared.shutting_down.load(Ordering::SeqCst) => {
                return Err(self.end("closed by server shutdown", false))
            }
            Ok(false) => return Err(self.end("client hung up without NBD_CMD_DISC", false)),
            Err(e) => return Err(self.end(&format!("client vanished mid-request ({e})"), false)),
        }
        RequestHeader::parse(&raw).map_err(|e| {
            self.shared.count(|c| c.protocol_violations += 1);
            self.end(&format!("disconnected: {e}"), false)
        })
    }

    /// Receives a WRITE's payload into `payload` (or drains a refused one, up to a limit).
    fn take_payload(
        &mut self,
        header: &RequestHeader,
        accepted: bool,
        payload_bytes: usize,
        charge: &mut Charge,
    ) -> Result<(), Ending> {
        let (shared, watch) = (self.shared, self.watch);
        watch.begin(Transfer::Payload);
        let result = if accepted {
            if let Some(pool) = &shared.page_pool {
                // Pages of a payload the drive refused before the store took them.
                pool.give(std::mem::take(&mut self.payload.pages));
            }
            let lead = std::mem::take(&mut self.payload.lead);
            let mut hooks = PayloadHooks { shared, watch, sink: &mut *self.sink, charge };
            Payload::receive(
                self.reader,
                header.offset,
                payload_bytes,
                shared.page_pool.as_deref(),
                lead,
                &mut self.next_header,
                &mut hooks,
            )
            .map(|(received, spilled)| {
                self.payload = received;
                self.carried = spilled;
            })
        } else if header.length > WRITE_DRAIN_MAX_BYTES {
            shared.count(|c| c.protocol_violations += 1);
            return Err(self.end(&format!("disconnected: WRITE payload of {} bytes", header.length), false));
        } else {
            drain(self.reader, payload_bytes as u64, Some(watch))
        };
        watch.end(Transfer::Payload);
        // On an error nothing of this request was applied or acknowledged.
        result.map_err(|e| self.end(&format!("WRITE payload not received ({e})"), false))
    }

    /// Refuses the request when the model failed, the server is stopping or power was cut
    /// since the connection was made. After a model fault every request gets EIO, and the
    /// connection ends with its reply: the fault is returned.
    fn screen(&self, checked: &mut Result<Request, Refusal>) -> Option<String> {
        let shared = self.shared;
        let fault = shared.fault();
        if let Some(f) = &fault {
            *checked =
                Err(Refusal::new(EIO, format!("the device model failed ({f}); the export is stopping")));
        } else if shared.shutting_down.load(Ordering::SeqCst) {
            *checked = Err(Refusal::new(ESHUTDOWN, "server is shutting down"));
        } else if checked.is_ok() && shared.power_epoch.load(Ordering::SeqCst) != self.epoch {
            shared.count(|c| c.refused_after_power_cut += 1);
            *checked = Err(Refusal::new(EIO, "power was cut since this connection was made; reconnect"));
        }
        fault
    }

    /// Runs an accepted request on the drive: its simulated completion and data bytes.
    fn execute(
        &mut self,
        checked: Result<Request, Refusal>,
        fault: &mut Option<String>,
    ) -> Result<Result<(SimTime, u32), Refusal>, Ending> {
        let request = match checked {
            Ok(request) => request,
            Err(refusal) => return Ok(Err(refusal)),
        };
        let (buf, payload, epoch) = (&mut self.buf, &mut self.payload, self.epoch);
        match self.shared.with_device(|d, clock| d.execute(clock, request, buf, payload, epoch)) {
            Ok(result) => Ok(result),
            Err(Stopped::Finished) => Err(self.end("device stopped", false)),
            Err(Stopped::Fault(f)) => {
                let refusal =
                    Refusal::new(EIO, format!("the device model failed ({f}); the export is stopping"));
                *fault = Some(f);
                Ok(Err(refusal))
            }
        }
    }

    /// Writes the reply (held until its simulated completion when pacing); after a model fault
    /// the connection ends once it is written.
    fn reply(
        &mut self,
        header: &RequestHeader,
        outcome: Result<(SimTime, u32), Refusal>,
        charge: Charge,
        fault: Option<String>,
    ) -> Result<(), Ending> {
        let is_read = header.command == CMD_READ;
        let has_data = is_read || header.command == CMD_BLOCK_STATUS;
        let (due, head_at, end) = match &outcome {
            Ok((done, data_bytes)) => {
                let at = self.reply_head(header, *data_bytes);
                let end = if has_data { DATA_AT + *data_bytes as usize } else { DATA_AT };
                (self.shared.clock.wall_of(*done), at, end)
            }
            Err(refusal) => {
                self.refuse(header, refusal);
                (None, 0, self.buf.len())
            }
        };
        let next_in_hand = self.carried == REQUEST_HEADER_BYTES && fault.is_none();
        if let Err(e) = self.sink.send(due, &mut self.buf, head_at..end, charge, next_in_hand) {
            return Err(self.unanswered(e));
        }
        if let Some(f) = fault {
            let how = format!("answered EIO and closed: the device model failed ({f})");
            return Err(match self.sink.release() {
                Ok(()) => self.end(&how, false),
                Err(e) => self.unanswered(e),
            });
        }
        if self.buf.capacity() > KEEP_BUFFER_BYTES {
            // A large request's buffer goes back: idle connections should not hold 32 MiB each.
            self.buf = Vec::new();
        }
        if self.payload.lead.capacity() > KEEP_BUFFER_BYTES {
            self.payload = Payload::default();
        }
        Ok(())
    }

    /// Writes a success reply's header just before the data at `DATA_AT`; where it starts.
    fn reply_head(&mut self, header: &RequestHeader, data_bytes: u32) -> usize {
        let mut head = Vec::with_capacity(DATA_AT);
        if header.command == CMD_BLOCK_STATUS {
            reply::block_status_chunk(header.handle, data_bytes, &mut head);
        } else {
            let structured = self.limits.structured_replies;
            let is_read = header.command == CMD_READ;
            reply::header(structured, is_read, header.handle, header.offset, Ok(data_bytes), &mut head);
        }
        let at = DATA_AT - head.len();
        self.buf[at..DATA_AT].copy_from_slice(&head);
        at
    }

    /// Counts and logs a refusal and writes its error reply into `buf`.
    fn refuse(&mut self, header: &RequestHeader, refusal: &Refusal) {
        self.refusals += 1;
        let _ = self.shared.inspect_device(|d, _| d.drive.count_refusal());
        if self.refusals <= REFUSALS_LOGGED_MAX {
            let what = format!(
                "refused {} (handle {:#x}): {} {}",
                command_name(header.command),
                header.handle,
                errno_name(refusal.errno),
                refusal.message
            );
            self.shared.log(self.watch.id, self.peer, &what);
        }
        self.buf.clear();
        let error = Err((refusal.errno, refusal.message.as_str()));
        let is_read = header.command == CMD_READ;
        let structured = self.limits.structured_replies;
        reply::header(structured, is_read, header.handle, header.offset, error, &mut self.buf);
    }
}

/// Takes `connection_bytes` of the connection's budget and `total_bytes` of the server-wide
/// one. Held replies are written before either is waited for: their charges may be what it
/// waits for. While it waits for the server-wide budget, connections that hold budget without
/// progress are cut. False if the server began shutting down while waiting.
fn take_budgets<W: Write + Send + 'static>(
    shared: &Shared,
    connection: &Budget,
    connection_bytes: u64,
    total_bytes: u64,
    sink: &mut Sink<W>,
) -> io::Result<bool> {
    let (total, stop) = (&shared.inflight_total, &shared.shutting_down);
    if !connection.try_take(connection_bytes) {
        sink.release()?;
        if !connection.take(connection_bytes, stop, &mut || ()) {
            return Ok(false);
        }
    }
    if !total.try_take(total_bytes) {
        let released = sink.release();
        if released.is_err() || !total.take(total_bytes, stop, &mut || shared.relieve_pressure()) {
            connection.give(connection_bytes);
            return released.map(|()| false);
        }
    }
    Ok(true)
}

/// Runs a valid request against the drive. WRITE data arrives in `payload` (its pages move
/// into the store); on success a READ's data is left in `buf[DATA_AT..]`, with room before it
/// for the reply header. Returns the model's completion and the number of data bytes to send.
fn execute(
    d: &mut Drive,
    now: SimTime,
    req: Request,
    buf: &mut Vec<u8>,
    payload: &mut Payload,
) -> Result<(SimTime, u32), Refusal> {
    let done = match req {
        Request::Read { offset, length } => {
            buf.resize(DATA_AT + length as usize, 0);
            let done = d.read(now, offset, &mut buf[DATA_AT..])?;
            return Ok((done, length));
        }
        // A zero-length WRITE has no payload (the one at hand is an earlier request's).
        Request::Write { offset, length: 0, fua } => d.write(now, offset, &[], fua)?,
        Request::Write { offset, length, fua } => {
            debug_assert_eq!((payload.offset, payload.len()), (offset, length as u64));
            d.write_payload(now, payload, fua)?
        }
        Request::Flush => d.flush(now)?,
        Request::Trim { offset, length, fua } => d.trim(now, offset, length as u64, fua)?,
        Request::WriteZeroes { offset, length, no_hole, fua } => {
            d.write_zeroes(now, offset, length as u64, no_hole, fua)?
        }
        Request::Cache { .. } => d.cache(now),
        Request::BlockStatus { offset, length, one } => {
            let max = if one { 1 } else { BLOCK_STATUS_EXTENTS_MAX };
            let (done, extents) = d.block_status(now, offset, length as u64, max)?;
            buf.clear();
            buf.resize(DATA_AT, 0);
            buf.extend_from_slice(&META_BASE_ALLOCATION_ID.to_be_bytes());
            for (bytes, flags) in extents {
                // Extents lie within the request, whose length is a u32.
                buf.extend_from_slice(&(bytes as u32).to_be_bytes());
                buf.extend_from_slice(&flags.to_be_bytes());
            }
            return Ok((done, (buf.len() - DATA_AT) as u32));
        }
        Request::Disconnect => unreachable!("execute: DISC never reaches the device"),
    };
    buf.resize(DATA_AT.max(buf.len()), 0);
    Ok((done, 0))
}
