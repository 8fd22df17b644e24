//! The phase kinds: one file per kind, each defining its `PhaseKind` constant and its `SPEC`
//! ([`PhaseSpec`]: name, help, the keys it reads on each stack, how it reports, and its one
//! entry, which gets the stack). Adding a kind is its file plus its module's name in the
//! `registry!` list of [`PHASES`] (one line); the run loop (`run.rs`) drives every kind alike.
//! Here too: checking a `[[phase]]` table against its kind, and the phases a run without
//! `[[phase]]` is made of.

mod aging_profile;
// The aging's two models are public only for their tests in tests/scenario/ (the lib has no
// test harness); they are no API of the crate.
#[doc(hidden)]
pub mod file_size_dist;
mod shared;
#[doc(hidden)]
pub mod tree_shape;

use crate::phase::{PhaseKind, PhaseSection, PhaseSpec, Report};
use trimlab_device::ConfigError;
use trimlab_sim::ByteSize;
use trimlab_workload::{WorkloadConfig, WorkloadKind};

trimlab_sim::registry! {
    /// Every phase kind, in the order help and docs list them.
    pub const PHASES: PhaseSpec = [
        pub fill,
        pub age,
        pub delete,
        pub utilization,
        pub trim_burst,
        pub idle,
        pub workload,
        pub fstrim,
        pub remount,
        pub mkfs,
        pub measure,
        pub sync,
        pub ops,
        pub block_workload, // implicit: [workload] alone on a bare SSD
        pub cluster_host, // implicit: 004's cluster host
    ];
}

trimlab_sim::registry_handle!(PhaseKind, PhaseSpec, PHASES, "phase kind");

/// The kinds a config may name (the implicit ones are made only at resolution).
pub fn written_kinds() -> impl Iterator<Item = &'static PhaseSpec> {
    PHASES.iter().copied().filter(|s| !s.implicit)
}

impl PhaseKind {
    /// The keys the kind reads on a file system and on a bare block device (None: the kind
    /// needs the other stack).
    fn keys(self, on_fs: bool) -> Option<&'static [&'static str]> {
        let spec = self.spec();
        if on_fs {
            spec.fs_keys
        } else {
            spec.block_keys
        }
    }
}

/// The phases of a run without `[[phase]]`, made explicit: on a file system its `[workload]`
/// as one `workload` phase, or a script's phases (its `phase` lines split it); on a bare SSD
/// the `[workload]` alone, or 004's cluster host.
pub fn implicit(w: &WorkloadConfig, on_fs: bool) -> (PhaseSection, Option<WorkloadConfig>) {
    if on_fs {
        if w.kind == WorkloadKind::Script {
            let ops = PhaseSection {
                name: Some("script".into()),
                operations: w.keys.text("operations").map(str::to_string),
                script: w.keys.text("script").map(str::to_string),
                stream: w.keys.text("stream").map(str::to_string),
                ..PhaseSection::new(PhaseKind::Ops)
            };
            return (ops, None);
        }
        return (PhaseSection::new(PhaseKind::Workload), Some(w.clone()));
    }
    let kind = if w.kind.is_cluster_host() { PhaseKind::ClusterHost } else { PhaseKind::BlockWorkload };
    (PhaseSection::new(kind), None)
}

