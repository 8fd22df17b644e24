//! Line parsers, one per format. Each turns one text line into a request, a line to skip
//! (comments, headers, events of other actions), or a reason the line is malformed.

use crate::format::{is_dev, TraceFormat};
use crate::record::{CommandKind, TraceRecord};

const SECTOR: u64 = 512;

pub(crate) enum Line {
    Request(TraceRecord),
    Skip,
    /// A block event of another action than the one replayed (Q when replaying D, say).
    OtherAction,
    Bad(String),
}

/// Which block-layer event counts as the request in blkparse and ftrace traces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlkAction {
    /// Q: queued by the submitter (before merging and splitting).
    Queue,
    /// D: issued to the device driver (what the device receives).
    Issue,
    /// C: completed.
    Complete,
}

impl BlkAction {
    pub fn parse(text: &str) -> Result<BlkAction, String> {
        match text {
            "Q" | "q" => Ok(BlkAction::Queue),
            "D" | "d" => Ok(BlkAction::Issue),
            "C" | "c" => Ok(BlkAction::Complete),
            _ => Err(format!("blk action \"{text}\" (accepted: Q, D, C)")),
        }
    }

    fn letter(self) -> &'static str {
        match self {
            BlkAction::Queue => "Q",
            BlkAction::Issue => "D",
            BlkAction::Complete => "C",
        }
    }

    fn tracepoint(self) -> &'static str {
        match self {
            BlkAction::Queue => "block_bio_queue:",
            BlkAction::Issue => "block_rq_issue:",
            BlkAction::Complete => "block_rq_complete:",
        }
    }
}

/// Units of fio iolog v3 timestamps (fio writes microseconds; older fio wrote milliseconds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FioTimeUnit {
    Micros,
    Millis,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct LineOptions {
    pub blk_action: BlkAction,
    pub fio_time_unit: FioTimeUnit,
}

pub(crate) fn parse(format: TraceFormat, line: &str, options: &LineOptions) -> Line {
    let trimmed = line.trim();
    if trimmed.is_empty() || trimmed.starts_with('#') {
        return Line::Skip;
    }
    match format {
        TraceFormat::Blkparse => blkparse(trimmed, options.blk_action),
        TraceFormat::FtraceBlk => ftrace(trimmed, options.blk_action),
        TraceFormat::FioV2 => fio(trimmed, false, options.fio_time_unit),
        TraceFormat::FioV3 => fio(trimmed, true, options.fio_time_unit),
        TraceFormat::Msr => msr(trimmed),
        TraceFormat::Mqsim => sim_ascii(trimmed, false),
        TraceFormat::Disksim => sim_ascii(trimmed, true),
    }
}

/// "SECONDS.FRACTION" to nanoseconds, exactly (no float rounding).
fn seconds_to_ns(text: &str) -> Option<u64> {
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    if whole.is_empty() || frac.len() > 9 || !frac.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let whole: u64 = whole.parse().ok()?;
    let frac_ns: u64 = if frac.is_empty() { 0 } else { format!("{frac:0<9}").parse().ok()? };
    whole.checked_mul(1_000_000_000)?.checked_add(frac_ns)
}

/// RWBS letters to an operation: D discard, W write, R read, a leading F with no data flush.
fn rwbs_op(rwbs: &str, sectors: u64) -> Option<CommandKind> {
    if rwbs.contains('D') {
        Some(CommandKind::Trim)
    } else if sectors == 0 && rwbs.starts_with('F') {
        Some(CommandKind::Flush)
    } else if rwbs.contains('W') {
        Some(CommandKind::Write)
    } else if rwbs.contains('R') {
        Some(CommandKind::Read)
    } else {
        None
    }
}

/// "SECTOR + SECTORS" anywhere in `tokens`, if present.
fn plus_range(tokens: &[&str]) -> Result<Option<(u64, u64)>, String> {
    match tokens.iter().position(|t| *t == "+") {
        Some(i) if i >= 1 && i + 1 < tokens.len() => sector_range(&tokens[i - 1..]),
        _ => Ok(None),
    }
}

/// "SECTOR + SECTORS" at the start of `tokens`, if present.
fn sector_range(tokens: &[&str]) -> Result<Option<(u64, u64)>, String> {
    match tokens {
        [sector, "+", count, ..] => {
            let s = sector.parse::<u64>().map_err(|_| format!("sector \"{sector}\" is not a number"))?;
            let n = count.parse::<u64>().map_err(|_| format!("sector count \"{count}\" is not a number"))?;
            Ok(Some((s, n)))
        }
        _ => Ok(None),
    }
}

