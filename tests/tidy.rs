//! Tidy: the determinism and safety rules of STYLE.md, checked mechanically over the source.
//!
//! Simulation crates never read a clock, never spawn a thread and never iterate a hash map
//! (lookups are fine; iteration order would leak into results). No crate uses `unsafe`. Every
//! source file opens with a `//!` line saying what it models.

use std::path::{Path, PathBuf};

/// Crates whose code runs inside the model.
const MODEL_CRATES: &[&str] =
    &["sim", "nand", "ftl", "trim", "device", "workload", "analytic", "trace", "hybrid", "fs", "scenario"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The workspace's crate folders (`crates/*`), in name order.
fn crate_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<_> =
        std::fs::read_dir(root.join("crates")).unwrap().flatten().map(|e| e.path()).collect();
    dirs.sort();
    dirs
}

fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    // Test modules may use anything; stop at the first `#[cfg(test)]`.
    text.lines().enumerate().take_while(|(_, l)| !l.trim_start().starts_with("#[cfg(test)]")).filter(
        |(_, l)| {
            let t = l.trim_start();
            !t.starts_with("//")
        },
    )
}

#[test]
fn model_crates_read_no_clock_spawn_no_thread_and_iterate_no_hash_map() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut problems = Vec::new();
    for krate in MODEL_CRATES {
        let mut files = Vec::new();
        rust_files(&root.join("crates").join(krate).join("src"), &mut files);
        assert!(!files.is_empty(), "crates/{krate}/src has no Rust files");
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            for (i, line) in code_lines(&text) {
                for banned in ["Instant", "SystemTime", "thread::spawn", "std::thread", "rand::thread_rng"] {
                    if line.contains(banned) {
                        problems.push(format!("{}:{}: `{banned}` in simulation code", file.display(), i + 1));
                    }
                }
                let hashed = line.contains("HashMap") || line.contains("HashSet");
                if hashed
                    && (line.contains(".iter()") || line.contains(".keys()") || line.contains(".values()"))
                {
                    problems.push(format!("{}:{}: iterating a hash map", file.display(), i + 1));
                }
            }
        }
    }
    assert!(problems.is_empty(), "determinism rules broken:\n{}", problems.join("\n"));
}

