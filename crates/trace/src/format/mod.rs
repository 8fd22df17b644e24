//! The trace formats trimlab reads: the registry ([`FORMATS`]) and what every format declares
//! ([`FormatSpec`]: its name, the layout of a line, how to recognise its first line, its line
//! parser). Each format lives in its own file here.
//!
//! Binary formats are read through a text rendering: `blktrace_bin` merges blktrace's per-CPU
//! files into blkparse's lines behind a header line that its `detect` knows
//! ([`is_binary_trace`] tells the opener which files to hand it).
//!
//! Adding a format: one file that defines its `TraceFormat` constant and its `SPEC` (a new
//! parser can use `crate::line`'s shared pieces), and its
//! module's name in the `registry!` list of [`FORMATS`] (one line).

use crate::line::{FioTimeUnit, Line, LineOptions};
use crate::record::TraceRecord;

trimlab_sim::registry! {
    /// Every format, in the order detection tries them (the first whose `detect` accepts the
    /// first meaningful line wins) and help lists them.
    pub const FORMATS: FormatSpec = [
        fio_v2,
        fio_v3,
        msr,
        pub blktrace_bin,
        blkparse,
        ftrace_blk,
        disksim,
        mqsim,
    ];
}

/// A trace format's identity: its name for `--format`. Values come from a format's file
/// (`TraceFormat::FioV3`), [`TraceFormat::parse`] or detection, so each is registered.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceFormat(&'static str);

/// A format as the registry knows it.
pub struct FormatSpec {
    pub kind: TraceFormat,
    /// What a line must look like, for `--help`, docs and error messages.
    pub layout: &'static str,
    /// Whether the first meaningful line (trimmed) and its whitespace tokens are this format's.
    pub detect: fn(&str, &[&str]) -> bool,
    /// One trimmed, non-empty, non-comment line.
    pub(crate) parse: fn(&str, &LineOptions) -> Line,
    /// A parser straight from the input's buffer for the format's common lines, if it has one
    /// (`crate::line::fio_fast`): `None` from it falls back to `parse`.
    pub(crate) fast: Option<FastParser>,
}

/// Parses one line straight from the input's buffer: the request and the bytes it used.
pub(crate) type FastParser = fn(&[u8], FioTimeUnit) -> Option<(TraceRecord, usize)>;

const COUNT: usize = FORMATS.len();

impl TraceFormat {
    /// Every registered format, in [`FORMATS`] order.
    pub const ALL: [TraceFormat; COUNT] = {
        let mut all = [TraceFormat(""); COUNT];
        let mut i = 0;
        while i < COUNT {
            all[i] = FORMATS[i].kind;
            i += 1;
        }
        all
    };

    /// What a line must look like, for error messages.
    pub fn layout(self) -> &'static str {
        self.spec().layout
    }

    /// One line of this format: blank lines and `#` comments skip, the rest goes to its parser.
    pub(crate) fn parse_line(self, line: &str, options: &LineOptions) -> Line {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            return Line::Skip;
        }
        (self.spec().parse)(trimmed, options)
    }

    /// Guesses the format from the first non-empty, non-comment line.
    pub fn detect(first_line: &str) -> Option<TraceFormat> {
        let line = first_line.trim();
        let tokens: Vec<&str> = line.split_whitespace().collect();
        FORMATS.iter().find(|s| (s.detect)(line, &tokens)).map(|s| s.kind)
    }
}

trimlab_sim::registry_handle!(TraceFormat, FormatSpec, FORMATS, "trace format");

/// Whether a file's first bytes are a binary trace (blktrace's `blk_io_trace` records), which the
/// opener reads through [`blktrace_bin::BlktraceLines`] instead of as text.
pub fn is_binary_trace(first_bytes: &[u8]) -> bool {
    blktrace_bin::is_blktrace(first_bytes)
}

/// DiskSim's and MQSim's lines: five numbers.
fn five_numbers(tokens: &[&str]) -> bool {
    tokens.len() == 5 && tokens.iter().all(|t| t.parse::<f64>().is_ok())
}

#[cfg(test)]
mod line_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_each_format_from_its_first_line() {
        let cases = [
            (
                "  8,0    1        1     0.000000000  4242  Q  WS 2048 + 8 [jbd2/sda1-8]",
                TraceFormat::Blkparse,
            ),
            (
                "  kworker/0:1-123   [000] ....  12.345678: 8,0    D   W 2048 + 8 [kworker/0:1]",
                TraceFormat::FtraceBlk,
            ),
            ("fio version 2 iolog", TraceFormat::FioV2),
            ("fio version 3 iolog", TraceFormat::FioV3),
            ("128166372003061629,hm,1,Read,3128352768,4096,3428", TraceFormat::Msr),
            ("1000 0 2048 8 0", TraceFormat::Mqsim),
            ("0.125 0 2048 8 1", TraceFormat::Disksim),
        ];
        for (line, format) in cases {
            assert_eq!(TraceFormat::detect(line), Some(format), "{line}");
        }
        assert_eq!(TraceFormat::detect("hello world"), None);
    }

    #[test]
    fn every_format_is_unique_helped_and_round_trips() {
        for (i, s) in FORMATS.iter().enumerate() {
            let name = s.kind.name();
            assert!(FORMATS[..i].iter().all(|o| o.kind != s.kind), "{name} registered twice");
            assert!(!s.layout.trim().is_empty(), "{name} has no layout");
            assert_eq!(TraceFormat::parse(name), Ok(s.kind));
            assert_eq!(s.kind.spec().kind, s.kind);
            assert_eq!(TraceFormat::ALL[i], s.kind);
        }
        let e = TraceFormat::parse("fio-v4").unwrap_err();
        assert!(e.contains("did you mean \"fio-v3\"?") || e.contains("did you mean \"fio-v2\"?"), "{e}");
        assert!(TraceFormat::parse("csv").unwrap_err().contains("blkparse"));
        assert_eq!(format!("{:?}", TraceFormat::FtraceBlk), "FtraceBlk", "Debug as the old enum variant");
    }
}
