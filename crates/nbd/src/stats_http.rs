//! A tiny HTTP/1.0 endpoint for live metrics and phase marks, so a driving script can split a
//! run into phases (`POST /phase/mkfs`) and read the counters (`GET /stats`) while clients run.
//! One request per connection, request line only; anything else gets 404 or 400.

use crate::server::ServerHandle;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

/// Serves requests until the server shuts down.
pub fn run(listener: TcpListener, server: ServerHandle) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    while !server.is_shutting_down() {
        match listener.accept() {
            Ok((stream, _)) => {
                if let Err(e) = answer(stream, &server) {
                    eprintln!("trimlab serve: stats endpoint: {e}");
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn valid_phase_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
}

fn answer(stream: TcpStream, server: &ServerHandle) -> io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.by_ref().take(4096).read_line(&mut line)?;
    // Skip the headers (bounded) so the client sees its request consumed.
    let mut header = String::new();
    for _ in 0..64 {
        header.clear();
        if reader.by_ref().take(4096).read_line(&mut header)? == 0 || header == "\r\n" || header == "\n" {
            break;
        }
    }
    if line.trim().is_empty() {
        return Ok(()); // a port probe: connected and closed without a request
    }
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let (status, body) = match (method, path) {
        ("GET", "/stats") => {
            let Some(stats) = server.stats() else {
                return Ok(());
            };
            let json = serde_json::json!({ "connections": server.connections(), "stats": stats });
            ("200 OK", serde_json::to_string_pretty(&json).unwrap_or_default())
        }
        ("GET" | "POST", p) if p.starts_with("/phase/") => {
            let name = &p["/phase/".len()..];
            if valid_phase_name(name) {
                server.start_phase(name);
                ("200 OK", format!("{{\"phase\": \"{name}\"}}"))
            } else {
                (
                    "400 Bad Request",
                    "{\"error\": \"phase names are 1-64 characters of A-Z a-z 0-9 - _ .\"}".into(),
                )
            }
        }
        _ => ("404 Not Found", "{\"error\": \"try GET /stats or POST /phase/NAME\"}".into()),
    };
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.0 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()
}
