//! `trimlab bench`'s strace case (issue 23 item 3): a synthetic `strace -f -ttt` trace of
//! 10 million lines (1 million with --quick) streamed through `[workload] kind = "strace"` on
//! ext4 with online discard over the 8 GiB `nvme-tlc` drive, end to end as `trimlab run` runs
//! it. Reports trace lines per wall second against the issue's goal (1 M/s) and the peak
//! resident set at a tenth of the length and at the whole (equal when memory does not grow
//! with the trace's length).
//!
//! The trace's mix follows the recorded programs of tests/data/strace: four processes, each
//! line one of an open, a stat and a read of a library outside the root, writes (sequential
//! and pwrite64), an fsync every fourth file, close, an unlink of the file written 64 files
//! before (so the file system stays at a fixed size), a rename, and a write split across an
//! `<unfinished ...>` / `<... resumed>` pair. One file in the root costs 16 lines, 7 of them
//! file-system calls.
//!
//! Wall-clock time and /proc are read here, at the edge, never inside the model.
// Bench measures wall-clock speed of the model; the model itself runs on simulated time.
#![allow(clippy::disallowed_methods)]

use crate::ui::Ui;
use anyhow::{Context, Result};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The issue's goal: trace lines per wall second.
const GOAL_LINES_PER_S: f64 = 1e6;
const PIDS: u64 = 4;
/// Files each process keeps before unlinking its oldest.
const LIVE_FILES: u64 = 64;

/// Removes the generated trace however the case ends.
struct TempTrace(PathBuf);

