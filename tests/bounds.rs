//! Issue 41's reproducers as tests: every input surface (scripts, fio job files, Filebench
//! models, strace traces, `compare`'s recordings, configs, simulator traces) given what an
//! attacker would give it. Each case of tests/data/fuzz/cases.txt runs the built binary under
//! `prlimit --as` (1 GiB of address space) and a 10 s deadline, and must end with its clear
//! error or a complete run: never a panic, an abort, a kill or a hang, and never an error
//! that echoes a hostile value whole. docs/limits.md lists the caps these reach.

// A run's deadline is wall time, and a child's stderr and a FIFO's writer need a thread:
// this is the edge that watches processes, not model code.
#![allow(clippy::disallowed_methods)]

mod common;

use common::{scratch, skip};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The address space each run may take (the bound).
const ADDRESS_SPACE_BYTES: u64 = 1 << 30;
/// The wall time each run may take (the bound; a run that needs longer has hung).
const DEADLINE: Duration = Duration::from_secs(10);
/// The longest stderr an error may print: a hostile value is quoted cut.
const STDERR_BYTES_MAX: usize = 4096;

const DEVICE: &str = "seed = 1\n[device]\npreset = \"nvme-tlc\"\nlogical_bytes = \"256MiB\"\n";
const HOST: &str = "[host]\nfs = \"ext4\"\n";

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fuzz")
}

/// The text a `.gen` recipe stands for (see cases.txt).
fn expand(recipe: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for line in recipe.lines().filter(|l| !l.is_empty()) {
        let (count, text) = line.split_once(' ').unwrap_or((line, ""));
        let count: usize =
            count.parse().unwrap_or_else(|_| panic!("a recipe line starts with a count: {line:.60}"));
        let text = text.replace("\\n", "\n");
        for i in 0..count {
            let piece = text.replace("{i}", &i.to_string()).replace("{j}", &(100_000 + i).to_string());
            out.extend_from_slice(piece.as_bytes());
        }
    }
    out
}

/// The case's input as a file in `dir` (a recipe expanded).
fn materialize(dir: &Path, file: &str) -> PathBuf {
    let source = corpus().join(file);
    let name = Path::new(file).file_name().unwrap().to_str().unwrap();
    let target = dir.join(name.trim_end_matches(".gen"));
    let bytes = match name.ends_with(".gen") {
        true => expand(&std::fs::read_to_string(&source).unwrap()),
        false => std::fs::read(&source).unwrap(),
    };
    std::fs::write(&target, bytes).unwrap();
    target
}

/// Runs the binary with `args` under the address-space cap and the deadline (None: it ran
/// past the deadline and was killed).
fn run_bounded(args: &[String], prlimit: bool) -> (Option<Output>, Duration) {
    let bin = env!("CARGO_BIN_EXE_trimlab");
    let mut command = match prlimit {
        true => {
            let mut c = Command::new("prlimit");
            c.arg(format!("--as={ADDRESS_SPACE_BYTES}")).arg("--").arg(bin);
            c
        }
        false => Command::new(bin),
    };
    let started = Instant::now();
    let mut child = command
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the trimlab binary starts");
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = std::io::Read::read_to_end(&mut { stderr }, &mut text);
        text
    });
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            return (None, started.elapsed());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = child.wait().unwrap();
    let stderr = reader.join().unwrap();
    (Some(Output { status, stdout: Vec::new(), stderr }), started.elapsed())
}

fn has_prlimit() -> bool {
    Command::new("prlimit").arg("--version").output().is_ok_and(|o| o.status.success())
}

/// The command line of one case.
fn args_of(kind: &str, input: &Path, dir: &Path) -> Vec<String> {
    let out = dir.join("out").display().to_string();
    let write = |name: &str, text: String| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let input = input.display().to_string();
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    match kind {
        "script" => {
            let config =
                write("c.toml", format!("{DEVICE}{HOST}[workload]\nkind = \"script\"\nscript = {input:?}\n"));
            strings(&["run", &config, "--out", &out])
        }
        "fio" => strings(&["run", &write("c.toml", DEVICE.to_string()), "--fio", &input, "--out", &out]),
        "filebench" => strings(&[
            "run",
            &write("c.toml", format!("{DEVICE}{HOST}")),
            "--filebench",
            &input,
            "--out",
            &out,
        ]),
        "strace" => {
            let config = write("c.toml", format!("{DEVICE}{HOST}"));
            let root = "workload.strace_root=\"/tmp/work\"";
            strings(&["run", &config, "--strace", &input, "--set", root, "--out", &out])
        }
        "compare" => strings(&["compare", &input, &input]),
        "compare-json" => strings(&["compare", &input, &input, "--json"]),
        "config" => strings(&["run", &input, "--out", &out]),
        "replay" => {
            let device = write("d.toml", DEVICE.to_string());
            strings(&["replay", &input, "--format", "disksim", "--device", &device, "--out", &out])
        }
        other => panic!("cases.txt: unknown kind {other}"),
    }
}

