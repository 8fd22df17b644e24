//! Filebench workload models (`[workload] kind = "filebench"`, `trimlab run --filebench
//! FILE.f`): Filebench's workload model language read into a [`Model`] (filesets, threads,
//! flowops) and run on the simulated file system with Filebench's semantics: how a fileset's
//! tree and sizes are drawn, which entries preallocation creates, how flowops pick files
//! (rotors over existing and not-existing entries), and threads taking turns in simulated
//! time. docs/config.md, "Filebench workload models", lists what is read and what is not.

// fileset and value are public only for their tests in tests/importers/ (the lib has no test
// harness); no API beyond the re-exports below.
#[doc(hidden)]
pub mod fileset;
mod model;
mod parser;
mod run;
#[doc(hidden)]
pub mod value;

pub use model::{FilesetDef, FlowopKind, Mode, Model, FLOWOPS};
pub use parser::parse;
pub use run::{run, Outcome};

use crate::input::{clip, MESSAGE_CHARS_MAX};
use std::fmt;

/// A model error: the file, the line, the line's text and what was wrong (or is accepted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilebenchError {
    pub origin: String,
    /// 1-based.
    pub line: usize,
    pub text: String,
    pub message: String,
}

impl FilebenchError {
    pub fn new(origin: &str, line: usize, text: &str, message: impl Into<String>) -> FilebenchError {
        FilebenchError { origin: origin.to_string(), line, text: text.to_string(), message: message.into() }
    }
}

impl fmt::Display for FilebenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (text, message) = (clip(&self.text, 160), clip(&self.message, MESSAGE_CHARS_MAX));
        write!(f, "{}:{}: `{}`: {}", self.origin, self.line, text, message)
    }
}

impl std::error::Error for FilebenchError {}

impl Outcome {
    /// The run's figures for metrics.json: each flowop kind's count under its Filebench name,
    /// then bytes, preallocation, the run's time and how it ended.
    pub fn figures(&self) -> Vec<(&'static str, u64)> {
        let mut out: Vec<(&'static str, u64)> = self.counts.iter().map(|(k, n)| (k.name(), *n)).collect();
        out.extend([
            ("flowops", self.counts.values().sum()),
            ("bytes_read", self.bytes_read),
            ("bytes_written", self.bytes_written),
            ("prealloc_files", self.prealloc_files),
            ("prealloc_bytes", self.prealloc_bytes),
            ("run_ns", self.run_ns),
            ("io_latency_ns", self.io_latency_ns),
            ("deletes_skipped", self.deletes_skipped),
            ("stopped_early_line", self.stopped_early_line),
        ]);
        out
    }
}