#[test]
fn no_unsafe_and_every_file_says_what_it_models() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("crates"), &mut files);
    rust_files(&root.join("src"), &mut files);
    let mut problems = Vec::new();
    for file in files {
        if file.components().any(|c| c.as_os_str() == "target") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let in_src = file.components().any(|c| c.as_os_str() == "src");
        if in_src && !text.trim_start().starts_with("//!") {
            problems.push(format!("{}: does not open with a `//!` line", file.display()));
        }
        for (i, line) in code_lines(&text) {
            if line.contains("unsafe ") || line.contains("unsafe{") {
                problems.push(format!("{}:{}: `unsafe`", file.display(), i + 1));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Every crate depends only on crates of lower layers, as the layer table in ARCHITECTURE.md
/// says; a crate missing from the table is an error too.
#[test]
fn crate_dependencies_follow_the_layer_table() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let architecture = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let layer_of = layer_table(&architecture);
    let mut problems = Vec::new();
    for dir in crate_dirs(root) {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let Ok(manifest) = std::fs::read_to_string(dir.join("Cargo.toml")) else { continue };
        let Some(&layer) = layer_of.get(&name) else {
            problems.push(format!("crates/{name} has no row in ARCHITECTURE.md's layer table"));
            continue;
        };
        for line in manifest.lines() {
            let Some(dep) = line.trim().strip_prefix("trimlab-") else { continue };
            let dep = dep.split([' ', '=']).next().unwrap_or_default();
            match layer_of.get(dep) {
                Some(&l) if l < layer => {}
                Some(&l) => problems.push(format!(
                    "crates/{name} (layer {layer}) depends on trimlab-{dep} (layer {l}): dependencies must point down"
                )),
                None => problems.push(format!("crates/{name} depends on trimlab-{dep}, which has no layer")),
            }
        }
    }
    assert!(problems.is_empty(), "layering broken:\n{}", problems.join("\n"));
}

/// The crates `src/` (the binary) and `python/src` may name: they are adapters that parse,
/// call one job entry of `trimlab-jobs` and print or convert. `nbd` is serve's network edge and
/// `sim` gives the binary sizes and durations for its flags.
const ADAPTER_EDGES: &[(&str, &str, &[&str])] =
    &[("src", "Cargo.toml", &["jobs", "nbd", "sim"]), ("python/src", "python/Cargo.toml", &["jobs"])];

/// Every `trimlab_<name>` an adapter's code names, and every `trimlab-<name>` its manifest's
/// `[dependencies]` lists, is one of its allowed edges.
#[test]
fn adapters_reach_the_model_only_through_jobs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut problems = Vec::new();
    for (dir, manifest, allowed) in ADAPTER_EDGES {
        let mut files = Vec::new();
        rust_files(&root.join(dir), &mut files);
        assert!(!files.is_empty(), "{dir} has no Rust files");
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            for (i, line) in text.lines().enumerate() {
                for (at, _) in line.match_indices("trimlab_") {
                    let name: String =
                        line[at + 8..].chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect();
                    // A path into a crate (`trimlab_x::`), not a word such as a JSON key.
                    let is_path = line[at + 8 + name.len()..].starts_with("::");
                    if is_path && !allowed.contains(&name.as_str()) {
                        problems.push(format!("{}:{}: names trimlab_{name}", file.display(), i + 1));
                    }
                }
            }
        }
        let text = std::fs::read_to_string(root.join(manifest)).unwrap();
        let dependencies =
            text.split("[dependencies]").nth(1).unwrap_or("").split("\n[").next().unwrap_or("");
        for line in dependencies.lines() {
            let Some(dep) = line.trim().strip_prefix("trimlab-") else { continue };
            let dep = dep.split([' ', '=']).next().unwrap_or_default();
            if !allowed.contains(&dep) {
                problems.push(format!("{manifest}: [dependencies] lists trimlab-{dep}"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "an adapter reaches past trimlab-jobs (allowed: {ADAPTER_EDGES:?}); add a job entry instead:\n{}",
        problems.join("\n")
    );
}

/// Layers of ARCHITECTURE.md's layer table, by crate name.
fn layer_table(architecture: &str) -> std::collections::BTreeMap<String, u32> {
    let table = architecture
        .split("<!-- layers:begin -->")
        .nth(1)
        .and_then(|rest| rest.split("<!-- layers:end -->").next())
        .expect("ARCHITECTURE.md has a layer table between the layers markers");
    let mut layer_of = std::collections::BTreeMap::new();
    for row in table.lines().filter(|l| l.starts_with("| ") && !l.contains("layer")) {
        let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
        let layer: u32 = cells[0].parse().unwrap_or_else(|_| panic!("layer table row {row:?}"));
        for name in cells[1].split(',').map(str::trim) {
            layer_of.insert(name.to_string(), layer);
        }
    }
    layer_of
}

/// A dependency that skips a floor (from layer L to a layer below L - 1, other than the layer-0
/// foundations every crate may use) is listed in ARCHITECTURE.md's skip table with its reason,
/// and every listed skip still exists, so the list only shrinks.
#[test]
fn layer_skips_are_the_listed_ones() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let architecture = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let layer_of = layer_table(&architecture);
    let listed: std::collections::BTreeSet<(String, String)> = architecture
        .split("<!-- skips:begin -->")
        .nth(1)
        .and_then(|rest| rest.split("<!-- skips:end -->").next())
        .expect("ARCHITECTURE.md has a skip table between the skips markers")
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| from"))
        .map(|row| {
            let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
            (cells[0].to_string(), cells[1].to_string())
        })
        .collect();
    let mut found = std::collections::BTreeSet::new();
    for (name, &layer) in &layer_of {
        let Ok(manifest) = std::fs::read_to_string(root.join("crates").join(name).join("Cargo.toml")) else {
            continue;
        };
        for line in manifest.lines() {
            let Some(dep) = line.trim().strip_prefix("trimlab-") else { continue };
            let dep = dep.split([' ', '=']).next().unwrap_or_default();
            let l = layer_of.get(dep).copied().unwrap_or(0);
            if l > 0 && l + 1 < layer {
                found.insert((name.clone(), dep.to_string()));
            }
        }
    }
    let unlisted: Vec<_> = found.difference(&listed).collect();
    let stale: Vec<_> = listed.difference(&found).collect();
    assert!(
        unlisted.is_empty(),
        "dependencies that skip a floor without a row in ARCHITECTURE.md's skip table: {unlisted:?}"
    );
    assert!(stale.is_empty(), "skip table rows that no longer exist (remove them): {stale:?}");
}

/// Functions longer than this many lines are listed in `tests/tidy-long-functions.txt`.
const FUNCTION_LINES_MAX: usize = 70;
/// No function may be longer than this unless the list holds it from before the ratchet (those
/// may only shrink; tests/tidy-long-functions.txt marks them).
const FUNCTION_LINES_LIMIT: usize = 150;

/// (`path::name`, lines) of every function in the source (rustfmt's layout: a function ends at
/// the first line that is its indentation and `}`).
fn function_lengths(root: &Path) -> Vec<(String, usize)> {
    let mut files = Vec::new();
    rust_files(&root.join("crates"), &mut files);
    rust_files(&root.join("src"), &mut files);
    rust_files(&root.join("python/src"), &mut files);
    let mut out = Vec::new();
    for file in files {
        let relative = file.strip_prefix(root).unwrap().display().to_string();
        if !relative.contains("/src/") && !relative.starts_with("src/") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let t = line.trim_start();
            let indent = &line[..line.len() - t.len()];
            let rest = ["pub(crate) ", "pub(super) ", "pub ", "const ", "async "]
                .iter()
                .fold(t, |r, p| r.strip_prefix(p).unwrap_or(r));
            let Some(name) = rest.strip_prefix("fn ") else { continue };
            if line.trim_end().ends_with(';') {
                continue;
            }
            let name: String = name.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            let close = format!("{indent}}}");
            if let Some(end) = lines[i + 1..].iter().position(|l| *l == close) {
                out.push((format!("{relative}::{name}"), end + 2));
            }
        }
    }
    out
}

/// The long-function ratchet: no new function over FUNCTION_LINES_LIMIT lines; one over
/// FUNCTION_LINES_MAX only if `tests/tidy-long-functions.txt` lists it at that length or more;
/// a listed function that got shorter or went is taken off the list (the list only shrinks).
#[test]
fn long_functions_only_shrink() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let list_path = root.join("tests/tidy-long-functions.txt");
    let listed: std::collections::BTreeMap<String, usize> = std::fs::read_to_string(&list_path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (name, lines) = l.rsplit_once(' ').expect("`path::function lines`");
            (name.to_string(), lines.parse().expect("a line count"))
        })
        .collect();
    let mut problems = Vec::new();
    let mut long = std::collections::BTreeMap::new();
    for (name, lines) in function_lengths(root) {
        if lines > FUNCTION_LINES_LIMIT && !listed.contains_key(&name) {
            problems.push(format!("{name}: {lines} lines (no function may exceed {FUNCTION_LINES_LIMIT})"));
        }
        if lines > FUNCTION_LINES_MAX {
            match listed.get(&name) {
                Some(&max) if lines <= max => {}
                Some(&max) => {
                    problems.push(format!("{name}: {lines} lines, listed at {max}: it may only shrink"))
                }
                None => problems.push(format!("{name}: {lines} lines (over {FUNCTION_LINES_MAX}; split it)")),
            }
            long.insert(name, lines);
        }
    }
    for (name, &max) in &listed {
        match long.get(name) {
            Some(&lines) if lines < max => {
                problems.push(format!("{name}: now {lines} lines: lower its entry from {max} to {lines}"))
            }
            None => {
                problems.push(format!("{name}: no longer over {FUNCTION_LINES_MAX} lines: remove its entry"))
            }
            _ => {}
        }
    }
    assert!(problems.is_empty(), "{}:\n{}", list_path.display(), problems.join("\n"));
}

