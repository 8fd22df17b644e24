//! The interface every TRIM engine implements, what every engine counts, and the record by which
//! an engine registers itself ([`EngineSpec`]: its name, help, keys, report figures and
//! constructor, in its own file).

use crate::cost_model::TrimCostModel;
use crate::engine_keys::{EngineConfig, EngineSection, KeyTable};
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

/// Counters every engine keeps; what only some engines count is their own
/// ([`TrimEngine::figures`]).
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
    /// step; for a deferring engine this includes the deferred work it was forced to do.
    pub foreground: TrimSteps,
}

/// One figure of an engine's own report, as its `SPEC` declares it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Figure {
    /// Its key in the report's `trim` section.
    pub key: &'static str,
    /// A value at the time of the report; otherwise a count since the engine was built, of
    /// which a report gives the measured phase's share.
    pub gauge: bool,
    /// Reported by every run, whatever its engine (0 where another engine runs): the delayed
    /// engine's figures, which reports listed for every engine before engines owned their
    /// figures. Any other figure is reported only by its own engine's runs.
    pub every_report: bool,
}

impl Figure {
    pub const fn count(key: &'static str) -> Figure {
        Figure { key, gauge: false, every_report: false }
    }

    pub const fn gauge(key: &'static str) -> Figure {
        Figure { key, gauge: true, every_report: false }
    }

    /// The figure, reported by every run ([`Figure::every_report`]).
    pub const fn in_every_report(self) -> Figure {
        Figure { every_report: true, ..self }
    }
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

    /// The engine's own figures, the keys of its `SPEC.figures` in that order: counts since the
    /// engine was built, gauges as of now.
    fn figures(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }

    /// The value of one of [`TrimEngine::figures`], if the engine reports it.
    fn figure(&self, key: &str) -> Option<u64> {
        self.figures().into_iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// Heap bytes of the engine's modelled controller state (the trim buffer and bitmap of a
    /// deferring engine), for the model's memory report.
    fn heap_bytes(&self) -> usize {
        0
    }

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

/// What any engine may be built from: the device's cost model and geometry, and the engine's
/// own keys (its `[trim.<engine>]` section, completed and checked at resolution; empty for an
/// engine without keys).
pub struct EngineInputs<'a> {
    pub cost: TrimCostModel,
    pub keys: &'a KeyTable,
    pub logical_pages: u32,
    /// Bytes per logical page number: the FTL's mapping unit (not the host's page).
    pub unit_bytes: u64,
}

impl EngineInputs<'_> {
    /// The engine's keys as its own type. Resolution checked them, so a failure here is a bug:
    /// whatever builds an engine passes the keys `EngineSection::complete` accepted.
    pub fn keys<T: EngineConfig>(&self, section: &str) -> T {
        crate::engine_keys::parse(section, self.keys)
            .unwrap_or_else(|e| unreachable!("[{section}] was checked at resolution: {e}"))
    }
}

/// An engine as the registry knows it (nbdkit style: each engine's file defines its `SPEC`, and
/// `crate::ENGINES` lists the specs, one line each). Help, the catalog, docs, config parsing
/// and the report read it.
pub struct EngineSpec {
    pub kind: EngineKind,
    /// One line for `--help` and docs/config.md.
    pub help: &'static str,
    /// The engine's own keys, in the table `[trim.<name>]` ([`EngineSpec::section`]), if it
    /// has any.
    pub keys: Option<EngineSection>,
    /// The figures of the engine's own report ([`TrimEngine::figures`]).
    pub figures: &'static [Figure],
    pub build: fn(EngineInputs<'_>) -> Box<dyn TrimEngine + Send>,
}

impl EngineSpec {
    /// The config table of the engine's own keys: `trim.<name>`.
    pub fn section(&self) -> String {
        format!("trim.{}", self.kind.name())
    }
}
