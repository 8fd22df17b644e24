//! blktrace's binary output: the per-CPU files `NAME.blktrace.N` of `struct blk_io_trace`
//! records (blktrace_api.h: magic | version, sequence, time, sector, bytes, action, pid,
//! device, cpu, error, pdu_len, then pdu_len bytes of payload), either endianness, merged by
//! time as blkparse merges them and rendered as blkparse's default lines, which the blkparse
//! parser reads: the same events give the same requests as blkparse's text of them.

use super::{FormatSpec, TraceFormat};
use crate::line;
use std::collections::BTreeMap;
use std::io::{BufRead, Read};

impl TraceFormat {
    #[allow(non_upper_case_globals)]
    pub const Blktrace: TraceFormat = TraceFormat("blktrace");
}

/// The first line of the rendered text: it names the format, so detection finds it.
const HEADER: &str = "blktrace binary";

pub(super) const SPEC: FormatSpec = FormatSpec {
    kind: TraceFormat::Blktrace,
    layout: "blktrace's binary per-CPU files (a directory, NAME or NAME.blktrace.N, as blkparse -i takes them) of blk_io_trace records, either endianness",
    detect: |l, _| l.starts_with(HEADER),
    parse: |l, o| line::blkparse(l, o.blk_action),
    fast: None,
};

/// `BLK_IO_TRACE_MAGIC` (blktrace_api.h): the record's first word, with the version in its low
/// byte.
pub const MAGIC: u32 = 0x6561_7400;
/// `BLK_IO_TRACE_VERSION` (blktrace_api.h), the version blkparse reads.
pub const VERSION: u32 = 0x07;
/// `sizeof(struct blk_io_trace)`: 4 + 4 + 8 + 8 + 8 + 4 * 5 + 2 + 2 bytes.
pub const RECORD_BYTES: usize = 48;

/// `BLK_TC_SHIFT`: the trace categories sit in the action's upper 16 bits (blktrace_api.h).
const TC_SHIFT: u32 = 16;
const TC_WRITE: u32 = 1 << (1 + TC_SHIFT);
const TC_FLUSH: u32 = 1 << (2 + TC_SHIFT);
const TC_SYNC: u32 = 1 << (3 + TC_SHIFT);
const TC_NOTIFY: u32 = 1 << (10 + TC_SHIFT);
const TC_AHEAD: u32 = 1 << (11 + TC_SHIFT);
const TC_META: u32 = 1 << (12 + TC_SHIFT);
const TC_DISCARD: u32 = 1 << (13 + TC_SHIFT);
const TC_FUA: u32 = 1 << (15 + TC_SHIFT);
/// `__BLK_TA_CGROUP`: the payload starts with an 8-byte cgroup id.
const TA_CGROUP: u32 = 1 << 8;
/// `__BLK_TN_PROCESS`: a notify record whose payload is the process's name.
const TN_PROCESS: u32 = 0;

/// Whether `bytes` start with a blk_io_trace record's magic, in either byte order.
pub fn is_blktrace(bytes: &[u8]) -> bool {
    let Some(word) = bytes.get(..4) else { return false };
    let word: [u8; 4] = [word[0], word[1], word[2], word[3]];
    [u32::from_le_bytes(word), u32::from_be_bytes(word)].iter().any(|m| m & 0xffff_ff00 == MAGIC)
}

/// `NAME.blktrace.N` as (NAME, N); `None` for other names.
pub fn cpu_file_name(file_name: &str) -> Option<(&str, u32)> {
    let (prefix, cpu) = file_name.rsplit_once(".blktrace.")?;
    let cpu = cpu.parse().ok().filter(|_| !prefix.is_empty() && cpu.bytes().all(|b| b.is_ascii_digit()))?;
    Some((prefix, cpu))
}

/// One event of a CPU file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub sequence: u32,
    pub time_ns: u64,
    pub sector: u64,
    pub bytes: u32,
    pub action: u32,
    pub pid: u32,
    pub device: u32,
    pub cpu: u32,
    pub error: u16,
    pub pdu: Vec<u8>,
}

