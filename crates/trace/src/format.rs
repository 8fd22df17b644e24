//! The trace formats trimlab reads, how each line looks, and detection from the first lines.

use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TraceFormat {
    /// `blkparse` default text output.
    Blkparse,
    /// The ftrace `blk` tracer, or the `block:block_*` tracepoints, from /sys/kernel/tracing/trace.
    FtraceBlk,
    /// fio `write_iolog` version 2 (no timestamps).
    FioV2,
    /// fio `write_iolog` version 3 (timestamps).
    FioV3,
    /// MSR Cambridge CSV (Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime).
    Msr,
    /// MQSim ASCII: arrival (ns), device, start sector, sectors, type (1 read, 0 write).
    Mqsim,
    /// DiskSim ASCII: arrival (ms, fractional), device, block (sector), sectors, flags (1 read, 0 write).
    Disksim,
}

impl TraceFormat {
    pub const ALL: [TraceFormat; 7] = [
        TraceFormat::Blkparse,
        TraceFormat::FtraceBlk,
        TraceFormat::FioV2,
        TraceFormat::FioV3,
        TraceFormat::Msr,
        TraceFormat::Mqsim,
        TraceFormat::Disksim,
    ];

    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Blkparse => "blkparse",
            TraceFormat::FtraceBlk => "ftrace-blk",
            TraceFormat::FioV2 => "fio-v2",
            TraceFormat::FioV3 => "fio-v3",
            TraceFormat::Msr => "msr",
            TraceFormat::Mqsim => "mqsim",
            TraceFormat::Disksim => "disksim",
        }
    }

    pub fn parse(name: &str) -> Result<TraceFormat, String> {
        TraceFormat::ALL.into_iter().find(|f| f.name() == name).ok_or_else(|| {
            let names: Vec<_> = TraceFormat::ALL.iter().map(|f| f.name()).collect();
            format!("unknown trace format \"{name}\" (known: {})", names.join(", "))
        })
    }

    /// What a line must look like, for error messages.
    pub fn layout(self) -> &'static str {
        match self {
            TraceFormat::Blkparse => {
                "\"MAJ,MIN CPU SEQ SECONDS.NANOS PID ACTION RWBS SECTOR + SECTORS [COMM]\" (blkparse default output)"
            }
            TraceFormat::FtraceBlk => {
                "\"TASK-PID [CPU] FLAGS SECONDS.MICROS: MAJ,MIN ACTION RWBS SECTOR + SECTORS [COMM]\" (blk tracer) or \"...: block_rq_issue: MAJ,MIN RWBS BYTES () SECTOR + SECTORS [COMM]\" (tracepoints)"
            }
            TraceFormat::FioV2 => "\"FILE ACTION [OFFSET LENGTH]\" after the line \"fio version 2 iolog\"",
            TraceFormat::FioV3 => {
                "\"TIMESTAMP FILE ACTION [OFFSET LENGTH]\" after the line \"fio version 3 iolog\" (timestamp in microseconds)"
            }
            TraceFormat::Msr => {
                "\"Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\" (timestamp in 100 ns units, Type Read or Write)"
            }
            TraceFormat::Mqsim => "\"ARRIVAL_NS DEVICE SECTOR SECTORS TYPE\" (TYPE 1 = read, 0 = write)",
            TraceFormat::Disksim => "\"ARRIVAL_MS DEVICE SECTOR SECTORS FLAGS\" (FLAGS bit 0: 1 = read, 0 = write)",
        }
    }

    /// Guesses the format from the first non-empty, non-comment line.
    pub fn detect(first_line: &str) -> Option<TraceFormat> {
        let line = first_line.trim();
        if line.starts_with("fio version 2 iolog") {
            return Some(TraceFormat::FioV2);
        }
        if line.starts_with("fio version 3 iolog") {
            return Some(TraceFormat::FioV3);
        }
        if line.split(',').count() == 7 {
            return Some(TraceFormat::Msr);
        }
        let tokens: Vec<&str> = line.split_whitespace().collect();
        if tokens.len() >= 7 && is_dev(tokens[0]) && tokens[3].contains('.') {
            return Some(TraceFormat::Blkparse);
        }
        if line.contains(": ") && tokens.iter().any(|t| t.starts_with('[') && t.ends_with(']')) {
            return Some(TraceFormat::FtraceBlk);
        }
        if tokens.len() == 5 && tokens.iter().all(|t| t.parse::<f64>().is_ok()) {
            return Some(if tokens[0].contains('.') { TraceFormat::Disksim } else { TraceFormat::Mqsim });
        }
        None
    }
}

/// `MAJ,MIN`.
pub(crate) fn is_dev(token: &str) -> bool {
    token.split_once(',').is_some_and(|(a, b)| {
        !a.is_empty()
            && !b.is_empty()
            && a.bytes().all(|c| c.is_ascii_digit())
            && b.bytes().all(|c| c.is_ascii_digit())
    })
}

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
    fn names_round_trip() {
        for f in TraceFormat::ALL {
            assert_eq!(TraceFormat::parse(f.name()), Ok(f));
        }
        assert!(TraceFormat::parse("csv").unwrap_err().contains("blkparse"));
    }
}
