//! The interface every TRIM engine implements, what engines count, and the record by which an
//! engine registers itself ([`EngineSpec`]: its name, help and constructor, in its own file).

use crate::cost_model::TrimCostModel;
use crate::delayed_config::DelayedConfig;
use serde::Serialize;
use trimlab_ftl::{Ftl, Lpn, WriteBuffer};
use trimlab_sim::SimTime;

/// A run of whole logical pages named by a TRIM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageRange {
    pub start: Lpn,
    pub count: u32,
}

impl PageRange {
    pub fn pages(&self) -> impl Iterator<Item = Lpn> {
        (self.start.0..self.start.0 + self.count).map(Lpn)
    }
}

/// The controller state an engine may change: the maps (through the FTL) and the write buffer,
/// at the instant `now` the engine's work starts.
pub struct Controller<'a> {
    pub ftl: &'a mut dyn Ftl,
    pub buffer: &'a mut WriteBuffer,
    pub now: SimTime,
}

/// Foreground controller time of one TRIM, by step of 002.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TrimSteps {
    pub step1_ns: u64,
    pub step2_ns: u64,
    pub step3_ns: u64,
}

impl TrimSteps {
    pub fn total_ns(&self) -> u64 {
        self.step1_ns + self.step2_ns + self.step3_ns
    }

    /// The time spent since `base`, a snapshot of the same cumulative counter.
    pub fn since(&self, base: &TrimSteps) -> TrimSteps {
        TrimSteps {
            step1_ns: self.step1_ns - base.step1_ns,
            step2_ns: self.step2_ns - base.step2_ns,
            step3_ns: self.step3_ns - base.step3_ns,
        }
    }
}

impl std::ops::AddAssign for TrimSteps {
    fn add_assign(&mut self, other: TrimSteps) {
        self.step1_ns += other.step1_ns;
        self.step2_ns += other.step2_ns;
        self.step3_ns += other.step3_ns;
    }
}

/// Counters every engine keeps.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TrimStats {
    pub commands: u64,
    pub ranges: u64,
    pub pages_requested: u64,
    /// Mapped pages whose L2P/P2L entries were invalidated.
    pub pages_unmapped: u64,
    /// Dirty write-buffer pages dropped before they were programmed.
    pub buffer_pages_dropped: u64,
    /// Foreground time (delays the TRIM's completion, a GC, or the commands behind them), per
    /// step; for a deferring engine this includes the forced work counted in `deferred`.
    pub foreground: TrimSteps,
    /// Deferred work (zero for engines that do not defer).
    pub deferred: DeferredStats,
}

/// What a deferring engine did with the work it put off, and where that work ran.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DeferredStats {
    /// Steps 2 and 3 done while the device was idle: no host command waited for them.
    pub idle: TrimSteps,
    /// Steps 2 and 3 forced before a GC (host commands wait; part of `foreground`).
    pub before_gc: TrimSteps,
    /// Steps 2 and 3 forced because the trim buffer was full (part of `foreground`).
    pub buffer_full: TrimSteps,
    pub idle_chunks: u64,
    /// Idle drains that stopped with work left because a host command arrived.
    pub idle_preemptions: u64,
    /// GCs that first applied pending TRIMs.
    pub before_gc_drains: u64,
    /// GCs that met pending TRIMs but had used up the pre-GC budget.
    pub before_gc_capped: u64,
    pub buffer_full_drains: u64,
    /// Pending pages whose deferred steps 2 and 3 ran.
    pub pages_applied: u64,
    /// Pending pages a later host write took back before the drain reached them.
    pub pages_rewritten: u64,
    /// Gauges at the time of the report.
    pub pages_pending: u64,
    pub trim_buffer_entries: u64,
    pub trim_buffer_entries_max: u64,
    pub bitmap_bytes: u64,
    pub bitmap_bytes_max: u64,
}

pub trait TrimEngine {
    fn name(&self) -> &'static str;

    /// Handles one TRIM command's page ranges. Returns the foreground controller time by step;
    /// the device turns that into the command's latency.
    fn trim(&mut self, ranges: &[PageRange], ctl: Controller<'_>) -> TrimSteps;

    /// A host write to `lpn` is about to be accepted (deferring engines forget pending TRIMs of
    /// that page here so they never invalidate newer data).
    fn on_write(&mut self, _lpn: Lpn) {}

    /// Whether a read of `lpn` must return zeros although the maps still hold the page.
    fn reads_as_trimmed(&self, _lpn: Lpn) -> bool {
        false
    }

    /// The device has been idle since `from` and stays idle until `until` at the latest. Returns
    /// the instant deferred work done now ends (`from` if there was none).
    fn on_idle(&mut self, from: SimTime, _until: SimTime, _ctl: Controller<'_>) -> SimTime {
        from
    }

    /// GC is about to run at `now`. Returns when work the engine must do first is finished.
    fn before_gc(&mut self, now: SimTime, _ctl: Controller<'_>) -> SimTime {
        now
    }

    fn stats(&self) -> &TrimStats;

    /// The host's FLUSH (or a FUA command) completed: persist now whatever must survive a
    /// power cut. Engines without volatile state have nothing to do.
    fn on_flush(&mut self) {}

    /// Power is lost: drop the volatile state a real controller would lose, keep what
    /// [`TrimEngine::on_flush`] persisted. Pages that read as trimmed again afterwards (their
    /// unflushed rewrite is lost with the cut) are appended to `retrimmed`.
    fn power_cut(&mut self, _retrimmed: &mut Vec<Lpn>) {}

    /// Engine-internal consistency against the controller state (tests call it).
    fn check(&self, _ftl: &dyn Ftl) -> Result<(), String> {
        Ok(())
    }
}

/// A TRIM engine's identity: its name in `[trim] engine = ...`. Values come from an engine's
/// file (`EngineKind::Delayed`) or from [`EngineKind::parse`], so each names a registered
/// engine ([`crate::ENGINES`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EngineKind(pub(crate) &'static str);

/// What any engine may be built from: the device's cost model and geometry, and the engines'
/// own config tables (only the delayed engine has one today).
pub struct EngineInputs<'a> {
    pub cost: TrimCostModel,
    pub delayed: &'a DelayedConfig,
    pub logical_pages: u32,
    pub page_bytes: u64,
}

/// An engine as the registry knows it (nbdkit style: each engine's file defines its `SPEC`, and
/// `crate::ENGINES` lists the specs, one line each). Help, the catalog, docs and parsing read it.
pub struct EngineSpec {
    pub kind: EngineKind,
    /// One line for `--help` and docs/config.md.
    pub help: &'static str,
    /// The config table holding the engine's own keys, if it has any.
    pub section: Option<&'static str>,
    pub build: fn(EngineInputs<'_>) -> Box<dyn TrimEngine + Send>,
}
