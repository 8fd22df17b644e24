//! strace replay (`[workload] kind = "strace"`): a real program's file operations, as
//! `strace -f -ttt -e trace=%file,%desc,%process,write,pwrite64,fsync,fdatasync,ftruncate,fallocate`
//! printed them, replayed through the file-system model (docs/config.md, "strace replay").
//!
//! The trace is streamed a line at a time: memory is bounded by the live processes, their open
//! descriptors and the files the model holds, never by the trace's length. Lines that cannot
//! be replayed (a path outside the root, a truncated line, a call the model has no operation
//! for) are counted and reported in the run's figures; only a failure of the model itself (no
//! space left) or of reading the trace stops the run, with `file:line`.

mod line;
mod process;
mod replayer;

pub use line::{parse as parse_line, Body, Line};
pub use replayer::Replayer;

use std::fmt;
use std::io::BufRead;
use trimlab_device::BlockDevice;
use trimlab_fs::FileSystem;

/// How a trace is replayed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StraceOptions {
    /// The absolute directory that stands for the model's mount point: paths below it are
    /// replayed, all others (/proc, /dev, /usr, the compiler's headers) skipped. The traced
    /// program's first working directory is taken to be this one.
    pub root: String,
    /// A pause between two lines longer than this is cut to it (None: every pause is kept,
    /// Some(0): the trace runs back to back).
    pub gap_max_ns: Option<u64>,
    /// Replay reads too (they always move file positions; with this they also cost device
    /// time).
    pub reads: bool,
}

/// What a replay did and skipped, by reason (the run's figures).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Calls into the file-system model (create, write, fsync, unlink, ...).
    pub file_ops: u64,
    pub lines: u64,
    /// Calls that change nothing on the device (stat, access, getdents, mmap, ...).
    pub calls_without_effect: u64,
    /// Calls the trace shows failing (`= -1 ENOENT`): they changed nothing.
    pub failed_calls: u64,
    /// Calls on paths or descriptors outside the root (pipes, sockets, /dev, /usr, ...).
    pub outside_root: u64,
    /// Calls on a descriptor the trace never showed opened (inherited by the first process).
    pub unknown_fd: u64,
    /// Calls of a name this reader does not know.
    pub unknown_syscalls: u64,
    /// Lines that are not strace's (a truncated line, a foreign format).
    pub malformed_lines: u64,
    /// The first of them (0: none), to look at.
    pub first_malformed_line: u64,
    /// Calls the model has no operation for (link, symlink, RENAME_EXCHANGE, fallocate's
    /// collapse and insert range).
    pub unsupported: u64,
    /// Calls the model refused (a rename of a file it does not have, rmdir of a directory it
    /// holds files in): the trace and the model disagree about what existed before.
    pub refused_by_model: u64,
    /// Files the trace uses without creating: they existed before it started.
    pub preexisting_files: u64,
    pub preexisting_dirs: u64,
    /// Bytes written to give pre-existing files the size the trace implies (st_size, reads,
    /// SEEK_END), before the trace changed them.
    pub preexisting_bytes: u64,
    /// Simulated time cut from pauses longer than `gap_max_ns`.
    pub gaps_cut_ns: u64,
    /// The most processes live at once.
    pub processes_max: u64,
}

impl Counts {
    /// The counts as a run's named figures.
    pub fn figures(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("file_ops", self.file_ops),
            ("lines", self.lines),
            ("calls_without_effect", self.calls_without_effect),
            ("failed_calls", self.failed_calls),
            ("outside_root", self.outside_root),
            ("unknown_fd", self.unknown_fd),
            ("unknown_syscalls", self.unknown_syscalls),
            ("malformed_lines", self.malformed_lines),
            ("first_malformed_line", self.first_malformed_line),
            ("unsupported", self.unsupported),
            ("refused_by_model", self.refused_by_model),
            ("preexisting_files", self.preexisting_files),
            ("preexisting_dirs", self.preexisting_dirs),
            ("preexisting_bytes", self.preexisting_bytes),
            ("gaps_cut_ns", self.gaps_cut_ns),
            ("processes_max", self.processes_max),
        ]
    }
}

/// A replay that could not go on: where (the trace and line) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StraceError {
    pub origin: String,
    /// 1-based; 0 when the trace could not be opened.
    pub line: u64,
    pub message: String,
}

impl fmt::Display for StraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            0 => write!(f, "{}: {}", self.origin, self.message),
            n => write!(f, "{}:{}: {}", self.origin, n, self.message),
        }
    }
}

impl std::error::Error for StraceError {}

/// Replays every line of `reader` (named `origin` in errors) on `fs`.
pub fn replay<R: BufRead, D: BlockDevice>(
    mut reader: R,
    origin: &str,
    fs: &mut FileSystem<D>,
    options: &StraceOptions,
) -> Result<Counts, StraceError> {
    let mut replayer = Replayer::new(options.clone());
    let mut buf = Vec::with_capacity(512);
    let mut number = 0u64;
    loop {
        buf.clear();
        let n = reader.read_until(b'\n', &mut buf).map_err(|e| StraceError {
            origin: origin.to_string(),
            line: number + 1,
            message: format!("cannot read the trace: {e}"),
        })?;
        if n == 0 {
            break;
        }
        number += 1;
        let text = String::from_utf8_lossy(&buf);
        replayer.line(fs, &text, number).map_err(|message| StraceError {
            origin: origin.to_string(),
            line: number,
            message: format!("`{}`: {message}", shorten(text.trim_end())),
        })?;
    }
    Ok(replayer.finish())
}

/// A line as an error quotes it (a write's data can make lines long).
fn shorten(text: &str) -> &str {
    match text.char_indices().nth(160) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

/// Checks `root` is a usable `strace_root` (absolute) and returns it normalized.
pub fn check_root(root: &str) -> Result<String, String> {
    if !root.starts_with('/') {
        return Err(format!(
            "{root:?} is not an absolute path (the directory the traced program worked in, e.g. \"/tmp/work\")"
        ));
    }
    Ok(process::absolute("/", root))
}