fn block_request(time_ns: u64, rwbs: &str, range: Option<(u64, u64)>) -> Line {
    let (sector, sectors) = range.unwrap_or((0, 0));
    match rwbs_op(rwbs, sectors) {
        None => Line::Skip,
        Some(CommandKind::Flush) => {
            Line::Request(TraceRecord { time_ns: Some(time_ns), op: CommandKind::Flush, offset: 0, bytes: 0 })
        }
        Some(_) if range.is_none() => {
            Line::Bad(format!("RWBS \"{rwbs}\" names data but no \"SECTOR + SECTORS\" follows"))
        }
        Some(_) if sectors == 0 => Line::Skip,
        Some(op) => Line::Request(TraceRecord {
            time_ns: Some(time_ns),
            op,
            offset: sector * SECTOR,
            bytes: sectors * SECTOR,
        }),
    }
}

fn blkparse(line: &str, action: BlkAction) -> Line {
    let tokens: Vec<&str> = line.split_whitespace().collect();
    if tokens.is_empty() || !is_dev(tokens[0]) {
        // blkparse's per-CPU and total summaries at the end, and its other free text.
        return Line::Skip;
    }
    if tokens.len() < 7 {
        return Line::Bad(format!("{} fields, expected at least 7", tokens.len()));
    }
    if tokens[5] != action.letter() {
        return Line::OtherAction;
    }
    let Some(time_ns) = seconds_to_ns(tokens[3]) else {
        return Line::Bad(format!("time \"{}\" is not SECONDS.NANOS", tokens[3]));
    };
    match plus_range(&tokens[7..]) {
        Err(e) => Line::Bad(e),
        Ok(range) => block_request(time_ns, tokens[6], range),
    }
}

fn ftrace(line: &str, action: BlkAction) -> Line {
    // "TASK-PID [CPU] FLAGS SECONDS.MICROS: EVENT..."; the task name may contain spaces, so
    // find the timestamp as the token before the first ": " that parses as seconds.
    let Some(colon) = line.find(": ") else {
        return Line::Bad("no \"TIMESTAMP: \" separator".into());
    };
    let head = &line[..colon];
    let Some(stamp) = head.split_whitespace().last() else {
        return Line::Bad("no timestamp before \": \"".into());
    };
    let Some(time_ns) = seconds_to_ns(stamp) else {
        return Line::Bad(format!("timestamp \"{stamp}\" is not SECONDS.MICROS"));
    };
    let rest: Vec<&str> = line[colon + 2..].split_whitespace().collect();
    match rest.first() {
        Some(&event) if event.starts_with("block_") => {
            if event != action.tracepoint() {
                return Line::OtherAction;
            }
            // block_bio_queue: DEV RWBS SECTOR + N [COMM]
            // block_rq_issue: DEV RWBS BYTES (CMD) SECTOR + N [COMM]
            // block_rq_complete: DEV RWBS (CMD) SECTOR + N [ERR]
            if rest.len() < 3 || !is_dev(rest[1]) {
                return Line::Bad(format!("{event} without \"MAJ,MIN RWBS\""));
            }
            match plus_range(&rest[3..]) {
                Err(e) => Line::Bad(e),
                Ok(range) => block_request(time_ns, rest[2], range),
            }
        }
        Some(&dev) if is_dev(dev) => {
            // blk tracer: DEV ACTION RWBS SECTOR + N [COMM]
            if rest.len() < 3 {
                return Line::Bad("blk tracer event without \"ACTION RWBS\"".into());
            }
            if rest[1] != action.letter() {
                return Line::OtherAction;
            }
            match plus_range(&rest[3..]) {
                Err(e) => Line::Bad(e),
                Ok(range) => block_request(time_ns, rest[2], range),
            }
        }
        // Other tracers' events interleaved in the same buffer.
        _ => Line::Skip,
    }
}

