//! One line of `strace -f -ttt` output, taken apart without copying: the process, the time,
//! and what the line is (a system call with its arguments and return value, the start or the
//! end of a call strace split in two, a process's exit, a signal, or strace's own note).
//!
//! The forms read (strace 5.x and 6.x; `-o FILE` prefixes every line with the pid, the
//! terminal form prefixes other processes' lines with `[pid N]`, a single process has none):
//! `PID SECONDS.MICROS name(args) = RET ...`, `... name(args <unfinished ...>`,
//! `... <... name resumed>args) = RET`, `... +++ exited with 0 +++`, `... --- SIGCHLD ... ---`.

/// What a line is.
#[derive(Debug, PartialEq, Eq)]
pub enum Body<'a> {
    /// A whole call: `name(args) = ret` (`ret` is the text after `= `).
    Call { name: &'a str, args: &'a str, ret: &'a str },
    /// The first half of a call another process's line interrupted: `name(args <unfinished ...>`.
    Unfinished { name: &'a str, args: &'a str },
    /// The second half: `<... name resumed>args) = ret` (`args` continues the first half's).
    Resumed { name: &'a str, args: &'a str, ret: &'a str },
    /// `+++ exited with N +++` or `+++ killed by SIG +++`: the process is gone.
    Exit,
    /// A signal (`--- SIG... ---`) or strace's own note (`strace: Process N attached`).
    Note,
}

/// A line taken apart.
#[derive(Debug, PartialEq, Eq)]
pub struct Line<'a> {
    /// 0 when the line names no process (strace of one process without -f).
    pub pid: u32,
    /// The -ttt timestamp in microseconds since the epoch (None: the line has none).
    pub time_us: Option<u64>,
    pub body: Body<'a>,
}

/// Takes `text` (one line, without its newline) apart; Err says what is missing.
pub fn parse(text: &str) -> Result<Line<'_>, &'static str> {
    let mut rest = text.trim_end_matches(['\r', '\n']).trim_start();
    if rest.starts_with("strace: ") {
        return Ok(Line { pid: 0, time_us: None, body: Body::Note });
    }
    let mut pid = 0;
    if let Some(after) = rest.strip_prefix("[pid") {
        let (n, tail) = after.trim_start().split_once(']').ok_or("a `[pid N` without its `]`")?;
        pid = n.trim().parse().map_err(|_| "the pid in `[pid N]` is not a number")?;
        rest = tail.trim_start();
    }
    let (first, tail) = split_word(rest);
    let mut time_us = None;
    if first.contains('.') {
        time_us = Some(seconds_us(first)?);
        rest = tail;
    } else if !first.is_empty() && first.bytes().all(|b| b.is_ascii_digit()) {
        pid = first.parse().map_err(|_| "the pid is out of range")?;
        let (second, after) = split_word(tail);
        rest = tail;
        if second.contains('.') && second.as_bytes()[0].is_ascii_digit() {
            time_us = Some(seconds_us(second)?);
            rest = after;
        }
    }
    Ok(Line { pid, time_us, body: body(rest)? })
}

/// The first space-separated word and what follows it (trimmed).
fn split_word(s: &str) -> (&str, &str) {
    match s.split_once(' ') {
        Some((w, tail)) => (w, tail.trim_start()),
        None => (s, ""),
    }
}

/// `1700000000.123456` in microseconds (-ttt prints six decimals; fewer or more are scaled).
fn seconds_us(word: &str) -> Result<u64, &'static str> {
    let (s, frac) = word.split_once('.').ok_or("the timestamp has no '.'")?;
    let bad = "the timestamp is not SECONDS.MICROSECONDS (strace -ttt)";
    let secs: u64 = s.parse().map_err(|_| bad)?;
    if frac.is_empty() || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad);
    }
    let digits = &frac[..frac.len().min(6)];
    let mut micros: u64 = digits.parse().map_err(|_| bad)?;
    for _ in digits.len()..6 {
        micros *= 10;
    }
    secs.checked_mul(1_000_000).and_then(|x| x.checked_add(micros)).ok_or(bad)
}

fn body(rest: &str) -> Result<Body<'_>, &'static str> {
    if rest.starts_with("+++") {
        return Ok(Body::Exit);
    }
    if rest.starts_with("---") {
        return Ok(Body::Note);
    }
    if let Some(after) = rest.strip_prefix("<... ") {
        let (name, tail) = after.split_once(" resumed>").ok_or("a `<... NAME` without ` resumed>`")?;
        let (args, ret) = split_ret(tail).ok_or("a resumed call without `) = RETURN` (truncated?)")?;
        return Ok(Body::Resumed { name, args, ret });
    }
    let open = rest.find('(').ok_or("no `NAME(` (not a system call line)")?;
    let name = &rest[..open];
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err("the call's name is not a word");
    }
    let args_and_ret = &rest[open + 1..];
    if let Some(args) = args_and_ret.strip_suffix("<unfinished ...>") {
        return Ok(Body::Unfinished { name, args: args.trim_end() });
    }
    let (args, ret) = split_ret(args_and_ret).ok_or("no `) = RETURN` (a truncated line?)")?;
    Ok(Body::Call { name, args, ret })
}

