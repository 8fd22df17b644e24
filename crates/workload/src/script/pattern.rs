//! Path patterns of a file-operation script, as a shell reads them: brace expansion
//! (`d{0..7}/f{1..29..2}`, `{a,b}`) when the script is parsed, and glob components (`*`, `?`
//! inside one path component; run.rs walks the tree a component at a time) against what exists
//! when the line runs, listed in natural order (`f2` before `f10`, as `ls -v` and a person
//! expect).

use std::cmp::Ordering;
use std::fmt::Write;

/// The most paths one word may expand to: a typo like `f{0..99999999}` is refused before it
/// allocates (a script naming more files than this writes them in several lines).
pub const EXPANSION_MAX: usize = 10_000_000;

/// Expands every brace group of `word` (cartesian, leftmost slowest: bash's order).
pub fn expand_braces(word: &str) -> Result<Vec<String>, String> {
    Ok(Pattern::parse(word)?.expand())
}

/// A word's brace expansion as a tree, expanded only when its line runs: a line naming a
/// quarter of a million files (`create d{0..249}/f{0..999}`) holds a product of 250 and
/// 1000 names, not the quarter of a million strings, so parsing a script (which a run does
/// when it checks its config, and again when it runs it) costs its text, not its paths.
#[derive(Clone, Debug, PartialEq)]
pub struct Pattern {
    node: Node,
    count: u64,
}

#[derive(Clone, Debug, PartialEq)]
enum Node {
    Literal(String),
    /// Each of `prefixes`, followed by each expansion of `tail` (leftmost slowest).
    Product {
        prefixes: Prefixes,
        tail: Box<Node>,
    },
}

#[derive(Clone, Debug, PartialEq)]
enum Prefixes {
    /// `head` followed by each item of a numeric range.
    Range { head: String, range: Range },
    /// Each alternative, with the text before the braces (`{a,b{1..2}}`).
    List(Vec<Node>),
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
        let off = (i * self.step) as i64;
        if self.up {
            self.from + off
        } else {
            self.from - off
        }
    }
}

impl Pattern {
    /// Parses `word`'s braces, with the errors (and in the same order) a full expansion gives.
    pub fn parse(word: &str) -> Result<Pattern, String> {
        let (node, count) = build(word)?;
        Ok(Pattern { node, count })
    }

    /// How many paths the word expands to.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Calls `f` with each path in order (one buffer, reused); stops at `f`'s first error.
    pub fn each<E>(&self, f: &mut dyn FnMut(&str) -> Result<(), E>) -> Result<(), E> {
        let mut buf = String::new();
        each_node(&self.node, &mut buf, &mut |b: &mut String| f(b.as_str()))
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

/// (tree, count) of `word`: bash's brace expansion as `expand_braces` always did it (the
/// first group's alternatives, each with the text before it expanded again, then the text
/// after it), without building the paths.
fn build(word: &str) -> Result<(Node, u64), String> {
    let Some(open) = word.find('{') else {
        if word.contains('}') {
            return Err(format!("\"{word}\" has a '}}' without its '{{'"));
        }
        return Ok((Node::Literal(word.to_string()), 1));
    };
    let close =
        matching_close(word, open).ok_or_else(|| format!("\"{word}\" has a '{{' without its '}}'"))?;
    let (head, body, tail) = (&word[..open], &word[open + 1..close], &word[close + 1..]);
    let range = range(body)?;
    let (tail, tails) = build(tail)?;
    let tail = Box::new(tail);
    let over = || format!("\"{word}\" expands to more than {EXPANSION_MAX} paths");
    if let Some(range) = range {
        // `head` + a number has no '{': it only fails if `head` has a '}', at the first item.
        if head.contains('}') {
            let first = format!("{head}{:0w$}", range.item(0), w = range.width);
            return Err(format!("\"{first}\" has a '}}' without its '{{'"));
        }
        if range.count * tails > EXPANSION_MAX as u64 {
            return Err(over());
        }
        let prefixes = Prefixes::Range { head: head.to_string(), range };
        return Ok((Node::Product { prefixes, tail }, range.count * tails));
    }
    let (mut list, mut count) = (Vec::new(), 0u64);
    for alternative in split_top_level(body) {
        let (node, n) = build(&format!("{head}{alternative}"))?;
        if count + n * tails > EXPANSION_MAX as u64 {
            return Err(over());
        }
        count += n * tails;
        list.push(node);
    }
    Ok((Node::Product { prefixes: Prefixes::List(list), tail }, count))
}

/// Appends each expansion of `node` to `buf` in turn and calls `f` with it.
fn each_node<E>(
    node: &Node,
    buf: &mut String,
    f: &mut dyn FnMut(&mut String) -> Result<(), E>,
) -> Result<(), E> {
    let start = buf.len();
    match node {
        Node::Literal(s) => {
            buf.push_str(s);
            f(buf)?;
        }
        Node::Product { prefixes: Prefixes::Range { head, range }, tail } => {
            for i in 0..range.count {
                buf.truncate(start);
                buf.push_str(head);
                write!(buf, "{:0w$}", range.item(i), w = range.width).unwrap_or_else(|_| unreachable!());
                each_node(tail, buf, f)?;
            }
        }
        Node::Product { prefixes: Prefixes::List(list), tail } => {
            for prefix in list {
                each_node(prefix, buf, &mut |b: &mut String| each_node(tail, b, f))?;
            }
        }
    }
    buf.truncate(start);
    Ok(())
}

fn matching_close(word: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in word.char_indices().skip_while(|&(i, _)| i < open) {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// `a,b{c,d},e` split at the commas outside nested braces.
fn split_top_level(body: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0usize, 0);
    for (i, c) in body.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&body[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&body[start..]);
    parts
}

/// `0..7` or `1..29..2` (either direction, as bash), or None when `body` is not a range.
fn range(body: &str) -> Result<Option<Range>, String> {
    let parts: Vec<&str> = body.split("..").collect();
    if !(2..=3).contains(&parts.len()) || parts.iter().any(|p| p.contains(',') || p.contains('{')) {
        return Ok(None);
    }
    let number = |p: &str| p.parse::<i64>().map_err(|_| format!("{{{body}}}: \"{p}\" is not an integer"));
    let (from, to) = (number(parts[0])?, number(parts[1])?);
    let step = match parts.get(2) {
        Some(s) => number(s)?.unsigned_abs(),
        None => 1,
    };
    if step == 0 {
        return Err(format!("{{{body}}}: the step must not be 0"));
    }
    let count = from.abs_diff(to) / step + 1;
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
        assert!(Pattern::parse("a}{1..2}").unwrap_err().contains("\"a}1\" has a '}'"));
        assert_eq!(Pattern::parse("{0..3161}/{0..3161}").unwrap().count(), 3162 * 3162);
        assert!(Pattern::parse("{0..3162}/{0..3161}").unwrap_err().contains("more than"));
    }

    #[test]
    fn natural_order_compares_numbers_by_value() {
        let mut v = vec!["f10", "f2", "f1", "g0", "f02", "d3/f1"];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(v, ["d3/f1", "f1", "f02", "f2", "f10", "g0"]);
    }
}
