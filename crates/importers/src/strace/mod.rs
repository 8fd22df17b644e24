//! strace replay (`[workload] kind = "strace"`): a real program's file operations, as
//! `strace -f -ttt -e trace=%file,%desc,%process,write,pwrite64,fsync,fdatasync,ftruncate,fallocate`
//! printed them, replayed through the file-system model (docs/config.md, "strace replay").
//!
//! The trace is streamed a line at a time: memory is bounded by the live processes, their open
//! descriptors and the files the model holds, never by the trace's length. Lines that cannot
//! be replayed (a path outside the root, a truncated line, a call the model has no operation
//! for) are counted and reported in the run's figures; only a failure of the model itself (no
//! space left) or of reading the trace stops the run, with `file:line`.

// line, process and replayer are public only for their tests in tests/importers/ (the lib
// has no test harness); no API beyond the re-exports below.
#[doc(hidden)]
pub mod line;
#[doc(hidden)]
pub mod process;
#[doc(hidden)]
pub mod replayer;

pub use line::{parse as parse_line, Body, Line};
pub use replayer::Replayer;

use crate::input::{clip, MESSAGE_CHARS_MAX};
use std::collections::BTreeMap;
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
    /// `unknown_syscalls` by name (issue 43: "149 unknown calls" named none), at most
    /// [`UNKNOWN_NAMES_MAX`] names, the calls of any further name under [`OTHER_NAMES`].
    pub unknown_by_name: BTreeMap<String, u64>,
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
    /// Call lines without a timestamp (strace run without -ttt): they replay back to back.
    pub untimed_calls: u64,
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
        .into_iter()
        // Only when there are some: a timed trace's figures stay as they were.
        .chain((self.untimed_calls > 0).then_some(("untimed_calls", self.untimed_calls)))
        .collect()
    }
}

/// Distinct unknown call names kept by name: more than Linux has system calls (about 450), so
/// only a trace that is not strace's reaches it, and memory stays bounded then.
pub const UNKNOWN_NAMES_MAX: usize = 1000;

/// Where the calls of names past [`UNKNOWN_NAMES_MAX`] are counted.
pub const OTHER_NAMES: &str = "(other names)";

impl Counts {
    /// One call of `name`, which this reader does not know.
    pub fn unknown_call(&mut self, name: &str) {
        self.unknown_syscalls += 1;
        let key =
            match self.unknown_by_name.contains_key(name) || self.unknown_by_name.len() < UNKNOWN_NAMES_MAX {
                true => name,
                false => OTHER_NAMES,
            };
        *self.unknown_by_name.entry(key.to_string()).or_insert(0) += 1;
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
            0 => write!(f, "{}: {}", self.origin, clip(&self.message, MESSAGE_CHARS_MAX)),
            n => write!(f, "{}:{}: {}", self.origin, n, clip(&self.message, MESSAGE_CHARS_MAX)),
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
        // A line is capped (`--strace /dev/zero` is one endless line): the error comes at
        // the cap, not when memory runs out.
        let n =
            crate::input::read_line(&mut reader, &mut buf, crate::input::LINE_BYTES_MAX).map_err(|e| {
                let message = match e {
                    crate::input::LineError::Io(e) => format!("cannot read the trace: {e}"),
                    crate::input::LineError::TooLong => crate::input::line_too_long(),
                };
                StraceError { origin: origin.to_string(), line: number + 1, message }
            })?;
        if n == 0 {
            break;
        }
        number += 1;
        // Valid UTF-8 is borrowed as it is (the lossy scan is several times slower).
        let text = match std::str::from_utf8(&buf) {
            Ok(t) => std::borrow::Cow::Borrowed(t),
            Err(_) => String::from_utf8_lossy(&buf),
        };
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
        return Err(
            "must be an absolute path: the directory the traced program worked in, e.g. \"/tmp/work\"".into(),
        );
    }
    Ok(process::absolute("/", root))
}
