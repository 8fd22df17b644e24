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
    let mut problems = Vec::new();
    let mut crates: Vec<_> =
        std::fs::read_dir(root.join("crates")).unwrap().flatten().map(|e| e.path()).collect();
    crates.sort();
    for dir in crates {
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
