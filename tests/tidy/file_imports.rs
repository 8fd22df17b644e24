//! The file-level import graph of one crate, read from its source as text: which file takes
//! names from which, so that tidy can refuse a circle between files (issue 42: ten such circles
//! made the run loop bounce between two files and an interface import its implementation).
//!
//! A file imports another when one of its `use` paths or in-code paths (`crate::…`, `super::…`,
//! `self::…`, or a child module's name) names that other file's module: a name taken through a
//! `mod.rs` that re-exports it ties the file to that `mod.rs`, as a reader who follows the path
//! meets it (import from the file that defines a name to keep a facade out of a circle). Test
//! modules (from the first `#[cfg(test)]` on) are left out, as tidy's other rules do.
//!
//! A file's use of an enclosing module (its `mod.rs` or the crate root: the type it adds `impl`
//! blocks to, the crate's error type) is not counted: the enclosing modules are the file's
//! namespace in Rust's nesting, not a peer it imports from. Edges between files of which
//! neither encloses the other, and from an enclosing file down into its children, are.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One source file of the crate: what it defines and the paths it names.
struct Module {
    file: PathBuf,
    /// Names defined at the file's top level (items and child modules).
    defines: BTreeSet<String>,
    /// Every path the file names into its own crate, as written (relative or absolute).
    paths: Vec<Vec<String>>,
}

/// The crate under `src` as modules by path (`[]` for lib.rs/main.rs, `["a", "b"]` for
/// `a/b.rs` or `a/b/mod.rs`).
struct Crate {
    modules: BTreeMap<Vec<String>, Module>,
}

/// Every edge `from -> to` between two files of the crate whose source is under `src`.
pub fn edges(src: &Path) -> BTreeSet<(PathBuf, PathBuf)> {
    let krate = Crate::read(src);
    let mut out = BTreeSet::new();
    for (path, module) in &krate.modules {
        for written in &module.paths {
            let Some(absolute) = krate.absolute(path, written) else { continue };
            if let Some(target) = krate.resolve(&absolute) {
                if target != module.file && !krate.encloses(&target, path) {
                    out.insert((module.file.clone(), target));
                }
            }
        }
    }
    out
}