impl Event {
    /// The record's 48 bytes and payload in `big_endian` order (test data, the tests' files).
    pub fn encode(&self, big_endian: bool) -> Vec<u8> {
        let mut out = Vec::with_capacity(RECORD_BYTES + self.pdu.len());
        let mut put = |bytes: &[u8]| {
            if big_endian {
                out.extend(bytes.iter().rev());
            } else {
                out.extend_from_slice(bytes);
            }
        };
        put(&(MAGIC | VERSION).to_le_bytes());
        put(&self.sequence.to_le_bytes());
        put(&self.time_ns.to_le_bytes());
        put(&self.sector.to_le_bytes());
        for word in [self.bytes, self.action, self.pid, self.device, self.cpu] {
            put(&word.to_le_bytes());
        }
        put(&self.error.to_le_bytes());
        put(&(self.pdu.len() as u16).to_le_bytes());
        out.extend_from_slice(&self.pdu);
        out
    }

    fn notify(&self) -> bool {
        self.action & TC_NOTIFY != 0
    }

    /// blkparse's action letters (blkparse_fmt.c), by `__BLK_TA_*` code.
    fn letters(&self) -> &'static str {
        const LETTERS: [&str; 18] =
            ["?", "Q", "M", "F", "G", "S", "R", "D", "C", "P", "U", "UT", "I", "X", "B", "A", "?", "?"];
        LETTERS.get(((self.action & 0xffff) & !TA_CGROUP) as usize).copied().unwrap_or("?")
    }

    /// RWBS as blkparse's `fill_rwbs` writes it.
    fn rwbs(&self) -> String {
        let a = self.action;
        let mut s = String::new();
        if a & TC_FLUSH != 0 {
            s.push('F');
        }
        s.push(if a & TC_DISCARD != 0 {
            'D'
        } else if a & TC_WRITE != 0 {
            'W'
        } else if self.bytes != 0 {
            'R'
        } else {
            'N'
        });
        for (flag, letter) in [(TC_FUA, 'F'), (TC_AHEAD, 'A'), (TC_SYNC, 'S'), (TC_META, 'M')] {
            if a & flag != 0 {
                s.push(letter);
            }
        }
        s
    }

    /// The payload's text after the cgroup id, up to its first NUL.
    fn pdu_text(&self) -> String {
        let start = if self.action & TA_CGROUP != 0 { 8.min(self.pdu.len()) } else { 0 };
        let text = &self.pdu[start..];
        let end = text.iter().position(|&b| b == 0).unwrap_or(text.len());
        String::from_utf8_lossy(&text[..end]).into_owned()
    }
}

/// One CPU file: its reader, name, byte order (from its first record) and next event.
struct CpuFile {
    input: Box<dyn Read + Send>,
    name: String,
    offset: u64,
    big_endian: Option<bool>,
    next: Option<Event>,
}

fn invalid(message: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, message)
}

