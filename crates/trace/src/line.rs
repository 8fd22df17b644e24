//! Line parsers of the registered formats (crate::format names which each uses, and dispatches a
//! line to it) and the
//! pieces they share. Each turns one text line into a request, a line to skip
//! (comments, headers, events of other actions), or a reason the line is malformed.

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

/// "SECONDS.FRACTION" to nanoseconds, exactly (no float rounding).
pub(crate) fn seconds_to_ns(text: &str) -> Option<u64> {
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    if whole.is_empty() || frac.len() > 9 || !frac.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let whole: u64 = whole.parse().ok()?;
    let frac_ns: u64 = if frac.is_empty() { 0 } else { format!("{frac:0<9}").parse().ok()? };
    whole.checked_mul(1_000_000_000)?.checked_add(frac_ns)
}

/// RWBS letters to an operation: D discard, W write, R read, a leading F with no data flush.
pub(crate) fn rwbs_op(rwbs: &str, sectors: u64) -> Option<CommandKind> {
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
pub(crate) fn plus_range(tokens: &[&str]) -> Result<Option<(u64, u64)>, String> {
    match tokens.iter().position(|t| *t == "+") {
        Some(i) if i >= 1 && i + 1 < tokens.len() => sector_range(&tokens[i - 1..]),
        _ => Ok(None),
    }
}

/// "SECTOR + SECTORS" at the start of `tokens`, if present.
pub(crate) fn sector_range(tokens: &[&str]) -> Result<Option<(u64, u64)>, String> {
    match tokens {
        [sector, "+", count, ..] => {
            let s = sector.parse::<u64>().map_err(|_| format!("sector \"{sector}\" is not a number"))?;
            let n = count.parse::<u64>().map_err(|_| format!("sector count \"{count}\" is not a number"))?;
            Ok(Some((s, n)))
        }
        _ => Ok(None),
    }
}

pub(crate) fn block_request(time_ns: u64, rwbs: &str, range: Option<(u64, u64)>) -> Line {
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

pub(crate) fn blkparse(line: &str, action: BlkAction) -> Line {
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

pub(crate) fn ftrace(line: &str, action: BlkAction) -> Line {
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

pub(crate) fn fio(line: &str, v3: bool, unit: FioTimeUnit) -> Line {
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

pub(crate) fn msr(line: &str) -> Line {
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

/// The latest arrival a simulator trace may give: 2^62 ns (146 years). Later ones would
/// saturate the 64-bit nanosecond clock once latencies are added, and report wrong ones
/// (DiskSim `1e300` ms once did).
pub const ARRIVAL_NS_MAX: u64 = 1 << 62;

pub(crate) fn sim_ascii(line: &str, disksim: bool) -> Line {
    let tokens: Vec<&str> = line.split_whitespace().collect();
    if tokens.len() != 5 {
        return Line::Bad(format!("{} fields, expected 5", tokens.len()));
    }
    let time_ns = if disksim {
        match tokens[0].parse::<f64>() {
            Ok(ms) if ms >= 0.0 && ms.is_finite() => (ms * 1e6).round() as u64,
            _ => {
                return Line::Bad(format!(
                    "arrival \"{}\" is not a non-negative number of ms",
                    clip(tokens[0])
                ))
            }
        }
    } else {
        match tokens[0].parse::<u64>() {
            Ok(ns) => ns,
            Err(_) => {
                return Line::Bad(format!("arrival \"{}\" is not an integer number of ns", clip(tokens[0])))
            }
        }
    };
    if time_ns > ARRIVAL_NS_MAX {
        return Line::Bad(format!(
            "arrival \"{}\" is past {ARRIVAL_NS_MAX} ns (146 years), where the simulated clock would saturate",
            clip(tokens[0])
        ));
    }
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

/// `MAJ,MIN`.
pub(crate) fn is_dev(token: &str) -> bool {
    token.split_once(',').is_some_and(|(a, b)| {
        !a.is_empty()
            && !b.is_empty()
            && a.bytes().all(|c| c.is_ascii_digit())
            && b.bytes().all(|c| c.is_ascii_digit())
    })
}

/// A token as an error quotes it: at most 40 characters (a hostile trace's token can be a
/// megabyte long).
fn clip(token: &str) -> &str {
    token.char_indices().nth(40).map_or(token, |(at, _)| &token[..at])
}
