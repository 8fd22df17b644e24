//! Streaming trace reader: one line in memory at a time, whatever the trace's length.

use crate::format::TraceFormat;
use crate::line::{BlkAction, FioTimeUnit, Line, LineOptions};
use crate::record::TraceRecord;
use std::io::BufRead;

/// The longest trace line read into memory. Real lines are under 200 bytes; a longer one is
/// consumed without being stored and reported, so a corrupt or hostile trace cannot make the
/// reader allocate without bound.
pub const LINE_BYTES_MAX: usize = 64 * 1024;
/// How much of a bad line an error message quotes.
pub const QUOTE_BYTES_MAX: usize = 200;

/// At most `QUOTE_BYTES_MAX` bytes of `text` (cut at a character boundary), marked when cut.
pub fn quote(text: &str) -> String {
    if text.len() <= QUOTE_BYTES_MAX {
        return text.to_string();
    }
    let mut end = QUOTE_BYTES_MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} bytes)", &text[..end], text.len())
}

/// Reads one line into `buf` (cleared first), keeping at most [`LINE_BYTES_MAX`] bytes.
/// Returns the line's length in bytes (0 at the end of the input), or `LINE_BYTES_MAX + 1`
/// for a longer line: reading stops there, since such a line is an error anyway and a line
/// may have no end (`replay /dev/zero` read forever, issue 26).
fn read_bounded_line(input: &mut impl BufRead, buf: &mut String) -> std::io::Result<usize> {
    buf.clear();
    let mut bytes = std::mem::take(buf).into_bytes();
    let mut total = 0usize;
    loop {
        let chunk = match input.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            break;
        }
        let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let room = (LINE_BYTES_MAX + 1).saturating_sub(bytes.len());
        let kept = take.min(room);
        bytes.extend_from_slice(&chunk[..kept]);
        total += kept;
        input.consume(kept);
        if done || total > LINE_BYTES_MAX {
            break;
        }
    }
    if total > LINE_BYTES_MAX {
        // Cut at a character boundary so that what is kept is still text.
        let mut keep = LINE_BYTES_MAX.min(bytes.len());
        while keep > 0 && std::str::from_utf8(&bytes[..keep]).is_err() {
            keep -= 1;
        }
        bytes.truncate(keep);
    }
    *buf = String::from_utf8(bytes).map_err(|_| {
        std::io::Error::new(std::io::ErrorKind::InvalidData, "the line is not valid UTF-8 text")
    })?;
    Ok(total)
}

#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("{source_name}:{line}: {message}; expected {expected}")]
    BadLine { source_name: String, line: u64, message: String, expected: String },
    #[error("{source_name}: cannot tell the trace format from its first line \"{first}\"; name it with --format (known: blkparse, ftrace-blk, fio-v2, fio-v3, msr, mqsim, disksim)")]
    UnknownFormat { source_name: String, first: String },
    #[error("{source_name}: no {action} events among {other} block events; replay another action with --blk-action (Q, D or C)")]
    NoEventsOfAction { source_name: String, action: &'static str, other: u64 },
    #[error("{source_name}:{line}: cannot read: {error}")]
    Io { source_name: String, line: u64, error: std::io::Error },
    #[error("{source_name}:{line}: the line is longer than {LINE_BYTES_MAX} bytes, the most a trace line may be (it starts \"{start}\")")]
    LineTooLong { source_name: String, line: u64, bytes: usize, start: String },
}

#[derive(Clone, Copy, Debug)]
pub struct ReaderOptions {
    pub format: Option<TraceFormat>,
    pub blk_action: BlkAction,
    pub fio_time_unit: FioTimeUnit,
    /// Count malformed lines instead of stopping at the first.
    pub skip_bad: bool,
}

impl Default for ReaderOptions {
    fn default() -> Self {
        ReaderOptions {
            format: None,
            blk_action: BlkAction::Issue,
            fio_time_unit: FioTimeUnit::Micros,
            skip_bad: false,
        }
    }
}

pub struct TraceReader<R> {
    input: R,
    source_name: String,
    format: TraceFormat,
    options: LineOptions,
    skip_bad: bool,
    line_no: u64,
    buf: String,
    /// The line read to detect the format, parsed first.
    pending: Option<String>,
    first_time_ns: Option<u64>,
    requests: u64,
    skipped_bad: u64,
    other_action_events: u64,
    done: bool,
}

