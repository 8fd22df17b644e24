//! `[[phase]]`: a multi-phase scenario as an ordered list of steps (fill, age, delete, TRIM
//! burst, idle, a workload, fstrim, remount, mkfs, start of measurement). Each phase is one
//! table with a `kind`; the keys it reads depend on the kind (docs/config.md), and a key it
//! does not read is an error, so a typo cannot silently do nothing.

use crate::host::{duration, size};
use serde::{Deserialize, Serialize};
use trimlab_device::ConfigError;
use trimlab_sim::{ByteSize, DurationNs};
use trimlab_workload::Volume;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PhaseKind {
    /// Block: write the workload region once sequentially. File system: create files up to
    /// `utilization` (default 1.0).
    Fill,
    /// Block: fill, then `writes` of uniform random writes. File system: fill to 100 %, then
    /// delete random files down to `utilization` (001's aging).
    Age,
    /// File system: delete random live files down to `utilization`.
    Delete,
    /// File system: create files while below `utilization`, else delete down to it.
    Utilization,
    /// Block: TRIM `bytes` of the region from `offset` (default its start), back to back, in
    /// commands of `command_bytes` (default and at most the device's largest TRIM).
    TrimBurst,
    /// Nothing is submitted for `duration` (background threads, the TRIM engine's idle work
    /// and idle-time GC run, and are done by the phase's end).
    Idle,
    /// The `[workload]` section, with this phase's `[phase.workload]` keys laid over it.
    Workload,
    /// File system: FITRIM of the whole file system (`minlen_bytes`).
    Fstrim,
    /// File system: umount and mount again, optionally with another `discard` policy.
    Remount,
    /// File system: umount, then mkfs on the same device (`mkfs_discard`, `discard`).
    Mkfs,
    /// The device report covers from here (background work finishes first).
    Measure,
    /// File system: sync(2): every dirty page, then a journal commit, waited for.
    Sync,
    /// File system: a script of file operations (`operations`, or a `script` file; docs/config.md
    /// "Scripts").
    Ops,
}

impl PhaseKind {
    pub const NAMES: &'static str =
        "fill, age, delete, utilization, trim-burst, idle, workload, fstrim, remount, mkfs, measure, sync, ops";

    pub fn name(self) -> &'static str {
        match self {
            PhaseKind::Fill => "fill",
            PhaseKind::Age => "age",
            PhaseKind::Delete => "delete",
            PhaseKind::Utilization => "utilization",
            PhaseKind::TrimBurst => "trim-burst",
            PhaseKind::Idle => "idle",
            PhaseKind::Workload => "workload",
            PhaseKind::Fstrim => "fstrim",
            PhaseKind::Remount => "remount",
            PhaseKind::Mkfs => "mkfs",
            PhaseKind::Measure => "measure",
            PhaseKind::Sync => "sync",
            PhaseKind::Ops => "ops",
        }
    }

    /// The keys the kind reads on a file system and on a bare block device (None: the kind
    /// needs the other stack).
    fn keys(self, on_fs: bool) -> Option<&'static [&'static str]> {
        const FILES: &[&str] = &[
            "utilization",
            "file_bytes_min",
            "file_bytes_max",
            "append_bytes",
            "hole_bytes",
            "prefix",
            "stream",
        ];
        match (self, on_fs) {
            (PhaseKind::Fill | PhaseKind::Age | PhaseKind::Utilization, true) => Some(FILES),
            (PhaseKind::Delete, true) => Some(&["utilization", "stream"]),
            (PhaseKind::Fstrim, true) => Some(&["minlen_bytes"]),
            (PhaseKind::Remount, true) => Some(&["discard"]),
            (PhaseKind::Mkfs, true) => Some(&["discard", "mkfs_discard"]),
            (PhaseKind::Fill, false) => Some(&[]),
            (PhaseKind::Age, false) => Some(&["writes"]),
            (PhaseKind::TrimBurst, false) => Some(&["bytes", "offset", "command_bytes"]),
            (PhaseKind::Idle, _) => Some(&["duration"]),
            (PhaseKind::Workload, true) => Some(&["workload"]),
            (PhaseKind::Workload, false) => Some(&["workload", "stream"]),
            (PhaseKind::Measure, _) => Some(&[]),
            (PhaseKind::Ops, true) => Some(&["operations", "script", "stream"]),
            (PhaseKind::Sync, true) => Some(&[]),
            _ => None,
        }
    }
}

/// One `[[phase]]` table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhaseSection {
    pub kind: PhaseKind,
    /// Reported as `phases[i].name` (default: the kind).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub utilization: Option<f64>,
    #[serde(default, deserialize_with = "size", skip_serializing_if = "Option::is_none")]
    pub file_bytes_min: Option<ByteSize>,
    #[serde(default, deserialize_with = "size", skip_serializing_if = "Option::is_none")]
    pub file_bytes_max: Option<ByteSize>,
    #[serde(default, deserialize_with = "size", skip_serializing_if = "Option::is_none")]
    pub append_bytes: Option<ByteSize>,
    #[serde(default, deserialize_with = "size", skip_serializing_if = "Option::is_none")]
    pub hole_bytes: Option<ByteSize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// The named random stream (phases naming the same stream share one generator).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<String>,
    #[serde(default, deserialize_with = "duration", skip_serializing_if = "Option::is_none")]
    pub duration: Option<DurationNs>,
    #[serde(default, deserialize_with = "size", skip_serializing_if = "Option::is_none")]
    pub minlen_bytes: Option<ByteSize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub discard: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mkfs_discard: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writes: Option<Volume>,
    #[serde(default, deserialize_with = "size", skip_serializing_if = "Option::is_none")]
    pub bytes: Option<ByteSize>,
    /// trim-burst: where in the workload region the burst starts.
    #[serde(default, deserialize_with = "size", skip_serializing_if = "Option::is_none")]
    pub offset: Option<ByteSize>,
    /// trim-burst: bytes per TRIM command.
    #[serde(default, deserialize_with = "size", skip_serializing_if = "Option::is_none")]
    pub command_bytes: Option<ByteSize>,
    /// `[phase.workload]`: keys laid over `[workload]` for this phase.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workload: Option<toml::Table>,
    /// ops: the script (a `script` file is read into it when the config is loaded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operations: Option<String>,
    /// ops: the file the script came from, relative to the config's directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub script: Option<String>,
}

