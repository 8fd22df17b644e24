//! Host TRIM policies behind one interface: what a journal commit does with the blocks its
//! transaction freed, what background workers trim, and when freed blocks become allocatable.
//!
//! The file system keeps the bitmaps and issues every command; a policy only decides. Blocks a
//! policy holds (queued for TRIM, or being trimmed) are free on disk but not allocatable.
//!
//! Adding a policy: one file here that defines it, its [`PolicyKind`] constant (or, for a
//! policy with arguments, a `const fn` that makes its kinds), its keys ([`PolicyKey`]
//! constants: `[host]` reads them from the registry, the policy reads their values from
//! [`PolicyParams`] when it is built) and its `SPEC` ([`PolicySpec`]: name, help, keys, how it
//! reads `NAME:ARGS`, its constructor), and its module's name in the `registry!` list of
//! [`POLICIES`] (one line).

pub mod ext4_free_data;
mod online;
mod params;
mod run;

pub use params::{PolicyKey, PolicyParams, Unit};
pub use run::{FreedRun, Run};

use serde::{Serialize, Serializer};
use std::fmt;
use trimlab_sim::SimTime;

trimlab_sim::registry! {
    /// Every host TRIM policy, in the order help and docs list them.
    pub const POLICIES: PolicySpec = [
        pub nodiscard,
        pub discard,
        pub discard_batch,
        pub ext4_discard,
        pub lazy,
        pub lazy_reuse,
        pub selective,
        pub btrfs_async,
        pub fstrim,
    ];
}

/// A policy as the registry knows it (nbdkit style: its file defines the `SPEC`).
pub struct PolicySpec {
    /// The name `[host] discard` takes (before any `:ARGS`): its `PolicyKind`'s name.
    pub name: &'static str,
    /// The names of the arguments its kinds carry, in order (`low_pct`, `high_pct`); empty
    /// for a policy whose kinds carry none.
    pub arg_names: &'static [&'static str],
    /// The arguments after `name:` it accepts, as shown in help (`LOW:HIGH`), if any.
    pub args: Option<&'static str>,
    /// One line for `--help` and docs/config.md.
    pub help: &'static str,
    /// The keys it reads (declared in its file; those with `in_host` are `[host]` keys).
    pub keys: &'static [PolicyKey],
    /// A representative value: the instance the model tests run.
    pub example: PolicyKind,
    /// Reads the text after `name:` (`None` for the bare name).
    pub parse: fn(Option<&str>) -> Result<ParsedPolicy, String>,
    /// The short label reports use (`SeT(40,90)`); `None`: the name.
    pub label: Option<fn(PolicyKind) -> String>,
    pub build: fn(PolicyKind, &PolicyParams, u64) -> Box<dyn TrimPolicy>,
}

/// Every key of the registered policies, once (a key two policies share is one key), in
/// registry order.
pub fn keys() -> Vec<&'static PolicyKey> {
    let mut out: Vec<&'static PolicyKey> = Vec::new();
    for key in POLICIES.iter().flat_map(|s| s.keys) {
        if !out.iter().any(|k| k.name == key.name) {
            out.push(key);
        }
    }
    out
}

/// The `[host]` key named `name`, if a registered policy declares one.
pub fn host_key(name: &str) -> Option<&'static PolicyKey> {
    keys().into_iter().find(|k| k.in_host && k.name == name)
}

/// The names of the policies that read `key`.
pub fn readers(key: &PolicyKey) -> Vec<&'static str> {
    POLICIES.iter().filter(|s| s.keys.iter().any(|k| k.name == key.name)).map(|s| s.name).collect()
}

/// A host TRIM policy's identity: its name in `[host] discard` and, for a policy with
/// arguments, their values (selective's watermarks). Values come from a policy's file
/// (`PolicyKind::Lazy`, `PolicyKind::selective(40, 90)`) or from [`parse`], so each names a
/// registered policy. The derived equality makes the constants usable as match patterns.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct PolicyKind {
    name: &'static str,
    /// The arguments in the order of the spec's `arg_names`; the unused ones are 0. Two
    /// suffice for every policy so far; a policy with more widens the array.
    args: [u32; 2],
}

impl PolicyKind {
    /// The kind of a policy without arguments (its file's constant).
    const fn plain(name: &'static str) -> Self {
        PolicyKind { name, args: [0, 0] }
    }

    const fn with_args(name: &'static str, args: [u32; 2]) -> Self {
        PolicyKind { name, args }
    }

