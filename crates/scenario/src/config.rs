//! The run configuration as written in TOML: the one schema `run`, `serve`, `replay`, `advise`,
//! sweeps and reproductions share. Only this crate knows it.

use crate::ScenarioError;
use serde::{Deserialize, Serialize};
use trimlab_device::{DeviceSection, FtlSection, SsdConfig, TrimSection};
use trimlab_workload::WorkloadConfig;

/// A whole run configuration as written in a file.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    pub seed: Option<u64>,
    #[serde(default)]
    pub device: DeviceSection,
    #[serde(default)]
    pub ftl: FtlSection,
    #[serde(default)]
    pub trim: TrimSection,
    #[serde(default)]
    pub workload: WorkloadConfig,
}

/// A configuration resolved against its device and checked.
pub struct Resolved {
    pub device: SsdConfig,
    pub workload: WorkloadConfig,
}

impl RunConfig {
    pub fn parse(text: &str, origin: &str) -> Result<RunConfig, ScenarioError> {
        toml::from_str(text)
            .map_err(|e| ScenarioError::Parse(format!("{origin}: {}", e.to_string().trim_end())))
    }

    /// Parses `text` with `--set key.path=value` overrides applied first. Without overrides the
    /// errors name lines of `text`; with them, an error names the override it comes from when
    /// the key was set on the command line.
    pub fn parse_with(text: &str, origin: &str, set: &[String]) -> Result<RunConfig, ScenarioError> {
        if set.is_empty() {
            return RunConfig::parse(text, origin);
        }
        let mut doc: toml::Table = toml::from_str(text)
            .map_err(|e| ScenarioError::Parse(format!("{origin}: {}", e.to_string().trim_end())))?;
        for assignment in set {
            crate::overrides::apply_set(&mut doc, assignment)?;
        }
        RunConfig::deserialize(toml::Value::Table(doc)).map_err(|e| {
            ScenarioError::Parse(format!(
                "{origin} with --set {}: {}",
                set.join(" --set "),
                e.to_string().trim_end()
            ))
        })
    }

    pub fn resolve(&self) -> Result<Resolved, trimlab_device::ConfigError> {
        let device = SsdConfig::resolve(&self.device, &self.ftl, &self.trim)?;
        self.workload.validate(
            device.logical_bytes(),
            device.geometry.page_bytes as u64,
            device.max_transfer_bytes,
        )?;
        Ok(Resolved { device, workload: self.workload.clone() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(text: &str) -> String {
        match RunConfig::parse(text, "test.toml").map(|c| c.resolve()) {
            Err(e) => e.to_string(),
            Ok(Err(e)) => e.to_string(),
            Ok(Ok(_)) => panic!("config was accepted:\n{text}"),
        }
    }

    #[test]
    fn the_issue_example_resolves() {
        let text = r#"
[device]
preset = "nvme-tlc"
logical_bytes = "8GiB"
spare_factor = 0.10
pages_per_block = 128
[ftl]
gc_victim = "greedy"
[trim]
engine = "immediate"
[workload]
pattern = "uniform-random"
trim_fraction = 0.1
writes = "5x"
"#;
        let resolved = RunConfig::parse(text, "x").unwrap().resolve().unwrap();
        assert_eq!(resolved.device.logical_bytes(), 8 << 30);
        assert_eq!(resolved.device.geometry.pages_per_block, 128);
    }

    #[test]
    fn unknown_key_is_named_with_its_line() {
        let e = error_of("[device]\nspare_factr = 0.1\n");
        assert!(e.contains("spare_factr") && e.contains("line 2") && e.contains("spare_factor"), "{e}");
    }

    #[test]
    fn unknown_section_is_named() {
        let e = error_of("[devices]\nspare_factor = 0.1\n");
        assert!(e.contains("devices") && e.contains("device"), "{e}");
    }

    #[test]
    fn wrong_type_is_named_with_its_line() {
        let e = error_of("[device]\n\nspare_factor = \"lots\"\n");
        assert!(e.contains("line 3") && e.contains("spare_factor"), "{e}");
    }

    #[test]
    fn impossible_spare_factor_names_key_and_range() {
        let e = error_of("[device]\nspare_factor = 1.0\n");
        assert!(e.contains("device.spare_factor = 1") && e.contains("must be > 0 and < 1"), "{e}");
    }

    #[test]
    fn zero_pages_per_block_names_key_and_range() {
        let e = error_of("[device]\npages_per_block = 0\n");
        assert_eq!(e, "config: device.pages_per_block = 0 (must be 1..=65536)");
    }

    #[test]
    fn bad_byte_size_says_what_is_accepted() {
        let e = error_of("[device]\nlogical_bytes = \"8 parsecs\"\n");
        assert!(e.contains("line 2") && e.contains("8GiB"), "{e}");
    }

    #[test]
    fn bad_engine_lists_the_engines() {
        let e = error_of("[trim]\nengine = \"sometimes\"\n");
        assert!(e.contains("immediate") && e.contains("none"), "{e}");
    }

    #[test]
    fn workload_fraction_out_of_range() {
        let e = error_of("[workload]\nread_fraction = 2.0\n");
        assert!(e.contains("workload.read_fraction = 2") && e.contains("0.0..=1.0"), "{e}");
    }

    #[test]
    fn bad_gc_threshold() {
        let e = error_of("[device]\nlogical_bytes = \"1GiB\"\n[ftl]\ngc_free_blocks = \"60%\"\n");
        assert!(e.contains("ftl.gc_free_blocks") && e.contains("< 50"), "{e}");
    }
}