/// The kinds a `registry!` list registers, as (the file of a kind, the list's name): each
/// `pub const NAME: Spec = [ name, ... ];` entry is the module `name.rs` beside the list's file.
fn registered_kinds(files: &[PathBuf]) -> Vec<(PathBuf, String)> {
    let mut kinds = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let Some(start) = text.find("registry! {") else { continue };
        let body = &text[start..];
        let Some(list) = body.split("pub const ").nth(1) else { continue };
        let name = list.split(':').next().unwrap_or("").trim().to_string();
        let Some(items) = list.split_once("= [").map(|(_, rest)| rest.split("];").next().unwrap_or(""))
        else {
            continue;
        };
        for line in items.lines() {
            let item = line.split("//").next().unwrap_or("").trim().trim_end_matches(',');
            let module = item.strip_prefix("pub ").unwrap_or(item).trim();
            if !module.is_empty() && module.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                let dir = file.parent().unwrap();
                kinds.push((dir.join(format!("{module}.rs")), name.clone()));
            }
        }
    }
    kinds
}

/// Every source file is named in ARCHITECTURE.md's code map, under its crate's entry (by its
/// path inside `src/`, e.g. `fs/mod.rs`, or its file name). A registry's kinds are found through
/// their registry line, so the entry names the registry instead: a folder of kinds as
/// `kind/*.rs`, a `registry!` list by its name (`ENGINES`).
#[test]
fn every_source_file_is_in_the_code_map() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let architecture = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let map = architecture.split("## Code map").nth(1).unwrap().split("\n## ").next().unwrap();
    let entry_of = |heading: &str| -> String {
        let start = map.find(&format!("**{heading}**")).unwrap_or_else(|| panic!("no **{heading}** entry"));
        let rest = &map[start + heading.len() + 4..];
        rest[..rest.find("\n**").unwrap_or(rest.len())].to_string()
    };
    let mut problems = Vec::new();
    let mut check = |heading: &str, src: PathBuf| {
        let entry = entry_of(heading);
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let registered = registered_kinds(&files);
        for file in files {
            let by_registry =
                registered.iter().any(|(kind, list)| *kind == file && entry.contains(&format!("`{list}`")));
            if by_registry {
                continue;
            }
            let inner = file.strip_prefix(&src).unwrap().display().to_string();
            let name = file.file_name().unwrap().to_string_lossy().into_owned();
            if name == "lib.rs" || name == "main.rs" {
                continue;
            }
            // A registry's folder of kinds is named once (`kind/*.rs`): each kind's file is
            // found through the registry's one line, so the map need not list it again.
            let folder =
                file.parent().and_then(|p| p.strip_prefix(&src).ok()).map(|p| p.display().to_string());
            let in_folder = folder.is_some_and(|f| !f.is_empty() && entry.contains(&format!("`{f}/*.rs`")));
            if !entry.contains(&format!("`{inner}`")) && !entry.contains(&format!("`{name}`")) && !in_folder {
                problems.push(format!("{heading}: `{inner}` is not in its code map entry"));
            }
        }
    };
    for dir in crate_dirs(root) {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        check(&format!("crates/{name}"), dir.join("src"));
    }
    check("src/", root.join("src"));
    check("python/", root.join("python/src"));
    assert!(problems.is_empty(), "ARCHITECTURE.md's code map misses files:\n{}", problems.join("\n"));
}

