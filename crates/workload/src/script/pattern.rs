//! Path patterns of a file-operation script, as a shell reads them: brace expansion
//! (`d{0..7}/f{1..29..2}`, `{a,b}`) when the script is parsed, and glob components (`*`, `?`
//! inside one path component; run.rs walks the tree a component at a time) against what exists
//! when the line runs, listed in natural order (`f2` before `f10`, as `ls -v` and a person
//! expect).

use std::cmp::Ordering;
use std::fmt::Write;

/// The most paths one line may expand to (over all its words): a typo like `f{0..99999999}`
/// is refused before it allocates (a script naming more files than this writes them in
/// several lines).
pub const EXPANSION_MAX: usize = 10_000_000;

/// The deepest brace groups may nest (`{a,{b,{c}}}` is 3): a person's script nests two or
/// three; the cap bounds the work each path costs (a path walks its nested groups) and keeps
/// a hostile line from making every path pay for its depth.
pub const NESTING_MAX: usize = 32;

/// The longest name a path component may have and the longest path, as the kernel takes
/// them (include/uapi/linux/limits.h: NAME_MAX 255, PATH_MAX 4096 with its NUL): a word
/// whose every path is longer is refused when the script is parsed, before its paths are
/// built (52,000 alternatives after a 105 KB prefix are 5.5 GB of paths).
pub const NAME_MAX: usize = 255;
pub const PATH_MAX: usize = 4096;

/// How much of a hostile value an error quotes (the rest is counted, not echoed).
const QUOTE_MAX: usize = 120;

/// `text` as an error quotes it, in double quotes.
pub fn quoted(text: &str) -> String {
    format!("\"{}\"", clip(text))
}

/// `text` whole if short, else its start and how long it was (an error echoing a 400 KB line
/// is unreadable, and a log of such errors grows with the input).
pub fn clip(text: &str) -> String {
    trimlab_importers::input::clip(text, QUOTE_MAX).into_owned()
}

/// Expands every brace group of `word` (cartesian, leftmost slowest: bash's order).
pub fn expand_braces(word: &str) -> Result<Vec<String>, String> {
    Ok(Pattern::parse(word)?.expand())
}

/// A word's brace expansion, expanded only when its line runs: a line naming a quarter of a
/// million files (`create d{0..249}/f{0..999}`) holds its groups, not the quarter of a
/// million strings, so parsing a script (which a run does when it checks its config, and
/// again when it runs it) costs its text, not its paths.
///
/// The word is a flat list of items (literal text, a numeric range, a group of alternatives)
/// each knowing the item that follows it once it is done (the next in its sequence, or what
/// follows its enclosing group): parsing and expanding are loops over that list, never
/// recursion (a 400 KB line of nested braces cannot overflow the stack), and an alternative
/// never copies the text before it (memory is linear in the word).
#[derive(Clone, Debug, PartialEq)]
pub struct Pattern {
    word: String,
    items: Vec<Item>,
    /// The first item of the word (None: the word is empty).
    first: Option<u32>,
    count: u64,
}

#[derive(Clone, Debug, PartialEq)]
struct Item {
    kind: Kind,
    /// The item after this one, once this one is done (None: the path is complete).
    next: Option<u32>,
}

#[derive(Clone, Debug, PartialEq)]
enum Kind {
    /// `word[start..end]`.
    Literal(usize, usize),
    Range(Range),
    /// Where each alternative starts (its first item, or what follows the group when it is
    /// empty, `{,x}`; None: the end of the word).
    Alternatives(Vec<Option<u32>>),
}

/// `{from..to..step}`: `count` numbers from `from`, up or down, zero-padded to `width`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Range {
    from: i64,
    up: bool,
    step: u64,
    count: u64,
    width: usize,
}

impl Range {
    fn item(&self, i: u64) -> i64 {
        // Every item lies between the bounds, so it fits an i64; the product may not.
        let off = i128::from(i) * i128::from(self.step);
        let value = if self.up { i128::from(self.from) + off } else { i128::from(self.from) - off };
        i64::try_from(value).unwrap_or_else(|_| unreachable!("{self:?} item {i}"))
    }
}

/// A sequence being built while parsing: its first item, its last, and the items of its
/// nested sequences whose successor is the item appended after them (`pending`).
#[derive(Default)]
struct Seq {
    first: Option<u32>,
    /// Items whose `next` is whatever comes next in this sequence.
    pending: Vec<u32>,
}

