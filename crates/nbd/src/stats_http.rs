//! A tiny HTTP/1.0 endpoint for live metrics, phase marks and power cuts, so a driving script
//! can split a run into phases (`POST /phase/mkfs`), read the counters (`GET /stats`) and cut
//! the drive's power (`POST /power-cut`) while clients run, read the time series kept so far
//! (`GET /series?since=NS`, with `--log-interval`), and a person can watch it (`GET /`: the
//! live dashboard, one self-contained page that plots them once a second). One request
//! per connection, request line only; anything else gets 404 or 400.
//!
//! Nobody can stall it (issue 13): each client gets its own thread and one deadline for the
//! whole exchange, at most [`HTTP_CLIENTS_MAX`] are served at once (more get 503, after their
//! request is read, never a reset), a client slow to send its request loses its place to a new
//! one when all are taken (issue 41: slow clients cannot starve `/stats`), and the
//! accept loop returns as soon as the server has finished, never waiting on a client. It keeps
//! answering while the server shuts down (with the final report once finished), and after a
//! model fault `GET /stats` answers 500 with the fault (issue 26: it answered nothing).

use crate::server::{wait_for_connection, ServerHandle, ACCEPT_POLL};
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Clients served at once.
pub const HTTP_CLIENTS_MAX: usize = 16;
/// Time a client has to send its request and read the answer.
pub const HTTP_DEADLINE: Duration = Duration::from_secs(5);
/// When every place is taken, a client whose request head has been arriving for longer than
/// this gives its place to a new one (issue 41: 16 reconnecting slow clients left `/stats`
/// answering 26 % of requests). A request line from a local script arrives in microseconds and
/// one across a WAN in an RTT; 100 ms is an assumption between the two.
const SLOW_HEAD_AFTER: Duration = Duration::from_millis(100);
/// How long a refused client's request is awaited and drained before its 503 and close: a
/// socket closed with unread bytes sends a reset instead of the answer (issue 41).
const REFUSAL_LINGER: Duration = Duration::from_millis(50);
/// Refusals queued for the refusing thread; beyond this they are answered at once.
const REFUSALS_QUEUED_MAX: usize = 64;
/// Rows one `GET /series` returns at most (the newest): an hour at one per second.
const SERIES_ROWS_MAX: usize = 3600;
/// The longest request head read (request line and headers).
const REQUEST_HEAD_BYTES_MAX: usize = 8192;

/// A client being served: a second handle on its socket (to cut it if it is slow) and whether
/// its request head is still arriving.
struct Place {
    id: u64,
    since: Instant,
    reading: bool,
    stream: TcpStream,
}

/// The places of the clients being served, shared by the accept loop and the client threads.
#[derive(Clone, Default)]
struct Places(Arc<Mutex<Vec<Place>>>);

impl Places {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Place>> {
        // A client thread that panicked leaves the table usable: it holds plain data.
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Takes a place for `stream`: a free one, or the one of the slowest client still sending
    /// its request (cut). `None` when every place is held by a client that is not slow.
    fn take(&self, id: u64, stream: &TcpStream) -> Option<()> {
        let mut places = self.lock();
        if places.len() >= HTTP_CLIENTS_MAX {
            let slow = places
                .iter()
                .enumerate()
                .filter(|(_, p)| p.reading && p.since.elapsed() >= SLOW_HEAD_AFTER)
                .min_by_key(|(_, p)| p.since)
                .map(|(i, _)| i)?;
            let cut = places.swap_remove(slow);
            let _ = cut.stream.shutdown(Shutdown::Both);
        }
        places.push(Place { id, since: Instant::now(), reading: true, stream: stream.try_clone().ok()? });
        Some(())
    }

    /// The request head has arrived; false when the client was cut meanwhile.
    fn head_read(&self, id: u64) -> bool {
        self.lock().iter_mut().find(|p| p.id == id).map(|p| p.reading = false).is_some()
    }

