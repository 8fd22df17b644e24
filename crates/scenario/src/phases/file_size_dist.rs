//! File sizes of a file system in use: Impressions' default distribution of file size by
//! count (Agrawal, Arpaci-Dusseau and Arpaci-Dusseau, "Generating Realistic Impressions for
//! File-System Benchmarking", FAST 2009, Table 2), fitted to the five-year study of Windows
//! desktop file systems (Agrawal, Bolosky, Douceur and Lorch, "A Five-Year Study of
//! File-System Metadata", FAST 2007): a lognormal body (share α = 0.99994, μ = 9.48,
//! σ = 2.46 of ln bytes: a median of 13 KB) and a Pareto tail (k = 0.91 from Xm = 512 MB).
//!
//! The tail's mean is infinite (k < 1), so a draw is capped at `max_bytes` (the aging
//! profile's cap: a file of a 32nd of the file system, or `file_bytes_max`); the cap is the
//! one change to the published distribution, and [`FileSizeDist::cdf`] includes it.

use rand::Rng;
use trimlab_sim::SimRng;

/// Impressions' Table 2, "File size by count": the body's share of files.
const BODY_SHARE: f64 = 0.99994;
/// The body's μ and σ of ln(bytes) (same table).
const BODY_MU: f64 = 9.48;
const BODY_SIGMA: f64 = 2.46;
/// The tail's shape k and start Xm = 512 MB (same table).
const TAIL_K: f64 = 0.91;
const TAIL_MIN_BYTES: f64 = 512e6;

/// The hybrid lognormal-body, Pareto-tail distribution of file sizes, capped.
#[derive(Clone, Debug, PartialEq)]
pub struct FileSizeDist {
    pub max_bytes: u64,
}

impl FileSizeDist {
    pub fn impressions(max_bytes: u64) -> FileSizeDist {
        FileSizeDist { max_bytes: max_bytes.max(1) }
    }

    /// One file's size in bytes, at least 1, at most `max_bytes`.
    pub fn sample(&self, rng: &mut SimRng) -> u64 {
        let x = if rng.gen_bool(BODY_SHARE) {
            (BODY_MU + BODY_SIGMA * standard_normal(rng)).exp()
        } else {
            // Inverse CDF of the Pareto: Xm / U^(1/k), U in (0, 1].
            let u: f64 = 1.0 - rng.gen::<f64>();
            TAIL_MIN_BYTES / u.powf(1.0 / TAIL_K)
        };
        (x.round() as u64).clamp(1, self.max_bytes)
    }

    /// P(size ≤ x) of what [`FileSizeDist::sample`] draws (rounding to whole bytes aside).
    pub fn cdf(&self, x: f64) -> f64 {
        if x >= self.max_bytes as f64 {
            return 1.0;
        }
        if x <= 0.0 {
            return 0.0;
        }
        let body = normal_cdf((x.ln() - BODY_MU) / BODY_SIGMA);
        let tail = if x < TAIL_MIN_BYTES { 0.0 } else { 1.0 - (TAIL_MIN_BYTES / x).powf(TAIL_K) };
        BODY_SHARE * body + (1.0 - BODY_SHARE) * tail
    }
}

/// Kolmogorov–Smirnov distance between `sizes` (sorted here) and the distribution.
pub fn ks_distance(dist: &FileSizeDist, sizes: &mut [u64]) -> f64 {
    sizes.sort_unstable();
    let n = sizes.len() as f64;
    let mut d: f64 = 0.0;
    let mut i = 0;
    while i < sizes.len() {
        // Equal sizes step the empirical CDF once.
        let j = i + sizes[i..].partition_point(|&s| s == sizes[i]);
        let s = sizes[i] as f64;
        d = d.max((j as f64 / n - dist.cdf(s + 0.5)).abs()).max((i as f64 / n - dist.cdf(s - 0.5)).abs());
        i = j;
    }
    d
}

/// A standard normal draw (Box–Muller; two uniforms per draw keep the stream's use simple).
fn standard_normal(rng: &mut SimRng) -> f64 {
    let u1: f64 = 1.0 - rng.gen::<f64>();
    let u2: f64 = rng.gen();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// Φ(z), from erfc (Numerical Recipes' Chebyshev fit, fractional error below 1.2e-7).
pub fn normal_cdf(z: f64) -> f64 {
    0.5 * erfc(-z / std::f64::consts::SQRT_2)
}

fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.26551223
        + t * (1.00002368
            + t * (0.37409196
                + t * (0.09678418
                    + t * (-0.18628806
                        + t * (0.27886807
                            + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}