/// An open brace group while parsing: its alternatives so far and the sequence being read.
struct Group {
    id: u32,
    alternatives: Vec<Option<u32>>,
    /// Items that end an alternative already read.
    tails: Vec<u32>,
    seq: Seq,
}

impl Pattern {
    /// Parses `word`'s braces; refuses unbalanced braces, bad ranges, nesting deeper than
    /// [`NESTING_MAX`] and words of more than [`EXPANSION_MAX`] paths.
    pub fn parse(word: &str) -> Result<Pattern, String> {
        let closes = matching_closes(word)?;
        let mut p = Pattern { word: word.to_string(), items: Vec::new(), first: None, count: 1 };
        let (mut root, mut open): (Seq, Vec<Group>) = (Seq::default(), Vec::new());
        let bytes = word.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            let depth = open.len();
            let seq = open.last_mut().map_or(&mut root, |g| &mut g.seq);
            match bytes[i] {
                b'{' => {
                    let close = closes[&i];
                    let body = &word[i + 1..close];
                    if let Some(range) = if body.contains('{') { None } else { range(body)? } {
                        p.append(seq, Kind::Range(range));
                        i = close + 1;
                        continue;
                    }
                    if depth == NESTING_MAX {
                        return Err(format!(
                            "{} nests brace groups more than {NESTING_MAX} deep",
                            quoted(word)
                        ));
                    }
                    let group = p.open_group(seq);
                    open.push(group);
                }
                b',' if depth > 0 => {
                    let g = open.last_mut().unwrap_or_else(|| unreachable!());
                    end_alternative(g);
                }
                b'}' => {
                    let mut g = open.pop().unwrap_or_else(|| unreachable!("matched above"));
                    end_alternative(&mut g);
                    let seq = open.last_mut().map_or(&mut root, |g| &mut g.seq);
                    p.close_group(seq, g);
                }
                _ => {
                    let end =
                        bytes[i..].iter().position(|b| b"{},".contains(b)).map_or(bytes.len(), |n| i + n);
                    // A comma outside every group is text.
                    let end = if end == i { i + 1 } else { end };
                    p.append(seq, Kind::Literal(i, end));
                    i = end;
                    continue;
                }
            }
            i += 1;
        }
        p.first = root.first;
        p.finish()?;
        Ok(p)
    }

    /// Links past single groups, counts the paths and checks them against the limits.
    fn finish(&mut self) -> Result<(), String> {
        self.skip_single_groups();
        self.count = self.count_paths();
        if self.count > EXPANSION_MAX as u64 {
            return Err(format!("{} expands to more than {EXPANSION_MAX} paths", quoted(&self.word)));
        }
        self.check_lengths()
    }

    /// A group's `{`: its item comes before its alternatives' (see `count_paths`).
    fn open_group(&mut self, seq: &mut Seq) -> Group {
        let id = self.append(seq, Kind::Alternatives(Vec::new()));
        Group { id, alternatives: Vec::new(), tails: Vec::new(), seq: Seq::default() }
    }

    /// Appends an item to `seq`: the items waiting for a successor get it.
    fn append(&mut self, seq: &mut Seq, kind: Kind) -> u32 {
        let id = self.items.len() as u32;
        self.items.push(Item { kind, next: None });
        for waiting in seq.pending.drain(..) {
            self.items[waiting as usize].next = Some(id);
        }
        seq.first.get_or_insert(id);
        seq.pending.push(id);
        id
    }

    /// A group's `}`: every alternative's last item continues with what follows the group.
    fn close_group(&mut self, seq: &mut Seq, mut g: Group) {
        self.items[g.id as usize].kind = Kind::Alternatives(g.alternatives);
        debug_assert_eq!(seq.pending, [g.id]);
        seq.pending.append(&mut g.tails);
    }

    /// Points every link past groups of one alternative (`{a}` is `a`, as this reader always
    /// took it; `{}` is nothing), so a path never walks them: a line of 100,000 `{}` costs
    /// each path nothing. Links point to higher numbers, so one pass from the last resolves.
    fn skip_single_groups(&mut self) {
        let mut to = vec![None; self.items.len()];
        for i in (0..self.items.len()).rev() {
            let resolve = |n: Option<u32>, to: &[Option<u32>]| n.and_then(|n| to[n as usize]);
            let next = resolve(self.items[i].next, &to);
            self.items[i].next = next;
            to[i] = match &mut self.items[i].kind {
                Kind::Alternatives(alts) if alts.len() == 1 => alts[0].map_or(next, |f| to[f as usize]),
                Kind::Alternatives(alts) => {
                    for a in alts.iter_mut() {
                        *a = a.map_or(next, |f| to[f as usize]);
                    }
                    Some(i as u32)
                }
                _ => Some(i as u32),
            };
        }
        self.first = self.first.and_then(|f| to[f as usize]);
    }

    /// Paths of the whole word (saturating: only the comparison with the limit matters).
    /// Items are numbered in the order they open, so an item's successor and alternatives
    /// have higher numbers: one pass from the last computes each item's paths onward (an
    /// alternative's items run on past its group, to the end of the word).
    fn count_paths(&self) -> u64 {
        let mut onward = vec![1u64; self.items.len()];
        for i in (0..self.items.len()).rev() {
            let after = self.items[i].next.map_or(1, |n| onward[n as usize]);
            onward[i] = match &self.items[i].kind {
                Kind::Literal(..) => after,
                Kind::Range(r) => r.count.saturating_mul(after),
                Kind::Alternatives(alts) => {
                    alts.iter().fold(0u64, |sum, a| sum.saturating_add(a.map_or(1, |f| onward[f as usize])))
                }
            };
        }
        self.first.map_or(1, |f| onward[f as usize])
    }

    /// Refuses a word whose literal text has a component longer than NAME_MAX (every path
    /// has it) or whose shortest path is longer than PATH_MAX (a path's literal text and a
    /// digit per range item at least; the same backward pass as `count_paths`).
    fn check_lengths(&self) -> Result<(), String> {
        for item in &self.items {
            if let Kind::Literal(start, end) = item.kind {
                let longest = self.word[start..end].split('/').map(str::len).max().unwrap_or(0);
                if longest > NAME_MAX {
                    return Err(format!(
                        "{} has a name of {longest} bytes, longer than the kernel's NAME_MAX ({NAME_MAX})",
                        quoted(&self.word)
                    ));
                }
            }
        }
        let mut shortest = vec![0u64; self.items.len()];
        for i in (0..self.items.len()).rev() {
            let after = self.items[i].next.map_or(0, |n| shortest[n as usize]);
            shortest[i] = match &self.items[i].kind {
                Kind::Literal(start, end) => (end - start) as u64 + after,
                Kind::Range(_) => 1 + after,
                Kind::Alternatives(alts) => {
                    alts.iter().map(|a| a.map_or(0, |f| shortest[f as usize])).min().unwrap_or(0)
                }
            };
        }
        let least = self.first.map_or(0, |f| shortest[f as usize]);
        if least >= PATH_MAX as u64 {
            return Err(format!(
                "{}: every path it names is at least {least} bytes long, past the kernel's PATH_MAX ({PATH_MAX})",
                quoted(&self.word)
            ));
        }
        Ok(())
    }

    /// How many paths the word expands to.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Calls `f` with each path in order (one buffer, reused); stops at `f`'s first error.
    /// A trail of the items of the current path is the only state: the next path backs up
    /// to the last item with a choice left and continues from there.
    pub fn each<E>(&self, f: &mut dyn FnMut(&str) -> Result<(), E>) -> Result<(), E> {
        let (mut buf, mut trail) = (String::new(), Vec::<(u32, u64, usize)>::new());
        let mut pos = self.first;
        loop {
            while let Some(i) = pos {
                trail.push((i, 0, buf.len()));
                pos = self.enter(i, 0, &mut buf);
            }
            f(&buf)?;
            loop {
                let Some((item, choice, len)) = trail.last_mut() else { return Ok(()) };
                if *choice + 1 < self.choices(*item) {
                    *choice += 1;
                    buf.truncate(*len);
                    pos = self.enter(*item, *choice, &mut buf);
                    break;
                }
                trail.pop();
            }
        }
    }

    fn choices(&self, item: u32) -> u64 {
        match &self.items[item as usize].kind {
            Kind::Literal(..) => 1,
            Kind::Range(r) => r.count,
            Kind::Alternatives(alts) => alts.len() as u64,
        }
    }

    /// Writes `item`'s `choice` and returns the item that follows it.
    fn enter(&self, item: u32, choice: u64, buf: &mut String) -> Option<u32> {
        let it = &self.items[item as usize];
        match &it.kind {
            Kind::Literal(start, end) => buf.push_str(&self.word[*start..*end]),
            Kind::Range(r) => {
                write!(buf, "{:0w$}", r.item(choice), w = r.width).unwrap_or_else(|_| unreachable!());
            }
            Kind::Alternatives(alts) => return alts[choice as usize],
        }
        it.next
    }

    /// Every path, in order.
    pub fn expand(&self) -> Vec<String> {
        let mut out = Vec::with_capacity(self.count as usize);
        let _ = self.each(&mut |p| -> Result<(), ()> {
            out.push(p.to_string());
            Ok(())
        });
        out
    }
}