    fn release(&self, id: u64) {
        self.lock().retain(|p| p.id != id);
    }
}

/// Serves requests until the server has finished ([`ServerHandle::finish`]).
pub fn run(listener: TcpListener, server: ServerHandle) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    let places = Places::default();
    let refusals = spawn_refuser();
    let mut next_id = 0u64;
    let mut errors = 0u64;
    while !server.is_finished() {
        match listener.accept() {
            Ok((stream, _)) => {
                next_id += 1;
                admit(stream, next_id, &places, &server, refusals.as_ref());
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => wait_for_connection(&listener, ACCEPT_POLL),
            // Out of descriptors, an aborted connection ...: the endpoint carries on.
            Err(e) => {
                errors += 1;
                if errors <= 10 || errors.is_multiple_of(1000) {
                    eprintln!("trimlab serve: stats endpoint: accept failed ({errors} so far): {e}");
                }
                std::thread::sleep(ACCEPT_POLL * 5);
            }
        }
    }
    Ok(())
}

/// Serves `stream` on a thread of its own, or refuses it with 503 when no place is free.
fn admit(
    stream: TcpStream,
    id: u64,
    places: &Places,
    server: &ServerHandle,
    refusals: Option<&SyncSender<TcpStream>>,
) {
    if places.take(id, &stream).is_none() {
        let queued = match refusals {
            Some(r) => r.try_send(stream),
            None => Err(TrySendError::Disconnected(stream)),
        };
        if let Err(TrySendError::Full(stream) | TrySendError::Disconnected(stream)) = queued {
            refuse(stream, Duration::ZERO);
        }
        return;
    }
    let (server, held) = (server.clone(), places.clone());
    let spawned = std::thread::Builder::new().name("nbd-stats-http".into()).spawn(move || {
        if let Err(e) = answer(stream, &server, &held, id) {
            let quiet = [io::ErrorKind::WouldBlock, io::ErrorKind::TimedOut, io::ErrorKind::NotConnected];
            if !quiet.contains(&e.kind()) {
                eprintln!("trimlab serve: stats endpoint: {e}");
            }
        }
        held.release(id);
    });
    if spawned.is_err() {
        places.release(id);
    }
}

/// The thread that answers refused clients one by one, so the accept loop never waits.
fn spawn_refuser() -> Option<SyncSender<TcpStream>> {
    let (send, receive) = std::sync::mpsc::sync_channel::<TcpStream>(REFUSALS_QUEUED_MAX);
    std::thread::Builder::new()
        .name("nbd-stats-refuse".into())
        .spawn(move || {
            for stream in receive {
                refuse(stream, REFUSAL_LINGER);
            }
        })
        .ok()
        .map(|_| send)
}

/// 503, then the client's request drained until it closes (within `linger`), so that it reads
/// the answer rather than a reset.
fn refuse(mut stream: TcpStream, linger: Duration) {
    let deadline = Instant::now() + linger;
    let _ = stream.set_write_timeout(Some(Duration::from_millis(100)));
    if !linger.is_zero() {
        let _ = read_head(&mut stream, deadline);
    }
    let _ = respond(&mut stream, "503 Service Unavailable", &error_json("too many clients; retry"));
    let _ = stream.shutdown(Shutdown::Write);
    let mut sink = [0u8; 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let read = if left.is_zero() {
            stream.set_nonblocking(true).and_then(|()| stream.read(&mut sink))
        } else {
            stream.set_read_timeout(Some(left)).and_then(|()| stream.read(&mut sink))
        };
        if !matches!(read, Ok(n) if n > 0) {
            break;
        }
    }
}

fn valid_phase_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
}

fn error_json(message: &str) -> String {
    serde_json::json!({ "error": message }).to_string()
}

/// Reads the request head (up to the blank line) within `deadline`.
fn read_head(stream: &mut TcpStream, deadline: Instant) -> io::Result<Vec<u8>> {
    let mut head = Vec::new();
    let mut byte = [0u8; 512];
    while !head.ends_with(b"\r\n\r\n") && !head.ends_with(b"\n\n") && head.len() < REQUEST_HEAD_BYTES_MAX {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "request not complete within the deadline"));
        }
        stream.set_read_timeout(Some(left))?;
        let n = stream.read(&mut byte)?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&byte[..n]);
    }
    Ok(head)
}