impl<R: BufRead> TraceReader<R> {
    /// Opens a trace; detects the format from its first meaningful line unless one is named.
    pub fn new(mut input: R, source_name: &str, options: ReaderOptions) -> Result<Self, TraceError> {
        let mut line_no = 0;
        let mut pending = None;
        let mut buf = String::new();
        let format = match options.format {
            Some(f) => f,
            None => loop {
                buf.clear();
                line_no += 1;
                let n = read_bounded_line(&mut input, &mut buf).map_err(|error| TraceError::Io {
                    source_name: source_name.to_string(),
                    line: line_no,
                    error,
                })?;
                if n > LINE_BYTES_MAX {
                    return Err(TraceError::LineTooLong {
                        source_name: source_name.to_string(),
                        line: line_no,
                        bytes: n,
                        start: quote(&buf),
                    });
                }
                if n == 0 {
                    // An empty trace: any format reads it as empty.
                    break TraceFormat::FioV3;
                }
                let t = buf.trim();
                if t.is_empty() || t.starts_with('#') {
                    continue;
                }
                match TraceFormat::detect(t) {
                    Some(f) => {
                        pending = Some(std::mem::take(&mut buf));
                        line_no -= 1;
                        break f;
                    }
                    None => {
                        return Err(TraceError::UnknownFormat {
                            source_name: source_name.to_string(),
                            first: quote(t),
                        })
                    }
                }
            },
        };
        Ok(TraceReader {
            input,
            source_name: source_name.to_string(),
            format,
            options: LineOptions { blk_action: options.blk_action, fio_time_unit: options.fio_time_unit },
            skip_bad: options.skip_bad,
            line_no,
            buf: String::new(),
            pending,
            first_time_ns: None,
            requests: 0,
            skipped_bad: 0,
            other_action_events: 0,
            done: false,
        })
    }

    pub fn format(&self) -> TraceFormat {
        self.format
    }

    /// Malformed lines skipped so far (with `skip_bad`).
    pub fn skipped_bad(&self) -> u64 {
        self.skipped_bad
    }

    pub fn lines_read(&self) -> u64 {
        self.line_no
    }

    /// Times become relative to the first request; a request stamped before it (per-CPU
    /// buffers are not merged in order) counts as time zero.
    fn accept(&mut self, mut record: TraceRecord) -> TraceRecord {
        if let Some(t) = record.time_ns {
            let first = *self.first_time_ns.get_or_insert(t);
            record.time_ns = Some(t.saturating_sub(first));
        }
        self.requests += 1;
        record
    }

    /// The next line as a request straight from the input's buffer, when it is a plain fio
    /// iolog read/write/trim line that lies whole in the buffer (`line::fio_fast`); `None`
    /// leaves the input untouched for `next_line` and the general parser. Traces are mostly
    /// such lines, and this path is what lets a replay parse millions of them per second.
    fn next_fast(&mut self) -> Option<TraceRecord> {
        let fast = self.format.spec().fast?;
        if self.pending.is_some() {
            return None;
        }
        // An error here (or an interrupted read) is met again, and reported, by `next_line`.
        let chunk = self.input.fill_buf().ok()?;
        let (record, used) = fast(chunk, self.options.fio_time_unit)?;
        if used > LINE_BYTES_MAX {
            return None;
        }
        self.input.consume(used);
        self.line_no += 1;
        Some(record)
    }

    fn next_line(&mut self) -> Result<bool, TraceError> {
        if let Some(line) = self.pending.take() {
            self.buf = line;
            self.line_no += 1;
            return Ok(true);
        }
        self.line_no += 1;
        let n = read_bounded_line(&mut self.input, &mut self.buf).map_err(|error| TraceError::Io {
            source_name: self.source_name.clone(),
            line: self.line_no,
            error,
        })?;
        if n > LINE_BYTES_MAX {
            return Err(TraceError::LineTooLong {
                source_name: self.source_name.clone(),
                line: self.line_no,
                bytes: n,
                start: quote(&self.buf),
            });
        }
        Ok(n > 0)
    }
}

