//! `[[phase]]`: a run as an ordered list of steps (fill, age, delete, TRIM burst, idle, a
//! workload, fstrim, remount, mkfs, start of measurement, ...). Each phase is one table with a
//! `kind`; the keys it reads depend on the kind (docs/config.md), and a key it does not read is
//! an error, so a typo cannot silently do nothing. This file holds the table and what a phase
//! kind is ([`PhaseSpec`]); the kinds themselves are the files of `phases/`, one each, and the
//! run loop (`run.rs`) drives them.

use crate::host::{duration, size};
use crate::stack::Stack;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use trimlab_sim::{ByteSize, DurationNs};
use trimlab_workload::cluster_host::ClusterRun;
use trimlab_workload::{Progress, Volume, WorkloadConfig};

/// A phase kind: its name, as configs spell it. Each kind's file defines its constant
/// (`PhaseKind::Fill`) and its [`PhaseSpec`]; `phases/mod.rs` registers them.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PhaseKind(pub &'static str);

/// What a phase kind's entry adds to the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Report {
    /// One entry of metrics.json's `phases` per round, made by the loop (with the figures the
    /// kind returns).
    Entry,
    /// The kind reports its own parts (a script's `phase` lines split it).
    Parts,
    /// The kind is the whole run and writes metrics.json's top-level keys (the implicit single
    /// block `[workload]`, 004's cluster host): no `phases` entry.
    TopLevel,
}

/// A phase kind: its name, help, the keys it reads on each stack, and its one entry.
pub struct PhaseSpec {
    pub kind: PhaseKind,
    pub help: &'static str,
    /// The keys it reads on a bare block device (`None`: it needs a file system).
    pub block_keys: Option<&'static [&'static str]>,
    /// The keys it reads on a file system (`None`: it needs a bare block device).
    pub fs_keys: Option<&'static [&'static str]>,
    /// A key the kind cannot run without.
    pub required: Option<&'static str>,
    /// Made only at resolution from a run without `[[phase]]`, never written in a config.
    pub implicit: bool,
    pub report: Report,
    /// Runs one round of the phase on the stack.
    pub run: fn(&mut Stack, &mut PhaseRun) -> Result<Outcome, String>,
}

/// One phase of a resolved run: its table, a `workload` phase's merged workload, and whether
/// the config wrote it (`[[phase]]`) or resolution made it (a run without phases).
#[derive(Clone, Debug)]
pub struct Phase {
    pub section: PhaseSection,
    pub workload: Option<WorkloadConfig>,
    pub written: bool,
}

/// One round of one phase, as its kind's entry sees it.
pub struct PhaseRun<'a> {
    /// The phase's place in the run (`phase[i]` in errors, default stream and file prefix).
    pub index: usize,
    /// Which round of the phase this is (0 for the first).
    pub round: u32,
    pub section: &'a PhaseSection,
    /// A `workload` phase's workload (`[workload]` with its `[phase.workload]` laid over).
    pub workload: Option<&'a WorkloadConfig>,
    /// `[workload]` as configured: the block phases' region and precondition keys.
    pub base: &'a WorkloadConfig,
    pub progress: &'a mut dyn Progress,
    /// A [`Report::Parts`] kind's entries.
    pub parts: &'a mut Vec<Value>,
}

/// The figures a phase's workload measured (metrics.json's `phases[i].figures`).
pub type Figures = Vec<(&'static str, u64)>;

/// What one round of a phase produced besides its effect on the stack.
#[derive(Default)]
pub struct Outcome {
    pub figures: Figures,
    /// Keys of the round's `phases` entry beside `figures` (an strace's `unknown_calls`).
    pub entry: Map<String, Value>,
    /// Top-level keys of metrics.json (a [`Report::TopLevel`] kind).
    pub metrics: Map<String, Value>,
    /// 004's cluster host run, typed.
    pub cluster_host: Option<ClusterRun>,
    /// The run stops here, and metrics.json carries this error (a script's failing line: what
    /// ran before it is reported).
    pub stopped: Option<String>,
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
    /// Rounds: the loop runs the phase this many times (default 1), each round reported as an
    /// entry of its own with its `round`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u32>,
    /// `"steady"`: rounds run until the steady-state rule holds, `repeat` being the cap
    /// (default 25, PTS's); `steady_state.rs`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    /// `[phase.steady]`: the rule's figures and bounds (SNIA PTS's by default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steady: Option<crate::steady_state::SteadyKeys>,
    /// age (file system): after the fill and the deletes, create and delete files around
    /// `utilization` until this many capacities more were written (default 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub churn: Option<f64>,
    /// age (file system): `"impressions"` ages with a published file-size distribution and
    /// directory tree (phases/aging_profile.rs) instead of 001's fill and deletes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// age with a profile: churn until the free space's layout score is at most this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub free_layout_score: Option<f64>,
    /// measure: also restart the file system's call latencies (fsync, write), so that
    /// `host.calls` covers only what follows (default false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calls: Option<bool>,
    /// What a file workload's files become between rounds: `own`, `remove` or `rename`
    /// (`between_rounds.rs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub between: Option<String>,
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
            repeat: None,
            until: None,
            steady: None,
            between: None,
            calls: None,
            churn: None,
            profile: None,
            free_layout_score: None,
        }
    }

    /// How many rounds the loop runs at most (`repeat`; default 1, or PTS's 25 rounds with
    /// `until = "steady"`).
    pub fn rounds(&self) -> u32 {
        let default = if self.until.is_some() { crate::steady_state::DEFAULT_MAX_ROUNDS } else { 1 };
        self.repeat.unwrap_or(default)
    }

    /// The steady-state rule `until = "steady"` and `[phase.steady]` ask for (`None`: a fixed
    /// number of rounds). `index` names the phase in errors.
    pub fn steady_rule(
        &self,
        index: usize,
    ) -> Result<Option<trimlab_sim::steady_state::SteadyRule>, trimlab_device::ConfigError> {
        use crate::steady_state::UNTIL_STEADY;
        use trimlab_device::ConfigError;
        let at = |key: &str| format!("phase[{index}].{key}");
        match (&self.until, &self.steady) {
            (None, None) => Ok(None),
            (None, Some(_)) => Err(ConfigError::new(&at("steady"), "set", format!("needs until = {UNTIL_STEADY:?}"))),
            (Some(u), _) if u != UNTIL_STEADY => Err(ConfigError::new(
                &at("until"),
                format!("{u:?}"),
                format!("the one accepted value is {UNTIL_STEADY:?} (rounds until steady state; a fixed count is `repeat`)"),
            )),
            (Some(_), keys) => {
                let keys = keys.clone().unwrap_or_default();
                keys.rule(&|k| at(&format!("steady.{k}"))).map(Some)
            }
        }
    }

    pub fn label(&self) -> String {
        self.name.clone().unwrap_or_else(|| self.kind.name().to_string())
    }
}