fn fio(line: &str, v3: bool, unit: FioTimeUnit) -> Line {
    if line.starts_with("fio version") {
        return Line::Skip;
    }
    let tokens: Vec<&str> = line.split_whitespace().collect();
    let (time_ns, rest) = if v3 {
        let Some(first) = tokens.first() else { return Line::Skip };
        let Ok(t) = first.parse::<u64>() else {
            return Line::Bad(format!("timestamp \"{first}\" is not an integer"));
        };
        let ns = match unit {
            FioTimeUnit::Micros => t.saturating_mul(1_000),
            FioTimeUnit::Millis => t.saturating_mul(1_000_000),
        };
        (Some(ns), &tokens[1..])
    } else {
        (None, &tokens[..])
    };
    let (action, args) = match rest {
        [_file, action, args @ ..] => (*action, args),
        _ => return Line::Bad(format!("{} fields, expected FILE ACTION [OFFSET LENGTH]", rest.len())),
    };
    let op = match action {
        "add" | "open" | "close" | "wait" => return Line::Skip,
        "read" => CommandKind::Read,
        "write" => CommandKind::Write,
        "trim" => CommandKind::Trim,
        "sync" | "datasync" => {
            return Line::Request(TraceRecord { time_ns, op: CommandKind::Flush, offset: 0, bytes: 0 });
        }
        other => {
            return Line::Bad(format!(
                "action \"{other}\" (accepted: read, write, trim, sync, datasync, add, open, close, wait)"
            ))
        }
    };
    match args {
        [offset, length, ..] => match (offset.parse::<u64>(), length.parse::<u64>()) {
            (Ok(offset), Ok(bytes)) if bytes > 0 => Line::Request(TraceRecord { time_ns, op, offset, bytes }),
            (Ok(_), Ok(_)) => Line::Skip,
            _ => Line::Bad(format!("offset \"{offset}\" or length \"{length}\" is not an integer")),
        },
        _ => Line::Bad(format!("{action} needs OFFSET LENGTH")),
    }
}

/// Whitespace inside a line as `str::split_whitespace` sees it, restricted to ASCII (a line
/// with any other byte goes to the general parser): space, tab, CR, vertical tab, form feed.
fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | 0x0b | 0x0c)
}

/// Skips blanks from `*i`; true if at least one was skipped.
#[inline]
fn skip_blanks(bytes: &[u8], i: &mut usize) -> bool {
    let start = *i;
    while *i < bytes.len() && is_blank(bytes[*i]) {
        *i += 1;
    }
    *i > start
}

/// A run of ASCII digits at `*i` as a `u64`; `None` when there is none or it overflows (the
/// general parser then reports the same line as before).
#[inline]
fn digits(bytes: &[u8], i: &mut usize) -> Option<u64> {
    let start = *i;
    let mut value = 0u64;
    while let Some(&b) = bytes.get(*i) {
        if !b.is_ascii_digit() {
            break;
        }
        value = value.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
        *i += 1;
    }
    (*i > start).then_some(value)
}

/// The fast path for the common fio iolog line, `[TIMESTAMP] FILE read|write|trim OFFSET LENGTH`
/// (TIMESTAMP in v3 only) in plain ASCII ending in '\n', read straight from the reader's buffer:
/// no UTF-8 check, no token vector, no copy. Returns the request and the line's length with its
/// newline. Anything else (headers, comments, other actions, a zero length, extra fields, a
/// line cut by the end of `bytes`, any byte outside ASCII, a number that overflows) returns
/// `None`, and the general parser (`parse`) reads that line: the fast path only takes lines
/// on which both agree, so the records and every error message stay exactly as before.
pub(crate) fn fio_fast(bytes: &[u8], v3: bool, unit: FioTimeUnit) -> Option<(TraceRecord, usize)> {
    let mut i = 0;
    skip_blanks(bytes, &mut i);
    let time_ns = if v3 {
        let t = digits(bytes, &mut i)?;
        if !skip_blanks(bytes, &mut i) {
            return None;
        }
        Some(match unit {
            FioTimeUnit::Micros => t.saturating_mul(1_000),
            FioTimeUnit::Millis => t.saturating_mul(1_000_000),
        })
    } else {
        None
    };
    // FILE: printable ASCII up to the next blank ('#' first is a comment line in v2).
    if bytes.get(i) == Some(&b'#') {
        return None;
    }
    let file_start = i;
    while i < bytes.len() && bytes[i].is_ascii_graphic() {
        i += 1;
    }
    if i == file_start || !skip_blanks(bytes, &mut i) {
        return None;
    }
    let action_start = i;
    while i < bytes.len() && bytes[i].is_ascii_lowercase() {
        i += 1;
    }
    let op = match &bytes[action_start..i] {
        b"write" => CommandKind::Write,
        b"trim" => CommandKind::Trim,
        b"read" => CommandKind::Read,
        _ => return None,
    };
    if !skip_blanks(bytes, &mut i) {
        return None;
    }
    let offset = digits(bytes, &mut i)?;
    if !skip_blanks(bytes, &mut i) {
        return None;
    }
    let length = digits(bytes, &mut i)?;
    skip_blanks(bytes, &mut i);
    if length == 0 || bytes.get(i) != Some(&b'\n') {
        return None;
    }
    Some((TraceRecord { time_ns, op, offset, bytes: length }, i + 1))
}