/// STYLE.md promises that a `clippy.toml` ban makes determinism mechanical: the workspace's
/// clippy.toml must keep banning the wall clock, thread spawning and hash-map iteration (the
/// clippy run of `.ci/run` enforces them with `-D warnings`).
#[test]
fn clippy_toml_bans_what_style_promises() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("clippy.toml")).expect("clippy.toml at the workspace root");
    let missing: Vec<&str> = [
        "std::time::Instant::now",
        "std::time::SystemTime::now",
        "std::thread::spawn",
        "std::thread::scope",
        "std::thread::Builder::spawn",
        "std::collections::HashMap::iter",
        "std::collections::HashMap::keys",
        "std::collections::HashMap::values",
    ]
    .into_iter()
    .filter(|path| !text.contains(&format!("path = \"{path}\"")))
    .collect();
    assert!(missing.is_empty(), "clippy.toml no longer bans {missing:?} (STYLE.md, Determinism)");
}

#[path = "tidy/file_imports.rs"]
mod file_imports;

/// Every directory whose Rust files form one crate: the workspace's crates, the binary, the
/// Python module.
fn crate_sources(root: &Path) -> Vec<PathBuf> {
    let mut crates: Vec<_> = crate_dirs(root).into_iter().map(|dir| dir.join("src")).collect();
    crates.push(root.join("src"));
    crates.push(root.join("python/src"));
    crates
}

