//! The NBD server: listeners, one thread per connection, the wall clock, pacing and logs. The
//! only part of trimlab-nbd that does I/O or reads a clock.
//!
//! Threads. One thread per connection parses requests and receives their data; the [`Drive`]
//! sits behind one lock, and the connection's thread runs each request on it while holding the
//! lock, in the order the lock is taken. Several connections therefore share one device, and a
//! command is applied whole before the next one starts. (Until issue 15 a device thread owned
//! the drive and every request was handed to it and back over channels: two thread wake-ups
//! per request, a third of the server's CPU time under nbdcopy.) A panic inside the model
//! poisons the lock, and every connection then ends with "device stopped" instead of waiting.
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
//! Limits (issue 13). A handshake has one deadline for the whole negotiation, enforced by the
//! accept loop (a per-read timeout let a client trickling a byte at a time stay forever). Every
//! request holds a charge of its data bytes from the moment it is read until its reply has been
//! written, against a per-connection and a server-wide budget; a connection that cannot get its
//! charge stops reading requests, so a client that does not read its replies stalls only itself.
//!
//! Power cuts ([`ServerHandle::power_cut`], `--power-cut-after`): under the drive's lock, the
//! drive's power is cut between two commands and starts a new power epoch; requests from connections
//! negotiated before it get `EIO` until the client reconnects, as from a drive that went away.

use crate::drive::{Drive, DriveStats, PowerCutReport};
use crate::handshake::{self, ExportInfo, Negotiation, Next, PayloadPolicy};
use crate::payload::{PagePool, Payload};
use crate::reply;
use crate::request::{self, Limits, Refusal, Request, RequestHeader, WRITE_DRAIN_MAX_BYTES};
use crate::store::Store;
use crate::wire::*;
use rustix::event::{poll, PollFd, PollFlags, Timespec};
use std::collections::{BTreeMap, BinaryHeap};
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
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
    /// Print connection and refusal logs to stderr.
    pub log: bool,
    /// Write every model command here as fio iolog v3 (`trimlab serve --record`).
    pub record: Option<Box<dyn Write + Send>>,
    /// Sample the device's time series this often (simulated ns); handed back at finish.
    pub timeseries_interval_ns: Option<u64>,
    /// Export read-only: WRITE, TRIM and WRITE_ZEROES get EPERM.
    pub read_only: bool,
    /// Data bytes of requests read but not yet answered, per connection and in all; a request
    /// larger than a budget still runs when nothing else holds it.
    pub inflight_per_connection_bytes: u64,
    pub inflight_total_bytes: u64,
    /// Keep what a power cut needs ([`ServerHandle::power_cut`] works without it, but then
    /// only the model loses state, not the bytes).
    pub power_loss: bool,
    /// Cut power once, right after this many commands have been executed.
    pub power_cut_after: Option<u64>,
}

/// Defaults of the limits (docs/serve.md lists them).
pub const INFLIGHT_PER_CONNECTION_DEFAULT: u64 = 64 << 20;
pub const INFLIGHT_TOTAL_DEFAULT: u64 = 512 << 20;
/// A reply write may block this long on a client that does not read before the connection ends.
pub const REPLY_WRITE_TIMEOUT: Duration = Duration::from_secs(60);
/// A connection's request buffer is given back after a request larger than this.
const KEEP_BUFFER_BYTES: usize = 1 << 20;

/// Bytes of a shared budget in use; takers wait until theirs fits.
struct Budget {
    /// Bytes in use, and how many takers wait.
    state: Mutex<(u64, usize)>,
    freed: Condvar,
    max: u64,
    peak: AtomicU64,
}

impl Budget {
    fn new(max: u64) -> Budget {
        Budget { state: Mutex::new((0, 0)), freed: Condvar::new(), max, peak: AtomicU64::new(0) }
    }

    /// Takes `n` bytes if they fit now.
    fn try_take(&self, n: u64) -> bool {
        let mut state = self.state.lock().expect("budget lock");
        self.add_if_fits(&mut state, n)
    }

