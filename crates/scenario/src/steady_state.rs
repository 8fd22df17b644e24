//! Rounds until steady state: a phase with `until = "steady"` runs round after round, at most
//! `repeat` rounds (default: PTS's cap of 25), until the figures it tracks meet SNIA PTS's rule
//! over the last rounds (or fio's `steadystate` criterion, for a fio job with `ss=`). Each
//! round's figures come from the device's counters at the round's two ends; metrics.json's
//! `steady_state` holds the per-round table, the window that was judged and the verdict, so a
//! run that did not get there says so instead of ending quietly at its cap.

use crate::stack::{Device, Stack};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use trimlab_device::ConfigError;
use trimlab_device::{CommandKind, Ssd, Traffic};
use trimlab_sim::steady_state::{
    fio_criterion, Judged, SteadyRule, SNIA_MAX_ROUNDS, SNIA_RANGE, SNIA_SLOPE, SNIA_WINDOW,
};
use trimlab_sim::SimTime;
use trimlab_workload::Progress;

/// `until`'s one value.
pub const UNTIL_STEADY: &str = "steady";

/// The figures a round yields, and what each means (docs/config.md, "Steady state").
pub const FIGURES: &[(&str, &str)] = &[
    ("waf", "NAND pages programmed / host pages written in the round"),
    ("iops", "READ, WRITE and TRIM commands completed per simulated second (fio's io_blocks)"),
    ("bw", "bytes read, written and trimmed per simulated second (fio's io_bytes)"),
    ("lat", "mean latency of the round's READ, WRITE and TRIM commands, ns"),
];

/// `[phase.steady]`: which figures the rule tracks and its bounds. Every key is optional.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SteadyKeys {
    /// Figures SNIA's rule is applied to (default `["waf", "iops"]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub track: Option<Vec<String>>,
    /// Rounds in the measurement window (default 5, PTS).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<u32>,
    /// Rounds run before the first window may start (default 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ramp: Option<u32>,
    /// Data excursion bound, a fraction of the window's mean (default 0.20, PTS).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub range: Option<f64>,
    /// Slope excursion bound, a fraction of the window's mean (default 0.10, PTS).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slope: Option<f64>,
    /// fio's criterion (`iops:10%`, `bw_slope:1%`, ...) instead of SNIA's rule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fio: Option<String>,
}

const DEFAULT_TRACK: [&str; 2] = ["waf", "iops"];

impl SteadyKeys {
    /// The rule these keys describe; `at` names a key in errors (`phase[2].steady.window`).
    pub fn rule(&self, at: &dyn Fn(&str) -> String) -> Result<SteadyRule, ConfigError> {
        let window = self.window.unwrap_or(SNIA_WINDOW as u32);
        if window < 2 {
            return Err(ConfigError::new(
                &at("window"),
                window,
                "must be at least 2 rounds (a slope needs two)",
            ));
        }
        let fraction = |key: &str, v: Option<f64>, default: f64| match v {
            Some(x) if !(x.is_finite() && x > 0.0 && x <= 10.0) => {
                Err(ConfigError::new(&at(key), x, "must be a fraction of the mean above 0 (0.20 is 20 %)"))
            }
            v => Ok(v.unwrap_or(default)),
        };
        let (range, slope) =
            (fraction("range", self.range, SNIA_RANGE)?, fraction("slope", self.slope, SNIA_SLOPE)?);
        let mut rule = match &self.fio {
            Some(text) => {
                if self.track.is_some() || self.range.is_some() || self.slope.is_some() {
                    return Err(ConfigError::new(
                        &at("fio"),
                        format!("{text:?}"),
                        "replaces SNIA's rule: give it without track, range and slope",
                    ));
                }
                let c =
                    fio_criterion(text).map_err(|e| ConfigError::new(&at("fio"), format!("{text:?}"), e))?;
                SteadyRule { window: window as usize, ramp: 0, criteria: vec![c] }
            }
            None => {
                let track: Vec<String> = self
                    .track
                    .clone()
                    .unwrap_or_else(|| DEFAULT_TRACK.iter().map(|s| s.to_string()).collect());
                if track.is_empty() {
                    return Err(ConfigError::new(&at("track"), "[]", "needs at least one figure"));
                }
                for f in &track {
                    if !FIGURES.iter().any(|(name, _)| name == f) {
                        return Err(ConfigError::new(
                            &at("track"),
                            format!("{f:?}"),
                            format!("is not a round figure; accepted: {}", figure_names()),
                        ));
                    }
                }
                SteadyRule::snia(&track, window as usize, range, slope)
            }
        };
        rule.ramp = self.ramp.unwrap_or(0) as usize;
        Ok(rule)
    }
}