/// No circle between files: when file A takes names from file B, B takes none from A, directly
/// or around a ring. A circle means neither file can be read, changed or moved without the
/// other; the shared names belong in the file that owns the concept.
#[test]
fn no_file_level_import_circle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut problems = Vec::new();
    for src in crate_sources(root) {
        let edges = file_imports::edges(&src);
        for ring in file_imports::circles(&edges) {
            let inside = |f: &PathBuf| ring.contains(f);
            let ties: Vec<String> = edges
                .iter()
                .filter(|(a, b)| inside(a) && inside(b))
                .map(|(a, b)| format!("  {} -> {}", short(root, a), short(root, b)))
                .collect();
            problems.push(format!("a circle of {} files:\n{}", ring.len(), ties.join("\n")));
        }
    }
    assert!(problems.is_empty(), "file-level import circles:\n{}", problems.join("\n"));
}

fn short(root: &Path, file: &Path) -> String {
    file.strip_prefix(root).unwrap_or(file).display().to_string()
}

/// The circle rule can fail: a crate made here with a deliberate circle (an interface that
/// names its implementation in code) is refused, and the same
/// crate before the circle was made passes.
#[test]
fn the_circle_rule_finds_a_deliberate_circle() {
    let dir = std::env::temp_dir().join(format!("trimlab-tidy-circle-{}", std::process::id()));
    let src = dir.join("src");
    std::fs::create_dir_all(&src).unwrap();
    let write = |name: &str, text: &str| std::fs::write(src.join(name), text).unwrap();
    write("lib.rs", "//! root\nmod delayed;\nmod engine;\npub use delayed::Delayed;\n");
    write("engine.rs", "//! the interface\npub trait Engine {}\n");
    write(
        "delayed.rs",
        "//! one engine\nuse crate::engine::Engine;\npub struct Delayed;\nimpl Engine for Delayed {}\n",
    );
    let before = file_imports::circles(&file_imports::edges(&src));
    write(
        "engine.rs",
        "//! the interface\npub trait Engine {}\npub fn make() -> crate::delayed::Delayed {\n    crate::delayed::Delayed\n}\n",
    );
    let after = file_imports::circles(&file_imports::edges(&src));
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(before.is_empty(), "no circle before: {before:?}");
    assert_eq!(after.len(), 1, "{after:?}");
    let files: Vec<String> = after[0].iter().map(|f| short(&src, f)).collect();
    assert_eq!(files, ["delayed.rs", "engine.rs"]);
}

/// Every path into the source that the docs name (`crates/…`, `src/…`, `tests/…`, `scripts/…`,
/// `examples/…`, `python/…` in backticks or parentheses) exists, so that a moved file cannot
/// leave a reader at a dead end.
#[test]
fn paths_the_docs_name_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut docs = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    let mut listed: Vec<_> =
        std::fs::read_dir(root.join("docs")).unwrap().flatten().map(|e| e.path()).collect();
    listed.sort();
    // performance.md is a dated log of measurements: its paths are where things were then.
    docs.extend(
        listed
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "md") && !p.ends_with("performance.md")),
    );
    // A crate's code map entry names its own tests as `tests/x.rs`.
    let mut bases = vec![root.to_path_buf(), root.join("python")];
    bases.extend(crate_dirs(root));
    let mut problems = Vec::new();
    for doc in docs {
        let text = std::fs::read_to_string(&doc).unwrap();
        for (i, line) in text.lines().enumerate() {
            for piece in line.split(['`', '(', ')', ' ', ',', ';']) {
                let path = piece.trim_end_matches([':', '.']);
                let rooted = ["crates/", "src/", "tests/", "scripts/", "examples/", "python/"]
                    .iter()
                    .any(|p| path.starts_with(p));
                // Only whole file or folder names: no globs, placeholders or `file:line` forms.
                let plain = path.chars().all(|c| c.is_alphanumeric() || "/._-".contains(c))
                    && !path.contains("NAME")
                    && !path.contains("-N.");
                if rooted && plain && path.contains('.') && !bases.iter().any(|b| b.join(path).exists()) {
                    problems.push(format!("{}:{}: {path}", short(root, &doc), i + 1));
                }
            }
        }
    }
    assert!(problems.is_empty(), "the docs name files that do not exist:\n{}", problems.join("\n"));
}