/// The circles of a graph: its strongly connected components of two or more files, each sorted.
pub fn circles(edges: &BTreeSet<(PathBuf, PathBuf)>) -> Vec<Vec<PathBuf>> {
    let mut next: BTreeMap<&PathBuf, Vec<&PathBuf>> = BTreeMap::new();
    for (a, b) in edges {
        next.entry(a).or_default().push(b);
        next.entry(b).or_default();
    }
    // Each file's reach, by a walk from it: a and b share a circle when each reaches the other.
    // Crates have at most a few hundred files, so the quadratic walk is cheap.
    let reach = |start: &PathBuf| -> BTreeSet<PathBuf> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![start];
        while let Some(n) = stack.pop() {
            for m in next.get(n).into_iter().flatten() {
                if seen.insert((*m).clone()) {
                    stack.push(m);
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&PathBuf, BTreeSet<PathBuf>> = next.keys().map(|n| (*n, reach(n))).collect();
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for (n, r) in &reaches {
        if done.contains(*n) || !r.contains(*n) {
            continue;
        }
        let ring: Vec<PathBuf> =
            r.iter().filter(|m| reaches.get(m).is_some_and(|back| back.contains(*n))).cloned().collect();
        done.extend(ring.iter().cloned());
        if ring.len() > 1 {
            out.push(ring);
        }
    }
    out
}

impl Crate {
    fn read(src: &Path) -> Crate {
        let mut files = Vec::new();
        super::rust_files(src, &mut files);
        let mut modules = BTreeMap::new();
        for file in files {
            let inner = file.strip_prefix(src).unwrap();
            let mut path: Vec<String> =
                inner.iter().map(|c| c.to_string_lossy().trim_end_matches(".rs").to_string()).collect();
            if matches!(path.last().map(String::as_str), Some("lib" | "main" | "mod")) {
                path.pop();
            }
            let text = std::fs::read_to_string(&file).unwrap();
            modules.insert(path, Module::parse(file, &text));
        }
        Crate { modules }
    }

    /// True when `file` is the file of a module that encloses the module at `path`.
    fn encloses(&self, file: &Path, path: &[String]) -> bool {
        (0..path.len()).any(|n| self.modules.get(&path[..n]).is_some_and(|m| m.file == file))
    }

    /// `written` (as the module at `from` wrote it) as a path from the crate root, or None for a
    /// path into another crate.
    fn absolute(&self, from: &[String], written: &[String]) -> Option<Vec<String>> {
        let mut base = from.to_vec();
        let mut rest = written;
        match written.first().map(String::as_str) {
            Some("crate") => {
                base.clear();
                rest = &written[1..];
            }
            Some("self") => rest = &written[1..],
            Some("super") => {
                while rest.first().map(String::as_str) == Some("super") {
                    base.pop()?;
                    rest = &rest[1..];
                }
            }
            Some(first) => {
                // A 2018-edition path that starts at a child module or an item of this file.
                let mut child = from.to_vec();
                child.push(first.to_string());
                let here = &self.modules[from];
                if !self.modules.contains_key(&child) && !here.defines.contains(first) {
                    return None;
                }
            }
            None => return None,
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The file of the deepest module on `path` (from the root): what the path names is there
    /// or re-exported there.
    fn resolve(&self, path: &[String]) -> Option<PathBuf> {
        let mut module: Vec<String> = Vec::new();
        for name in path {
            let mut child = module.clone();
            child.push(name.clone());
            if !self.modules.contains_key(&child) {
                break;
            }
            module = child;
        }
        self.modules.get(&module).map(|m| m.file.clone())
    }
}

impl Module {
    fn parse(file: PathBuf, text: &str) -> Module {
        let code = strip(text);
        let mut module = Module { file, defines: BTreeSet::new(), paths: Vec::new() };
        for statement in use_statements(&code) {
            let tree = statement.split_once("use ").map_or("", |(_, t)| t).trim_end_matches(';');
            for (path, alias) in expand(tree) {
                if let Some(alias) = alias {
                    module.defines.insert(alias);
                }
                module.paths.push(path);
            }
        }
        for line in code.lines() {
            let t = line.trim_start();
            if line.len() != t.len() {
                // Items indented inside an impl or a function are not the file's own names.
                continue;
            }
            let t = strip_visibility(t);
            for keyword in
                ["struct ", "enum ", "fn ", "trait ", "type ", "const ", "static ", "mod ", "union "]
            {
                if let Some(rest) = t.strip_prefix(keyword) {
                    module.defines.insert(ident(rest));
                }
            }
            if let Some(rest) = t.strip_prefix("macro_rules! ") {
                module.defines.insert(ident(rest));
            }
        }
        for line in code.lines() {
            if line.trim_start().starts_with("use ")
                || (line.trim_start().starts_with("pub") && line.contains(" use "))
            {
                continue;
            }
            module.paths.extend(inline_paths(line));
        }
        module
    }
}

/// The file's code without comments, string literals and test modules.
fn strip(text: &str) -> String {
    let mut out = String::new();
    // A string may run over several lines (docs and help texts do).
    let mut in_string = false;
    for line in text.lines() {
        if !in_string && line.trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        let mut kept = String::new();
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            if in_string {
                if c == '\\' {
                    chars.next();
                } else if c == '"' {
                    in_string = false;
                }
                continue;
            }
            if c == '\'' && chars.peek() == Some(&'"') {
                // The character literal '"', not a string.
                chars.next();
                continue;
            }
            if c == '"' {
                in_string = true;
                kept.push_str("\"\"");
                continue;
            }
            if c == '/' && chars.peek() == Some(&'/') {
                break;
            }
            kept.push(c);
        }
        out.push_str(&kept);
        out.push('\n');
    }
    out
}

fn strip_visibility(t: &str) -> &str {
    let t = t.strip_prefix("pub(crate) ").or_else(|| t.strip_prefix("pub(super) ")).unwrap_or(t);
    let t = t.strip_prefix("pub ").unwrap_or(t);
    let t = t.strip_prefix("const fn ").map_or(t, |_| &t[6..]);
    t.strip_prefix("unsafe ").unwrap_or(t)
}

fn ident(text: &str) -> String {
    text.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect()
}

/// Every `use …;` statement, joined onto one line.
fn use_statements(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut open: Option<String> = None;
    for line in code.lines() {
        let t = line.trim();
        if let Some(s) = open.as_mut() {
            s.push(' ');
            s.push_str(t);
        } else if t.starts_with("use ") || (t.starts_with("pub") && t.contains(" use ")) {
            open = Some(t.to_string());
        }
        if open.as_ref().is_some_and(|s| s.ends_with(';')) {
            out.push(open.take().unwrap());
        }
    }
    out
}

/// A use tree (`a::{b, c::{d as e, *}}`) as its paths and their aliases.
fn expand(tree: &str) -> Vec<(Vec<String>, Option<String>)> {
    let tree = tree.trim();
    let tree = tree.strip_prefix("::").unwrap_or(tree);
    if let Some(open) = tree.find('{') {
        let prefix: Vec<String> =
            tree[..open].split("::").map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect();
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let mut out = Vec::new();
        for part in split_top(inner) {
            for (mut path, alias) in expand(part) {
                if path.first().map(String::as_str) == Some("self") {
                    path.remove(0);
                }
                let mut full = prefix.clone();
                full.extend(path);
                out.push((full, alias));
            }
        }
        return out;
    }
    if tree.is_empty() {
        return vec![(Vec::new(), None)];
    }
    let (path, alias) = match tree.split_once(" as ") {
        Some((p, a)) => (p, Some(a.trim().to_string()).filter(|a| a != "_")),
        None => (tree, None),
    };
    vec![(path.split("::").map(|s| s.trim().to_string()).collect(), alias)]
}

/// `inner` split at its top-level commas.
fn split_top(inner: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&inner[start..]);
    out.into_iter().filter(|p| !p.trim().is_empty()).collect()
}

/// Paths written in code that start at this crate: `crate::a::b`, `super::x`, `self::m::y`.
fn inline_paths(line: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for start in ["crate::", "super::", "self::"] {
        for (at, _) in line.match_indices(start) {
            let before = line[..at].chars().last();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':' || c == '$') {
                continue;
            }
            let mut path = Vec::new();
            let mut rest = &line[at..];
            loop {
                let name = ident(rest);
                if name.is_empty() {
                    break;
                }
                rest = &rest[name.len()..];
                path.push(name);
                match rest.strip_prefix("::") {
                    Some(r) => rest = r,
                    None => break,
                }
            }
            if path.len() > 1 {
                out.push(path);
            }
        }
    }
    out
}
