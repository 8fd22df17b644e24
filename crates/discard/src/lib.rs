//! Host TRIM policies behind one interface: what a journal commit does with the blocks its
//! transaction freed, what background workers trim, and when freed blocks become allocatable.
//!
//! The file system keeps the bitmaps and issues every command; a policy only decides. Blocks a
//! policy holds (queued for TRIM, or being trimmed) are free on disk but not allocatable.
//!
//! Adding a policy: one file here that defines it, its [`PolicyKind`] constant (or, for a
//! policy with arguments, a `const fn` that makes its kinds) and its `SPEC` ([`PolicySpec`]:
//! name, serialized name, help, its `[host]` keys, how it reads `NAME:ARGS`, its constructor),
//! and its module's name in the
//! `registry!` list of [`POLICIES`] (one line).

pub mod ext4_free_data;
mod online;
mod params;
mod run;

pub use params::PolicyParams;
pub use run::{FreedRun, Run};

use serde::ser::SerializeStructVariant;
use serde::{Serialize, Serializer};
use std::fmt;
use trimlab_sim::SimTime;

trimlab_sim::registry! {
    /// Every host TRIM policy, in the order help and docs list them.
    pub const POLICIES: PolicySpec = [
        nodiscard,
        discard,
        discard_batch,
        ext4_discard,
        lazy,
        lazy_reuse,
        selective,
        btrfs_async,
        fstrim,
    ];
}

/// A policy as the registry knows it (nbdkit style: its file defines the `SPEC`).
pub struct PolicySpec {
    /// The name `[host] discard` takes (before any `:ARGS`): its `PolicyKind`'s name.
    pub name: &'static str,
    /// The name serde and `Debug` give its kinds: the variant of the enum `PolicyKind` was
    /// (btrfs-async's is `Async`), which metrics.json and every config hash hold.
    pub variant: &'static str,
    /// The names of the arguments its kinds carry, in order (`low_pct`, `high_pct`): the
    /// fields of the old struct variant, serialized and printed as such; empty for a unit.
    pub fields: &'static [&'static str],
    /// The arguments after `name:` it accepts, as shown in help (`LOW:HIGH`), if any.
    pub args: Option<&'static str>,
    /// One line for `--help` and docs/config.md.
    pub help: &'static str,
    /// The `[host]` keys that tune it (docs/config.md gives their defaults).
    pub keys: &'static [&'static str],
    /// A representative value: the instance the model tests run.
    pub example: PolicyKind,
    /// Reads the text after `name:` (`None` for the bare name).
    pub parse: fn(Option<&str>) -> Result<ParsedPolicy, String>,
    /// The short label reports use (`SeT(40,90)`); `None`: the name.
    pub label: Option<fn(PolicyKind) -> String>,
    pub build: fn(PolicyKind, &PolicyParams, u64) -> Box<dyn TrimPolicy>,
}

/// A host TRIM policy's identity: its name in `[host] discard` and, for a policy with
/// arguments, their values (selective's watermarks). Values come from a policy's file
/// (`PolicyKind::Lazy`, `PolicyKind::selective(40, 90)`) or from [`parse`], so each names a
/// registered policy. The derived equality makes the constants usable as match patterns.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct PolicyKind {
    name: &'static str,
    /// The arguments in the order of the spec's `fields`; the unused ones are 0. Two suffice
    /// for every policy so far; a policy with more widens the array.
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
        self.registered().1
    }

    /// Its spec and that spec's place in [`POLICIES`] (the old enum's variant index in serde).
    fn registered(self) -> (usize, &'static PolicySpec) {
        POLICIES
            .iter()
            .enumerate()
            .find(|(_, s)| s.name == self.name)
            .map(|(i, s)| (i, *s))
            .unwrap_or_else(|| unreachable!("policy {:?} has no spec in POLICIES", self.name))
    }

    /// The arguments its spec names, paired with their field names.
    fn named_args(self) -> impl Iterator<Item = (&'static str, u32)> {
        self.spec().fields.iter().copied().zip(self.args)
    }

    /// `NAME` or `NAME:ARGS` (see [`parse`]); a period in the text (`fstrim:PERIOD`) is
    /// refused here: only `[host] discard` can carry it into the params.
    pub fn parse(text: &str) -> Result<PolicyKind, String> {
        let parsed = parse(text)?;
        match parsed.period_ns {
            None => Ok(parsed.kind),
            Some(_) => Err(format!("\"{text}\": a period is set through [host] discard, not here")),
        }
    }

    /// The name `parse` reads back: the arguments joined by `:` (`selective:LOW:HIGH`).
    pub fn config_name(&self) -> String {
        let args = self.named_args().map(|(_, value)| format!(":{value}"));
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

/// As the enum `PolicyKind` was derived: a unit variant (`"NoDiscard"`) or a struct variant
/// (`{"Selective": {"low_pct": 40, "high_pct": 90}}`), so metrics.json and config hashes stay.
impl Serialize for PolicyKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (index, spec) = self.registered();
        let index = u32::try_from(index).unwrap_or_else(|_| unreachable!("{} policies", POLICIES.len()));
        if spec.fields.is_empty() {
            return s.serialize_unit_variant("PolicyKind", index, spec.variant);
        }
        let mut v = s.serialize_struct_variant("PolicyKind", index, spec.variant, spec.fields.len())?;
        for (field, value) in self.named_args() {
            v.serialize_field(field, &value)?;
        }
        v.end()
    }
}

