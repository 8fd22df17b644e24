//! Where a command's configuration comes from: a TOML file or `-` for stdin, plus repeated
//! `--set key.path=value` overrides. The schema itself lives in `trimlab-scenario`.

use anyhow::{Context, Result};
use std::path::Path;
use trimlab_jobs::{input, RunConfig};

/// The text of `path` (`-`: standard input) and the name errors give it.
pub fn read(path: &Path) -> Result<(String, String)> {
    // Read within the caps every input file has (docs/limits.md): `trimlab run /dev/zero`
    // ends at its first megabyte with an error, not with the machine's memory.
    if path == Path::new("-") {
        let max = input::held_bytes_max()?;
        let text =
            input::read_text_from(std::io::stdin(), "<stdin>", max).context("cannot read the config")?;
        Ok((text, "<stdin>".to_string()))
    } else {
        let origin = path.display().to_string();
        Ok((input::read_text(path, &origin)?, origin))
    }
}

/// Reads `path` (`-`: standard input) and applies `set` in order.
pub fn load(path: &Path, set: &[String]) -> Result<RunConfig> {
    let (text, origin) = read(path)?;
    trimlab_jobs::parse_config(&text, &origin, set).map_err(|e| match workload_file_hint(path, &text) {
        Some(hint) => e.context(hint),
        None => e,
    })
}

/// A config that does not parse may be a workload file given where the TOML config goes
/// (`trimlab run job.fio`): which flag takes it.
fn workload_file_hint(path: &Path, text: &str) -> Option<String> {
    let name = path.display();
    let flag = workload_file_flag(path, text)?;
    Some(format!("{name} is not a TOML config; it looks like a workload file: give it as `trimlab run {flag} {name}` (with or without a config)"))
}

/// The flag that takes `path` when it is a workload file of another tool, judged by its
/// extension and its first line: `--fio`, `--filebench` or `--strace`.
pub fn workload_file_flag(path: &Path, text: &str) -> Option<&'static str> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let first =
        text.lines().map(str::trim).find(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with(';'));
    let first = first.unwrap_or("");
    // strace -f -ttt: `PID TIME call(...)`, or `TIME call(...)` without -f.
    let numeric = |w: &str| !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    let strace_like = first.split_whitespace().next().is_some_and(numeric) && first.contains('(');
    if ext == "fio" || (first.starts_with('[') && text.lines().any(|l| l.trim_start().starts_with("rw="))) {
        Some("--fio")
    } else if ext == "f" || first.starts_with("define ") || first.starts_with("set $") {
        Some("--filebench")
    } else if ext == "strace" || strace_like {
        Some("--strace")
    } else {
        None
    }
}

/// The built-in defaults with `set` applied (commands whose config file is optional).
pub fn defaults(set: &[String]) -> Result<RunConfig> {
    trimlab_jobs::default_config(set)
}