impl PhaseSection {
    /// Checks the keys against the kind and the stack (`on_fs`: `[host] fs = "ext4"`).
    pub fn validate(&self, index: usize, on_fs: bool) -> Result<(), ConfigError> {
        let at = |key: &str| format!("phase[{index}].{key}");
        let stack = if on_fs { "host.fs = \"ext4\"" } else { "host.fs = \"none\"" };
        let allowed = match self.kind.keys(on_fs) {
            Some(keys) if !self.kind.spec().implicit => keys,
            _ => {
                let needs = if self.kind.spec().implicit {
                    "no [[phase]] (it is how a run without phases runs its [workload])"
                } else if on_fs {
                    "a bare block device (host.fs = \"none\")"
                } else {
                    "host.fs = \"ext4\""
                };
                return Err(ConfigError::new(
                    &at("kind"),
                    format!("{:?}", self.kind.name()),
                    format!("needs {needs}; with {stack} the kinds are {}", kinds_for(on_fs)),
                ));
            }
        };
        let table = match toml::Value::try_from(self) {
            Ok(toml::Value::Table(t)) => t,
            _ => toml::Table::new(),
        };
        for (key, value) in &table {
            // `repeat`, `until`, `steady` and `between` are the loop's, read for every kind.
            if !["kind", "name", "repeat", "until", "steady", "between"].contains(&key.as_str())
                && !allowed.contains(&key.as_str())
            {
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
        if let Some(key) = self.kind.spec().required {
            if !table.contains_key(key) {
                return Err(ConfigError::new(
                    &at(key),
                    "missing",
                    format!("kind = {:?} needs it", self.kind.name()),
                ));
            }
        }
        self.validate_rounds(index, on_fs)?;
        self.validate_values(index)
    }

    /// `repeat`, `until` and `[phase.steady]`: the loop's keys.
    fn validate_rounds(&self, index: usize, on_fs: bool) -> Result<(), ConfigError> {
        let at = |key: &str| format!("phase[{index}].{key}");
        if self.repeat == Some(0) {
            return Err(ConfigError::new(&at("repeat"), 0, "must be at least 1 (the number of rounds)"));
        }
        if let Some(text) = &self.between {
            crate::between_rounds::Between::parse(text)
                .map_err(|e| ConfigError::new(&at("between"), format!("{text:?}"), e))?;
            if !on_fs
                || self.kind.spec().report != Report::Entry
                || (self.repeat.is_none() && self.until.is_none())
            {
                return Err(ConfigError::new(
                    &at("between"),
                    format!("{text:?}"),
                    "is what a file workload's files become between its rounds: it needs a file system, a kind reported per round (workload) and repeat or until",
                ));
            }
        }
        if self.steady_rule(index)?.is_some() && self.kind.spec().report != Report::Entry {
            return Err(ConfigError::new(
                &at("until"),
                "\"steady\"",
                format!(
                    "needs a kind whose rounds are measured one by one; kind = {:?} reports its own parts",
                    self.kind.name()
                ),
            ));
        }
        Ok(())
    }

    /// The values of the kinds' keys.
    fn validate_values(&self, index: usize) -> Result<(), ConfigError> {
        let at = |key: &str| format!("phase[{index}].{key}");
        if let Some(text) = &self.operations {
            let origin = self.script.clone().unwrap_or_else(|| at("operations"));
            // The error names the value it blames: the script's file, or the inline line at fault.
            trimlab_workload::script::Script::parse(text, &origin).map_err(|e| match &self.script {
                Some(file) => ConfigError::new(&at("script"), format!("{file:?}"), e.to_string()),
                None => ConfigError::new(&at("operations"), format!("{:?}", e.text), e.to_string()),
            })?;
        }
        if self.command_bytes == Some(ByteSize(0)) {
            return Err(ConfigError::new(&at("command_bytes"), "0B", "must be at least one page"));
        }
        if let Some(c) = self.churn {
            if !(c.is_finite() && (0.0..=100.0).contains(&c)) {
                return Err(ConfigError::new(&at("churn"), c, "must be in 0.0..=100.0 (capacities written)"));
            }
        }
        if let Some(text) = &self.profile {
            if text != aging_profile::IMPRESSIONS {
                return Err(ConfigError::new(
                    &at("profile"),
                    format!("{text:?}"),
                    format!(
                        "the one profile is {:?} (unset: 001's fill and deletes)",
                        aging_profile::IMPRESSIONS
                    ),
                ));
            }
        }
        if let Some(s) = self.free_layout_score {
            if !(0.0..=1.0).contains(&s) || self.profile.is_none() {
                return Err(ConfigError::new(
                    &at("free_layout_score"),
                    s,
                    "must be in 0.0..=1.0 and needs profile = \"impressions\"",
                ));
            }
        }
        if let Some(u) = self.utilization {
            if !(0.0..=1.0).contains(&u) {
                return Err(ConfigError::new(&at("utilization"), u, "must be in 0.0..=1.0"));
            }
        }
        if let Some(text) = &self.discard {
            crate::host::parse_discard(text)
                .map_err(|e| ConfigError::new(&at("discard"), format!("{text:?}"), e))?;
        }
        Ok(())
    }
}

/// The kinds a config may name on a stack, as text.
fn kinds_for(on_fs: bool) -> String {
    written_kinds()
        .filter(|s| s.kind.keys(on_fs).is_some())
        .map(|s| s.kind.name())
        .collect::<Vec<_>>()
        .join(", ")
}
