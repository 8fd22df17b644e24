//! Where a command's configuration comes from: a TOML file or `-` for stdin, plus repeated
//! `--set key.path=value` overrides. The schema itself lives in `trimlab-scenario`.

use anyhow::{Context, Result};
use std::io::Read;
use std::path::Path;
use trimlab_jobs::RunConfig;

/// The text of `path` (`-`: standard input) and the name errors give it.
pub fn read(path: &Path) -> Result<(String, String)> {
    if path == Path::new("-") {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).context("cannot read the config from stdin")?;
        Ok((text, "<stdin>".to_string()))
    } else {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
        Ok((text, path.display().to_string()))
    }
}

/// Reads `path` (`-`: standard input) and applies `set` in order.
pub fn load(path: &Path, set: &[String]) -> Result<RunConfig> {
    let (text, origin) = read(path)?;
    trimlab_jobs::parse_config(&text, &origin, set)
}

/// The built-in defaults with `set` applied (commands whose config file is optional).
pub fn defaults(set: &[String]) -> Result<RunConfig> {
    trimlab_jobs::default_config(set)
}