impl<R: BufRead> Iterator for TraceReader<R> {
    type Item = Result<TraceRecord, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        loop {
            if let Some(record) = self.next_fast() {
                return Some(Ok(self.accept(record)));
            }
            match self.next_line() {
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
                Ok(false) => {
                    self.done = true;
                    if self.requests == 0 && self.other_action_events > 0 {
                        let action = match self.options.blk_action {
                            BlkAction::Queue => "Q",
                            BlkAction::Issue => "D",
                            BlkAction::Complete => "C",
                        };
                        return Some(Err(TraceError::NoEventsOfAction {
                            source_name: self.source_name.clone(),
                            action,
                            other: self.other_action_events,
                        }));
                    }
                    return None;
                }
                Ok(true) => {}
            }
            match self.format.parse_line(&self.buf, &self.options) {
                Line::Skip => {}
                Line::OtherAction => self.other_action_events += 1,
                Line::Bad(message) => {
                    if self.skip_bad {
                        self.skipped_bad += 1;
                        continue;
                    }
                    self.done = true;
                    return Some(Err(TraceError::BadLine {
                        source_name: self.source_name.clone(),
                        line: self.line_no,
                        message: format!("{} in \"{}\"", quote(&message), quote(self.buf.trim())),
                        expected: self.format.layout().to_string(),
                    }));
                }
                Line::Request(record) => return Some(Ok(self.accept(record))),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::CommandKind;

    fn read_all(text: &str, options: ReaderOptions) -> Result<Vec<TraceRecord>, TraceError> {
        TraceReader::new(text.as_bytes(), "t.txt", options)?.collect()
    }

    #[test]
    fn detects_and_makes_time_relative() {
        let text = "# a comment\n\n  8,0 0 1 5.000000000 1 D W 0 + 8 [a]\n  8,0 0 2 5.000001000 1 D DS 8 + 8 [b]\nCPU0 (8,0):\n";
        let records = read_all(text, ReaderOptions::default()).unwrap();
        assert_eq!(records.len(), 2);
        assert_eq!(records[0].time_ns, Some(0));
        assert_eq!(records[1].time_ns, Some(1000));
        assert_eq!(records[1].op, CommandKind::Trim);
    }

    #[test]
    fn a_bad_line_names_file_line_and_layout() {
        let text = "fio version 3 iolog\n0 f add\n10 f write 0 4096\n20 f write zero 4096\n";
        let err = read_all(text, ReaderOptions::default()).unwrap_err().to_string();
        assert!(err.starts_with("t.txt:4: "), "{err}");
        assert!(err.contains("TIMESTAMP FILE ACTION"), "{err}");
    }

    #[test]
    fn skip_bad_counts_and_goes_on() {
        let text = "fio version 3 iolog\n10 f write 0 4096\n20 f write zero 4096\n30 f trim 0 4096\n";
        let mut reader =
            TraceReader::new(text.as_bytes(), "t", ReaderOptions { skip_bad: true, ..Default::default() })
                .unwrap();
        let records: Vec<_> = reader.by_ref().collect::<Result<_, _>>().unwrap();
        assert_eq!(records.len(), 2);
        assert_eq!(reader.skipped_bad(), 1);
    }

    #[test]
    fn unknown_format_and_wrong_action_are_explained() {
        let err = read_all("hello there\n", ReaderOptions::default()).unwrap_err().to_string();
        assert!(err.contains("--format"), "{err}");
        let err =
            read_all("  8,0 0 1 0.1 1 Q W 0 + 8 [a]\n", ReaderOptions::default()).unwrap_err().to_string();
        assert!(err.contains("--blk-action"), "{err}");
        let queued = read_all(
            "  8,0 0 1 0.1 1 Q W 0 + 8 [a]\n",
            ReaderOptions { blk_action: BlkAction::Queue, ..Default::default() },
        )
        .unwrap();
        assert_eq!(queued.len(), 1);
    }

    /// A reader that yields `n` bytes of 'x' without a newline, then "\n10 f write 0 4096\n",
    /// without ever holding the long line in memory.
    struct Endless {
        left: usize,
        tail: &'static [u8],
    }

    impl std::io::Read for Endless {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            if self.left > 0 {
                let n = out.len().min(self.left);
                out[..n].fill(b'x');
                self.left -= n;
                return Ok(n);
            }
            let n = out.len().min(self.tail.len());
            out[..n].copy_from_slice(&self.tail[..n]);
            self.tail = &self.tail[n..];
            Ok(n)
        }
    }

    #[test]
    fn a_huge_line_is_refused_with_a_short_quote_and_bounded_memory() {
        // Issue 13 item 9: a 200 MB line took 0.6-2 GB and was echoed whole. Here 100 MB stream
        // through an 8 KiB buffer; the error quotes at most 200 bytes.
        let input = Endless { left: 100 << 20, tail: b"\n" };
        let text = "fio version 3 iolog\n";
        let reader = std::io::BufReader::with_capacity(8192, std::io::Read::chain(text.as_bytes(), input));
        let mut r = TraceReader::new(reader, "big.log", ReaderOptions::default()).unwrap();
        let err = r.next().unwrap().unwrap_err().to_string();
        assert!(
            err.starts_with("big.log:2: the line is longer than 65536 bytes"),
            "{}",
            &err[..300.min(err.len())]
        );
        assert!(err.len() < 500, "the error quotes at most 200 bytes: {} bytes", err.len());
        assert!(r.next().is_none());
        // Format detection bounds the first line too.
        let input = Endless { left: 10 << 20, tail: b"\n" };
        let err = TraceReader::new(std::io::BufReader::new(input), "d", ReaderOptions::default())
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("longer than 65536 bytes") && err.len() < 500, "{err}");
        // A bad line of 60 KB (under the bound) is quoted short as well.
        let long = format!("fio version 3 iolog\n10 f write 0 {}\n", "9".repeat(60_000));
        let err = read_all(&long, ReaderOptions::default()).unwrap_err().to_string();
        assert!(err.len() < 700, "{} bytes: {}", err.len(), &err[..300]);
        assert_eq!(quote("héllo"), "héllo");
        let q = quote(&"é".repeat(300));
        assert!(q.len() <= 220 && q.ends_with("(600 bytes)"), "{q}");
    }