    /// Takes `n` bytes, waiting while they do not fit. False if `stop` was raised while
    /// waiting.
    fn take(&self, n: u64, stop: &AtomicBool) -> bool {
        let mut state = self.state.lock().expect("budget lock");
        while !self.add_if_fits(&mut state, n) {
            if stop.load(Ordering::SeqCst) {
                return false;
            }
            state.1 += 1;
            state = self.freed.wait_timeout(state, Duration::from_millis(50)).expect("budget lock").0;
            state.1 -= 1;
        }
        true
    }

    /// One oversized charge fits an empty budget, so no request waits forever.
    fn add_if_fits(&self, state: &mut (u64, usize), n: u64) -> bool {
        if state.0 > 0 && state.0 + n > self.max {
            return false;
        }
        state.0 += n;
        self.peak.fetch_max(state.0, Ordering::Relaxed);
        true
    }

    fn give(&self, n: u64) {
        let mut state = self.state.lock().expect("budget lock");
        state.0 -= n.min(state.0);
        // A notify is a system call even with nobody waiting (two per request, issue 15).
        if state.1 > 0 {
            self.freed.notify_all();
        }
    }
}

/// A request's hold on both budgets, released when its reply has been written (or dropped).
struct Charge {
    bytes: u64,
    connection: Arc<Budget>,
    total: Arc<Budget>,
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.connection.give(self.bytes);
        self.total.give(self.bytes);
    }
}

/// Refusals logged per connection; later ones are only counted (a fuzzing peer would flood).
const REFUSALS_LOGGED_MAX: u64 = 16;

enum StreamRef {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl StreamRef {
    fn shutdown(&self, how: Shutdown) {
        let _ = match self {
            StreamRef::Tcp(s) => s.shutdown(how),
            StreamRef::Unix(s) => s.shutdown(how),
        };
    }

    fn set_read_timeout(&self, timeout: Option<Duration>) {
        let _ = match self {
            StreamRef::Tcp(s) => s.set_read_timeout(timeout),
            StreamRef::Unix(s) => s.set_read_timeout(timeout),
        };
    }

    fn set_write_timeout(&self, timeout: Option<Duration>) {
        let _ = match self {
            StreamRef::Tcp(s) => s.set_write_timeout(timeout),
            StreamRef::Unix(s) => s.set_write_timeout(timeout),
        };
    }

    fn try_clone(&self) -> io::Result<StreamRef> {
        Ok(match self {
            StreamRef::Tcp(s) => StreamRef::Tcp(s.try_clone()?),
            StreamRef::Unix(s) => StreamRef::Unix(s.try_clone()?),
        })
    }
}

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
    /// The most data bytes held by requests at once, server-wide and on any one connection.
    pub inflight_bytes_peak: u64,
    pub inflight_bytes_peak_connection: u64,
    /// Requests refused because power was cut after their connection was negotiated.
    pub refused_after_power_cut: u64,
}

struct Shared {
    /// `None` once finished.
    device: Mutex<Option<Device>>,
    /// Where WRITE payloads are received, when the store takes whole pages.
    page_pool: Option<Arc<PagePool>>,
    export: ExportInfo,
    pace: Pace,
    clock: Arc<Clock>,
    log: bool,
    connections_max: usize,
    handshake_timeout: Duration,
    shutting_down: AtomicBool,
    next_connection: AtomicU64,
    open: Mutex<BTreeMap<u64, StreamRef>>,
    /// Connections still negotiating, with their deadline.
    negotiating: Mutex<BTreeMap<u64, Instant>>,
    counters: Mutex<ConnectionCounters>,
    inflight_per_connection_bytes: u64,
    inflight_total: Arc<Budget>,
    /// Bumped at each power cut.
    power_epoch: Arc<AtomicU64>,
}

impl Shared {
    /// Runs `f` on the device under the drive's lock (the clock is read there, so arrivals
    /// never go backwards); `None` once the drive is finished or a panic in the model poisoned
    /// the lock.
    fn with_device<T>(&self, f: impl FnOnce(&mut Device, &Clock) -> T) -> Option<T> {
        let Ok(mut device) = self.device.lock() else { return None };
        Some(f(device.as_mut()?, &self.clock))
    }

    fn count(&self, f: impl FnOnce(&mut ConnectionCounters)) {
        f(&mut self.counters.lock().expect("counters lock"));
    }

    fn log(&self, id: u64, peer: &str, message: &str) {
        if self.log {
            eprintln!("trimlab serve: conn {id} {peer}: {message}");
        }
    }
}

