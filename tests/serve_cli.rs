//! `trimlab serve` as a process: clear errors for bad flags, the stats line, the HTTP endpoint
//! with phases, SIGINT writing the metrics, a Unix socket. No external tools needed.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const CONFIG: &str = "[device]\nlogical_bytes = \"64MiB\"\nchannels = 2\nchips_per_channel = 1\ndies_per_chip = 1\nplanes_per_die = 1\npages_per_block = 64\n";

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("c.toml"), CONFIG).unwrap();
    dir
}

fn serve_err(dir: &Path, extra: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_trimlab"))
        .args(["serve", dir.join("c.toml").to_str().unwrap(), "--listen", "127.0.0.1:0"])
        .args(["--out", dir.join("m").to_str().unwrap()])
        .args(extra)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{extra:?} must fail");
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn bad_flags_and_configs_are_clear_errors() {
    let dir = scratch("serve-errors");
    let e = serve_err(&dir, &["--pace", "sometimes"]);
    assert!(e.contains("sometimes") && e.contains("\"none\"") && e.contains("\"real\""), "{e}");
    let e = serve_err(&dir, &["--max-request", "100"]);
    assert!(e.contains("--max-request") && e.contains("multiple of 512"), "{e}");
    let e = serve_err(&dir, &["--max-request", "lots"]);
    assert!(e.contains("--max-request"), "{e}");
    let e = serve_err(&dir, &["--stats-interval", "1ns"]);
    assert!(e.contains("--stats-interval") && e.contains("100ms"), "{e}");
    let e = serve_err(&dir, &["--unix", "/tmp/x.sock"]);
    assert!(e.contains("not both"), "{e}");
    let e = serve_err(&dir, &["--connections-max", "0"]);
    assert!(e.contains("--connections-max"), "{e}");
    std::fs::write(dir.join("c.toml"), "[device]\nspare_factr = 0.1\n").unwrap();
    let e = serve_err(&dir, &[]);
    assert!(e.contains("spare_factr") && e.contains("line 2"), "{e}");
    // Issue 13 item 11: a huge page blamed `ftl.gc_free_blocks`; now the key at fault, with
    // its file and line.
    std::fs::write(dir.join("c.toml"), "[device]\n\npage_bytes = 1048576\n").unwrap();
    let e = serve_err(&dir, &[]);
    assert!(e.contains("c.toml:3: config: device.page_bytes = 1048576"), "{e}");
    assert!(!e.contains("gc_free_blocks ="), "{e}");
}

fn http(addr: &str, request_line: &str) -> String {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "{request_line}\r\nHost: x\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn stats_line_http_endpoint_phases_and_sigint() {
    let dir = scratch("serve-stats");
    let mut child = Command::new(env!("CARGO_BIN_EXE_trimlab"))
        .args(["serve", dir.join("c.toml").to_str().unwrap(), "--listen", "127.0.0.1:0"])
        .args(["--stats-http", "127.0.0.1:0", "--stats-interval", "200ms", "--quiet"])
        .args(["--out", dir.join("m").to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(lines.next().unwrap().unwrap().contains("listening on 127.0.0.1:"));
    let line = lines.next().unwrap().unwrap();
    let addr = line.split("http://").nth(1).unwrap().split('/').next().unwrap().to_string();
    let stats = http(&addr, "GET /stats HTTP/1.0");
    assert!(stats.starts_with("HTTP/1.0 200") && stats.contains("\"export_bytes\": 67108864"), "{stats}");
    assert!(http(&addr, "GET /nope HTTP/1.0").starts_with("HTTP/1.0 404"));
    assert!(http(&addr, "POST /phase/ HTTP/1.0").starts_with("HTTP/1.0 400"));
    assert!(http(&addr, "POST /phase/a%20b HTTP/1.0").starts_with("HTTP/1.0 400"));
    assert!(http(&addr, "POST /phase/warm-up HTTP/1.0").starts_with("HTTP/1.0 200"));
    std::thread::sleep(Duration::from_millis(600));
    let pid = child.id().to_string();
    assert!(Command::new("kill").args(["-INT", &pid]).status().unwrap().success());
    let status = child.wait().unwrap();
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(status.success(), "{err}");
    assert!(err.matches("trimlab serve: sim ").count() >= 3, "periodic lines and the final one: {err}");
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("m/metrics.json")).unwrap()).unwrap();
    let phases: Vec<&str> =
        m["stats"]["phases"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(phases, ["start", "warm-up"]);
    assert_eq!(m["model_check"], "ok");
    assert!(dir.join("m/metrics.csv").exists());
}

#[test]
fn unix_socket_listener() {
    let dir = scratch("serve-unix");
    let sock = dir.join("nbd.sock");
    let mut child = Command::new(env!("CARGO_BIN_EXE_trimlab"))
        .args(["serve", dir.join("c.toml").to_str().unwrap(), "--unix", sock.to_str().unwrap(), "--quiet"])
        .args(["--out", dir.join("m").to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(lines.next().unwrap().unwrap().contains(&format!("unix:{}", sock.display())));
    let mut s = std::os::unix::net::UnixStream::connect(&sock).unwrap();
    let mut greeting = [0u8; 18];
    s.read_exact(&mut greeting).unwrap();
    assert_eq!(&greeting[..16], b"NBDMAGICIHAVEOPT");
    drop(s);
    assert!(Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap().success());
    assert!(child.wait().unwrap().success());
    assert!(!sock.exists(), "the socket file is removed");
    // A second server refuses to take over an existing path.
    std::fs::write(&sock, "").unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_trimlab"))
        .args(["serve", dir.join("c.toml").to_str().unwrap(), "--unix", sock.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("exists"));
}