impl CpuFile {
    /// Reads the next record into `next` (`None` at the end of the file).
    fn advance(&mut self) -> std::io::Result<()> {
        let mut record = [0u8; RECORD_BYTES];
        let mut got = 0;
        while got < RECORD_BYTES {
            match self.input.read(&mut record[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if got == 0 {
            self.next = None;
            return Ok(());
        }
        let at = format!("{}: byte {}", self.name, self.offset);
        if got < RECORD_BYTES {
            return Err(invalid(format!("{at}: the file ends inside a {RECORD_BYTES}-byte blk_io_trace record ({got} bytes)")));
        }
        let word = [record[0], record[1], record[2], record[3]];
        let big = match self.big_endian {
            Some(big) => big,
            None if u32::from_le_bytes(word) & 0xffff_ff00 == MAGIC => false,
            None => true,
        };
        self.big_endian = Some(big);
        let event = decode(&record, big).map_err(|e| invalid(format!("{at}: {e}")))?;
        let mut pdu = vec![0u8; event.pdu.len()];
        self.input
            .read_exact(&mut pdu)
            .map_err(|e| invalid(format!("{at}: the record's {}-byte payload is cut short ({e})", pdu.len())))?;
        self.offset += (RECORD_BYTES + pdu.len()) as u64;
        self.next = Some(Event { pdu, ..event });
        Ok(())
    }
}

/// A record's fields; `pdu` holds zeros of the payload's length, read by the caller.
fn decode(record: &[u8; RECORD_BYTES], big: bool) -> Result<Event, String> {
    let take = |at: usize, n: usize| -> u64 {
        let bytes = &record[at..at + n];
        let fold = |v: u64, b: &u8| v << 8 | *b as u64;
        if big {
            bytes.iter().fold(0, fold)
        } else {
            bytes.iter().rev().fold(0, fold)
        }
    };
    let magic = take(0, 4) as u32;
    if magic & 0xffff_ff00 != MAGIC {
        return Err(format!(
            "magic {magic:#010x} is not blktrace's {MAGIC:#010x} | version in either byte order (not a blk_io_trace record, or the file is misaligned)"
        ));
    }
    if magic & 0xff != VERSION {
        return Err(format!("blk_io_trace version {} (blkparse reads version {VERSION})", magic & 0xff));
    }
    Ok(Event {
        sequence: take(4, 4) as u32,
        time_ns: take(8, 8),
        sector: take(16, 8),
        bytes: take(24, 4) as u32,
        action: take(28, 4) as u32,
        pid: take(32, 4) as u32,
        device: take(36, 4) as u32,
        cpu: take(40, 4) as u32,
        error: take(44, 2) as u16,
        pdu: vec![0; take(46, 2) as usize],
    })
}

/// The events of every CPU file, merged by time (ties by file, then sequence), as blkparse's
/// default text lines behind a header line, one line in memory at a time.
pub struct BlktraceLines {
    files: Vec<CpuFile>,
    /// Process names from the notify records, by pid, for the lines' `[COMM]`.
    comms: BTreeMap<u32, String>,
    line: Vec<u8>,
    pos: usize,
}

impl BlktraceLines {
    /// Reads the first record of every `(name, input)`; errors name the file and byte.
    pub fn new(inputs: Vec<(String, Box<dyn Read + Send>)>) -> std::io::Result<BlktraceLines> {
        let names: Vec<String> = inputs.iter().map(|(n, _)| n.clone()).collect();
        let mut files = Vec::new();
        for (name, input) in inputs {
            let mut file = CpuFile { input, name, offset: 0, big_endian: None, next: None };
            file.advance()?;
            files.push(file);
        }
        let header = format!("{HEADER}: {} CPU file(s): {}\n", names.len(), names.join(", "));
        Ok(BlktraceLines { files, comms: BTreeMap::new(), line: header.into_bytes(), pos: 0 })
    }

    /// The next event of all files by (time, file, sequence), or `None` at the end.
    fn next_event(&mut self) -> std::io::Result<Option<Event>> {
        let first = self
            .files
            .iter()
            .enumerate()
            .filter_map(|(i, f)| f.next.as_ref().map(|e| (e.time_ns, i, e.sequence)))
            .min();
        let Some((_, i, _)) = first else { return Ok(None) };
        let event = self.files[i].next.take();
        self.files[i].advance()?;
        Ok(event)
    }

    /// The next event's line into `line` (empty at the end); notify records only name processes.
    fn render_next(&mut self) -> std::io::Result<()> {
        self.line.clear();
        self.pos = 0;
        while let Some(e) = self.next_event()? {
            if e.notify() {
                if e.action & 0xff == TN_PROCESS {
                    self.comms.insert(e.pid, e.pdu_text());
                }
                continue;
            }
            let comm = self.comms.get(&e.pid).map_or("?", String::as_str);
            // dev_t as the kernel encodes it for blktrace: MAJOR = dev >> 20 (MINORBITS 20).
            let (major, minor) = (e.device >> 20, e.device & 0xf_ffff);
            let (secs, nanos) = (e.time_ns / 1_000_000_000, e.time_ns % 1_000_000_000);
            let text = format!(
                "{major:>3},{minor:<3} {:>2} {:>8} {secs:>5}.{nanos:09} {:>5} {:>2} {:>3} {} + {} [{comm}]\n",
                e.cpu,
                e.sequence,
                e.pid,
                e.letters(),
                e.rwbs(),
                e.sector,
                e.bytes >> 9
            );
            self.line.extend_from_slice(text.as_bytes());
            return Ok(());
        }
        Ok(())
    }
}

impl Read for BlktraceLines {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(out.len());
        out[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for BlktraceLines {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        if self.pos >= self.line.len() {
            self.render_next()?;
        }
        Ok(&self.line[self.pos..])
    }

    fn consume(&mut self, amount: usize) {
        self.pos = (self.pos + amount).min(self.line.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(time_ns: u64, cpu: u32, action: u32, sector: u64, bytes: u32) -> Event {
        Event { sequence: time_ns as u32, time_ns, sector, bytes, action, pid: 7, device: 7 << 20, cpu, error: 0, pdu: vec![] }
    }

    fn lines(files: Vec<Vec<u8>>) -> std::io::Result<Vec<String>> {
        let inputs = files
            .into_iter()
            .enumerate()
            .map(|(i, bytes)| (format!("t.blktrace.{i}"), Box::new(std::io::Cursor::new(bytes)) as Box<dyn Read + Send>))
            .collect();
        let reader = BlktraceLines::new(inputs)?;
        reader.lines().collect()
    }

    #[test]
    fn cpu_files_merge_by_time_in_either_byte_order() {
        const D: u32 = 7;
        let name = Event { action: TC_NOTIFY, pdu: b"mkfs.ext4\0".to_vec(), ..event(0, 0, 0, 0, 0) };
        let cpu0 = [name, event(10, 0, D | TC_WRITE | TC_SYNC, 2048, 4096), event(30, 0, D | TC_DISCARD, 0, 1 << 20)];
        let cpu1 = [event(20, 1, D, 8, 512), event(40, 1, D | TC_FLUSH, 0, 0)];
        for big in [false, true] {
            let bytes = |events: &[Event]| events.iter().flat_map(|e| e.encode(big)).collect::<Vec<u8>>();
            let got = lines(vec![bytes(&cpu0), bytes(&cpu1)]).unwrap();
            assert!(got[0].starts_with("blktrace binary: 2 CPU file(s)"), "{got:?}");
            let actions: Vec<Vec<&str>> = got[1..].iter().map(|l| l.split_whitespace().skip(3).collect()).collect();
            assert_eq!(actions[0], ["0.000000010", "7", "D", "WS", "2048", "+", "8", "[mkfs.ext4]"], "big {big}");
            assert_eq!(actions[1][3], "R");
            assert_eq!(actions[2][3..7], ["D", "0", "+", "2048"]);
            assert_eq!(actions[3][3..7], ["FN", "0", "+", "0"]);
            assert_eq!(got.len(), 5);
        }
        assert!(is_blktrace(&cpu0[1].encode(true)) && is_blktrace(&cpu0[1].encode(false)));
        assert!(!is_blktrace(b"  8,0 0 1 0.1 1 D W 0 + 8 [a]"));
        assert_eq!(cpu_file_name("sda.blktrace.12"), Some(("sda", 12)));
        assert_eq!(cpu_file_name("sda.blktrace.x"), None);
    }

    #[test]
    fn a_bad_record_names_the_file_and_the_byte() {
        let good = event(10, 0, 7 | TC_WRITE, 0, 4096).encode(false);
        let mut bad = good.clone();
        bad.extend_from_slice(&[0u8; RECORD_BYTES]);
        let e = lines(vec![bad]).unwrap_err().to_string();
        assert!(e.starts_with("t.blktrace.0: byte 48: magic 0x00000000 is not blktrace's"), "{e}");
        let mut cut = good.clone();
        cut.truncate(40);
        let e = lines(vec![cut]).err().unwrap().to_string();
        assert!(e.contains("byte 0: the file ends inside a 48-byte blk_io_trace record"), "{e}");
        let mut v6 = good;
        v6[0] = 0x06;
        assert!(lines(vec![v6]).err().unwrap().to_string().contains("version 6"));
    }
}