    /// The name `[host] discard` takes, without arguments.
    pub const fn name(self) -> &'static str {
        self.name
    }

    /// The registered spec of this policy.
    pub fn spec(self) -> &'static PolicySpec {
        POLICIES
            .iter()
            .find(|s| s.name == self.name)
            .unwrap_or_else(|| unreachable!("policy {:?} has no spec in POLICIES", self.name))
    }

    /// `NAME` or `NAME:ARGS` (see [`parse`]); text that sets a key (`fstrim:PERIOD`) is
    /// refused here: only a `discard` key of a config carries it into the params.
    pub fn parse(text: &str) -> Result<PolicyKind, String> {
        let parsed = parse(text)?;
        match parsed.params.is_empty() {
            true => Ok(parsed.kind),
            false => Err(format!(
                "\"{text}\": the keys a policy's text sets (fstrim's period) are taken only by a \
                 config's discard ([host], [[phase]], a script's mount)"
            )),
        }
    }

    /// The name `parse` reads back: the arguments joined by `:` (`selective:LOW:HIGH`).
    pub fn config_name(&self) -> String {
        let args = self.args.iter().take(self.spec().arg_names.len()).map(|value| format!(":{value}"));
        std::iter::once(self.name.to_string()).chain(args).collect()
    }

    pub fn label(&self) -> String {
        self.spec().label.map_or_else(|| self.name.to_string(), |label| label(*self))
    }

    /// One value of every registered policy (the registry's examples).
    pub fn all_for_tests() -> Vec<PolicyKind> {
        POLICIES.iter().map(|s| s.example).collect()
    }
}

/// As a config spells it (`"selective:40:90"`).
impl Serialize for PolicyKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.config_name())
    }
}

/// As a config spells it (`selective:40:90`).
impl fmt::Debug for PolicyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.config_name())
    }
}

/// What `[host] discard = "NAME[:ARGS]"` selects: the policy and the keys its text sets
/// (`fstrim:PERIOD`: fstrim's period).
#[derive(Clone, Debug, PartialEq)]
pub struct ParsedPolicy {
    pub kind: PolicyKind,
    pub params: PolicyParams,
}

impl ParsedPolicy {
    /// The policy with every key at its default.
    pub fn plain(kind: PolicyKind) -> Self {
        ParsedPolicy { kind, params: PolicyParams::default() }
    }
}

/// For policies without arguments: the bare name only.
fn no_args(args: Option<&str>, kind: PolicyKind) -> Result<ParsedPolicy, String> {
    let name = kind.name;
    match args {
        None => Ok(ParsedPolicy::plain(kind)),
        Some(a) => Err(format!("\"{name}:{a}\": {name} takes no arguments")),
    }
}

/// `NAME` or `NAME:ARGS` to the policy, or an error naming what is accepted.
pub fn parse(text: &str) -> Result<ParsedPolicy, String> {
    let (name, args) = match text.split_once(':') {
        Some((n, a)) => (n, Some(a)),
        None => (text, None),
    };
    match POLICIES.iter().find(|s| s.name == name) {
        Some(spec) => (spec.parse)(args),
        None => {
            let names = accepted();
            Err(trimlab_sim::names::unknown("host TRIM policy", text, names.iter().map(|s| s.as_str())))
        }
    }
}

/// Every spelling `parse` takes: each name, and `name:ARGS` for those with arguments.
pub fn accepted() -> Vec<String> {
    let mut out = Vec::new();
    for s in POLICIES {
        out.push(s.name.to_string());
        if let Some(args) = s.args {
            out.push(format!("{}:{args}", s.name));
        }
    }
    out
}

/// How the journal thread issues the TRIMs a commit does itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrimMode {
    /// One TRIM at a time, each waiting for the previous completion.
    Serial,
    /// All submitted back to back, then one wait for the last.
    Batch,
}

/// What a commit does with its transaction's freed blocks.
#[derive(Debug)]
pub struct CommitPlan {
    /// Allocatable right after the commit block.
    pub release: Vec<FreedRun>,
    /// Trimmed by the journal thread before the commit completes, released after.
    pub trim: Vec<FreedRun>,
    pub mode: TrimMode,
}

impl CommitPlan {
    fn release_all(freed: Vec<FreedRun>) -> Self {
        CommitPlan { release: freed, trim: Vec::new(), mode: TrimMode::Serial }
    }
}

/// A background worker's next step.
#[derive(Debug, PartialEq, Eq)]
pub enum WorkerPick {
    /// Trim `run`; if `hold`, the run is available now and must be held while in flight.
    Trim {
        ticket: u64,
        run: Run,
        hold: bool,
    },
    /// ext4's discard worker: trim the free extents inside `run` (available now), the last
    /// one extended to the end of its free run in the group; the file system finds them in
    /// its bitmap and holds them while in flight.
    TrimFreeRuns {
        ticket: u64,
        run: Run,
    },
    /// btrfs async discard with free-space merging: trim the whole available run around
    /// `run` (both sides, inside its group) in pieces of at most `max_blocks`, unless it is
    /// shorter than `min_blocks`; the file system holds it while in flight.
    TrimMerged {
        ticket: u64,
        run: Run,
        max_blocks: u64,
        min_blocks: u64,
    },
    /// Nothing ready before this instant.
    WaitUntil(SimTime),
    Idle,
}