/// The live dashboard: HTML, CSS and script in one file, nothing fetched but `/stats`.
pub const DASHBOARD_HTML: &str = include_str!("dashboard.html");

fn respond(stream: &mut TcpStream, status: &str, body: &str) -> io::Result<()> {
    respond_typed(stream, status, "application/json", body)
}

fn respond_typed(stream: &mut TcpStream, status: &str, content_type: &str, body: &str) -> io::Result<()> {
    write!(
        stream,
        "HTTP/1.0 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()
}

fn answer(mut stream: TcpStream, server: &ServerHandle, places: &Places, id: u64) -> io::Result<()> {
    let deadline = Instant::now() + HTTP_DEADLINE;
    stream.set_nonblocking(false)?;
    stream.set_write_timeout(Some(HTTP_DEADLINE))?;
    let head = read_head(&mut stream, deadline)?;
    if !places.head_read(id) {
        return Ok(()); // cut as slow while its request arrived
    }
    let line = String::from_utf8_lossy(head.split(|&b| b == b'\n').next().unwrap_or(&[])).into_owned();
    if line.trim().is_empty() {
        return Ok(()); // a port probe: connected and closed without a request
    }
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    if method == "GET" && (path == "/" || path == "/index.html") {
        return respond_typed(&mut stream, "200 OK", "text/html; charset=utf-8", DASHBOARD_HTML);
    }
    let (status, body) = match (method, path) {
        ("GET", "/stats") => stats_answer(server),
        ("GET", p) if p == "/series" || p.starts_with("/series?since=") => series_answer(server, p),
        ("POST", "/power-cut") => match server.power_cut() {
            Ok(report) => ("200 OK", serde_json::json!({ "power_cut": report }).to_string()),
            Err(e) => ("500 Internal Server Error", error_json(&e)),
        },
        ("GET" | "POST", p) if p.starts_with("/phase/") => {
            let name = &p["/phase/".len()..];
            if !valid_phase_name(name) {
                ("400 Bad Request", error_json("phase names are 1-64 characters of A-Z a-z 0-9 - _ ."))
            } else {
                match server.start_phase(name) {
                    Ok(()) => ("200 OK", serde_json::json!({ "phase": name }).to_string()),
                    Err(e) => ("409 Conflict", error_json(&e)),
                }
            }
        }
        _ => (
            "404 Not Found",
            error_json("try GET / (the dashboard), GET /stats, POST /phase/NAME or POST /power-cut"),
        ),
    };
    respond(&mut stream, status, &body)
}

/// `GET /stats`: the live report, or 500 with the fault, or 503 once the server has stopped.
fn stats_answer(server: &ServerHandle) -> (&'static str, String) {
    let (fault, stats) = (server.fault(), server.stats());
    let connections = server.connections();
    match (fault, stats) {
        (None, Some(stats)) => (
            "200 OK",
            serde_json::to_string_pretty(&serde_json::json!({ "connections": connections, "stats": stats }))
                .unwrap_or_default(),
        ),
        (Some(fault), stats) => (
            "500 Internal Server Error",
            serde_json::to_string_pretty(&serde_json::json!({
                "error": format!("the device model failed: {fault}"),
                "fault": fault,
                "connections": connections,
                "stats": stats,
            }))
            .unwrap_or_default(),
        ),
        (None, None) => ("503 Service Unavailable", error_json("the server has stopped")),
    }
}

/// `GET /series?since=NS`: the time-series rows that ended after NS (`enabled: false` when
/// the server keeps none).
fn series_answer(server: &ServerHandle, path: &str) -> (&'static str, String) {
    match path.strip_prefix("/series?since=").map_or(Ok(0), str::parse::<u64>) {
        Err(_) => ("400 Bad Request", error_json("since takes a simulated time in ns: /series?since=NS")),
        Ok(since) => match server.series(since, SERIES_ROWS_MAX) {
            Some(rows) => ("200 OK", serde_json::json!({ "enabled": true, "rows": rows }).to_string()),
            None => ("200 OK", serde_json::json!({ "enabled": false, "rows": [] }).to_string()),
        },
    }
}
