//! Path patterns of a file-operation script, as a shell reads them: brace expansion
//! (`d{0..7}/f{1..29..2}`, `{a,b}`) when the script is parsed, and glob components (`*`, `?`
//! inside one path component; run.rs walks the tree a component at a time) against what exists
//! when the line runs, listed in natural order (`f2` before `f10`, as `ls -v` and a person
//! expect).

use std::cmp::Ordering;

/// The most paths one word may expand to: a typo like `f{0..99999999}` is refused before it
/// allocates (a script naming more files than this writes them in several lines).
pub const EXPANSION_MAX: usize = 10_000_000;

/// Expands every brace group of `word` (cartesian, leftmost slowest: bash's order).
pub fn expand_braces(word: &str) -> Result<Vec<String>, String> {
    let Some(open) = word.find('{') else {
        if word.contains('}') {
            return Err(format!("\"{word}\" has a '}}' without its '{{'"));
        }
        return Ok(vec![word.to_string()]);
    };
    let close =
        matching_close(word, open).ok_or_else(|| format!("\"{word}\" has a '{{' without its '}}'"))?;
    let (head, body, tail) = (&word[..open], &word[open + 1..close], &word[close + 1..]);
    let alternatives = match range(body)? {
        Some(items) => items,
        None => split_top_level(body).into_iter().map(str::to_string).collect(),
    };
    let tails = expand_braces(tail)?;
    let mut out = Vec::new();
    for alternative in alternatives {
        for inner in expand_braces(&format!("{head}{alternative}"))? {
            if out.len() + tails.len() > EXPANSION_MAX {
                return Err(format!("\"{word}\" expands to more than {EXPANSION_MAX} paths"));
            }
            out.extend(tails.iter().map(|t| format!("{inner}{t}")));
        }
    }
    Ok(out)
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
fn range(body: &str) -> Result<Option<Vec<String>>, String> {
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
    let items = (0..count)
        .map(|i| {
            let v = if from <= to { from + (i * step) as i64 } else { from - (i * step) as i64 };
            format!("{v:0width$}")
        })
        .collect();
    Ok(Some(items))
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
    fn natural_order_compares_numbers_by_value() {
        let mut v = vec!["f10", "f2", "f1", "g0", "f02", "d3/f1"];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(v, ["d3/f1", "f1", "f02", "f2", "f10", "g0"]);
    }
}