/// Per-policy counters.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PolicyStats {
    pub trim_commands: u64,
    pub trim_bytes: u64,
    /// Blocks whose queued TRIM was cancelled because the allocator reused them.
    pub reuse_cancelled_blocks: u64,
    /// Freed blocks never trimmed by the policy (nodiscard, SeT off, async below min filter).
    pub untrimmed_blocks: u64,
    /// Sum over released blocks of (release - free) time, in block-seconds.
    pub unusable_block_s: f64,
    pub released_blocks: u64,
    /// SeT: commits with TRIM on and off.
    pub commits_trim_on: u64,
    pub commits_trim_off: u64,
}

impl PolicyStats {
    /// Mean time a freed block stayed unusable, in seconds.
    pub fn unusable_mean_s(&self) -> f64 {
        if self.released_blocks == 0 {
            0.0
        } else {
            self.unusable_block_s / self.released_blocks as f64
        }
    }
}

pub trait TrimPolicy {
    fn kind(&self) -> PolicyKind;
    /// Step 4 of a commit: the transaction's freed runs (coalesced) and the file system's
    /// utilization (used / data blocks) after it.
    fn on_commit(&mut self, now: SimTime, freed: Vec<FreedRun>, utilization: f64) -> CommitPlan;
    /// Whether `on_commit` gets the freed runs as ext4 (Linux 6.17+) keeps them for the
    /// discard worker, in its list's order and merged only as its tree merges them
    /// (ext4_free_data.rs), instead of coalesced in block order.
    fn takes_ext4_free_data(&self) -> bool {
        false
    }
    /// Discard workers the policy wants running now.
    fn workers_wanted(&self) -> usize {
        0
    }
    fn next_for_worker(&mut self, _now: SimTime) -> WorkerPick {
        WorkerPick::Idle
    }
    /// A worker's TRIM finished.
    fn trim_done(&mut self, _ticket: u64, _now: SimTime) {}
    /// Runs that became allocatable since the last call (the file system releases them).
    fn drain_releasable(&mut self) -> Vec<FreedRun> {
        Vec::new()
    }
    /// Reuse TRIM: a run of up to `want` queued blocks the allocator may take instead.
    fn reuse(&mut self, _want: u64) -> Option<Run> {
        None
    }
    /// Queued blocks the allocator could take through [`TrimPolicy::reuse`].
    fn reusable_blocks(&self) -> u64 {
        0
    }
    /// The allocator took `run` from available space: drop queued TRIMs that overlap it.
    fn on_allocate(&mut self, _run: Run) {}
    /// FITRIM claims `run`: drop queued TRIMs that overlap it without counting a reuse.
    fn forget(&mut self, _run: Run) {}
    /// btrfs took the block group `range` off its discard lists and queued it again (the
    /// cleaner's btrfs_delete_unused_bgs: btrfs_discard_cancel_work, then
    /// btrfs_discard_queue_work): its queued runs wait the whole reuse delay again from
    /// `now`. Returns whether any was queued (async only).
    fn restart_delay(&mut self, _range: Run, _now: SimTime) -> bool {
        false
    }
    /// btrfs: the block group `range` has nothing in use after a commit
    /// (btrfs_discard_queue_work with `used == 0` -> add_to_discard_unused_list): its queued
    /// runs are due after the shorter unused delay from `now`. Returns whether any was queued.
    fn unused_delay(&mut self, _range: Run, _now: SimTime) -> bool {
        false
    }
    /// btrfs: extents of the block group `range` were queued at a commit
    /// (btrfs_discard_queue_work -> __add_to_discard_list, fs/btrfs/discard.c). A block group
    /// already on a discard list keeps the `discard_eligible_time` it got when it was added
    /// (only a group off every list gets now + the delay), so its newly freed extents are due
    /// with the ones queued before them.
    fn block_group_queued(&mut self, _range: Run) {}
    /// Whether umount gives up the TRIMs still queued (not those in flight) instead of letting
    /// the worker finish them: the kernel's workers that check for a closing file system
    /// (ext4's discard worker, btrfs' async discard).
    fn gives_up_at_umount(&self) -> bool {
        false
    }
    /// umount has begun (see [`TrimPolicy::gives_up_at_umount`]): the queued TRIMs and any a
    /// later commit would queue stay untrimmed (counted in `untrimmed_blocks`) until the
    /// policy is built again at mount. Only for policies whose queued runs are already
    /// available to the allocator, so nothing is left to release.
    fn give_up_queued(&mut self) {}
    /// Runs the policy holds unavailable (queued or in flight).
    fn held(&self) -> Vec<Run>;
    /// Queued runs that are available to the allocator (async).
    fn queued_available(&self) -> Vec<Run> {
        Vec::new()
    }
    /// Periodic FITRIM: (period, minlen bytes).
    fn periodic_fitrim(&self) -> Option<(u64, u64)> {
        None
    }
    fn stats(&self) -> &PolicyStats;
    fn stats_mut(&mut self) -> &mut PolicyStats;
}

pub fn build(kind: PolicyKind, params: &PolicyParams, block_bytes: u64) -> Box<dyn TrimPolicy> {
    (kind.spec().build)(kind, params, block_bytes)
}
