//! A Filebench value: a whole number with Filebench's suffixes (`16k`, `1m`), or a custom
//! random variable (`cvar(type=cvar-gamma,parameters=mean:131072;gamma:1.5)`) drawn anew at
//! each use, as Filebench's `avd_get_int` draws a random variable each time it is read.

use rand_distr::{Distribution, Exp, Gamma, Normal};
use trimlab_sim::SimRng;

/// A number, fixed or drawn.
#[derive(Clone, Debug, PartialEq)]
pub enum Amount {
    Fixed(u64),
    Random(Cvar),
}

/// A `cvar(...)`: a distribution, then Filebench's `round`, `min` and `max` (fb_cvar.c's
/// `get_cvar_value`: rounded to the nearer multiple of `round`, then clamped).
#[derive(Clone, Debug, PartialEq)]
pub struct Cvar {
    dist: Dist,
    min: f64,
    max: f64,
    round: u64,
}

#[derive(Clone, Debug, PartialEq)]
enum Dist {
    /// cvar-gamma: shape `gamma`, scale `mean / gamma` (cvar-gamma.c's `scaledmean`).
    Gamma {
        mean: f64,
        shape: f64,
    },
    Exponential {
        mean: f64,
    },
    Uniform(f64, f64),
    Normal {
        mean: f64,
        sigma: f64,
    },
}

/// The cvar types trimlab draws, for error messages.
pub const CVAR_TYPES: &str = "cvar-gamma (mean, gamma), cvar-exponential (mean), cvar-uniform (lower, upper), cvar-normal (mean, sigma)";

impl Amount {
    /// The value for one use (a random variable draws again).
    pub fn draw(&self, rng: &mut SimRng) -> u64 {
        match self {
            Amount::Fixed(n) => *n,
            Amount::Random(c) => c.draw(rng),
        }
    }

    /// The mean (Filebench's `rnd_dbl_mean` for a random dirwidth).
    pub fn mean(&self) -> f64 {
        match self {
            Amount::Fixed(n) => *n as f64,
            Amount::Random(c) => match &c.dist {
                Dist::Gamma { mean, .. } | Dist::Exponential { mean } | Dist::Normal { mean, .. } => *mean,
                Dist::Uniform(lo, hi) => (lo + hi) / 2.0,
            },
        }
    }

    /// Parses a number (`16k`, `1m`, `60`) or a `cvar(...)`.
    pub fn parse(text: &str) -> Result<Amount, String> {
        let t = text.trim();
        match t.strip_prefix("cvar(").and_then(|r| r.strip_suffix(')')) {
            Some(inner) => Cvar::parse(inner).map(Amount::Random),
            None => number(t).map(Amount::Fixed),
        }
    }
}

impl Cvar {
    fn draw(&self, rng: &mut SimRng) -> u64 {
        // The parameters were checked when the cvar was read, so each constructor succeeds.
        let mut v = match self.dist {
            Dist::Gamma { mean, shape } => Gamma::new(shape, mean / shape).map_or(mean, |d| d.sample(rng)),
            Dist::Exponential { mean } => Exp::new(1.0 / mean).map_or(mean, |d| d.sample(rng)),
            Dist::Uniform(lo, hi) => lo + (hi - lo) * rand::Rng::gen::<f64>(rng),
            Dist::Normal { mean, sigma } => Normal::new(mean, sigma).map_or(mean, |d| d.sample(rng)),
        };
        if self.round > 0 && v >= 0.0 {
            let num = v as u64;
            let lower = num - num % self.round;
            let upper = lower + self.round;
            v = if num - lower > upper - num { upper as f64 } else { lower as f64 };
        }
        v.clamp(self.min, self.max).max(0.0) as u64
    }

    /// `type=cvar-gamma,parameters=mean:131072;gamma:1.5[,min=N][,max=N][,round=N]`.
    fn parse(inner: &str) -> Result<Cvar, String> {
        let (mut kind, mut params, mut min, mut max, mut round) = (None, Vec::new(), 0.0, f64::MAX, 0);
        for item in inner.split(',') {
            let (k, v) = item.split_once('=').ok_or_else(|| format!("cvar: \"{item}\" is not key=value"))?;
            match k.trim() {
                "type" => kind = Some(v.trim().to_string()),
                "parameters" => params = parameters(v)?,
                "min" => min = number(v.trim())? as f64,
                "max" => max = number(v.trim())? as f64,
                "round" => round = number(v.trim())?,
                other => {
                    return Err(format!(
                        "cvar: unknown key \"{other}\" (accepted: type, parameters, min, max, round)"
                    ))
                }
            }
        }
        let kind = kind.ok_or("cvar: needs type=")?;
        let get =
            |name: &str, default: f64| params.iter().find(|(k, _)| k == name).map_or(default, |(_, v)| *v);
        let bad = |e: &dyn std::fmt::Display| format!("cvar {kind}: {e}");
        let dist = match kind.as_str() {
            // cvar-gamma.c's defaults: mean 16384, gamma 1.5.
            "cvar-gamma" => {
                let (mean, shape) = (get("mean", 16384.0), get("gamma", 1.5));
                Gamma::new(shape, mean / shape).map_err(|e| bad(&e))?;
                Dist::Gamma { mean, shape }
            }
            "cvar-exponential" => {
                let mean = get("mean", 1.0);
                Exp::new(1.0 / mean).map_err(|e| bad(&e))?;
                Dist::Exponential { mean }
            }
            "cvar-uniform" => {
                let (lo, hi) = (get("lower", 0.0), get("upper", 1.0));
                if lo > hi {
                    return Err(format!("cvar {kind}: lower {lo} is above upper {hi}"));
                }
                Dist::Uniform(lo, hi)
            }
            "cvar-normal" => {
                let (mean, sigma) = (get("mean", 0.0), get("sigma", 1.0));
                Normal::new(mean, sigma).map_err(|e| bad(&e))?;
                Dist::Normal { mean, sigma }
            }
            other => return Err(format!("cvar type \"{other}\" is not modelled (accepted: {CVAR_TYPES})")),
        };
        Ok(Cvar { dist, min, max, round })
    }
}

/// `mean:131072;gamma:1.5`.
fn parameters(text: &str) -> Result<Vec<(String, f64)>, String> {
    text.split(';')
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            let (k, v) =
                p.split_once(':').ok_or_else(|| format!("cvar parameter \"{p}\" is not name:value"))?;
            let n = v
                .trim()
                .parse::<f64>()
                .map_err(|_| format!("cvar parameter {k}: \"{v}\" is not a number"))?;
            Ok((k.trim().to_string(), n))
        })
        .collect()
}

/// A whole number with Filebench's binary suffixes (`k`, `m`, `g`, `t`, either case).
pub fn number(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (digits, shift) = match t.chars().last().map(|c| c.to_ascii_lowercase()) {
        Some('k') => (&t[..t.len() - 1], 10),
        Some('m') => (&t[..t.len() - 1], 20),
        Some('g') => (&t[..t.len() - 1], 30),
        Some('t') => (&t[..t.len() - 1], 40),
        _ => (t, 0),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1u64 << shift))
        .ok_or_else(|| format!("\"{t}\" is not a whole number (with an optional k, m, g or t suffix)"))
}
