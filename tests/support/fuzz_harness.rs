//! The bounded fuzzing harness the parser fuzz targets share (issue 41): edits laid over
//! seed inputs, the seeds from the corpus and the examples, a fixed-stream runner, and the
//! child under a 1 GiB address space each target runs in. Included by path from
//! `crates/{workload,jobs}/tests/fuzz_inputs.rs` and `crates/importers/tests/importers/fuzz_inputs.rs`;
//! not a test target of its own.
// Each includer uses the part it needs.
#![allow(dead_code)]

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// Tokens an edit inserts: what the parsers split on, numbers at their limits, hostile
/// lengths' seeds.
pub const TOKENS: &[&str] = &[
    "{",
    "}",
    ",",
    "..",
    "{0..9}",
    "{a,b}",
    "-",
    "\n",
    "=",
    "$",
    "#",
    ";",
    "[",
    "]",
    "(",
    ")",
    "\"",
    "/",
    "..",
    " ",
    "0",
    "1",
    "-1",
    "4096",
    "9999999999",
    "18446744073709551615",
    "9223372036854775807",
    "1e300",
    "4e9",
    "1PiB",
    "8EiB",
    "k",
    "t",
    "nan",
    "\u{0}",
    "\u{fffd}",
];

/// One edit of a seed: at `at` (a position scaled to the seed), replace, insert a token,
/// delete, or repeat the line there up to 200 times (while the text stays under 1 MB).
pub fn edit(text: &mut Vec<u8>, (at, what, n): (u16, u8, u8)) {
    let at = if text.is_empty() { 0 } else { usize::from(at) * text.len() / 65536 };
    match what % 4 {
        0 if at < text.len() => text[at] = n,
        0 | 1 => {
            let token = TOKENS[usize::from(n) % TOKENS.len()].as_bytes();
            text.splice(at..at, token.iter().copied());
        }
        2 => {
            let end = (at + usize::from(n % 16)).min(text.len());
            text.drain(at..end);
        }
        _ => {
            let start = text[..at].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            let end = text[at..].iter().position(|&b| b == b'\n').map_or(text.len(), |i| at + i + 1);
            let line = text[start..end].to_vec();
            // The input stays under about 1 MB whatever the edits (the fuzzer's own memory).
            let room = 1_000_000usize.saturating_sub(text.len()) / line.len().max(1);
            for _ in 0..usize::from(n % 200).min(room) {
                text.splice(end..end, line.iter().copied());
            }
        }
    }
}

/// Inputs: arbitrary bytes, or a seed with up to 8 edits.
pub fn inputs(seeds: Vec<String>) -> impl Strategy<Value = String> {
    let seeds = std::sync::Arc::new(seeds);
    let n = seeds.len();
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..600).prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        (0..n, proptest::collection::vec((any::<u16>(), any::<u8>(), any::<u8>()), 0..8)).prop_map(
            move |(i, edits)| {
                let mut text = seeds[i].clone().into_bytes();
                edits.into_iter().for_each(|e| edit(&mut text, e));
                String::from_utf8_lossy(&text).into_owned()
            }
        ),
    ]
}

/// The text of every file under `dir` whose name ends in one of `exts` (recipes expanded: a
/// line `COUNT TEXT` is TEXT COUNT times, capped here at 100 so seeds stay small).
pub fn seeds(dir: &std::path::Path, exts: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return out };
    let mut paths: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(ext) = exts.iter().find(|e| name.ends_with(*e) || name.ends_with(&format!("{e}.gen")))
        else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        if !name.ends_with(".gen") {
            out.push(text);
            continue;
        }
        let _ = ext;
        let mut expanded = String::new();
        for line in text.lines() {
            let (count, piece) = line.split_once(' ').unwrap_or((line, ""));
            let count = count.parse::<usize>().unwrap_or(1).min(100);
            expanded.push_str(&piece.replace("\\n", "\n").repeat(count));
        }
        out.push(expanded);
    }
    out
}

/// The repository's root (the fuzz corpus is tests/data/fuzz there).
pub fn root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs `body` in a child of this test binary under `prlimit --as` (1 GiB, the issue's
/// memory cap), or here when this is that child or prlimit is missing.
pub fn capped(name: &str, body: impl FnOnce()) {
    let has_prlimit =
        std::process::Command::new("prlimit").arg("--version").output().is_ok_and(|o| o.status.success());
    if std::env::var_os("TRIMLAB_FUZZ_CHILD").is_some() || !has_prlimit {
        return body();
    }
    let out = std::process::Command::new("prlimit")
        .arg(format!("--as={}", 1u64 << 30))
        .arg("--")
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env("TRIMLAB_FUZZ_CHILD", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{name} under a 1 GiB address space: {}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // The child must have run this one test: a name that no longer matches (a test moved into a
    // module) would otherwise pass with nothing run.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("test result: ok. 1 passed"), "{name}: the capped child ran no test:\n{stdout}");
}

pub fn runner(cases: u32) -> TestRunner {
    let config = Config { cases, failure_persistence: None, max_shrink_iters: 256, ..Config::default() };
    TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha))
}
