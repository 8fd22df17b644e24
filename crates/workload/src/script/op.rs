//! One line of a file-operation script: what a person writes as shell (`mkdir -p d{0..7}`,
//! `create d{0..7}/f{0..49} size=24KiB`, `rm -r d3`, `fstrim minlen=64KiB`), parsed into an
//! [`Op`] with its words checked (units, flags, keys) before anything runs.

use super::pattern::{Pattern, EXPANSION_MAX};
use std::collections::BTreeMap;
use trimlab_sim::{ByteSize, DurationNs};

/// Which of a pattern's matches an `rm` removes.
#[derive(Clone, Debug, PartialEq)]
pub enum Pick {
    All,
    /// The matches at `start`, `start + every`, ... (from 0).
    Every {
        every: usize,
        start: usize,
    },
    /// `n` matches drawn with the script's random stream.
    Random(usize),
}

/// A file's size in `create`: fixed, or drawn uniformly in 4 KiB steps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SizeSpec {
    Fixed(u64),
    Uniform(u64, u64),
}

/// The paths a line names: its words, each brace-expanded when the line runs (in order,
/// word by word, as the shell would have listed them).
#[derive(Clone, Debug, PartialEq)]
pub struct Paths(Vec<Pattern>);

impl Paths {
    /// Calls `f` with each path in order; stops at `f`'s first error.
    pub fn each<E>(&self, f: &mut dyn FnMut(&str) -> Result<(), E>) -> Result<(), E> {
        self.0.iter().try_for_each(|word| word.each(f))
    }

    /// Every path, in order.
    pub fn expand(&self) -> Vec<String> {
        self.0.iter().flat_map(|word| word.expand()).collect()
    }

    /// How many paths the words expand to.
    pub fn count(&self) -> u64 {
        self.0.iter().map(Pattern::count).sum()
    }
}

/// One operation. Paths are brace-expanded when the line runs; globs among them resolve
/// then, against what exists.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    Phase(String),
    Mkdir { parents: bool, paths: Paths },
    Create { paths: Paths, size: SizeSpec, bs: Option<u64>, fsync: bool },
    Touch(Paths),
    Write { paths: Paths, offset: u64, bytes: u64, bs: Option<u64> },
    Append { paths: Paths, bytes: u64, bs: Option<u64> },
    Fsync { paths: Paths },
    Sync,
    Rm { recursive: bool, force: bool, paths: Paths, pick: Pick },
    Rmdir(Paths),
    Mv { from: String, to: String },
    Truncate { paths: Paths, size: u64 },
    Fallocate { paths: Paths, offset: u64, bytes: u64 },
    PunchHole { paths: Paths, offset: u64, bytes: u64 },
    Sleep(u64),
    Fstrim { minlen: u64, offset: u64, length: u64 },
    Umount,
    Mount { discard: Option<String> },
    Remount { discard: Option<String> },
}

/// Every operation a line may start with, for the error on an unknown one.
pub const OPERATIONS: &str =
    "phase, mkdir, create, touch, write, append, fsync, fdatasync, sync, rm, rmdir, mv, \
     truncate, fallocate, punch-hole, sleep, fstrim, umount, mount, remount";

/// A line split into flags (`-p`, `-rf`), `key=value` options and plain words, each checked
/// against what the operation reads.
#[derive(Clone)]
struct Words<'a> {
    op: &'a str,
    flags: Vec<char>,
    options: BTreeMap<&'a str, &'a str>,
    plain: Vec<&'a str>,
}

