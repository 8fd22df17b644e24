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
const FILES: [(&str, &str); 5] = [
    ("nvme-tlc", include_str!("../../presets/nvme-tlc.toml")),
    ("sata-mlc-2011", include_str!("../../presets/sata-mlc-2011.toml")),
    ("ufs-2018", include_str!("../../presets/ufs-2018.toml")),
    ("k9lag08u0m-4ch", include_str!("../../presets/k9lag08u0m-4ch.toml")),
    ("qlc-ssd", include_str!("../../presets/qlc-ssd.toml")),
];

/// One preset file as written (and `defaults.toml`, which has no notes).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PresetFile {
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
pub(super) struct Layered {
    pub device: DeviceSpec,
    pub ftl: FtlSpec,
    pub trim_engine: EngineKind,
    pub trim_cost: TrimCostModel,
    pub trim_keys: EngineKeys,
}

fn parse(name: &str, text: &str) -> Result<PresetFile, ConfigError> {
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
    pub(super) fn under(
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

#[cfg(test)]
mod tests {
    use super::*;
    use trimlab_nand::Timing;

    #[test]
    fn every_preset_file_is_complete() {
        for p in presets().unwrap() {
            let none = (DeviceSection::default(), FtlSection::default(), TrimSection::default());
            let layered = p.under(&none.0, &none.1, &none.2).unwrap_or_else(|e| panic!("{}: {e}", p.name));
            assert_eq!(layered.device.preset, None, "{}: a preset file does not name a preset", p.name);
            // Issue 39: every preset carries a rated endurance (its source is in its file).
            assert!(layered.device.rated_pe_cycles.is_some_and(|c| c > 0), "{}: rated_pe_cycles", p.name);
            assert!(!p.about.is_empty() && !p.trim_source.is_empty(), "{}: notes", p.name);
        }
    }

    /// The numbers in the data files are the ones the named models document (their sources are
    /// in `Timing`'s and `TrimCostModel`'s constructors).
    #[test]
    fn preset_data_matches_the_documented_models() {
        let cases = [
            ("nvme-tlc", Timing::tlc_nvme(), TrimCostModel::nvme_fio()),
            ("sata-mlc-2011", Timing::mlc_sata_2011(), TrimCostModel::sata_2011()),
            ("ufs-2018", Timing::tlc_nvme(), TrimCostModel::ufs_2018()),
            ("k9lag08u0m-4ch", Timing::k9lag08u0m(), TrimCostModel::sata_2011()),
            // No named QLC model in trimlab-nand: the preset's own assumptions (its file).
            (
                "qlc-ssd",
                Timing {
                    read_ns: 100_000,
                    program_ns: 2_000_000,
                    erase_ns: 10_000_000,
                    transfer_ps_per_byte: 625,
                    ..Timing::tlc_nvme()
                },
                TrimCostModel::nvme_fio(),
            ),
        ];
        assert_eq!(presets().unwrap().len(), cases.len());
        for (name, timing, cost) in cases {
            let p = Preset::named(name).unwrap();
            let d = &p.device;
            let data = (d.read_ns, d.program_ns, d.erase_ns, d.transfer_ps_per_byte, d.command_ns);
            let model = (
                timing.read_ns,
                timing.program_ns,
                timing.erase_ns,
                timing.transfer_ps_per_byte,
                timing.command_ns,
            );
            assert_eq!(
                data,
                (Some(model.0), Some(model.1), Some(model.2), Some(model.3), Some(model.4)),
                "{name}"
            );
            assert_eq!(p.trim.cost.clone().unwrap_or_default().complete(), Ok(cost), "{name}");
        }
        assert_eq!(DEFAULT_PRESET, FILES[0].0);
    }

    #[test]
    fn a_preset_file_with_an_unknown_key_is_refused_by_name() {
        let e = parse("broken", "[device]\nchanels = 8\n").err().expect("refused");
        assert_eq!(e.key, "device.preset");
        assert!(e.accepted.contains("chanels") && e.accepted.contains("channels"), "{e}");
    }
}
