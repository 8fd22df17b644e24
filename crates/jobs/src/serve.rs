//! `serve`: the device an NBD export models, resolved from the same config `run` reads, with
//! errors that point at where the bad key was set.

use anyhow::{anyhow, Error};
use trimlab_device::{ConfigError, SsdConfig};
use trimlab_scenario::RunConfig;

/// The resolved device of `config`. `text` and `origin` are the config file's text and name,
/// `set` the overrides, so an error names `--set ...` or `FILE:LINE`.
pub fn device_config(
    config: &RunConfig,
    text: &str,
    origin: &str,
    set: &[String],
) -> Result<SsdConfig, Error> {
    SsdConfig::resolve(&config.device, &config.ftl, &config.trim).map_err(|e| locate(text, origin, set, e))
}

/// Prefixes a resolve error with where the key was set: the `--set` that set it last, else
/// `FILE:LINE` of the key (just `FILE` when the key is not in the file: a preset's value or a
/// default), so the user sees where to look.
fn locate(text: &str, origin: &str, set: &[String], error: ConfigError) -> Error {
    if let Some(s) = set.iter().rev().find(|s| s.split('=').next().map(str::trim) == Some(error.key.as_str()))
    {
        return anyhow!("--set {s}: {error}");
    }
    let (section, key) = error.key.rsplit_once('.').unwrap_or(("", error.key.as_str()));
    let mut current = String::new();
    let line = text.lines().position(|line| {
        let t = line.trim();
        if let Some(name) = t.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            current = name.trim().to_string();
            return false;
        }
        current == section && t.strip_prefix(key).is_some_and(|rest| rest.trim_start().starts_with('='))
    });
    match line {
        Some(i) => anyhow!("{origin}:{}: {error}", i + 1),
        None => anyhow!("{origin}: {error}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_point_at_the_set_or_the_line() {
        let text = "[device]\npreset = \"nvme-tlc\"\npage_bytes = 1048576\n";
        let e = ConfigError::new("device.page_bytes", 1048576, "x");
        assert!(locate(text, "c.toml", &[], e).to_string().starts_with("c.toml:3: "));
        let e = ConfigError::new("ftl.gc_free_blocks", 2, "x");
        let set = ["ftl.gc_free_blocks=2".to_string()];
        assert!(locate(text, "c.toml", &set, e).to_string().starts_with("--set ftl.gc_free_blocks=2: "));
        let e = ConfigError::new("trim.delayed.idle_chunk_pages", 0, "x");
        assert!(
            locate(text, "c.toml", &[], e).to_string().starts_with("c.toml: "),
            "a key not in the file has no line"
        );
        // A key in a nested table is found under its own header.
        let nested =
            "seed = 1\n[device]\n# page\npage_bytes = 1048576\n[trim.delayed]\nidle_chunk_pages = 0\n";
        let e = ConfigError::new("trim.delayed.idle_chunk_pages", 0, "x");
        assert!(locate(nested, "c.toml", &[], e).to_string().starts_with("c.toml:6: "));
        let e = ConfigError::new("device.page_bytes", 1048576, "x");
        assert!(locate(nested, "c.toml", &[], e)
            .to_string()
            .ends_with("c.toml:4: config: device.page_bytes = 1048576 (x)"));
    }
}