fn msr(line: &str) -> Line {
    let fields: Vec<&str> = line.split(',').map(str::trim).collect();
    if fields.len() != 7 {
        return Line::Bad(format!("{} comma-separated fields, expected 7", fields.len()));
    }
    if fields[0].eq_ignore_ascii_case("timestamp") {
        return Line::Skip;
    }
    let Ok(ticks) = fields[0].parse::<u64>() else {
        return Line::Bad(format!("timestamp \"{}\" is not an integer", fields[0]));
    };
    let op = match fields[3].to_ascii_lowercase().as_str() {
        "read" => CommandKind::Read,
        "write" => CommandKind::Write,
        other => return Line::Bad(format!("type \"{other}\" (accepted: Read, Write)")),
    };
    match (fields[4].parse::<u64>(), fields[5].parse::<u64>()) {
        (Ok(offset), Ok(bytes)) if bytes > 0 => {
            Line::Request(TraceRecord { time_ns: Some(ticks.saturating_mul(100)), op, offset, bytes })
        }
        (Ok(_), Ok(_)) => Line::Skip,
        _ => Line::Bad(format!("offset \"{}\" or size \"{}\" is not an integer", fields[4], fields[5])),
    }
}

fn sim_ascii(line: &str, disksim: bool) -> Line {
    let tokens: Vec<&str> = line.split_whitespace().collect();
    if tokens.len() != 5 {
        return Line::Bad(format!("{} fields, expected 5", tokens.len()));
    }
    let time_ns = if disksim {
        match tokens[0].parse::<f64>() {
            Ok(ms) if ms >= 0.0 && ms.is_finite() => (ms * 1e6).round() as u64,
            _ => return Line::Bad(format!("arrival \"{}\" is not a non-negative number of ms", tokens[0])),
        }
    } else {
        match tokens[0].parse::<u64>() {
            Ok(ns) => ns,
            Err(_) => return Line::Bad(format!("arrival \"{}\" is not an integer number of ns", tokens[0])),
        }
    };
    let numbers: Result<Vec<u64>, _> = tokens[2..].iter().map(|t| t.parse::<u64>()).collect();
    let Ok(numbers) = numbers else {
        return Line::Bad("sector, sectors and type must be non-negative integers".into());
    };
    let (sector, sectors, kind) = (numbers[0], numbers[1], numbers[2]);
    // MQSim's type is 0 (write) or 1 (read) and nothing else; DiskSim's is a flags word whose
    // bit 0 means read (its other bits are hints we do not model).
    if !disksim && kind > 1 {
        return Line::Bad(format!("request type {kind} is not 0 (write) or 1 (read)"));
    }
    let op = if kind & 1 == 1 { CommandKind::Read } else { CommandKind::Write };
    if sectors == 0 {
        return Line::Skip;
    }
    let (Some(offset), Some(bytes)) = (sector.checked_mul(SECTOR), sectors.checked_mul(SECTOR)) else {
        return Line::Bad(format!("sector {sector} + {sectors} sectors overflows a 64-bit byte offset"));
    };
    Line::Request(TraceRecord { time_ns: Some(time_ns), op, offset, bytes })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> LineOptions {
        LineOptions { blk_action: BlkAction::Issue, fio_time_unit: FioTimeUnit::Micros }
    }

    fn request(format: TraceFormat, line: &str) -> TraceRecord {
        match parse(format, line, &opts()) {
            Line::Request(r) => r,
            Line::Skip | Line::OtherAction => panic!("skipped: {line}"),
            Line::Bad(e) => panic!("bad: {line}: {e}"),
        }
    }

    #[test]
    fn seconds_parse_exactly() {
        assert_eq!(seconds_to_ns("1.5"), Some(1_500_000_000));
        assert_eq!(seconds_to_ns("0.000000001"), Some(1));
        assert_eq!(seconds_to_ns("12"), Some(12_000_000_000));
        assert_eq!(seconds_to_ns("1.0000000001"), None);
        assert_eq!(seconds_to_ns("x.1"), None);
    }

    #[test]
    fn blkparse_lines() {
        let r = request(
            TraceFormat::Blkparse,
            "  8,0    3       11     0.001000000   697  D  WS 2048 + 16 [jbd2/sda1-8]",
        );
        assert_eq!(
            r,
            TraceRecord { time_ns: Some(1_000_000), op: CommandKind::Write, offset: 1 << 20, bytes: 8192 }
        );
        let r = request(
            TraceFormat::Blkparse,
            "259,0    0       12     2.000000000  1234  D  DS 4096 + 2048 [fstrim]",
        );
        assert_eq!((r.op, r.offset, r.bytes), (CommandKind::Trim, 4096 * 512, 1 << 20));
        let r = request(TraceFormat::Blkparse, "  8,0    1       13     2.5   99  D  FN [kworker]");
        assert_eq!(r.op, CommandKind::Flush);
        assert!(matches!(
            parse(TraceFormat::Blkparse, "  8,0    3  1  0.1  697  Q  WS 2048 + 16 [x]", &opts()),
            Line::OtherAction
        ));
        assert!(matches!(parse(TraceFormat::Blkparse, "CPU0 (8,0):", &opts()), Line::Skip));
        assert!(matches!(
            parse(TraceFormat::Blkparse, "  8,0  3  1  zero  697  D  W 1 + 1 [x]", &opts()),
            Line::Bad(_)
        ));
        assert!(matches!(
            parse(TraceFormat::Blkparse, "  8,0  3  1  0.1  697  D  W 1 + x [x]", &opts()),
            Line::Bad(_)
        ));
    }

    #[test]
    fn ftrace_lines() {
        let r = request(
            TraceFormat::FtraceBlk,
            "  kworker/u8:2-123   [002] d..1.  2469.390374: 8,0    D   W 1234 + 8 [kworker/u8:2]",
        );
        assert_eq!(
            r,
            TraceRecord {
                time_ns: Some(2_469_390_374_000),
                op: CommandKind::Write,
                offset: 1234 * 512,
                bytes: 4096
            }
        );
        let r = request(
            TraceFormat::FtraceBlk,
            "   fstrim-999 [001] ..... 10.000001: block_rq_issue: 8,0 DS 1048576 () 4096 + 2048 [fstrim]",
        );
        assert_eq!(
            (r.op, r.offset, r.bytes, r.time_ns),
            (CommandKind::Trim, 4096 * 512, 1 << 20, Some(10_000_001_000))
        );
        assert!(matches!(
            parse(
                TraceFormat::FtraceBlk,
                " dd-1 [000] .... 1.0: block_rq_complete: 8,0 W () 8 + 8 [0]",
                &opts()
            ),
            Line::OtherAction
        ));
        assert!(matches!(
            parse(TraceFormat::FtraceBlk, " dd-1 [000] .... one: 8,0 D W 8 + 8 [dd]", &opts()),
            Line::Bad(_)
        ));
    }

    #[test]
    fn fio_lines() {
        let r = request(TraceFormat::FioV3, "1500 /dev/nbd0 trim 1048576 65536");
        assert_eq!(
            r,
            TraceRecord { time_ns: Some(1_500_000), op: CommandKind::Trim, offset: 1 << 20, bytes: 65536 }
        );
        let r = request(TraceFormat::FioV2, "/dev/sdb write 4096 4096");
        assert_eq!(r.time_ns, None);
        assert_eq!(request(TraceFormat::FioV3, "7 f sync 0 0").op, CommandKind::Flush);
        assert!(matches!(parse(TraceFormat::FioV3, "0 f open", &opts()), Line::Skip));
        assert!(matches!(parse(TraceFormat::FioV3, "0 f scribble 0 1", &opts()), Line::Bad(_)));
        assert!(matches!(parse(TraceFormat::FioV3, "x f read 0 1", &opts()), Line::Bad(_)));
        assert!(matches!(parse(TraceFormat::FioV2, "f read 0", &opts()), Line::Bad(_)));
    }

    /// Strategy: every combination of the tokens on which the byte fast path and the general
    /// parser could disagree (blanks of each kind, signs, leading zeros, overflow, non-ASCII,
    /// control bytes, comments, other actions, zero lengths, extra fields, a line cut before
    /// its newline), in v3 and v2. Invariant: a line the fast path takes is exactly the
    /// general parser's request, and it takes the whole line.
    #[test]
    fn fio_fast_path_agrees_with_the_general_parser() {
        let leads = ["", " ", "\t"];
        let times = ["10", "007", "+5", "18446744073709551615", "18446744073709551616", "x"];
        let seps = [" ", "\t ", "\u{a0}", "\u{b}"];
        let files = ["/dev/nvme0n1", "#f", "d\u{e9}v", "a\u{1}b"];
        let actions = ["write", "trim", "read", "sync", "add", "Write", "writes"];
        let offsets = ["0", "4096", "+1", "18446744073709551616", "-1"];
        let lengths = ["4096", "0", "01"];
        let tails = ["", " ", "\r", " extra", "\u{e9}"];
        let ends = ["\n", ""];
        let (mut taken, mut lines) = (0u64, 0u64);
        for unit in [FioTimeUnit::Micros, FioTimeUnit::Millis] {
            let options = LineOptions { blk_action: BlkAction::Issue, fio_time_unit: unit };
            for lead in leads {
                for time in times {
                    for sep in seps {
                        for file in files {
                            for action in actions {
                                for offset in offsets {
                                    for length in lengths {
                                        for tail in tails {
                                            for end in ends {
                                                let v2 = format!(
                                                    "{lead}{file}{sep}{action}{sep}{offset}{sep}{length}{tail}{end}"
                                                );
                                                let v3 = format!("{lead}{time}{sep}{file}{sep}{action}{sep}{offset}{sep}{length}{tail}{end}");
                                                for (line, is_v3) in [(v2, false), (v3, true)] {
                                                    lines += 1;
                                                    let Some((record, used)) =
                                                        fio_fast(line.as_bytes(), is_v3, unit)
                                                    else {
                                                        continue;
                                                    };
                                                    taken += 1;
                                                    assert_eq!(used, line.len(), "{line:?}");
                                                    let format = if is_v3 {
                                                        TraceFormat::FioV3
                                                    } else {
                                                        TraceFormat::FioV2
                                                    };
                                                    match parse(format, &line, &options) {
                                                        Line::Request(r) => assert_eq!(r, record, "{line:?}"),
                                                        _ => panic!("the fast path took {line:?}"),
                                                    }
                                                }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        // The common lines do take the fast path (else this test could not fail).
        assert!(taken > 1000, "{taken} of {lines}");
        assert_eq!(
            fio_fast(b"1500 /dev/nbd0 trim 1048576 65536\n", true, FioTimeUnit::Micros),
            Some((
                TraceRecord {
                    time_ns: Some(1_500_000),
                    op: CommandKind::Trim,
                    offset: 1 << 20,
                    bytes: 65536
                },
                34
            ))
        );
    }

    #[test]
    fn msr_and_simulator_lines() {
        let r = request(TraceFormat::Msr, "128166372003061629,hm,1,Read,3128352768,4096,3428");
        assert_eq!((r.op, r.offset, r.bytes), (CommandKind::Read, 3_128_352_768, 4096));
        assert!(matches!(parse(TraceFormat::Msr, "1,hm,1,Erase,0,4096,3", &opts()), Line::Bad(_)));
        assert!(matches!(parse(TraceFormat::Msr, "1,hm,1,Read,0,4096", &opts()), Line::Bad(_)));
        let r = request(TraceFormat::Mqsim, "5000 0 16 8 1");
        assert_eq!(r, TraceRecord { time_ns: Some(5000), op: CommandKind::Read, offset: 8192, bytes: 4096 });
        let r = request(TraceFormat::Disksim, "0.5 0 16 8 0");
        assert_eq!(
            r,
            TraceRecord { time_ns: Some(500_000), op: CommandKind::Write, offset: 8192, bytes: 4096 }
        );
        assert!(matches!(parse(TraceFormat::Mqsim, "5000 0 16 8", &opts()), Line::Bad(_)));
        // Issue 13 item 10: MQSim types other than 0 / 1 were read as reads or writes.
        for bad in ["5000 0 16 8 2", "5000 0 16 8 3", "5000 0 16 8 255"] {
            match parse(TraceFormat::Mqsim, bad, &opts()) {
                Line::Bad(e) => assert!(e.contains("0 (write) or 1 (read)"), "{e}"),
                _ => panic!("{bad} must be refused"),
            }
        }
        assert!(matches!(parse(TraceFormat::Disksim, "0.5 0 16 8 3", &opts()), Line::Request(_)));
        assert!(matches!(parse(TraceFormat::Mqsim, "1 0 18446744073709551615 8 0", &opts()), Line::Bad(_)));
        assert!(matches!(parse(TraceFormat::Disksim, "-1 0 16 8 0", &opts()), Line::Bad(_)));
    }
}
