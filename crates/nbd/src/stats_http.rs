//! A tiny HTTP/1.0 endpoint for live metrics, phase marks and power cuts, so a driving script
//! can split a run into phases (`POST /phase/mkfs`), read the counters (`GET /stats`) and cut
//! the drive's power (`POST /power-cut`) while clients run, read the time series kept so far
//! (`GET /series?since=NS`, with `--log-interval`), and a person can watch it (`GET /`: the
//! live dashboard, one self-contained page that plots them once a second). One request
//! per connection, request line only; anything else gets 404 or 400.
//!
//! Nobody can stall it (issue 13): each client gets its own thread and one deadline for the
//! whole exchange, at most [`HTTP_CLIENTS_MAX`] are served at once (more get 503), and the
//! accept loop returns as soon as the server has finished, never waiting on a client. It keeps
//! answering while the server shuts down (with the final report once finished), and after a
//! model fault `GET /stats` answers 500 with the fault (issue 26: it answered nothing).

use crate::server::{wait_for_connection, ServerHandle, ACCEPT_POLL};
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Clients served at once.
pub const HTTP_CLIENTS_MAX: usize = 16;
/// Time a client has to send its request and read the answer.
pub const HTTP_DEADLINE: Duration = Duration::from_secs(5);
/// Rows one `GET /series` returns at most (the newest): an hour at one per second.
const SERIES_ROWS_MAX: usize = 3600;
/// The longest request head read (request line and headers).
const REQUEST_HEAD_BYTES_MAX: usize = 8192;

/// Serves requests until the server has finished ([`ServerHandle::finish`]).
pub fn run(listener: TcpListener, server: ServerHandle) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    let busy = Arc::new(AtomicUsize::new(0));
    let mut errors = 0u64;
    while !server.is_finished() {
        match listener.accept() {
            Ok((mut stream, _)) => {
                if busy.load(Ordering::SeqCst) >= HTTP_CLIENTS_MAX {
                    let _ = stream.set_write_timeout(Some(Duration::from_millis(100)));
                    let _ = respond(
                        &mut stream,
                        "503 Service Unavailable",
                        &error_json("too many clients; retry"),
                    );
                    continue;
                }
                busy.fetch_add(1, Ordering::SeqCst);
                let (server, held) = (server.clone(), busy.clone());
                let spawned = std::thread::Builder::new().name("nbd-stats-http".into()).spawn(move || {
                    if let Err(e) = answer(stream, &server) {
                        if e.kind() != io::ErrorKind::WouldBlock && e.kind() != io::ErrorKind::TimedOut {
                            eprintln!("trimlab serve: stats endpoint: {e}");
                        }
                    }
                    held.fetch_sub(1, Ordering::SeqCst);
                });
                if spawned.is_err() {
                    busy.fetch_sub(1, Ordering::SeqCst);
                }
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

fn answer(mut stream: TcpStream, server: &ServerHandle) -> io::Result<()> {
    let deadline = Instant::now() + HTTP_DEADLINE;
    stream.set_nonblocking(false)?;
    stream.set_write_timeout(Some(HTTP_DEADLINE))?;
    let head = read_head(&mut stream, deadline)?;
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
