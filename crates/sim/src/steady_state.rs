//! Steady state: when a figure measured round after round has stopped moving. Two families of
//! tests over a sliding window of the last rounds, both from the industry's own definitions:
//!
//! - SNIA's Solid State Storage Performance Test Specification (PTS, Enterprise v1.1 and v2.0,
//!   "Steady State" and "Measurement Window" definitions): in a window of 5 rounds, the data
//!   excursion `max(y) − min(y)` is at most 20 % of the window's mean, and the excursion of the
//!   least-squares line across the window (its value at the last round minus its value at the
//!   first, `|slope| × (window − 1)`) is at most 10 % of that mean. Both bounds are inclusive
//!   ("no more than", "within").
//! - fio's `steadystate` criteria (fio's steadystate.c, `steadystate_deviation` and
//!   `steadystate_slope`): `iops` / `bw` / `lat`, the largest |y − mean| in the window, and
//!   `iops_slope` / `bw_slope` / `lat_slope`, the least-squares slope per sample; each either
//!   as a percentage of the window's mean or absolute, and met when strictly below its limit.
//!
//! The rule only judges a series; what a round is and which figures it yields is the caller's.

use std::fmt;

/// What a criterion measures over the window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Test {
    /// SNIA PTS data excursion: `max − min` ≤ limit.
    Range,
    /// SNIA PTS slope excursion: the fitted line's rise across the window, `|slope| × (n − 1)`,
    /// ≤ limit.
    Excursion,
    /// fio `iops`, `bw`, `lat`: the largest `|y − mean|` < limit.
    Deviation,
    /// fio `*_slope`: the least-squares slope per round, `|slope|` < limit.
    Slope,
}

impl Test {
    pub fn name(self) -> &'static str {
        match self {
            Test::Range => "range",
            Test::Excursion => "slope excursion",
            Test::Deviation => "max deviation",
            Test::Slope => "slope",
        }
    }

    /// SNIA's bounds hold with equality ("no more than"); fio compares with `<`.
    fn met(self, value: f64, limit: f64) -> bool {
        match self {
            Test::Range | Test::Excursion => value <= limit,
            Test::Deviation | Test::Slope => value < limit,
        }
    }
}

/// A criterion's bound: a fraction of the window's mean, or an absolute value in the figure's
/// own unit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Limit {
    OfMean(f64),
    Absolute(f64),
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Limit::OfMean(x) => write!(f, "{} % of the mean", trim_float(x * 100.0)),
            Limit::Absolute(x) => write!(f, "{}", trim_float(*x)),
        }
    }
}

