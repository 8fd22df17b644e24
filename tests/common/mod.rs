//! Helpers the binary's integration tests share: run `trimlab`, and a fresh scratch folder.

#![allow(dead_code)] // each test binary uses its own subset

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs the `trimlab` binary from the repository root.
pub fn trimlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trimlab"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the trimlab binary runs")
}

/// An empty folder under the target's tmp dir (emptied first if a previous run left it).
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Says a test did not run and why: on stderr, and as a line in the file `TRIMLAB_SKIPPED`
/// names (scripts/test-all sets it and lists the lines in its summary), so a skip is never
/// mistaken for a pass.
pub fn skip(test: &str, why: &str) {
    eprintln!("SKIPPED {test}: {why}");
    if let Some(path) = std::env::var_os("TRIMLAB_SKIPPED") {
        use std::io::Write;
        if let Ok(mut file) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
            let _ = writeln!(file, "{test}: {why}");
        }
    }
}