/// An alternative ends (`,` or `}`): its first item is recorded, its waiting items join the
/// group's.
fn end_alternative(g: &mut Group) {
    let seq = std::mem::take(&mut g.seq);
    g.alternatives.push(seq.first);
    let mut pending = seq.pending;
    g.tails.append(&mut pending);
}

/// The `}` of each `{` by position; an unbalanced brace is an error.
fn matching_closes(word: &str) -> Result<std::collections::BTreeMap<usize, usize>, String> {
    let (mut closes, mut open) = (std::collections::BTreeMap::new(), Vec::new());
    for (i, b) in word.bytes().enumerate() {
        match b {
            b'{' => open.push(i),
            b'}' => match open.pop() {
                Some(o) => {
                    closes.insert(o, i);
                }
                None => return Err(format!("{} has a '}}' without its '{{'", quoted(word))),
            },
            _ => {}
        }
    }
    match open.is_empty() {
        true => Ok(closes),
        false => Err(format!("{} has a '{{' without its '}}'", quoted(word))),
    }
}

/// `0..7` or `1..29..2` (either direction, as bash), or None when `body` is not a range.
fn range(body: &str) -> Result<Option<Range>, String> {
    let parts: Vec<&str> = body.split("..").collect();
    if !(2..=3).contains(&parts.len()) || parts.iter().any(|p| p.contains(',') || p.contains('{')) {
        return Ok(None);
    }
    let number = |p: &str| {
        p.parse::<i64>().map_err(|_| format!("{{{}}}: {} is not an integer", quoted(body), quoted(p)))
    };
    let (from, to) = (number(parts[0])?, number(parts[1])?);
    let step = match parts.get(2) {
        Some(s) => number(s)?.unsigned_abs(),
        None => 1,
    };
    if step == 0 {
        return Err(format!("{{{body}}}: the step must not be 0"));
    }
    // A full-i64 range has 2^64 items, one more than a u64 holds: it is over the limit too.
    let count = (from.abs_diff(to) / step).saturating_add(1);
    if count > EXPANSION_MAX as u64 {
        return Err(format!("{{{body}}} expands to more than {EXPANSION_MAX} paths"));
    }
    // Zero-padded bounds (`{01..10}`) pad every item to the wider bound, as bash does.
    let width = match parts[..2].iter().any(|p| p.trim_start_matches('-').starts_with('0') && p.len() > 1) {
        true => parts[0].len().max(parts[1].len()),
        false => 0,
    };
    Ok(Some(Range { from, up: from <= to, step, count, width }))
}