fn trim_float(x: f64) -> String {
    let s = format!("{x:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// One test of one tracked figure.
#[derive(Clone, Debug, PartialEq)]
pub struct Criterion {
    /// The figure's name as the caller's rounds carry it (`waf`, `iops`, `bw`, `lat`).
    pub figure: String,
    pub test: Test,
    pub limit: Limit,
}

/// A criterion judged on one window.
#[derive(Clone, Debug, PartialEq)]
pub struct Judged {
    pub criterion: Criterion,
    /// The window's mean of the figure.
    pub mean: f64,
    /// What the test measured, in the limit's terms (a fraction of the mean, or absolute).
    pub value: f64,
    pub met: bool,
}

/// When a series counts as steady: every criterion met on the last `window` rounds, counting
/// only rounds after the first `ramp`.
#[derive(Clone, Debug, PartialEq)]
pub struct SteadyRule {
    pub window: usize,
    pub ramp: usize,
    pub criteria: Vec<Criterion>,
}

/// PTS's window: 5 rounds.
pub const SNIA_WINDOW: usize = 5;
/// PTS's data excursion bound: 20 % of the window's mean.
pub const SNIA_RANGE: f64 = 0.20;
/// PTS's slope excursion bound: 10 % of the window's mean.
pub const SNIA_SLOPE: f64 = 0.10;
/// PTS's round cap: a test that has not reached steady state by round 25 reports so.
pub const SNIA_MAX_ROUNDS: u32 = 25;

impl SteadyRule {
    /// SNIA's rule on each of `figures` with the given window and bounds.
    pub fn snia(figures: &[String], window: usize, range: f64, slope: f64) -> SteadyRule {
        let criteria = figures
            .iter()
            .flat_map(|f| {
                [
                    Criterion { figure: f.clone(), test: Test::Range, limit: Limit::OfMean(range) },
                    Criterion { figure: f.clone(), test: Test::Excursion, limit: Limit::OfMean(slope) },
                ]
            })
            .collect();
        SteadyRule { window, ramp: 0, criteria }
    }

    /// The figures the rule reads, once each, in criterion order.
    pub fn figures(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for c in &self.criteria {
            if !out.contains(&c.figure.as_str()) {
                out.push(&c.figure);
            }
        }
        out
    }

    /// Judges the window that ends at the last round of `series` (one value per round of the
    /// criterion's figure, from `value_of`); `None` while fewer than `ramp + window` rounds ran.
    pub fn judge(&self, rounds: usize, value_of: impl Fn(&str, usize) -> f64) -> Option<Vec<Judged>> {
        if self.window < 2 || rounds < self.ramp + self.window {
            return None;
        }
        let first = rounds - self.window;
        Some(
            self.criteria
                .iter()
                .map(|c| {
                    let ys: Vec<f64> = (first..rounds).map(|r| value_of(&c.figure, r)).collect();
                    judge_one(c, &ys)
                })
                .collect(),
        )
    }

    /// The first round (0-based) at whose end the rule holds, scanning a complete series.
    pub fn first_steady(&self, rounds: usize, value_of: impl Fn(&str, usize) -> f64) -> Option<usize> {
        (1..=rounds)
            .find(|&n| self.judge(n, &value_of).is_some_and(|j| j.iter().all(|x| x.met)))
            .map(|n| n - 1)
    }
}

fn judge_one(c: &Criterion, ys: &[f64]) -> Judged {
    let n = ys.len() as f64;
    let mean = ys.iter().sum::<f64>() / n;
    let raw = match c.test {
        Test::Range => {
            let max = ys.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let min = ys.iter().copied().fold(f64::INFINITY, f64::min);
            max - min
        }
        Test::Excursion => least_squares_slope(ys).abs() * (n - 1.0),
        Test::Deviation => ys.iter().map(|y| (y - mean).abs()).fold(0.0, f64::max),
        Test::Slope => least_squares_slope(ys).abs(),
    };
    let (value, limit) = match c.limit {
        // A window whose mean is 0 (nothing happened) is steady only if nothing moved.
        Limit::OfMean(f) if mean == 0.0 => (if raw == 0.0 { 0.0 } else { f64::INFINITY }, f),
        Limit::OfMean(f) => (raw / mean.abs(), f),
        Limit::Absolute(a) => (raw, a),
    };
    let met = value.is_finite() && c.test.met(value, limit);
    Judged { criterion: c.clone(), mean, value, met }
}

/// The least-squares slope of `ys` against `0, 1, …, n − 1` (equal spacing, as fio assumes).
pub fn least_squares_slope(ys: &[f64]) -> f64 {
    let n = ys.len() as f64;
    if ys.len() < 2 {
        return 0.0;
    }
    let mean_x = (n - 1.0) / 2.0;
    let mean_y = ys.iter().sum::<f64>() / n;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (i, y) in ys.iter().enumerate() {
        let dx = i as f64 - mean_x;
        sxy += dx * (y - mean_y);
        sxx += dx * dx;
    }
    sxy / sxx
}

/// fio's `steadystate` value (`iops:10%`, `bw_slope:1%`, `lat:2000`, ...) as a criterion.
/// Absolute `bw` limits take fio's size suffixes (base 1024, as its `str_to_decimal`).
pub fn fio_criterion(value: &str) -> Result<Criterion, String> {
    const ACCEPTED: &str =
        "iops, iops_slope, bw, bw_slope, lat or lat_slope, then ':' and a limit (10% or an absolute value)";
    let (name, limit) =
        value.split_once(':').ok_or_else(|| format!("{value:?} has no ':LIMIT' (accepted: {ACCEPTED})"))?;
    let name = name.trim().to_ascii_lowercase();
    let (figure, test) = match name.as_str() {
        "iops" => ("iops", Test::Deviation),
        "iops_slope" => ("iops", Test::Slope),
        "bw" => ("bw", Test::Deviation),
        "bw_slope" => ("bw", Test::Slope),
        "lat" => ("lat", Test::Deviation),
        "lat_slope" => ("lat", Test::Slope),
        _ => return Err(format!("criterion {name:?} is not fio's (accepted: {ACCEPTED})")),
    };
    let limit = limit.trim();
    let limit = if let Some(pct) = limit.strip_suffix('%') {
        let p: f64 = pct.trim().parse().map_err(|_| format!("limit {limit:?} is not a percentage"))?;
        Limit::OfMean(p / 100.0)
    } else {
        Limit::Absolute(parse_absolute(limit)?)
    };
    match limit {
        Limit::OfMean(x) | Limit::Absolute(x) if !(x.is_finite() && x > 0.0) => {
            Err(format!("limit {value:?} must be a positive number"))
        }
        _ => Ok(Criterion { figure: figure.into(), test, limit }),
    }
}

fn parse_absolute(s: &str) -> Result<f64, String> {
    let lower = s.to_ascii_lowercase();
    let (digits, scale) = match lower.trim_end_matches(['b', 'i']).chars().last() {
        Some('k') => (&lower[..lower.find('k').unwrap_or(lower.len())], 1024.0),
        Some('m') => (&lower[..lower.find('m').unwrap_or(lower.len())], 1024.0 * 1024.0),
        Some('g') => (&lower[..lower.find('g').unwrap_or(lower.len())], 1024.0 * 1024.0 * 1024.0),
        _ => (lower.as_str(), 1.0),
    };
    let x: f64 = digits.trim().parse().map_err(|_| format!("limit {s:?} is not a number"))?;
    Ok(x * scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series_rule(ys: &[f64]) -> Option<usize> {
        let rule = SteadyRule::snia(&["waf".into()], SNIA_WINDOW, SNIA_RANGE, SNIA_SLOPE);
        rule.first_steady(ys.len(), |_, r| ys[r])
    }

    #[test]
    fn a_converging_series_is_steady_at_the_first_window_that_meets_both_bounds() {
        // WAF climbing as a drive fills, then flat with noise: the window of rounds 4..=8
        // (range 0.15 of ~3.0 = 5 %, slope small) is the first that holds.
        let ys = [1.0, 1.6, 2.2, 2.5, 2.95, 3.05, 2.98, 3.02, 3.1, 3.0, 2.97];
        assert_eq!(series_rule(&ys), Some(8));
        // One round earlier the window 3..=7 (2.5 .. 3.05) still rises: its fitted line
        // climbs 15 % of the mean across the window.
        let rule = SteadyRule::snia(&["waf".into()], 5, 0.2, 0.1);
        let j = rule.judge(8, |_, r| ys[r]).unwrap();
        assert!(!j.iter().all(|x| x.met), "{j:?}");
    }

    #[test]
    fn a_drifting_series_is_never_steady() {
        // 15 % of the mean per round: the slope excursion over 5 rounds is 60 % > 10 %.
        let ys: Vec<f64> = (0..25).map(|i| 100.0 * (1.0 + 0.15 * i as f64)).collect();
        assert_eq!(series_rule(&ys), None);
        // Flat data with a slope of 2.4 % of the mean per round: range 9.6 % passes, the
        // excursion 9.6 % passes; at 3 % per round the excursion (12 %) fails.
        let slope = |s: f64| -> Vec<f64> { (0..5).map(|i| 100.0 + s * (i as f64 - 2.0)).collect() };
        assert_eq!(series_rule(&slope(2.4)), Some(4));
        assert_eq!(series_rule(&slope(3.0)), None);
    }

    #[test]
    fn snia_bounds_are_inclusive_and_fio_bounds_strict() {
        // Range exactly 20 % of the mean: 90, 100, 110, 100, 100 (mean 100, range 20), slope 0.
        let ys = [90.0, 100.0, 110.0, 100.0, 100.0];
        let r = SteadyRule {
            window: 5,
            ramp: 0,
            criteria: vec![Criterion { figure: "x".into(), test: Test::Range, limit: Limit::OfMean(0.2) }],
        };
        assert!(r.judge(5, |_, i| ys[i]).unwrap()[0].met);
        // fio iops:10% on a deviation of exactly 10 % is not met (fio compares with `<`).
        let c = fio_criterion("iops:10%").unwrap();
        let r = SteadyRule { window: 5, ramp: 0, criteria: vec![c] };
        assert!(!r.judge(5, |_, i| ys[i]).unwrap()[0].met);
        let c = fio_criterion("iops:10.5%").unwrap();
        let r = SteadyRule { window: 5, ramp: 0, criteria: vec![c] };
        assert!(r.judge(5, |_, i| ys[i]).unwrap()[0].met);
    }

    #[test]
    fn fio_slope_is_per_sample_relative_to_the_mean() {
        // y = 1000 + 3 i: slope 3 per sample, mean 1006 over 5 samples: 0.298 %.
        let ys: Vec<f64> = (0..5).map(|i| 1000.0 + 3.0 * i as f64).collect();
        let judged = |spec: &str| {
            let r = SteadyRule { window: 5, ramp: 0, criteria: vec![fio_criterion(spec).unwrap()] };
            r.judge(5, |_, i| ys[i]).unwrap()[0].clone()
        };
        assert!(judged("iops_slope:0.3%").met);
        assert!(!judged("iops_slope:0.29%").met);
        assert!(judged("iops_slope:3.5").met);
        assert!(!judged("iops_slope:3").met);
        assert!((least_squares_slope(&ys) - 3.0).abs() < 1e-12);
    }

    #[test]
    fn the_ramp_delays_the_first_window() {
        let ys = [5.0; 10];
        let mut r = SteadyRule::snia(&["waf".into()], 5, 0.2, 0.1);
        assert_eq!(r.first_steady(10, |_, i| ys[i]), Some(4));
        r.ramp = 3;
        assert_eq!(r.first_steady(10, |_, i| ys[i]), Some(7));
    }

    #[test]
    fn fio_values_parse_or_say_what_is_accepted() {
        assert_eq!(fio_criterion("bw:1k").unwrap().limit, Limit::Absolute(1024.0));
        assert_eq!(fio_criterion("IOPS_SLOPE:0.3%").unwrap().test, Test::Slope);
        for bad in ["iops", "wat:1%", "iops:x%", "iops:-1%", "bw:0"] {
            let e = fio_criterion(bad).unwrap_err();
            assert!(!e.is_empty(), "{bad}");
        }
    }

    #[test]
    fn a_window_of_zeros_is_steady_and_a_zero_mean_with_motion_is_not() {
        let r = SteadyRule::snia(&["waf".into()], 5, 0.2, 0.1);
        assert!(r.judge(5, |_, _| 0.0).unwrap().iter().all(|j| j.met));
        let ys = [-1.0, 1.0, -1.0, 1.0, 0.0];
        assert!(!r.judge(5, |_, i| ys[i]).unwrap().iter().all(|j| j.met));
    }
}