impl Drop for TempTrace {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

pub fn run(quick: bool, ui: &mut dyn Ui) -> Result<()> {
    ui.line(&format!(
        "\n{:<26} {:>10} {:>8} {:>12} {:>8} {:>8} {:>12} {:>10} {:>14}",
        "strace replay",
        "lines",
        "wall s",
        "lines/s",
        "x goal",
        "cpu s",
        "lines/cpu s",
        "file ops",
        "peak RSS MiB"
    ));
    let full: u64 = if quick { 1_000_000 } else { 10_000_000 };
    for lines in [full / 10, full] {
        case(lines, ui)?;
    }
    Ok(())
}

fn case(lines: u64, ui: &mut dyn Ui) -> Result<()> {
    let path = std::env::temp_dir().join(format!("trimlab-bench-strace-{}.strace", std::process::id()));
    let _guard = TempTrace(path.clone());
    write_trace(&path, lines)?;
    let config = format!(
        "[device]\npreset = \"nvme-tlc\"\nlogical_bytes = \"8GiB\"\n[host]\nfs = \"ext4\"\ndiscard = \"discard\"\n\
         [workload]\nkind = \"strace\"\nstrace = {:?}\nstrace_root = \"/w\"\n",
        path.display().to_string(),
    );
    let config = trimlab_scenario::RunConfig::parse_with(&config, "bench strace", &[])?;
    crate::replay::reset_peak_rss();
    let wall = Instant::now();
    let cpu0 = cpu_seconds();
    let result = trimlab_scenario::run(&config, Some(1), &mut ()).context("bench strace")?;
    let wall_s = wall.elapsed().as_secs_f64();
    let cpu_s = cpu_seconds().zip(cpu0).map_or(f64::NAN, |(b, a)| b - a);
    let figure = |key: &str| -> u64 {
        result.metrics["phases"]
            .as_array()
            .map(|phases| phases.iter().filter_map(|p| p["figures"][key].as_u64()).sum())
            .unwrap_or(0)
    };
    let read = figure("lines");
    anyhow::ensure!(read == lines, "bench strace: {read} of {lines} lines replayed");
    anyhow::ensure!(figure("malformed_lines") == 0, "bench strace: the synthetic trace has malformed lines");
    let rate = lines as f64 / wall_s;
    ui.line(&format!(
        "{:<26} {:>10} {:>8.2} {:>12.0} {:>8.2} {:>8.2} {:>12.0} {:>10} {:>14.1}",
        format!("8GiB ext4 discard {}M lines", lines as f64 / 1e6),
        lines,
        wall_s,
        rate,
        rate / GOAL_LINES_PER_S,
        cpu_s,
        lines as f64 / cpu_s,
        figure("file_ops"),
        crate::machine::peak_rss_bytes().map_or(0.0, |b| b as f64 / (1 << 20) as f64)
    ));
    Ok(())
}

/// The trace file being written: its clock and line count.
struct TraceFile {
    out: std::io::BufWriter<std::fs::File>,
    t_us: u64,
    written: u64,
}

impl TraceFile {
    fn line(&mut self, pid: u64, text: &str) -> Result<()> {
        self.t_us += 3;
        self.written += 1;
        writeln!(self.out, "{pid} {}.{:06} {text}", self.t_us / 1_000_000, self.t_us % 1_000_000)?;
        Ok(())
    }
}

/// This process's user + system CPU time (/proc/self/stat, in clock ticks of 1/100 s), so that
/// a machine shared with other work still shows the replay's own cost.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

/// Writes `lines` lines of the mix the module's comment describes.
fn write_trace(path: &Path, lines: u64) -> Result<()> {
    let file = std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let out = std::io::BufWriter::with_capacity(1 << 20, file);
    let mut t = TraceFile { out, t_us: 1_700_000_000_000_000, written: 0 };
    for pid in 0..PIDS {
        t.line(100 + pid, &format!("mkdir(\"/w/p{pid}\", 0755) = 0"))?;
    }
    let mut file = 0u64;
    while t.written < lines {
        let pid = 100 + file % PIDS;
        let n = file / PIDS;
        let name = format!("/w/p{}/f{n}", file % PIDS);
        for text in file_lines(&name, n) {
            if t.written == lines {
                break;
            }
            t.line(pid, &text)?;
        }
        file += 1;
    }
    t.out.flush().with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// The 16 lines of one file (`n`: the process's file number).
fn file_lines(name: &str, n: u64) -> Vec<String> {
    let data = "\"0123456789abcdef0123456789abcdef\"...";
    let mut v = vec![
        "openat(AT_FDCWD, \"/usr/lib/x86_64-linux-gnu/libc.so.6\", O_RDONLY|O_CLOEXEC) = 3".to_string(),
        r#"read(3, "\177ELF\2\1\1\3\0\0\0\0\0\0\0\0\3\0>\0\1\0\0\0"..., 832) = 832"#.to_string(),
        "newfstatat(3, \"\", {st_mode=S_IFREG|0755, st_size=2125328, ...}, AT_EMPTY_PATH) = 0".to_string(),
        "close(3)                                = 0".to_string(),
        format!("openat(AT_FDCWD, \"{name}\", O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0644) = 4"),
        format!("write(4, {data}, 4096) = 4096"),
        format!("write(4, {data}, 4096 <unfinished ...>"),
        "<... write resumed>) = 4096".to_string(),
        format!("pwrite64(4, {data}, 512, 0) = 512"),
        "newfstatat(AT_FDCWD, \"/etc/localtime\", {st_mode=S_IFREG|0644, st_size=114, ...}, 0) = 0"
            .to_string(),
        format!("access(\"{name}.lock\", F_OK) = -1 ENOENT (No such file or directory)"),
        if n % 4 == 3 {
            "fsync(4) = 0".to_string()
        } else {
            "fdatasync(-1) = -1 EBADF (Bad file descriptor)".to_string()
        },
        "close(4) = 0".to_string(),
        format!("rename(\"{name}\", \"{name}.done\") = 0"),
        "lseek(0, 0, SEEK_CUR) = -1 ESPIPE (Illegal seek)".to_string(),
    ];
    let old =
        n.checked_sub(LIVE_FILES).map(|o| format!("{}/f{o}.done", name.rsplit_once('/').map_or("", |p| p.0)));
    v.push(match old {
        Some(o) => format!("unlink(\"{o}\") = 0"),
        None => "getcwd(\"/w\", 4096) = 3".to_string(),
    });
    v
}