/// Whether `word` has glob characters (matched against existing paths when the line runs).
pub fn is_glob(word: &str) -> bool {
    word.contains(['*', '?'])
}

/// Whether one path component `s` matches the glob component `p`.
pub fn component_matches(p: &[u8], s: &[u8]) -> bool {
    // Iterative wildcard matching with one backtrack point (linear in practice).
    let (mut pi, mut si, mut star, mut mark) = (0, 0, None, 0);
    while si < s.len() {
        if pi < p.len() && (p[pi] == b'?' || p[pi] == s[si]) {
            pi += 1;
            si += 1;
        } else if pi < p.len() && p[pi] == b'*' {
            star = Some(pi);
            mark = si;
            pi += 1;
        } else if let Some(st) = star {
            pi = st + 1;
            mark += 1;
            si = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

/// Natural order: runs of digits compare as numbers, the rest byte by byte.
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i].is_ascii_digit() && b[j].is_ascii_digit() {
            let (si, sj) = (i, j);
            while i < a.len() && a[i].is_ascii_digit() {
                i += 1;
            }
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            let (x, y) = (trim_zeros(&a[si..i]), trim_zeros(&b[sj..j]));
            let by_value = x.len().cmp(&y.len()).then_with(|| x.cmp(y));
            if by_value != Ordering::Equal {
                return by_value;
            }
        } else {
            if a[i] != b[j] {
                return a[i].cmp(&b[j]);
            }
            i += 1;
            j += 1;
        }
    }
    (a.len() - i).cmp(&(b.len() - j)).then_with(|| a.cmp(b))
}