fn figure_names() -> String {
    FIGURES.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
}

/// The round cap when `until = "steady"` gives no `repeat`.
pub const DEFAULT_MAX_ROUNDS: u32 = SNIA_MAX_ROUNDS;

/// The device's counters at one instant, as the round figures need them.
#[derive(Clone, Copy)]
struct Snapshot {
    at: SimTime,
    traffic: Traffic,
    /// NAND pages programmed and host pages written, in device pages (a mapping unit counts
    /// its pages; a sub-unit write only those it covered), as the device's own WAF counts.
    nand_pages: u64,
    host_pages: u64,
    erases: u64,
    latency_sum_ns: f64,
    latency_count: u64,
}

fn ssd_of(stack: &Stack) -> Option<&Ssd> {
    match stack {
        Stack::Block(b) => Some(&b.ssd),
        Stack::File(f) => match &f.fs().device().device {
            Device::Ssd(s) => Some(s),
            Device::Thin(_) => None,
        },
    }
}

fn snapshot(stack: &Stack) -> Snapshot {
    let (at, traffic) = (stack.now(), stack.traffic());
    let mut s = Snapshot {
        at,
        traffic,
        nand_pages: 0,
        host_pages: 0,
        erases: 0,
        latency_sum_ns: 0.0,
        latency_count: 0,
    };
    if let Some(ssd) = ssd_of(stack) {
        let r = ssd.report(at);
        let per_unit = ssd.config().pages_per_unit();
        s.nand_pages = r.nand_pages_programmed * per_unit;
        s.host_pages = (r.host.pages_written * per_unit).saturating_sub(r.host.unit_pages_filled);
        s.erases = r.nand_blocks_erased;
        for l in [&r.latency.read, &r.latency.write, &r.latency.trim] {
            s.latency_sum_ns += l.mean_ns as f64 * l.count as f64;
            s.latency_count += l.count;
        }
    }
    s
}

/// One round's row of the table.
#[derive(Clone, Debug, Serialize)]
pub struct Round {
    pub round: u32,
    pub start_ns: u64,
    pub end_ns: u64,
    pub host_write_bytes: u64,
    pub nand_write_bytes: u64,
    pub trim_bytes: u64,
    pub erases: u64,
    pub waf: f64,
    pub iops: f64,
    pub bw: f64,
    pub lat: f64,
}

impl Round {
    fn figure(&self, name: &str) -> f64 {
        match name {
            "waf" => self.waf,
            "iops" => self.iops,
            "bw" => self.bw,
            "lat" => self.lat,
            _ => f64::NAN,
        }
    }
}

/// A phase's rounds under a steady-state rule.
pub struct Rounds {
    rule: SteadyRule,
    page_bytes: u64,
    at_start: Snapshot,
    rows: Vec<Round>,
    last: Option<Vec<Judged>>,
    /// The round (0-based) at whose end the rule first held.
    pub steady_at: Option<u32>,
}

impl Rounds {
    /// Starts measuring rounds on `stack`; a figure the stack cannot measure is an error.
    pub fn start(rule: SteadyRule, stack: &Stack) -> Result<Rounds, String> {
        let ssd = ssd_of(stack);
        if ssd.is_none() {
            if let Some(f) = rule.figures().into_iter().find(|f| *f == "waf" || *f == "lat") {
                return Err(format!(
                    "until = \"steady\" tracks {f:?}, which a thin volume does not measure (it has no flash); track iops or bw"
                ));
            }
        }
        let page_bytes = ssd.map_or(4096, |s| s.page_bytes() / s.config().pages_per_unit().max(1));
        Ok(Rounds {
            rule,
            page_bytes,
            at_start: snapshot(stack),
            rows: Vec::new(),
            last: None,
            steady_at: None,
        })
    }

    /// The rounds of a phase with a steady-state rule (`None` for one without).
    pub fn for_rule(rule: Option<SteadyRule>, stack: &Stack) -> Result<Option<Rounds>, String> {
        rule.map(|r| Rounds::start(r, stack)).transpose()
    }

    /// Closes round `round` at the stack's present state and says on `progress` where the
    /// phase (`label`, at most `cap` rounds) stands; true once the rule holds.
    pub fn close(
        &mut self,
        round: u32,
        stack: &Stack,
        (label, cap): (&str, u32),
        progress: &mut dyn Progress,
    ) -> bool {
        let steady = self.close_round(round, stack);
        progress.note(&self.progress_line(label, round, cap));
        steady
    }

