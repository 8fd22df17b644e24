//! The device presets as data: one TOML file per preset in crates/device/presets/ (its
//! `[device]`, `[ftl]` and `[trim.cost]` values and the notes on where they come from), laid
//! over `defaults.toml`, embedded in the binary. Resolution lays the user's keys over the
//! preset's key by key and completes the sections; a key no layer sets is a bug in the data
//! files, which `every_preset_file_is_complete` catches.

use super::device::{DeviceSection, DeviceSpec};
use super::error::ConfigError;
use super::ftl::{FtlSection, FtlSpec};
use super::trim::{EngineKeys, TrimSection};
use serde::Deserialize;
use std::sync::OnceLock;
use trimlab_trim::{EngineKind, TrimCostModel};

/// The preset a config without `[device] preset` gets.
pub const DEFAULT_PRESET: &str = "nvme-tlc";

/// Keys every preset shares unless its own file sets them.
const DEFAULTS: &str = include_str!("../../presets/defaults.toml");

/// In the order `trimlab presets` and `--help` list them.
#[doc(hidden)]
pub const FILES: [(&str, &str); 5] = [
    ("nvme-tlc", include_str!("../../presets/nvme-tlc.toml")),
    ("sata-mlc-2011", include_str!("../../presets/sata-mlc-2011.toml")),
    ("ufs-2018", include_str!("../../presets/ufs-2018.toml")),
    ("k9lag08u0m-4ch", include_str!("../../presets/k9lag08u0m-4ch.toml")),
    ("qlc-ssd", include_str!("../../presets/qlc-ssd.toml")),
];

/// One preset file as written (and `defaults.toml`, which has no notes).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[doc(hidden)]
pub struct PresetFile {
    #[serde(default)]
    about: String,
    /// Where `[trim.cost]` comes from: a public measurement, or the word "assumption".
    #[serde(default)]
    trim_source: String,
    #[serde(default)]
    device: DeviceSection,
    #[serde(default)]
    ftl: FtlSection,
    #[serde(default)]
    trim: TrimSection,
}

/// A preset: its file laid over the defaults.
pub struct Preset {
    pub name: &'static str,
    pub about: String,
    pub trim_source: String,
    pub device: DeviceSection,
    pub ftl: FtlSection,
    pub trim: TrimSection,
}

/// The sections of one config, complete: the user's keys over the preset's.
#[doc(hidden)]
pub struct Layered {
    pub device: DeviceSpec,
    pub ftl: FtlSpec,
    pub trim_engine: EngineKind,
    pub trim_cost: TrimCostModel,
    pub trim_keys: EngineKeys,
}

#[doc(hidden)]
pub fn parse(name: &str, text: &str) -> Result<PresetFile, ConfigError> {
    toml::from_str(text).map_err(|e| {
        ConfigError::new("device.preset", format!("\"{name}\""), format!("its data file does not parse: {e}"))
    })
}

fn load() -> Result<Vec<Preset>, ConfigError> {
    let defaults = parse("defaults", DEFAULTS)?;
    let mut presets = Vec::new();
    for (name, text) in FILES {
        let file = parse(name, text)?;
        let trim = TrimSection {
            engine: file.trim.engine.or(defaults.trim.engine),
            cost: Some(
                file.trim.cost.unwrap_or_default().or(&defaults.trim.cost.clone().unwrap_or_default()),
            ),
            engines: {
                // An engine's section replaces the defaults' whole, as a user's replaces the preset's.
                let mut engines = defaults.trim.engines.clone();
                engines.extend(file.trim.engines);
                engines
            },
        };
        presets.push(Preset {
            name,
            about: file.about,
            trim_source: file.trim_source,
            device: file.device.or(&defaults.device),
            ftl: file.ftl.or(&defaults.ftl),
            trim,
        });
    }
    Ok(presets)
}

/// Every preset, parsed once.
pub fn presets() -> Result<&'static [Preset], ConfigError> {
    static PRESETS: OnceLock<Result<Vec<Preset>, ConfigError>> = OnceLock::new();
    PRESETS.get_or_init(load).as_deref().map_err(Clone::clone)
}

impl Preset {
    /// The preset called `name`; the error lists the names.
    pub fn named(name: &str) -> Result<&'static Preset, ConfigError> {
        let all = presets()?;
        all.iter().find(|p| p.name == name).ok_or_else(|| {
            let names: Vec<_> = all.iter().map(|p| p.name).collect();
            ConfigError::new("device.preset", format!("\"{name}\""), format!("one of: {}", names.join(", ")))
        })
    }

    /// The user's sections laid over this preset, key by key, and completed.
    #[doc(hidden)]
    pub fn under(
        &self,
        device: &DeviceSection,
        ftl: &FtlSection,
        trim: &TrimSection,
    ) -> Result<Layered, ConfigError> {
        let missing = |section: &str, key: &str| {
            ConfigError::new(
                &format!("{section}.{key}"),
                "unset",
                format!("preset \"{}\" gives no value: a bug in crates/device/presets/", self.name),
            )
        };
        let own_cost = trim.cost.clone().unwrap_or_default();
        Ok(Layered {
            device: device.or(&self.device).complete().map_err(|k| missing("device", k))?,
            ftl: ftl.or(&self.ftl).complete().map_err(|k| missing("ftl", k))?,
            trim_engine: trim.engine.or(self.trim.engine).unwrap_or_default(),
            trim_cost: own_cost
                .or(self.trim.cost.as_ref().unwrap_or(&Default::default()))
                .complete()
                .map_err(|k| missing("trim.cost", k))?,
            trim_keys: EngineKeys::resolve(trim, &self.trim)?,
        })
    }
}

/// One preset as `trimlab presets` and `--help` describe it.
pub struct PresetInfo {
    pub name: &'static str,
    pub about: &'static str,
    pub trim_source: &'static str,
}

/// Preset names and one-line descriptions, for `--help` and docs (empty only if the embedded
/// data is broken, which `SsdConfig::resolve` then reports).
pub fn preset_list() -> Vec<(&'static str, &'static str)> {
    presets().unwrap_or_default().iter().map(|p| (p.name, p.about.as_str())).collect()
}

/// Every preset with the source of its TRIM costs.
pub fn preset_infos() -> Vec<PresetInfo> {
    presets()
        .unwrap_or_default()
        .iter()
        .map(|p| PresetInfo { name: p.name, about: &p.about, trim_source: &p.trim_source })
        .collect()
}