/// A sort key of `name` that orders as [`natural_cmp`] does, packed in 128 bits, or None
/// when it does not fit (or the name holds a NUL byte). Each run of digits becomes '0', its
/// length without leading zeros and those digits (so runs compare by value, and a run
/// against another byte as a digit would); then a 0 byte (a name that ends first sorts
/// first) and the name itself (natural_cmp's last tie-break). Zero bytes pad the right: no
/// two names pack alike, since each key ends with its name's last, non-zero, byte.
pub fn natural_key(name: &str) -> Option<u128> {
    let s = name.as_bytes();
    let mut key = [0u8; 16];
    let mut n = 0;
    let mut put = |b: u8| -> Option<()> {
        *key.get_mut(n)? = b;
        n += 1;
        Some(())
    };
    let mut i = 0;
    while i < s.len() {
        if s[i].is_ascii_digit() {
            let start = i;
            while i < s.len() && s[i].is_ascii_digit() {
                i += 1;
            }
            let digits = trim_zeros(&s[start..i]);
            put(b'0')?;
            put(u8::try_from(digits.len()).ok()?)?;
            digits.iter().try_for_each(|&d| put(d))?;
        } else {
            if s[i] == 0 {
                return None;
            }
            put(s[i])?;
            i += 1;
        }
    }
    put(0)?;
    s.iter().try_for_each(|&b| put(b))?;
    Some(u128::from_be_bytes(key))
}