    /// Issue 26: `replay /dev/zero` read forever: a line without an end is refused once it is
    /// longer than the bound, with or without a named format.
    #[test]
    fn a_line_without_end_is_refused_after_the_bound() {
        let zeros = || std::io::BufReader::new(std::io::repeat(0));
        let err = TraceReader::new(zeros(), "/dev/zero", ReaderOptions::default()).err().unwrap().to_string();
        assert!(err.starts_with("/dev/zero:1: the line is longer than 65536 bytes"), "{}", &err[..100]);
        let named =
            ReaderOptions { format: Some(TraceFormat::Blkparse), skip_bad: true, ..Default::default() };
        let mut r = TraceReader::new(zeros(), "/dev/zero", named).unwrap();
        assert!(r.next().unwrap().is_err());
        assert!(r.next().is_none());
        let fio = ReaderOptions { format: Some(TraceFormat::FioV3), ..Default::default() };
        let mut r = TraceReader::new(zeros(), "/dev/zero", fio).unwrap();
        assert!(r.next().unwrap().is_err());
    }

    /// Lines cut by the end of the read buffer, and lines the fast path leaves to the general
    /// parser, read the same whatever the buffer's size; a bad line keeps its number.
    #[test]
    fn records_and_errors_do_not_depend_on_the_buffer() {
        let text = "fio version 3 iolog\n0 f add\n10 f write 0 4096\n# c\n\n20 f trim 4096 4096\r\n30 f sync\n 40\tf read 8192 512 \n50 f write 1 2 3\n60 f write 4096 0\n70 f write +8192 4096\n80 f write 8192 4096";
        let expected = [
            (Some(0), CommandKind::Write, 0, 4096),
            (Some(10_000), CommandKind::Trim, 4096, 4096),
            (Some(20_000), CommandKind::Flush, 0, 0),
            (Some(30_000), CommandKind::Read, 8192, 512),
            (Some(40_000), CommandKind::Write, 1, 2),
            (Some(60_000), CommandKind::Write, 8192, 4096),
            (Some(70_000), CommandKind::Write, 8192, 4096),
        ];
        let bad = format!("{text}\n90 f write 0 4096\n100 f write 0 x\n");
        for capacity in (1..=48).chain([1 << 20]) {
            let input = std::io::BufReader::with_capacity(capacity, text.as_bytes());
            let mut reader = TraceReader::new(input, "t", ReaderOptions::default()).unwrap();
            let records: Vec<_> = reader.by_ref().map(|r| r.unwrap()).collect();
            let got: Vec<_> = records.iter().map(|r| (r.time_ns, r.op, r.offset, r.bytes)).collect();
            assert_eq!(got, expected, "buffer of {capacity} bytes");
            assert_eq!(reader.lines_read(), 13, "buffer of {capacity} bytes");
            let input = std::io::BufReader::with_capacity(capacity, bad.as_bytes());
            let err = TraceReader::new(input, "t", ReaderOptions::default())
                .unwrap()
                .find_map(Result::err)
                .unwrap()
                .to_string();
            assert!(err.starts_with("t:14: offset \"0\" or length \"x\""), "{capacity}: {err}");
        }
    }

    #[test]
    fn an_empty_trace_is_empty() {
        assert!(read_all("", ReaderOptions::default()).unwrap().is_empty());
        assert!(read_all("\n# only comments\n", ReaderOptions::default()).unwrap().is_empty());
    }
}