/// Checks one run's end against `expect` (`ok` or `err:TEXT`); returns what went wrong.
fn judge(args: &[String], o: &Option<Output>, expect: &str) -> Option<String> {
    let Some(o) = o else { return Some(format!("trimlab {:.300}: ran past {DEADLINE:?}", args.join(" "))) };
    let stderr = String::from_utf8_lossy(&o.stderr);
    let tail: String = stderr.chars().rev().take(600).collect::<Vec<_>>().into_iter().rev().collect();
    let what = format!("trimlab {}: {} ({})", args.join(" "), o.status, tail.trim());
    let Some(code) = o.status.code() else { return Some(format!("killed by a signal: {what}")) };
    if code == 101 || stderr.contains("panicked") {
        return Some(format!("panicked: {what}"));
    }
    if stderr.len() > STDERR_BYTES_MAX {
        return Some(format!("{} bytes of stderr, more than {STDERR_BYTES_MAX}: {what}", stderr.len()));
    }
    match expect.strip_prefix("err:") {
        None if !o.status.success() => Some(format!("expected a complete run: {what}")),
        Some(text) if o.status.success() || !stderr.to_lowercase().contains(&text.to_lowercase()) => {
            Some(format!("expected an error with \"{text}\": {what}"))
        }
        _ => None,
    }
}

#[test]
fn every_reproducer_ends_in_bounded_time_and_memory() {
    let prlimit = has_prlimit();
    if !prlimit {
        skip(
            "bounds::every_reproducer_ends_in_bounded_time_and_memory (the memory cap)",
            "no prlimit (util-linux)",
        );
    }
    let cases = std::fs::read_to_string(corpus().join("cases.txt")).unwrap();
    let mut failures = Vec::new();
    for line in cases.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (kind, file) = (fields[0], fields[1]);
        let expect = line.split_once(fields[1]).unwrap().1.trim();
        let dir = scratch(&format!("bounds-{}", file.replace('/', "-")));
        let input = materialize(&dir, file);
        let args = args_of(kind, &input, &dir);
        let (o, took) = run_bounded(&args, prlimit);
        eprintln!("{file}: {:?} in {took:.2?}", o.as_ref().map(|o| o.status));
        failures.extend(judge(&args, &o, expect));
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert!(failures.is_empty(), "{} of the corpus failed:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn endless_and_special_files_end_with_an_error() {
    let prlimit = has_prlimit();
    let dir = scratch("bounds-special");
    let config = dir.join("c.toml");
    std::fs::write(&config, format!("{DEVICE}{HOST}")).unwrap();
    let (config, out) = (config.display().to_string(), dir.join("out").display().to_string());
    let line = "a line longer than 1048576 bytes";
    let cases: [(Vec<&str>, &str); 5] = [
        (vec!["run", "/dev/zero"], line),
        (
            vec![
                "run",
                &config,
                "--strace",
                "/dev/zero",
                "--set",
                "workload.strace_root=\"/w\"",
                "--out",
                &out,
            ],
            line,
        ),
        (vec!["run", &config, "--fio", "/dev/zero", "--out", &out], line),
        (vec!["compare", "/dev/zero", "/dev/zero"], line),
        (vec!["run", "/"], "is a directory"),
    ];
    let mut failures = Vec::new();
    for (args, text) in cases {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let (o, _) = run_bounded(&args, prlimit);
        failures.extend(judge(&args, &o, &format!("err:{text}")));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A FIFO given to `--strace` is opened once (the config check only looks at it), so the
/// writer's trace is replayed whole (it hung: opened twice, the first reader took the writer).
#[test]
fn a_fifo_trace_streams_once() {
    let dir = scratch("bounds-fifo");
    let fifo = dir.join("trace.fifo");
    match Command::new("mkfifo").arg(&fifo).status() {
        Ok(s) if s.success() => {}
        _ => return skip("bounds::a_fifo_trace_streams_once", "no mkfifo"),
    }
    let trace = std::fs::read(corpus().join("strace/ordinary.strace")).unwrap();
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::write(fifo, trace))
    };
    let config = dir.join("c.toml");
    std::fs::write(&config, format!("{DEVICE}{HOST}")).unwrap();
    let args: Vec<String> = [
        "run",
        config.to_str().unwrap(),
        "--strace",
        fifo.to_str().unwrap(),
        "--set",
        "workload.strace_root=\"/tmp/work\"",
        "--out",
        dir.join("out").to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let (o, _) = run_bounded(&args, false);
    if !writer.is_finished() {
        // The run ended without reading the FIFO: release the writer, then report.
        let _ = std::fs::read(&fifo);
    }
    writer.join().unwrap().unwrap();
    assert_eq!(judge(&args, &o, "ok"), None);
    let stderr = String::from_utf8_lossy(&o.as_ref().unwrap().stderr).into_owned();
    assert!(stderr.contains("4 lines"), "{stderr}");
}