impl<'a> Words<'a> {
    fn split(op: &'a str, rest: &[&'a str], flags: &str, keys: &[&str]) -> Result<Words<'a>, String> {
        let mut w = Words { op, flags: Vec::new(), options: BTreeMap::new(), plain: Vec::new() };
        for &word in rest {
            if let Some(f) = word.strip_prefix('-').filter(|f| !f.is_empty() && w.plain.is_empty()) {
                for c in f.chars() {
                    if !flags.contains(c) {
                        let accepted =
                            if flags.is_empty() { "none".to_string() } else { format!("-{flags}") };
                        return Err(format!("unknown flag -{c} (accepted: {accepted})"));
                    }
                    w.flags.push(c);
                }
            } else if let Some((key, value)) = word.split_once('=') {
                if !keys.contains(&key) {
                    let accepted = if keys.is_empty() { "none".to_string() } else { keys.join(", ") };
                    return Err(format!("unknown option {key}= (accepted: {accepted})"));
                }
                if w.options.insert(key, value).is_some() {
                    return Err(format!("{key}= is given twice"));
                }
            } else {
                w.plain.push(word);
            }
        }
        Ok(w)
    }

    fn flag(&self, c: char) -> bool {
        self.flags.contains(&c)
    }

    fn size(&self, key: &str) -> Result<Option<u64>, String> {
        self.options.get(key).map(|v| size(key, v)).transpose()
    }

    fn required_size(&self, key: &str) -> Result<u64, String> {
        self.size(key)?.ok_or_else(|| format!("needs {key}=SIZE"))
    }

    fn count(&self, key: &str) -> Result<Option<usize>, String> {
        let parse = |v: &&str| v.parse::<usize>().map_err(|_| format!("{key}={v}: expected a whole number"));
        self.options.get(key).map(parse).transpose()
    }

    /// The plain words as paths (their braces checked, expanded when the line runs), at
    /// least one.
    fn paths(&self) -> Result<Paths, String> {
        if self.plain.is_empty() {
            return Err(format!("{} needs at least one path", self.op));
        }
        let (mut words, mut count) = (Vec::with_capacity(self.plain.len()), 0u64);
        for word in &self.plain {
            let pattern = Pattern::parse(&path(word)?)?;
            // The limit is the line's, not each word's: 1,000 words of 10^7 paths each would
            // otherwise run for minutes.
            count += pattern.count();
            if count > EXPANSION_MAX as u64 {
                return Err(format!("the line's words expand to more than {EXPANSION_MAX} paths"));
            }
            words.push(pattern);
        }
        Ok(Paths(words))
    }

    fn no_plain(&self) -> Result<(), String> {
        match self.plain.first() {
            Some(w) => Err(format!("takes no path or word here, found \"{w}\"")),
            None => Ok(()),
        }
    }
}

/// A size with a unit (`24KiB`, `1M`); a bare number other than 0 is refused, since a script
/// reads like shell where `head -c 24` would mean bytes and `size=24` is more likely a slip.
fn size(key: &str, text: &str) -> Result<u64, String> {
    if text.chars().all(|c| c.is_ascii_digit()) && text != "0" {
        return Err(format!("{key}={text} has no unit; write e.g. {key}={text}KiB or {key}={text}B"));
    }
    ByteSize::parse(text).map(|b| b.0).map_err(|e| format!("{key}=: {e}"))
}

/// A path relative to the mount point: a leading '/' is the mount point; `.`/`..` components
/// and empty names are refused (a script names files, it does not navigate).
fn path(word: &str) -> Result<String, String> {
    let p = word.trim_start_matches('/').trim_end_matches('/');
    if p.is_empty() {
        return Err(format!("\"{word}\" names the mount point itself, not a file or directory"));
    }
    if p.split('/').any(|c| c.is_empty() || c == "." || c == "..") {
        return Err(format!("\"{word}\": empty, '.' and '..' path components are not accepted"));
    }
    Ok(p.to_string())
}

fn discard(w: &Words) -> Result<Option<String>, String> {
    w.no_plain()?;
    match w.options.get("discard") {
        Some(text) => {
            trimlab_fs::policy::parse(text).map_err(|e| format!("discard={text}: {e}"))?;
            Ok(Some(text.to_string()))
        }
        None => Ok(None),
    }
}