/// As the derived enum printed it (`NoDiscard`, `Selective { low_pct: 40, high_pct: 90 }`).
impl fmt::Debug for PolicyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let spec = self.spec();
        if spec.fields.is_empty() {
            return f.write_str(spec.variant);
        }
        let mut d = f.debug_struct(spec.variant);
        for (field, value) in self.named_args() {
            d.field(field, &value);
        }
        d.finish()
    }
}

/// What `[host] discard = "NAME[:ARGS]"` selects: the policy and, for a periodic one given
/// a period in its text (`fstrim:PERIOD`), that period.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ParsedPolicy {
    pub kind: PolicyKind,
    pub period_ns: Option<u64>,
}

impl ParsedPolicy {
    fn plain(kind: PolicyKind) -> Self {
        ParsedPolicy { kind, period_ns: None }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_policy_is_unique_helped_and_round_trips() {
        for (i, s) in POLICIES.iter().enumerate() {
            assert!(POLICIES[..i].iter().all(|o| o.name != s.name), "{} registered twice", s.name);
            assert!(POLICIES[..i].iter().all(|o| o.variant != s.variant), "{}: variant taken", s.name);
            assert!(!s.help.trim().is_empty(), "{} has no help", s.name);
            assert_eq!(s.example.name(), s.name, "{}'s example is of its own kind", s.name);
            assert_eq!(s.example.spec().variant, s.variant, "the spec found for its example is itself");
            let text = s.example.config_name();
            assert_eq!(parse(&text), Ok(ParsedPolicy::plain(s.example)), "{text} round-trips");
            assert_eq!(PolicyKind::parse(&text), Ok(s.example));
            assert!(parse(s.name).is_ok(), "the bare name {} parses", s.name);
            assert_eq!(build(s.example, &PolicyParams::default(), 4096).kind(), s.example);
        }
    }

    #[test]
    fn serde_and_debug_keep_the_old_enum_form() {
        // What `#[derive(Serialize, Debug)]` on the enum gave for the policies it had:
        // metrics.json and config hashes. (A policy added later has no old form to keep.)
        let unit = |kind: PolicyKind, variant: &str| (kind, format!("\"{variant}\""), variant.to_string());
        let old = [
            unit(PolicyKind::NoDiscard, "NoDiscard"),
            unit(PolicyKind::Discard, "Discard"),
            unit(PolicyKind::DiscardBatch, "DiscardBatch"),
            unit(PolicyKind::Ext4Discard, "Ext4Discard"),
            unit(PolicyKind::Lazy, "Lazy"),
            unit(PolicyKind::LazyReuse, "LazyReuse"),
            (
                PolicyKind::selective(40, 90),
                r#"{"Selective":{"low_pct":40,"high_pct":90}}"#.to_string(),
                "Selective { low_pct: 40, high_pct: 90 }".to_string(),
            ),
            unit(PolicyKind::Async, "Async"),
            unit(PolicyKind::Fstrim, "Fstrim"),
        ];
        for (kind, json, debug) in old {
            assert_eq!(serde_json::to_string(&kind).unwrap(), json);
            assert_eq!(format!("{kind:?}"), debug);
        }
        let pretty = "Selective {\n    low_pct: 0,\n    high_pct: 100,\n}";
        assert_eq!(format!("{:#?}", PolicyKind::selective(0, 100)), pretty);
    }

    #[test]
    fn arguments_parse_in_their_policy() {
        assert_eq!(parse("selective").unwrap().kind, PolicyKind::selective(40, 90));
        assert_eq!(parse("selective:60:70").unwrap().kind.label(), "SeT(60,70)");
        assert!(parse("selective:70:60").unwrap_err().contains("LOW <= HIGH"));
        assert!(parse("selective:x").unwrap_err().contains("selective:LOW:HIGH"));
        assert_eq!(
            parse("fstrim:2s"),
            Ok(ParsedPolicy { kind: PolicyKind::Fstrim, period_ns: Some(2_000_000_000) })
        );
        assert!(parse("fstrim:2").unwrap_err().contains("needs a unit"));
        assert!(parse("fstrim:0s").unwrap_err().contains("> 0"));
        assert!(parse("lazy:3").unwrap_err().contains("takes no arguments"));
        assert!(PolicyKind::parse("fstrim:1h").is_err(), "the period has nowhere to go there");
    }

    #[test]
    fn a_bad_name_lists_the_policies_and_the_closest() {
        let e = parse("lazy_reuse").unwrap_err();
        assert!(e.contains("did you mean \"lazy-reuse\"?"), "{e}");
        assert!(e.contains("selective:LOW:HIGH") && e.contains("fstrim:PERIOD"), "{e}");
    }

    fn fr(start: u64, len: u64) -> FreedRun {
        FreedRun { run: Run::new(start, len), freed_at: SimTime::ZERO }
    }

    #[test]
    fn selective_follows_watermarks_and_trend() {
        let mut p = build(PolicyKind::selective(40, 80), &PolicyParams::default(), 4096);
        let on = |p: &mut Box<dyn TrimPolicy>, u: f64| {
            !p.on_commit(SimTime::ZERO, vec![fr(0, 1)], u).trim.is_empty()
        };
        assert!(on(&mut p, 0.9), "above high: on");
        assert!(!on(&mut p, 0.3), "below low: off");
        assert!(!on(&mut p, 0.5), "rising between: off");
        assert!(on(&mut p, 0.45), "falling between: on");
        assert!(on(&mut p, 0.45), "flat between: keeps state");
    }

    #[test]
    fn lazy_releases_a_batch_when_all_trimmed_and_reuse_cancels() {
        let mut p = build(PolicyKind::LazyReuse, &PolicyParams::default(), 4096);
        p.on_commit(SimTime::ZERO, vec![fr(0, 4), fr(10, 4)], 0.5);
        assert_eq!(p.reuse(2), Some(Run::new(0, 2)));
        let WorkerPick::Trim { ticket, run, .. } = p.next_for_worker(SimTime::ZERO) else { panic!() };
        assert_eq!(run, Run::new(2, 2));
        p.trim_done(ticket, SimTime(5));
        assert!(p.drain_releasable().is_empty(), "batch not done");
        let WorkerPick::Trim { ticket, .. } = p.next_for_worker(SimTime(5)) else { panic!() };
        p.trim_done(ticket, SimTime(9));
        let rel: Vec<Run> = p.drain_releasable().into_iter().map(|f| f.run).collect();
        assert_eq!(rel, vec![Run::new(2, 2), Run::new(10, 4)]);
        assert_eq!(p.stats().reuse_cancelled_blocks, 2);
    }

    #[test]
    fn async_waits_for_delay_and_prefers_large() {
        let params = PolicyParams { async_delay_ns: 100, ..Default::default() };
        let mut p = build(PolicyKind::Async, &params, 4096);
        // 16 blocks = 64 KiB (medium list), 512 blocks = 2 MiB (large list), 2 blocks ignored.
        let plan = p.on_commit(SimTime(0), vec![fr(0, 16), fr(100, 512), fr(1000, 2)], 0.5);
        assert_eq!(plan.release.len(), 3, "async frees at once");
        assert_eq!(p.next_for_worker(SimTime(10)), WorkerPick::WaitUntil(SimTime(100)));
        let WorkerPick::Trim { run, hold, .. } = p.next_for_worker(SimTime(100)) else { panic!() };
        assert_eq!((run, hold), (Run::new(100, 512), true));
        p.on_allocate(Run::new(4, 4));
        assert_eq!(p.stats().reuse_cancelled_blocks, 4);
        assert_eq!(p.queued_available(), vec![Run::new(8, 8)], "the 4-block head fell below the min filter");
    }

    #[test]
    fn async_restart_delay_requeues_a_block_group() {
        // iops_limit 0: no spacing between discards, to see the delays alone.
        let params = PolicyParams { async_delay_ns: 100, async_iops_limit: 0, ..Default::default() };
        let mut p = build(PolicyKind::Async, &params, 4096);
        p.on_commit(SimTime(0), vec![fr(0, 512), fr(1000, 512)], 0.5);
        // The cleaner requeues the block group [900, 2000) at 50: its run waits until 150.
        assert!(p.restart_delay(Run::new(900, 1100), SimTime(50)));
        assert!(!p.restart_delay(Run::new(5000, 10), SimTime(50)), "nothing queued there");
        let WorkerPick::Trim { run, .. } = p.next_for_worker(SimTime(100)) else { panic!() };
        assert_eq!(run, Run::new(0, 512), "the other block group keeps its time");
        assert_eq!(p.next_for_worker(SimTime(101)), WorkerPick::WaitUntil(SimTime(150)));
    }
}