impl PhaseSection {
    pub fn new(kind: PhaseKind) -> PhaseSection {
        PhaseSection {
            kind,
            name: None,
            utilization: None,
            file_bytes_min: None,
            file_bytes_max: None,
            append_bytes: None,
            hole_bytes: None,
            prefix: None,
            stream: None,
            duration: None,
            minlen_bytes: None,
            discard: None,
            mkfs_discard: None,
            writes: None,
            bytes: None,
            offset: None,
            command_bytes: None,
            workload: None,
            operations: None,
            script: None,
        }
    }

    /// A `workload` phase running `w`: its `[phase.workload]` holds the keys where `w` differs
    /// from the `[workload]` defaults.
    pub fn workload(w: &trimlab_workload::WorkloadConfig) -> PhaseSection {
        let table = |w: &trimlab_workload::WorkloadConfig| match toml::Value::try_from(w) {
            Ok(toml::Value::Table(t)) => t,
            _ => toml::Table::new(),
        };
        let defaults = table(&trimlab_workload::WorkloadConfig::default());
        let over: toml::Table = table(w).into_iter().filter(|(k, v)| defaults.get(k) != Some(v)).collect();
        PhaseSection { workload: Some(over), ..PhaseSection::new(PhaseKind::Workload) }
    }

    pub fn label(&self) -> String {
        self.name.clone().unwrap_or_else(|| self.kind.name().to_string())
    }

    /// Checks the keys against the kind and the stack (`on_fs`: `[host] fs = "ext4"`).
    pub fn validate(&self, index: usize, on_fs: bool) -> Result<(), ConfigError> {
        let at = |key: &str| format!("phase[{index}].{key}");
        let stack = if on_fs { "host.fs = \"ext4\"" } else { "host.fs = \"none\"" };
        let Some(allowed) = self.kind.keys(on_fs) else {
            let needs = if on_fs { "a bare block device (host.fs = \"none\")" } else { "host.fs = \"ext4\"" };
            return Err(ConfigError::new(
                &at("kind"),
                format!("{:?}", self.kind.name()),
                format!("needs {needs}; with {stack} the kinds are {}", self.kinds_for(on_fs)),
            ));
        };
        let table = match toml::Value::try_from(self) {
            Ok(toml::Value::Table(t)) => t,
            _ => toml::Table::new(),
        };
        for (key, value) in &table {
            if key != "kind" && key != "name" && !allowed.contains(&key.as_str()) {
                return Err(ConfigError::new(
                    &at(key),
                    value,
                    format!(
                        "is not read by kind = {:?} with {stack}; its keys: {}",
                        self.kind.name(),
                        if allowed.is_empty() { "none".to_string() } else { allowed.join(", ") }
                    ),
                ));
            }
        }
        let required = match self.kind {
            PhaseKind::Idle => Some(("duration", self.duration.is_some())),
            PhaseKind::Delete | PhaseKind::Utilization => Some(("utilization", self.utilization.is_some())),
            PhaseKind::Ops => Some(("operations", self.operations.is_some())),
            _ => None,
        };
        if let Some((key, false)) = required {
            return Err(ConfigError::new(
                &at(key),
                "missing",
                format!("kind = {:?} needs it", self.kind.name()),
            ));
        }
        if let Some(text) = &self.operations {
            let origin = self.script.clone().unwrap_or_else(|| at("operations"));
            trimlab_workload::script::Script::parse(text, &origin)
                .map_err(|e| ConfigError::new(&at("operations"), "", e.to_string()))?;
        }
        if self.command_bytes == Some(ByteSize(0)) {
            return Err(ConfigError::new(&at("command_bytes"), "0B", "must be at least one page"));
        }
        if let Some(u) = self.utilization {
            if !(0.0..=1.0).contains(&u) {
                return Err(ConfigError::new(&at("utilization"), u, "must be in 0.0..=1.0"));
            }
        }
        for (key, policy) in [("discard", &self.discard)] {
            if let Some(text) = policy {
                crate::host::parse_discard(text)
                    .map_err(|e| ConfigError::new(&at(key), format!("{text:?}"), e))?;
            }
        }
        Ok(())
    }

    fn kinds_for(&self, on_fs: bool) -> String {
        use PhaseKind::*;
        [Fill, Age, Delete, Utilization, TrimBurst, Idle, Workload, Fstrim, Remount, Mkfs, Measure, Sync, Ops]
            .iter()
            .filter(|k| k.keys(on_fs).is_some())
            .map(|k| k.name())
            .collect::<Vec<_>>()
            .join(", ")
    }
}