    fn close_round(&mut self, round: u32, stack: &Stack) -> bool {
        let now = snapshot(stack);
        let a = &self.at_start;
        let secs = now.at.since(a.at) as f64 / 1e9;
        let d = |k: CommandKind| {
            (
                now.traffic.commands_of(k) - a.traffic.commands_of(k),
                now.traffic.bytes_of(k) - a.traffic.bytes_of(k),
            )
        };
        let (r, w, t) = (d(CommandKind::Read), d(CommandKind::Write), d(CommandKind::Trim));
        let per_sec = |x: u64| if secs > 0.0 { x as f64 / secs } else { 0.0 };
        let host = now.host_pages.saturating_sub(a.host_pages);
        let nand = now.nand_pages.saturating_sub(a.nand_pages);
        let lat_n = now.latency_count.saturating_sub(a.latency_count);
        self.rows.push(Round {
            round,
            start_ns: a.at.ns(),
            end_ns: now.at.ns(),
            host_write_bytes: w.1,
            nand_write_bytes: nand * self.page_bytes,
            trim_bytes: t.1,
            erases: now.erases.saturating_sub(a.erases),
            waf: if host == 0 { 0.0 } else { nand as f64 / host as f64 },
            iops: per_sec(r.0 + w.0 + t.0),
            bw: per_sec(r.1 + w.1 + t.1),
            lat: if lat_n == 0 { 0.0 } else { (now.latency_sum_ns - a.latency_sum_ns) / lat_n as f64 },
        });
        self.at_start = now;
        let rows = &self.rows;
        self.last = self.rule.judge(rows.len(), |f, i| rows[i].figure(f));
        if self.steady_at.is_none() && self.last.as_ref().is_some_and(|j| j.iter().all(|x| x.met)) {
            self.steady_at = Some(round);
        }
        self.steady_at.is_some()
    }

    /// metrics.json's entry for this phase.
    pub fn report(&self, index: usize, label: &str, cap: u32) -> Value {
        let judged: Vec<Value> = self
            .last
            .iter()
            .flatten()
            .map(|j| {
                json!({
                    "figure": j.criterion.figure,
                    "test": j.criterion.test.name(),
                    "limit": j.criterion.limit.to_string(),
                    "mean": j.mean,
                    "value": j.value,
                    "met": j.met,
                })
            })
            .collect();
        json!({
            "phase": index,
            "name": label,
            "rule": if self.rule.criteria.iter().any(|c| matches!(c.test, trimlab_sim::steady_state::Test::Deviation | trimlab_sim::steady_state::Test::Slope)) { "fio" } else { "snia-pts" },
            "window": self.rule.window,
            "ramp": self.rule.ramp,
            "max_rounds": cap,
            "rounds_run": self.rows.len(),
            "verdict": self.verdict(label, cap),
            "reached": self.steady_at.is_some(),
            "steady_round": self.steady_at,
            "window_judged": judged,
            "rounds": self.rows,
        })
    }

    /// A progress line after round `round`: how far the run is and how far from steady.
    pub fn progress_line(&self, label: &str, round: u32, cap: u32) -> String {
        let status = match (&self.steady_at, &self.last) {
            (Some(_), _) => "steady".to_string(),
            (None, None) => "filling the window".to_string(),
            (None, Some(j)) => format!("{} of {} tests met", j.iter().filter(|x| x.met).count(), j.len()),
        };
        format!("{label}: round {} of at most {cap}: {status}", round + 1)
    }

    /// One line for the terminal: where steady state was reached, or that it was not.
    pub fn verdict(&self, label: &str, cap: u32) -> String {
        let tests = |ok_only: bool| -> String {
            self.last
                .iter()
                .flatten()
                .filter(|j| !ok_only || !j.met)
                .map(|j| {
                    let v = match j.criterion.limit {
                        trimlab_sim::steady_state::Limit::OfMean(_) => format!("{:.1} %", j.value * 100.0),
                        trimlab_sim::steady_state::Limit::Absolute(_) => format!("{:.3}", j.value),
                    };
                    format!(
                        "{} {} {v} (limit {})",
                        j.criterion.figure,
                        j.criterion.test.name(),
                        j.criterion.limit
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self.steady_at {
            Some(r) => format!(
                "steady state: {label}: reached at round {} of at most {cap} (window of {}: {})",
                r + 1,
                self.rule.window,
                tests(false)
            ),
            None if self.last.is_none() => format!(
                "steady state: {label}: NOT reached: {} rounds ran, fewer than the ramp and window need ({} + {})",
                self.rows.len(),
                self.rule.ramp,
                self.rule.window
            ),
            None => format!(
                "steady state: {label}: NOT reached in {} rounds (last window: {})",
                self.rows.len(),
                tests(true)
            ),
        }
    }
}