/// `args) = ret` split at the last `)`, spaces, `= ` (an argument's text cannot hold the real
/// one: strace prints the return value after every argument, padding short calls with spaces
/// to a column: `close(3)        = 0`).
fn split_ret(s: &str) -> Option<(&str, &str)> {
    let b = s.as_bytes();
    let mut end = b.len();
    while let Some(eq) = b[..end].iter().rposition(|&c| c == b'=') {
        end = eq;
        if eq == 0 || b[eq - 1] != b' ' || b.get(eq + 1) != Some(&b' ') {
            continue;
        }
        let head = s[..eq - 1].trim_end_matches(' ');
        if let Some(args) = head.strip_suffix(')') {
            return Some((args, &s[eq + 2..]));
        }
    }
    None
}

/// The return value: a decimal (with -y, `3</path>`: the number before `<`) or hex number;
/// None for `?` and for text that is neither.
pub fn ret_value(ret: &str) -> Option<i64> {
    let word = ret.split([' ', '<']).next().unwrap_or("");
    match word.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok().map(|v| v as i64),
        None => word.parse().ok(),
    }
}

/// The top-level arguments of `args` (commas inside strings, `{}`, `[]` and `()` do not
/// split), each trimmed.
pub fn args(args: &str) -> ArgIter<'_> {
    ArgIter { rest: args }
}

pub struct ArgIter<'a> {
    rest: &'a str,
}

impl<'a> Iterator for ArgIter<'a> {
    type Item = &'a str;
    fn next(&mut self) -> Option<&'a str> {
        let s = self.rest.trim_start();
        if s.is_empty() {
            return None;
        }
        let bytes = s.as_bytes();
        let (mut depth, mut quoted, mut i) = (0usize, false, 0);
        while i < bytes.len() {
            match bytes[i] {
                b'\\' if quoted => i += 1,
                b'"' => quoted = !quoted,
                b'(' | b'[' | b'{' if !quoted => depth += 1,
                b')' | b']' | b'}' if !quoted => depth = depth.saturating_sub(1),
                b',' if !quoted && depth == 0 => {
                    self.rest = &s[i + 1..];
                    return Some(s[..i].trim_end());
                }
                _ => {}
            }
            i += 1;
        }
        self.rest = "";
        Some(s.trim_end())
    }
}

/// A quoted path argument, unescaped (`"a\"b"` is `a"b`; `\n`, `\t`, `\\`, `\xHH` and octal
/// `\NNN` as strace writes them). None when the argument is not a string (`NULL`, an address).
pub fn string(arg: &str) -> Option<String> {
    let inner = arg.strip_prefix('"')?;
    let end = inner.rfind('"')?;
    let inner = &inner[..end];
    if !inner.contains('\\') {
        return Some(inner.to_string());
    }
    let b = inner.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' || i + 1 == b.len() {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let (byte, used) = escape(&b[i + 1..]);
        out.push(byte);
        i += 1 + used;
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// The byte an escape after its backslash stands for, and how many bytes it used.
fn escape(b: &[u8]) -> (u8, usize) {
    let hex = |c: u8| (c as char).to_digit(16);
    match b[0] {
        b'n' => (b'\n', 1),
        b't' => (b'\t', 1),
        b'r' => (b'\r', 1),
        b'v' => (0x0b, 1),
        b'f' => (0x0c, 1),
        b'x' => match (b.get(1).and_then(|&c| hex(c)), b.get(2).and_then(|&c| hex(c))) {
            (Some(h), Some(l)) => ((h * 16 + l) as u8, 3),
            _ => (b'x', 1),
        },
        b'0'..=b'7' => {
            let n = b.iter().take(3).take_while(|c| (b'0'..=b'7').contains(c)).count();
            let v = b[..n].iter().fold(0u32, |v, &c| v * 8 + (c - b'0') as u32);
            (v as u8, n)
        }
        other => (other, 1),
    }
}

/// A number argument: decimal, hex, or with -y a `3</path>` fd (the number before `<`).
pub fn number(arg: &str) -> Option<i64> {
    ret_value(arg)
}

/// Whether a `|`-separated flags argument holds `flag` (`O_WRONLY|O_CREAT`, `AT_REMOVEDIR`).
pub fn has_flag(arg: &str, flag: &str) -> bool {
    arg.split('|').any(|f| f.trim() == flag)
}