/// A cheap handle for the CLI: stats, phases and shutdown from other threads.
#[derive(Clone)]
pub struct ServerHandle {
    shared: Arc<Shared>,
}

impl ServerHandle {
    /// The live report (`None` after [`ServerHandle::finish`]).
    pub fn stats(&self) -> Option<DriveStats> {
        self.shared.with_device(|d, clock| d.drive.stats(clock.now()))
    }

    pub fn connections(&self) -> ConnectionCounters {
        let mut c = self.shared.counters.lock().expect("counters lock").clone();
        c.inflight_bytes_peak = self.shared.inflight_total.peak.load(Ordering::Relaxed);
        c
    }

    pub fn open_connections(&self) -> usize {
        self.shared.open.lock().expect("open lock").len()
    }

    /// Ends the current measurement phase and starts `name` (refused past the phase limit).
    pub fn start_phase(&self, name: &str) -> Result<(), String> {
        self.shared
            .with_device(|d, clock| d.drive.start_phase(name, clock.now()))
            .unwrap_or_else(|| Err("the server has stopped".into()))
    }

    /// Cuts the drive's power now (between two commands): see the module comment.
    pub fn power_cut(&self) -> Result<PowerCutReport, String> {
        self.shared
            .with_device(|d, clock| d.cut(clock.now()))
            .unwrap_or_else(|| Err("the server has stopped".into()))
    }

    /// Stops accepting, ends every connection's reading side (replies already computed are
    /// still sent) and lets [`Server::run`] return.
    pub fn shutdown(&self) {
        self.shared.shutting_down.store(true, Ordering::SeqCst);
        for s in self.shared.open.lock().expect("open lock").values() {
            s.shutdown(Shutdown::Read);
        }
    }

    pub fn is_shutting_down(&self) -> bool {
        self.shared.shutting_down.load(Ordering::SeqCst)
    }

