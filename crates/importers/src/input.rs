//! How every input file is read (configs, scripts, fio job files, Filebench models, strace
//! traces, recordings given to `compare`): within stated bounds, checked before anything is
//! allocated, so that no file (a mistake, /dev/zero, a FIFO, a hostile trace) can make a run
//! grow without end. A file a parser needs whole is read once, up to [`held_bytes_max`]; a
//! trace is streamed a line at a time; no line may be longer than [`LINE_BYTES_MAX`].
//! docs/limits.md lists every cap with its reason.

use std::fmt;
use std::io::{BufRead, Read};
use std::path::Path;

/// The longest line any input may have. strace's longest ordinary line (a write's data shown
/// with `-s 65536`, each byte escaped as `\xNN`) is 256 KiB; a script's longest sensible
/// line (a brace pattern naming many files) is a few KiB. Assumption: no legitimate input
/// line is longer than 1 MiB.
pub const LINE_BYTES_MAX: usize = 1 << 20;

/// The default cap on a file that must be held whole (a config, a script, a fio job file, a
/// Filebench model, a recording): 64 MiB is a million-line script, far past any hand-written
/// or generated input the simulator is meant for. Assumption, raised with [`HELD_BYTES_ENV`].
pub const HELD_BYTES_MAX: u64 = 64 << 20;

/// The environment variable that raises (or lowers) [`HELD_BYTES_MAX`], in bytes or with a
/// unit (`TRIMLAB_INPUT_BYTES_MAX=1GiB`).
pub const HELD_BYTES_ENV: &str = "TRIMLAB_INPUT_BYTES_MAX";

/// An input that could not be read within its bounds: the file, the line (0: the file as a
/// whole) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputError {
    pub origin: String,
    pub line: u64,
    pub message: String,
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            0 => write!(f, "{}: {}", self.origin, self.message),
            n => write!(f, "{}:{}: {}", self.origin, n, self.message),
        }
    }
}

impl std::error::Error for InputError {}

/// The cap on a held file: [`HELD_BYTES_MAX`] unless [`HELD_BYTES_ENV`] sets another.
pub fn held_bytes_max() -> Result<u64, InputError> {
    match std::env::var(HELD_BYTES_ENV) {
        Ok(text) => trimlab_sim::ByteSize::parse(&text).map(|b| b.0).map_err(|e| InputError {
            origin: HELD_BYTES_ENV.to_string(),
            line: 0,
            message: e.to_string(),
        }),
        Err(_) => Ok(HELD_BYTES_MAX),
    }
}

/// The whole text of `path`, named `origin` in errors. A regular file larger than the cap is
/// refused before it is read; anything else (a FIFO, standard input, a device) is read once,
/// as a stream, and refused as soon as it passes a cap.
pub fn read_text(path: &Path, origin: &str) -> Result<String, InputError> {
    let fail = |line: u64, message: String| InputError { origin: origin.to_string(), line, message };
    let max = held_bytes_max()?;
    let meta = std::fs::metadata(path).map_err(|e| fail(0, format!("cannot read it: {e}")))?;
    if meta.is_dir() {
        return Err(fail(0, "is a directory, not a file".to_string()));
    }
    if meta.is_file() && meta.len() > max {
        return Err(fail(0, too_big(meta.len(), max)));
    }
    let file = std::fs::File::open(path).map_err(|e| fail(0, format!("cannot read it: {e}")))?;
    read_text_from(file, origin, max)
}

fn too_big(bytes: u64, max: u64) -> String {
    format!(
        "{bytes} bytes, more than the {max} a file read whole may have (docs/limits.md); \
         set {HELD_BYTES_ENV} to raise it"
    )
}

/// The whole text of `input` (standard input, a FIFO), read once up to `max` bytes, with no
/// line longer than [`LINE_BYTES_MAX`].
pub fn read_text_from(input: impl Read, origin: &str, max: u64) -> Result<String, InputError> {
    let fail = |line: u64, message: String| InputError { origin: origin.to_string(), line, message };
    let mut reader = std::io::BufReader::with_capacity(1 << 16, input.take(max.saturating_add(1)));
    let (mut bytes, mut line) = (Vec::new(), 0u64);
    loop {
        line += 1;
        match read_line(&mut reader, &mut bytes, LINE_BYTES_MAX) {
            Ok(0) => break,
            Ok(_) => {}
            Err(LineError::TooLong) => return Err(fail(line, line_too_long())),
            Err(LineError::Io(e)) => return Err(fail(line, format!("cannot read it: {e}"))),
        }
        if bytes.len() as u64 > max {
            return Err(fail(0, too_big(bytes.len() as u64, max)));
        }
    }
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count() as u64 + 1;
        fail(line, "is not UTF-8 text".to_string())
    })
}

/// How much of an error message is printed: enough for any message of ours, with the values
/// it quotes; a message quoting a hostile value whole (a 1 MiB word) is cut here.
pub const MESSAGE_CHARS_MAX: usize = 1000;

/// `text` whole if it has at most `max_chars` characters, else its start and how long it was
/// (an error echoing a 400 KB line is unreadable, and a log of such errors grows with the
/// input).
pub fn clip(text: &str, max_chars: usize) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(max_chars) {
        Some((at, _)) => format!("{}... ({} bytes)", &text[..at], text.len()).into(),
        None => text.into(),
    }
}

/// The message for a line past [`LINE_BYTES_MAX`].
pub fn line_too_long() -> String {
    format!(
        "a line longer than {LINE_BYTES_MAX} bytes (the most any input line may have, docs/limits.md): \
         not a text file of this kind?"
    )
}

/// Why [`read_line`] stopped.
#[derive(Debug)]
pub enum LineError {
    Io(std::io::Error),
    /// The line reached the cap before its end: what was read of it is discarded.
    TooLong,
}

/// Appends one line of `reader` (with its `\n`, if any) to `buf`, reading at most `max`
/// bytes of it; returns how many bytes it appended (0: the end of the input).
pub fn read_line(reader: &mut impl BufRead, buf: &mut Vec<u8>, max: usize) -> Result<usize, LineError> {
    let start = buf.len();
    loop {
        let available = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(LineError::Io(e)),
        };
        if available.is_empty() {
            return Ok(buf.len() - start);
        }
        let (take, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (available.len(), false),
        };
        if buf.len() - start + take > max {
            buf.truncate(start);
            return Err(LineError::TooLong);
        }
        buf.extend_from_slice(&available[..take]);
        reader.consume(take);
        if done {
            return Ok(buf.len() - start);
        }
    }
}

/// Whether `path` can be read, without opening it when it is not a regular file (opening a
/// FIFO to check it would block until a writer comes, and use up the writer the run needs).
pub fn check_readable(path: &Path) -> Result<(), String> {
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if meta.is_dir() {
        return Err("is a directory, not a file".to_string());
    }
    if meta.is_file() {
        std::fs::File::open(path).map_err(|e| e.to_string())?;
    }
    Ok(())
}
