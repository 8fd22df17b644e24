//! Where a command's configuration comes from: a TOML file or `-` for stdin, plus repeated
//! `--set key.path=value` overrides. The schema itself lives in `trimlab-scenario`.

use anyhow::{Context, Result};
use std::io::Read;
use std::path::Path;
use trimlab_scenario::RunConfig;

/// Reads `path` (`-`: standard input) and applies `set` in order.
pub fn load(path: &Path, set: &[String]) -> Result<RunConfig> {
    let (text, origin) = if path == Path::new("-") {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).context("cannot read the config from stdin")?;
        (text, "<stdin>".to_string())
    } else {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
        (text, path.display().to_string())
    };
    Ok(RunConfig::parse_with(&text, &origin, set)?)
}

/// The built-in defaults with `set` applied (commands whose config file is optional).
pub fn defaults(set: &[String]) -> Result<RunConfig> {
    Ok(RunConfig::parse_with("", "<defaults>", set)?)
}