    /// Gives the model the final idle period, checks its invariants, returns the report and
    /// drops the drive (call after [`Server::run`] returned). `None` if already done.
    pub fn finish(&self) -> Option<(DriveStats, Result<(), String>)> {
        let mut device = self.shared.device.lock().ok()?;
        let drive = &mut device.as_mut()?.drive;
        let now = self.shared.clock.now();
        drive.idle_until(now);
        let check = drive.check().and(drive.finish_recording().map_err(|e| format!("--record: {e}")));
        let mut stats = drive.stats(now);
        stats.series = Some(drive.finish_series(now));
        *device = None;
        Some((stats, check))
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

    fn wait(&self, timeout: Duration) {
        match self {
            Listener::Tcp(l) => wait_for_connection(l, timeout),
            Listener::Unix(l, _) => wait_for_connection(l, timeout),
        }
    }
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
/// handshake deadlines) again.
pub(crate) const ACCEPT_POLL: Duration = Duration::from_millis(20);

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
        let clock = Arc::new(config.clock);
        let power_epoch = Arc::new(AtomicU64::new(0));
        let device =
            Device { drive, epoch: power_epoch.clone(), cut_after: config.power_cut_after, executed: 0 };
        let export = ExportInfo {
            name: config.export_name,
            description: config.description,
            size_bytes,
            block_min_bytes: sector,
            block_preferred_bytes: page,
            block_max_bytes: config.block_max_bytes / sector * sector,
            read_only: config.read_only,
        };
        Ok(Server {
            shared: Arc::new(Shared {
                device: Mutex::new(Some(device)),
                page_pool,
                export,
                pace: config.pace,
                clock,
                log: config.log,
                connections_max: config.connections_max,
                handshake_timeout: config.handshake_timeout,
                shutting_down: AtomicBool::new(false),
                next_connection: AtomicU64::new(1),
                open: Mutex::new(BTreeMap::new()),
                negotiating: Mutex::new(BTreeMap::new()),
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

    /// Accepts connections until [`ServerHandle::shutdown`], then waits for every connection.
    pub fn run(&self, listener: Listener) -> io::Result<()> {
        match &listener {
            Listener::Tcp(l) => l.set_nonblocking(true)?,
            Listener::Unix(l, _) => l.set_nonblocking(true)?,
        }
        let mut threads: Vec<JoinHandle<()>> = Vec::new();
        while !self.shared.shutting_down.load(Ordering::SeqCst) {
            self.cut_late_handshakes();
            let accepted = match &listener {
                Listener::Tcp(l) => l.accept().map(|(s, a)| {
                    let _ = s.set_nodelay(true);
                    (StreamRef::Tcp(s), a.to_string())
                }),
                Listener::Unix(l, p) => {
                    l.accept().map(|(s, _)| (StreamRef::Unix(s), format!("unix:{}", p.display())))
                }
            };
            match accepted {
                Ok((stream, peer)) => {
                    threads.retain(|t| !t.is_finished());
                    if let Some(t) = self.spawn(stream, peer)? {
                        threads.push(t);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::Interrupted => {
                    listener.wait(ACCEPT_POLL);
                }
                Err(e) => {
                    eprintln!("trimlab serve: accept failed: {e}");
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
        // Connections finish their last replies; a client that stopped reading them cannot
        // hold the shutdown for more than a few seconds.
        let deadline = Instant::now() + Duration::from_secs(5);
        while threads.iter().any(|t| !t.is_finished()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        for s in self.shared.open.lock().expect("open lock").values() {
            s.shutdown(Shutdown::Both);
        }
        for t in threads {
            let _ = t.join();
        }
        if let Listener::Unix(_, path) = &listener {
            let _ = std::fs::remove_file(path);
        }
        Ok(())
    }

    /// Ends every connection whose handshake has outlived its deadline: the deadline is for
    /// the whole negotiation, so trickling bytes does not extend it.
    fn cut_late_handshakes(&self) {
        let now = Instant::now();
        let late: Vec<u64> = {
            let mut negotiating = self.shared.negotiating.lock().expect("negotiating lock");
            let late: Vec<u64> = negotiating.iter().filter(|(_, &d)| d <= now).map(|(&id, _)| id).collect();
            for id in &late {
                negotiating.remove(id);
            }
            late
        };
        if late.is_empty() {
            return;
        }
        let open = self.shared.open.lock().expect("open lock");
        for id in late {
            if let Some(s) = open.get(&id) {
                s.shutdown(Shutdown::Both);
                self.shared.count(|c| c.handshakes_timed_out += 1);
                self.shared.log(id, "", "handshake deadline passed; disconnecting");
            }
        }
    }

    fn spawn(&self, stream: StreamRef, peer: String) -> io::Result<Option<JoinHandle<()>>> {
        let id = self.shared.next_connection.fetch_add(1, Ordering::SeqCst);
        let open = self.shared.open.lock().expect("open lock").len();
        if open >= self.shared.connections_max {
            self.shared.count(|c| c.refused_too_many += 1);
            self.shared.log(
                id,
                &peer,
                &format!("refused: {open} connections already open (--connections-max)"),
            );
            return Ok(None);
        }
        self.shared.count(|c| c.accepted += 1);
        self.shared.log(id, &peer, "connected");
        let (reader, writer): (Box<dyn Read + Send>, Box<dyn Write + Send>) = match &stream {
            StreamRef::Tcp(s) => {
                s.set_nonblocking(false)?;
                (Box::new(s.try_clone()?), Box::new(s.try_clone()?))
            }
            StreamRef::Unix(s) => {
                s.set_nonblocking(false)?;
                (Box::new(s.try_clone()?), Box::new(s.try_clone()?))
            }
        };
        let control = stream.try_clone()?;
        control.set_read_timeout(Some(self.shared.handshake_timeout));
        // A client that stops reading replies must not pin the thread forever.
        control.set_write_timeout(Some(REPLY_WRITE_TIMEOUT));
        self.shared.open.lock().expect("open lock").insert(id, stream);
        self.shared
            .negotiating
            .lock()
            .expect("negotiating lock")
            .insert(id, Instant::now() + self.shared.handshake_timeout);
        let shared = self.shared.clone();
        let thread = std::thread::Builder::new().name(format!("nbd-conn-{id}")).spawn(move || {
            let in_transmission = || {
                shared.negotiating.lock().expect("negotiating lock").remove(&id);
                control.set_read_timeout(None);
            };
            let summary = serve(&shared, id, &peer, reader, writer, &in_transmission);
            shared.negotiating.lock().expect("negotiating lock").remove(&id);
            shared.open.lock().expect("open lock").remove(&id);
            shared.log(id, &peer, &summary);
        })?;
        Ok(Some(thread))
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
    let id = server.shared.next_connection.fetch_add(1, Ordering::SeqCst);
    serve(&server.shared, id, "stream", reader, writer, &|| ())
}

/// How replies reach the client: written as soon as the connection has nothing else ready to
/// read, or held until their simulated completion. Each reply carries its request's
/// [`Charge`], released once the reply is written.
enum Sink<W: Write + Send + 'static> {
    /// Replies without data wait in `held` while the next request is already in hand, up to
    /// [`REPLIES_HELD_MAX`], and go out in one write: under a client that keeps requests queued
    /// (nbdcopy) that is one `send` per several requests instead of one each (4102 per GiB
    /// before, 925-1184 after; server CPU 0.33 -> 0.29-0.30 s per GiB). The bytes on the wire
    /// and their order are the same as when each reply is written at once.
    Direct {
        writer: W,
        held: Vec<u8>,
        charges: Vec<Charge>,
    },
    Paced {
        queue: mpsc::Sender<(Instant, Vec<u8>, Charge)>,
        thread: JoinHandle<io::Result<()>>,
    },
}

/// Replies held at most before they are written together (see [`Sink::Direct`]).
const REPLIES_HELD_MAX: usize = 16;
/// The largest reply that is held: a reply header without data (simple 16, structured 20).
const HELD_REPLY_BYTES_MAX: usize = 32;

impl<W: Write + Send + 'static> Sink<W> {
    fn new(writer: W, shared: &Shared) -> Sink<W> {
        if shared.pace == Pace::None || matches!(*shared.clock, Clock::Step { .. }) {
            return Sink::Direct { writer, held: Vec::new(), charges: Vec::new() };
        }
        let (queue, rx) = mpsc::channel::<(Instant, Vec<u8>, Charge)>();
        let thread = std::thread::spawn(move || paced_writer(writer, rx));
        Sink::Paced { queue, thread }
    }

    /// Writes the held replies. Called before anything that may wait on the client, so that
    /// a client never waits for a reply the server holds while the server waits for it.
    fn release(&mut self) -> io::Result<()> {
        match self {
            Sink::Direct { writer, held, charges } if !held.is_empty() => {
                let written = writer.write_all(held);
                held.clear();
                charges.clear();
                written
            }
            _ => Ok(()),
        }
    }

    /// Sends one reply. `next_in_hand`: the next request's header has already been received,
    /// so reading it cannot wait on the client.
    fn send(
        &mut self,
        due: Option<Instant>,
        bytes: &[u8],
        charge: Charge,
        next_in_hand: bool,
    ) -> io::Result<()> {
        match self {
            Sink::Direct { held, charges, .. } if bytes.len() <= HELD_REPLY_BYTES_MAX => {
                held.extend_from_slice(bytes);
                charges.push(charge);
                if next_in_hand && charges.len() < REPLIES_HELD_MAX {
                    return Ok(());
                }
                self.release()
            }
            Sink::Direct { .. } => {
                self.release()?;
                let Sink::Direct { writer, .. } = self else { unreachable!("matched above") };
                let written = writer.write_all(bytes);
                drop(charge);
                written
            }
            Sink::Paced { queue, .. } => queue
                .send((due.unwrap_or_else(Instant::now), bytes.to_vec(), charge))
                .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "reply writer stopped")),
        }
    }

    /// Sends everything still held and stops.
    fn finish(mut self) -> io::Result<()> {
        self.release()?;
        match self {
            Sink::Direct { mut writer, .. } => writer.flush(),
            Sink::Paced { queue, thread } => {
                drop(queue);
                thread.join().unwrap_or_else(|_| Err(io::Error::other("reply writer panicked")))
            }
        }
    }
}

/// Holds replies in a min-heap by due instant and writes each when it is due. On a write
/// error the held replies are dropped with their charges.
fn paced_writer(mut w: impl Write, rx: mpsc::Receiver<(Instant, Vec<u8>, Charge)>) -> io::Result<()> {
    let mut heap: BinaryHeap<std::cmp::Reverse<(Instant, u64)>> = BinaryHeap::new();
    let mut held: BTreeMap<u64, (Vec<u8>, Charge)> = BTreeMap::new();
    let mut seq = 0u64;
    let mut open = true;
    while open || !heap.is_empty() {
        let wait = heap.peek().map(|r| r.0 .0.saturating_duration_since(Instant::now()));
        let got = match wait {
            Some(d) if d.is_zero() => None,
            Some(d) if open => match rx.recv_timeout(d) {
                Ok(m) => Some(m),
                Err(mpsc::RecvTimeoutError::Timeout) => None,
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    open = false;
                    None
                }
            },
            Some(d) => {
                std::thread::sleep(d);
                None
            }
            None => match rx.recv() {
                Ok(m) => Some(m),
                Err(_) => {
                    open = false;
                    None
                }
            },
        };
        if let Some((due, bytes, charge)) = got {
            heap.push(std::cmp::Reverse((due, seq)));
            held.insert(seq, (bytes, charge));
            seq += 1;
        }
        while heap.peek().is_some_and(|r| r.0 .0 <= Instant::now()) {
            let std::cmp::Reverse((_, n)) = heap.pop().expect("peeked");
            let (bytes, charge) = held.remove(&n).expect("held reply");
            w.write_all(&bytes)?;
            drop(charge);
        }
    }
    w.flush()
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

fn drain(r: &mut impl Read, mut bytes: u64) -> io::Result<()> {
    let mut buf = [0u8; 64 * 1024];
    while bytes > 0 {
        let n = bytes.min(buf.len() as u64) as usize;
        if !read_full(r, &mut buf[..n])? {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "peer vanished inside a payload"));
        }
        bytes -= n as u64;
    }
    Ok(())
}

/// `in_transmission` runs once the handshake succeeded (it lifts the handshake timeout).
fn serve(
    shared: &Shared,
    id: u64,
    peer: &str,
    mut reader: impl Read,
    mut writer: impl Write + Send + 'static,
    in_transmission: &dyn Fn(),
) -> String {
    let negotiation = match handshake(shared, id, peer, &mut reader, &mut writer) {
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
    in_transmission();
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
    let mut sink = Sink::new(writer, shared);
    let (summary, clean) = transmission(shared, id, peer, &mut reader, &mut sink, &limits);
    let flushed = sink.finish();
    shared.count(|c| if clean { c.disconnects_clean += 1 } else { c.disconnects_abrupt += 1 });
    match flushed {
        Ok(()) => summary,
        Err(e) => format!("{summary}; sending the last replies failed: {e}"),
    }
}

/// Option haggling. `Ok(None)`: the session ended (abort, refusal, EOF), already logged.
fn handshake(
    shared: &Shared,
    id: u64,
    peer: &str,
    reader: &mut impl Read,
    writer: &mut impl Write,
) -> io::Result<Option<Negotiation>> {
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
        let outcome = if shared.shutting_down.load(Ordering::SeqCst) && option != OPT_ABORT {
            drain(reader, length as u64)?;
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
                    drain(reader, length as u64)?;
                    negotiation.too_big(option, length)
                }
                PayloadPolicy::Disconnect => {
                    shared.count(|c| c.protocol_violations += 1);
                    shared.log(
                        id,
                        peer,
                        &format!(
                            "refused: {} with a {length}-byte payload; disconnecting",
                            option_name(option)
                        ),
                    );
                    return Ok(None);
                }
            }
        };
        if let Some(why) = &outcome.refused {
            shared.count(|c| c.options_refused += 1);
            shared.log(id, peer, &format!("refused option: {why}"));
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

/// Offset in the reply buffer where a READ's data starts: room for the longest header.
const DATA_AT: usize = 28;
/// Extents in one BLOCK_STATUS reply (the protocol lets the server describe less than asked).
const BLOCK_STATUS_EXTENTS_MAX: usize = 1024;

/// The transmission phase. Returns a summary and whether the client ended it with DISC.
fn transmission<W: Write + Send + 'static>(
    shared: &Shared,
    id: u64,
    peer: &str,
    reader: &mut impl Read,
    sink: &mut Sink<W>,
    limits: &Limits,
) -> (String, bool) {
    let budget = Arc::new(Budget::new(shared.inflight_per_connection_bytes));
    let (summary, clean) = transmission_loop(shared, id, peer, reader, sink, limits, &budget);
    let peak = budget.peak.load(Ordering::Relaxed);
    shared.count(|c| c.inflight_bytes_peak_connection = c.inflight_bytes_peak_connection.max(peak));
    (summary, clean)
}

fn transmission_loop<W: Write + Send + 'static>(
    shared: &Shared,
    id: u64,
    peer: &str,
    reader: &mut impl Read,
    sink: &mut Sink<W>,
    limits: &Limits,
    budget: &Arc<Budget>,
) -> (String, bool) {
    let mut buf: Vec<u8> = Vec::new();
    let mut payload = Payload::default();
    // The start of the next request's header, when it arrived with a WRITE's payload (one
    // `recv` per request saved under a client that keeps requests queued).
    let mut next_header = [0u8; REQUEST_HEADER_BYTES];
    let mut carried = 0usize;
    let epoch = shared.power_epoch.load(Ordering::SeqCst);
    let mut requests = 0u64;
    let mut refusals = 0u64;
    let summary = |requests: u64, refusals: u64, how: &str| {
        format!("{how} after {requests} requests ({refusals} refused)")
    };
    let unanswered = |requests: u64, refusals: u64, e: io::Error| {
        (summary(requests, refusals, &format!("client vanished before its reply ({e})")), false)
    };
    loop {
        if carried < REQUEST_HEADER_BYTES {
            if let Err(e) = sink.release() {
                return unanswered(requests, refusals, e);
            }
        }
        let mut raw = [0u8; REQUEST_HEADER_BYTES];
        raw[..carried].copy_from_slice(&next_header[..carried]);
        // A clean end is one before the header's first byte, which may have come with the
        // previous payload.
        let header_read = read_full(reader, &mut raw[carried..]).and_then(|full| {
            if full || carried == 0 {
                Ok(full)
            } else {
                Err(io::Error::new(io::ErrorKind::UnexpectedEof, "peer vanished inside a request header"))
            }
        });
        carried = 0;
        match header_read {
            Ok(true) => {}
            Ok(false) if shared.shutting_down.load(Ordering::SeqCst) => {
                return (summary(requests, refusals, "closed by server shutdown"), false)
            }
            Ok(false) => return (summary(requests, refusals, "client hung up without NBD_CMD_DISC"), false),
            Err(e) => {
                return (summary(requests, refusals, &format!("client vanished mid-request ({e})")), false)
            }
        }
        let header = match RequestHeader::parse(&raw) {
            Ok(h) => h,
            Err(e) => {
                shared.count(|c| c.protocol_violations += 1);
                return (summary(requests, refusals, &format!("disconnected: {e}")), false);
            }
        };
        requests += 1;
        let mut checked = request::validate(&header, limits);
        // The request's data (WRITE payload or READ reply) is charged until its reply is out;
        // a client that leaves replies unread stops here, and its requests stay unread.
        let data_bytes = match &checked {
            Ok(Request::Read { length, .. } | Request::Write { length, .. }) => *length as u64,
            _ => 0,
        } + DATA_AT as u64;
        match take_budgets(budget, &shared.inflight_total, data_bytes, sink, &shared.shutting_down) {
            Ok(true) => {}
            Ok(false) => return (summary(requests, refusals, "closed by server shutdown"), false),
            Err(e) => return unanswered(requests, refusals, e),
        }
        let charge =
            Charge { bytes: data_bytes, connection: budget.clone(), total: shared.inflight_total.clone() };
        let payload_bytes = header.payload_bytes() as usize;
        if payload_bytes > 0 {
            let result = if checked.is_ok() {
                if let Some(pool) = &shared.page_pool {
                    // Pages of a payload the drive refused before the store took them.
                    pool.give(std::mem::take(&mut payload.pages));
                }
                let lead = std::mem::take(&mut payload.lead);
                Payload::receive(
                    reader,
                    header.offset,
                    payload_bytes,
                    shared.page_pool.as_deref(),
                    lead,
                    &mut next_header,
                )
                .map(|(received, spilled)| {
                    payload = received;
                    carried = spilled;
                })
            } else if header.length > WRITE_DRAIN_MAX_BYTES {
                shared.count(|c| c.protocol_violations += 1);
                return (
                    summary(
                        requests,
                        refusals,
                        &format!("disconnected: WRITE payload of {} bytes", header.length),
                    ),
                    false,
                );
            } else {
                drain(reader, payload_bytes as u64)
            };
            if let Err(e) = result {
                // Nothing of this request was applied or acknowledged.
                return (
                    summary(requests, refusals, &format!("client vanished inside a WRITE payload ({e})")),
                    false,
                );
            }
        }
        if let Ok(Request::Disconnect) = checked {
            return (summary(requests, refusals, "clean disconnect (NBD_CMD_DISC)"), true);
        }
        if shared.shutting_down.load(Ordering::SeqCst) {
            checked = Err(Refusal::new(ESHUTDOWN, "server is shutting down"));
        } else if checked.is_ok() && shared.power_epoch.load(Ordering::SeqCst) != epoch {
            shared.count(|c| c.refused_after_power_cut += 1);
            checked = Err(Refusal::new(EIO, "power was cut since this connection was made; reconnect"));
        }
        let is_read = header.command == CMD_READ;
        let has_data = is_read || header.command == CMD_BLOCK_STATUS;
        let outcome = match checked {
            Ok(request) => match shared
                .with_device(|d, clock| d.execute(clock, request, &mut buf, &mut payload, epoch))
            {
                Some(result) => result,
                None => return (summary(requests, refusals, "device stopped"), false),
            },
            Err(refusal) => Err(refusal),
        };
        let (due, head_at) = match &outcome {
            Ok((done, data_bytes)) => {
                let mut head = Vec::with_capacity(DATA_AT);
                if header.command == CMD_BLOCK_STATUS {
                    reply::block_status_chunk(header.handle, *data_bytes, &mut head);
                } else {
                    reply::header(
                        limits.structured_replies,
                        is_read,
                        header.handle,
                        header.offset,
                        Ok(*data_bytes),
                        &mut head,
                    );
                }
                let at = DATA_AT - head.len();
                buf[at..DATA_AT].copy_from_slice(&head);
                (shared.clock.wall_of(*done), at)
            }
            Err(refusal) => {
                refusals += 1;
                shared.with_device(|d, _| d.drive.count_refusal());
                if refusals <= REFUSALS_LOGGED_MAX {
                    shared.log(
                        id,
                        peer,
                        &format!(
                            "refused {} (handle {:#x}): {} {}",
                            command_name(header.command),
                            header.handle,
                            errno_name(refusal.errno),
                            refusal.message
                        ),
                    );
                }
                buf.clear();
                reply::header(
                    limits.structured_replies,
                    is_read,
                    header.handle,
                    header.offset,
                    Err((refusal.errno, &refusal.message)),
                    &mut buf,
                );
                (None, 0)
            }
        };
        let end = match &outcome {
            Ok((_, data_bytes)) if has_data => DATA_AT + *data_bytes as usize,
            Ok(_) => DATA_AT,
            Err(_) => buf.len(),
        };
        if let Err(e) = sink.send(due, &buf[head_at..end], charge, carried == REQUEST_HEADER_BYTES) {
            return unanswered(requests, refusals, e);
        }
        if buf.capacity() > KEEP_BUFFER_BYTES {
            // A large request's buffer goes back: idle connections should not hold 32 MiB each.
            buf = Vec::new();
        }
        if payload.lead.capacity() > KEEP_BUFFER_BYTES {
            payload = Payload::default();
        }
    }
}

/// Takes `n` bytes of the connection's budget and of the total. Held replies are written
/// before either is waited for: their charges may be what it waits for. False if the server
/// began shutting down while waiting.
fn take_budgets<W: Write + Send + 'static>(
    connection: &Budget,
    total: &Budget,
    n: u64,
    sink: &mut Sink<W>,
    stop: &AtomicBool,
) -> io::Result<bool> {
    if !connection.try_take(n) {
        sink.release()?;
        if !connection.take(n, stop) {
            return Ok(false);
        }
    }
    if !total.try_take(n) {
        let released = sink.release();
        if released.is_err() || !total.take(n, stop) {
            connection.give(n);
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