/// Parses one line (already stripped of its comment and known not to be blank).
pub fn parse_line(line: &str) -> Result<Op, String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let (op, rest) = (words[0], &words[1..]);
    let split = |flags: &str, keys: &[&str]| Words::split(op, rest, flags, keys);
    match op {
        "phase" => match rest {
            [name] => Ok(Op::Phase(name.to_string())),
            _ => Err("phase takes one name (no blanks)".to_string()),
        },
        "mkdir" => {
            let w = split("p", &[])?;
            Ok(Op::Mkdir { parents: w.flag('p'), paths: w.paths()? })
        }
        "create" => create(&split("", &["size", "bs", "fsync"])?),
        "touch" => Ok(Op::Touch(split("", &[])?.paths()?)),
        "write" => {
            let w = split("", &["offset", "bytes", "bs"])?;
            let (offset, bytes) = (w.size("offset")?.unwrap_or(0), w.required_size("bytes")?);
            Ok(Op::Write { paths: w.paths()?, offset, bytes, bs: w.size("bs")? })
        }
        "append" => {
            let w = split("", &["bytes", "bs"])?;
            Ok(Op::Append { paths: w.paths()?, bytes: w.required_size("bytes")?, bs: w.size("bs")? })
        }
        "fsync" | "fdatasync" => Ok(Op::Fsync { paths: split("", &[])?.paths()? }),
        "sync" => split("", &[])?.no_plain().map(|()| Op::Sync),
        "rm" => rm(&split("rf", &["every", "start", "random"])?),
        "rmdir" => Ok(Op::Rmdir(split("", &[])?.paths()?)),
        "mv" => mv(&split("", &[])?),
        "truncate" => {
            let w = split("", &["size"])?;
            Ok(Op::Truncate { paths: w.paths()?, size: w.required_size("size")? })
        }
        "fallocate" | "punch-hole" => range_op(&split("", &["offset", "bytes"])?),
        "sleep" => match rest {
            [d] => DurationNs::parse(d).map(|d| Op::Sleep(d.0)),
            _ => Err("sleep takes one duration, e.g. sleep 200s".to_string()),
        },
        "fstrim" => {
            let w = split("", &["minlen", "offset", "length"])?;
            w.no_plain()?;
            let (minlen, offset) = (w.size("minlen")?.unwrap_or(0), w.size("offset")?.unwrap_or(0));
            Ok(Op::Fstrim { minlen, offset, length: w.size("length")?.unwrap_or(u64::MAX) })
        }
        "umount" => split("", &[])?.no_plain().map(|()| Op::Umount),
        "mount" => Ok(Op::Mount { discard: discard(&split("", &["discard"])?)? }),
        "remount" => Ok(Op::Remount { discard: discard(&split("", &["discard"])?)? }),
        _ => Err(format!("unknown operation \"{op}\" (accepted: {OPERATIONS})")),
    }
}

fn create(w: &Words) -> Result<Op, String> {
    // `fsync` as a bare word (as the syntax shows it) or fsync=yes.
    let bare_fsync = w.plain.contains(&"fsync");
    let w = &Words { plain: w.plain.iter().copied().filter(|p| *p != "fsync").collect(), ..w.clone() };
    let text = w.options.get("size").ok_or("create needs size=SIZE or size=MIN..MAX")?;
    let size = match text.split_once("..") {
        Some((lo, hi)) => {
            let (lo, hi) = (size("size", lo)?, size("size", hi)?);
            if lo > hi {
                return Err(format!("size={text}: the minimum is above the maximum"));
            }
            SizeSpec::Uniform(lo, hi)
        }
        None => SizeSpec::Fixed(size("size", text)?),
    };
    let fsync = match w.options.get("fsync") {
        None => bare_fsync,
        Some(&"yes" | &"true") => true,
        Some(&"no" | &"false") => false,
        Some(v) => return Err(format!("fsync={v}: expected yes or no")),
    };
    if w.size("bs")? == Some(0) {
        return Err("bs=0: a write size must be at least one byte".to_string());
    }
    Ok(Op::Create { paths: w.paths()?, size, bs: w.size("bs")?, fsync })
}

fn rm(w: &Words) -> Result<Op, String> {
    let pick = match (w.count("every")?, w.count("start")?, w.count("random")?) {
        (None, None, None) => Pick::All,
        (Some(0), _, _) => return Err("every=0: expected 1 or more".to_string()),
        (Some(every), start, None) => Pick::Every { every, start: start.unwrap_or(0) },
        (None, None, Some(n)) => Pick::Random(n),
        (None, Some(_), _) => return Err("start= goes with every=K".to_string()),
        (Some(_), _, Some(_)) => return Err("every= and random= do not go together".to_string()),
    };
    Ok(Op::Rm { recursive: w.flag('r'), force: w.flag('f'), paths: w.paths()?, pick })
}

fn mv(w: &Words) -> Result<Op, String> {
    let [from, to] = w.plain[..] else {
        return Err(format!("mv takes two paths, FROM and TO; found {}", w.plain.len()));
    };
    let (from, to) = (path(from)?, path(to)?);
    for p in [&from, &to] {
        if p.contains(['{', '*', '?']) {
            return Err(format!("mv renames one path; \"{p}\" is a pattern"));
        }
    }
    Ok(Op::Mv { from, to })
}

fn range_op(w: &Words) -> Result<Op, String> {
    let (offset, bytes) = (w.size("offset")?.unwrap_or(0), w.required_size("bytes")?);
    let paths = w.paths()?;
    Ok(match w.op {
        "fallocate" => Op::Fallocate { paths, offset, bytes },
        _ => Op::PunchHole { paths, offset, bytes },
    })
}
