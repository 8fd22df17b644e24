//! The README's examples are run, and what they print is held against what the README shows:
//! a figure in the README that the command no longer prints fails here, so the README cannot
//! drift from the tool (issue 25 found an advise example 6.7x off its own output).
//!
//! Every ```` ```text ```` block of README.md that holds `$ cargo run --release -- ARGS` lines is
//! an example: ARGS run on the built `trimlab` in a scratch folder that links the repository's
//! top-level entries (so relative paths read the repository and outputs land in the scratch), and
//! each line shown under a command must match a line the command printed, on stdout or stderr.
//! In a shown line `...` stands for any run of words (columns the README leaves out), and a line
//! that is only `...` stands for lines left out. Words are compared exactly: the figures are
//! simulated and the same on every machine; wall-clock lines ("done in 0.1 s") are never shown.

mod common;

use common::scratch;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One `$ cargo run --release -- ...` of a README block and the lines shown under it.
struct Example {
    line: usize,
    args: Vec<String>,
    shown: Vec<String>,
}

const PROMPT: &str = "$ cargo run --release -- ";

/// The examples of `text`, block by block (each block's commands share one scratch folder, so
/// a later command can read what an earlier one wrote).
fn blocks(text: &str) -> Vec<Vec<Example>> {
    let mut blocks = Vec::new();
    let mut current: Option<Vec<Example>> = None;
    let mut continued = false;
    for (index, line) in text.lines().enumerate() {
        let Some(examples) = current.as_mut() else {
            if line.trim_start().starts_with("```text") {
                current = Some(Vec::new());
            }
            continue;
        };
        if line.trim_start().starts_with("```") {
            blocks.push(current.take().unwrap_or_default());
        } else if continued {
            let example = examples.last_mut().expect("a continuation follows a command");
            continued = push_words(&mut example.args, line);
        } else if let Some(rest) = line.strip_prefix(PROMPT) {
            examples.push(Example { line: index + 1, args: Vec::new(), shown: Vec::new() });
            continued = push_words(&mut examples.last_mut().unwrap().args, rest);
        } else if let Some(example) = examples.last_mut() {
            example.shown.push(line.to_string());
        }
    }
    blocks.retain(|b: &Vec<Example>| !b.is_empty());
    blocks
}

/// Adds a command line's words; true when it ends in `\` (the command goes on).
fn push_words(args: &mut Vec<String>, line: &str) -> bool {
    let line = line.trim_end();
    let (line, more) = match line.strip_suffix('\\') {
        Some(head) => (head, true),
        None => (line, false),
    };
    args.extend(line.split_whitespace().map(str::to_string));
    more
}

/// Whether `actual`'s words match `shown`'s, where a `...` word matches any run of words.
fn words_match(shown: &[&str], actual: &[&str]) -> bool {
    match shown.split_first() {
        None => actual.is_empty(),
        Some((&"...", rest)) => (0..=actual.len()).any(|skip| words_match(rest, &actual[skip..])),
        Some((word, rest)) => actual.first() == Some(word) && words_match(rest, &actual[1..]),
    }
}

/// A scratch folder holding a link to each top-level entry of the repository.
fn workspace(name: &str) -> PathBuf {
    let dir = scratch(name);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for entry in std::fs::read_dir(root).expect("the repository lists") {
        let entry = entry.expect("an entry");
        if entry.file_name() != "target" {
            std::os::unix::fs::symlink(entry.path(), dir.join(entry.file_name())).expect("a link");
        }
    }
    dir
}

/// Runs one example in `dir`; the shown lines that no printed line matches.
fn missing_lines(example: &Example, dir: &Path) -> Vec<String> {
    let output = Command::new(env!("CARGO_BIN_EXE_trimlab"))
        .args(&example.args)
        .current_dir(dir)
        .output()
        .expect("the trimlab binary runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "README.md:{}: {:?} failed:\n{stderr}", example.line, example.args);
    let printed: Vec<Vec<&str>> =
        stdout.lines().chain(stderr.lines()).map(|l| l.split_whitespace().collect()).collect();
    example
        .shown
        .iter()
        .filter(|line| line.trim() != "..." && !line.trim().is_empty())
        .filter(|line| {
            let shown: Vec<&str> = line.split_whitespace().collect();
            !printed.iter().any(|actual| words_match(&shown, actual))
        })
        .cloned()
        .collect()
}

#[test]
fn readme_examples_print_what_the_readme_shows() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md reads");
    let blocks = blocks(&readme);
    assert!(
        blocks.len() >= 3,
        "README.md has {} example blocks; expected the run, compare and advise ones",
        blocks.len()
    );
    let mut failures = Vec::new();
    for (index, block) in blocks.iter().enumerate() {
        let dir = workspace(&format!("readme-example-{index}"));
        for example in block {
            for line in missing_lines(example, &dir) {
                failures.push(format!(
                    "README.md:{} ({}): not printed: {line}",
                    example.line,
                    example.args.join(" ")
                ));
            }
        }
    }
    assert!(failures.is_empty(), "README examples drifted from the tool:\n{}", failures.join("\n"));
}

#[test]
fn an_ellipsis_stands_for_any_run_of_words() {
    let actual = ["waf", "1.1", "652", "2.1", "9208"];
    assert!(words_match(&["waf", "...", "9208"], &actual));
    assert!(words_match(&["...", "652", "..."], &actual));
    assert!(!words_match(&["waf", "...", "9209"], &actual));
    assert!(!words_match(&["waf", "1.1"], &actual));
}

#[test]
fn a_block_splits_into_commands_with_continuations() {
    let text = "x\n```text\n$ cargo run --release -- advise a \\\n    --device b\nline one\n...\n$ cargo run --release -- compare c\nz\n```\n";
    let blocks = blocks(text);
    assert_eq!(blocks.len(), 1);
    assert_eq!(blocks[0][0].args, ["advise", "a", "--device", "b"]);
    assert_eq!(blocks[0][0].shown, ["line one", "..."]);
    assert_eq!(blocks[0][1].args, ["compare", "c"]);
    assert_eq!(blocks[0][1].shown, ["z"]);
}