fn trim_zeros(digits: &[u8]) -> &[u8] {
    let first = digits.iter().position(|&d| d != b'0').unwrap_or(digits.len());
    &digits[first..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn braces_expand_as_bash() {
        assert_eq!(
            expand_braces("d{0..2}/f{1,2}").unwrap(),
            ["d0/f1", "d0/f2", "d1/f1", "d1/f2", "d2/f1", "d2/f2"]
        );
        assert_eq!(expand_braces("f{1..9..3}").unwrap(), ["f1", "f4", "f7"]);
        assert_eq!(expand_braces("f{3..1}").unwrap(), ["f3", "f2", "f1"]);
        assert_eq!(expand_braces("f{08..10}").unwrap(), ["f08", "f09", "f10"]);
        assert_eq!(expand_braces("a{b,c{1..2}}d").unwrap(), ["abd", "ac1d", "ac2d"]);
        assert_eq!(expand_braces("plain").unwrap(), ["plain"]);
    }

    #[test]
    fn bad_braces_say_why() {
        assert!(expand_braces("f{1..3").unwrap_err().contains("without its '}'"));
        assert!(expand_braces("f1..3}").unwrap_err().contains("without its '{'"));
        assert!(expand_braces("f{1..x}").unwrap_err().contains("not an integer"));
        assert!(expand_braces("f{1..5..0}").unwrap_err().contains("step"));
        assert!(expand_braces("f{0..99999999999}").unwrap_err().contains("more than"));
        assert!(expand_braces("{0..9999}/{0..9999}").unwrap_err().contains("more than"));
    }

    #[test]
    fn glob_components_match_as_the_shell_does() {
        let m = |p: &str, s: &str| component_matches(p.as_bytes(), s.as_bytes());
        assert!(m("f?", "f2"));
        assert!(m("*", "abc"));
        assert!(!m("f?", "f10"));
        assert!(m("f*0", "f10"));
        assert!(!m("f*0", "f01"));
        assert!(m("a*b*c", "axxbyyc"));
        assert!(!m("a*b*c", "axxbyy"));
    }

    #[test]
    fn natural_keys_order_as_natural_cmp() {
        let names = [
            "f0", "f00", "f1", "f01", "f2", "f10", "f100", "f9", "g", "f", "a-b", "a", "a.", "a0", "a00b",
            "a0b", "x1y2", "x1y10", "x01y2", "9", "10", "~", "Z", "f1a", "f1-", "0", "",
        ];
        for a in names {
            for b in names {
                let (ka, kb) = (natural_key(a).unwrap(), natural_key(b).unwrap());
                assert_eq!(ka.cmp(&kb), natural_cmp(a, b), "{a:?} vs {b:?}");
            }
        }
        assert_eq!(natural_key("a_name_too_long_to_pack"), None);
        assert_eq!(natural_key("nul\0"), None);
    }

    #[test]
    fn a_pattern_expands_lazily_as_bash_would() {
        let p = Pattern::parse("d{0..2}/{a,b{1..2}}x").unwrap();
        assert_eq!(p.count(), 9);
        assert_eq!(
            p.expand(),
            ["d0/ax", "d0/b1x", "d0/b2x", "d1/ax", "d1/b1x", "d1/b2x", "d2/ax", "d2/b1x", "d2/b2x"]
        );
        let mut seen = Vec::new();
        let stopped = p.each(&mut |path| {
            seen.push(path.to_string());
            if seen.len() == 4 {
                return Err("stop");
            }
            Ok(())
        });
        assert_eq!((stopped, seen.len()), (Err("stop"), 4));
        assert!(Pattern::parse("a}{1..2}").unwrap_err().contains("\"a}{1..2}\" has a '}' without"));
        assert_eq!(Pattern::parse("{0..3161}/{0..3161}").unwrap().count(), 3162 * 3162);
        assert!(Pattern::parse("{0..3162}/{0..3161}").unwrap_err().contains("more than"));
    }

    #[test]
    fn hostile_words_cost_their_length_not_their_nesting_or_prefixes() {
        // 400 KB of nesting: refused at the cap, without recursing (the old parser overflowed
        // the stack).
        let deep = format!("{}a{}", "{a,".repeat(133_000), "}".repeat(133_000));
        let e = Pattern::parse(&deep).unwrap_err();
        assert!(e.contains(&format!("more than {NESTING_MAX} deep")) && e.len() < 300, "{e}");
        let nested = format!("{}x{}", "{".repeat(NESTING_MAX), "}".repeat(NESTING_MAX));
        assert_eq!(Pattern::parse(&nested).unwrap().expand(), ["x"]);
        // A long prefix before many alternatives is held once (the old parser copied it per
        // alternative: 1.98 GB for 210 KB); its paths, each longer than the kernel takes, are
        // refused before any is built.
        let prefix = "p/".repeat(52_000);
        let wide = format!("{prefix}{{{}z}}", "a,".repeat(52_000));
        let e = Pattern::parse(&wide).unwrap_err();
        assert!(e.contains("at least 104001 bytes long, past the kernel's PATH_MAX"), "{e}");
        assert!(Pattern::parse(&"n".repeat(256)).unwrap_err().contains("NAME_MAX"));
        let p = Pattern::parse(&format!("{}{{{}z}}", &prefix[..2000], "a,".repeat(52_000))).unwrap();
        assert_eq!(p.count(), 52_001);
        assert!(p.items.len() <= 52_005);
        let mut n = 0;
        p.each(&mut |path| -> Result<(), ()> {
            n += 1;
            assert_eq!(path.len(), 2001);
            Ok(())
        })
        .unwrap();
        assert_eq!(n, 52_001);
        // 100,000 empty groups after a range: each path walks none of them.
        let empties = format!("f{{0..99999}}{}", "{}".repeat(100_000));
        assert_eq!(Pattern::parse(&empties).unwrap().expand().len(), 100_000);
    }

    #[test]
    fn full_width_ranges_are_refused_not_wrapped() {
        let e = Pattern::parse("f{-9223372036854775808..9223372036854775807}").unwrap_err();
        assert!(e.contains("more than 10000000 paths"), "{e}");
        let p = Pattern::parse("f{-9223372036854775808..9223372036854775807..9223372036854775807}").unwrap();
        assert_eq!(
            p.expand(),
            ["f-9223372036854775808", "f-1", "f9223372036854775806"],
            "the items between the bounds, the product of index and step never overflowing"
        );
        let e = Pattern::parse(&format!("f{{1..{}}}", "9".repeat(5000))).unwrap_err();
        assert!(e.len() < 400, "a hostile value is quoted cut: {e}");
    }

    #[test]
    fn natural_order_compares_numbers_by_value() {
        let mut v = vec!["f10", "f2", "f1", "g0", "f02", "d3/f1"];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(v, ["d3/f1", "f1", "f02", "f2", "f10", "g0"]);
    }
}
