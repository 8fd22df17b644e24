//! Streaming trace reader: one line in memory at a time, whatever the trace's length.

use crate::format::TraceFormat;
use crate::line::{self, BlkAction, FioTimeUnit, Line, LineOptions};
use crate::record::TraceRecord;
use std::io::BufRead;

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
                let n = input.read_line(&mut buf).map_err(|error| TraceError::Io {
                    source_name: source_name.to_string(),
                    line: line_no,
                    error,
                })?;
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
                            first: t.chars().take(120).collect(),
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

    fn next_line(&mut self) -> Result<bool, TraceError> {
        if let Some(line) = self.pending.take() {
            self.buf = line;
            self.line_no += 1;
            return Ok(true);
        }
        self.buf.clear();
        self.line_no += 1;
        let n = self.input.read_line(&mut self.buf).map_err(|error| TraceError::Io {
            source_name: self.source_name.clone(),
            line: self.line_no,
            error,
        })?;
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
            match line::parse(self.format, &self.buf, &self.options) {
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
                        message: format!(
                            "{message} in \"{}\"",
                            self.buf.trim().chars().take(160).collect::<String>()
                        ),
                        expected: self.format.layout().to_string(),
                    }));
                }
                Line::Request(mut record) => {
                    // Times become relative to the first request; a request stamped before it
                    // (per-CPU buffers are not merged in order) counts as time zero.
                    if let Some(t) = record.time_ns {
                        let first = *self.first_time_ns.get_or_insert(t);
                        record.time_ns = Some(t.saturating_sub(first));
                    }
                    self.requests += 1;
                    return Some(Ok(record));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::TraceOp;

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
        assert_eq!(records[1].op, TraceOp::Trim);
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

    #[test]
    fn an_empty_trace_is_empty() {
        assert!(read_all("", ReaderOptions::default()).unwrap().is_empty());
        assert!(read_all("\n# only comments\n", ReaderOptions::default()).unwrap().is_empty());
    }
}