/// The registry lists the code map may name instead of their kinds' files are read right.
#[test]
fn registered_kinds_are_read_from_registry_lists() {
    let dir = std::env::temp_dir().join(format!("tidy-registry-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let lib = dir.join("lib.rs");
    std::fs::write(
        &lib,
        "trimlab_sim::registry! {\n    /// Doc.\n    pub const ENGINES: EngineSpec = [\n        pub immediate, // now\n        none,\n    ];\n}\n",
    )
    .unwrap();
    let kinds = registered_kinds(&[lib]);
    let names: Vec<_> = kinds
        .iter()
        .map(|(f, l)| (f.file_name().unwrap().to_string_lossy().into_owned(), l.as_str()))
        .collect();
    assert_eq!(names, [("immediate.rs".to_string(), "ENGINES"), ("none.rs".to_string(), "ENGINES")]);
    std::fs::remove_dir_all(&dir).ok();
}

/// Whether a crate's Cargo.toml turns its lib's test harness off (`test = false` under `[lib]`).
fn lib_has_no_test_harness(manifest: &str) -> bool {
    let manifest: toml::Table = manifest.parse().unwrap_or_default();
    manifest.get("lib").and_then(|lib| lib.get("test")).and_then(toml::Value::as_bool) == Some(false)
}

/// The unit tests in `src` of a crate whose lib has no test harness: each would compile and
/// never run.
fn unit_tests_never_run(crate_dir: &Path) -> Vec<String> {
    let Ok(manifest) = std::fs::read_to_string(crate_dir.join("Cargo.toml")) else { return Vec::new() };
    if !lib_has_no_test_harness(&manifest) {
        return Vec::new();
    }
    let mut files = Vec::new();
    rust_files(&crate_dir.join("src"), &mut files);
    let mut problems = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (i, line) in text.lines().enumerate() {
            let t = line.trim_start();
            if let Some(marker) =
                ["#[test]", "#[cfg(test)]", "proptest!"].into_iter().find(|m| t.starts_with(m))
            {
                problems.push(format!(
                    "{}:{}: `{marker}` in a lib with `test = false`: it never runs (move it to the crate's tests/)",
                    file.display(),
                    i + 1
                ));
            }
        }
    }
    problems
}

/// A crate whose lib sets `test = false` (its tests live in tests/, so that the crate is not
/// compiled a second time as a test harness) keeps no unit test in its src: one there would
/// never run, and nothing would say so.
#[test]
fn libs_without_a_test_harness_have_no_unit_tests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let problems: Vec<String> = crate_dirs(root).iter().flat_map(|dir| unit_tests_never_run(dir)).collect();
    assert!(problems.is_empty(), "unit tests that never run:\n{}", problems.join("\n"));
}

/// The rule can fail: a crate made here with `test = false` and a unit test in its src is
/// refused; the same crate with its lib's harness on passes.
#[test]
fn the_harness_rule_finds_a_unit_test_that_never_runs() {
    let dir = std::env::temp_dir().join(format!("trimlab-tidy-harness-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let manifest = "[package]\nname = \"x\"\n\n[lib]\ntest = false # its tests are in tests/\ndoctest = false\n\n[dependencies]\n";
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    std::fs::write(
        dir.join("src/lib.rs"),
        "//! x\npub fn f() {}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {}\n}\n",
    )
    .unwrap();
    let found = unit_tests_never_run(&dir);
    std::fs::write(dir.join("Cargo.toml"), manifest.replace("test = false #", "# test = false,")).unwrap();
    let with_harness = unit_tests_never_run(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].ends_with("lib.rs:4: `#[cfg(test)]` in a lib with `test = false`: it never runs (move it to the crate's tests/)"), "{found:?}");
    assert!(with_harness.is_empty(), "{with_harness:?}");
}
