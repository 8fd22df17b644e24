//! Greedy cleaning (the victim is a block with the fewest valid pages) under uniform random
//! single-page writes: Desnoyers' closed form, Van Houdt's mean-field fixed point, and their
//! common many-pages-per-block limit.

use crate::error::ModelError;
use crate::fifo::lru_waf_of_alpha;
use crate::{check_pages_per_block, check_spare_factor, fifo_waf};

/// Desnoyers' closed-form approximation of greedy WAF for `b` pages per block.
///
/// Desnoyers, "Analytic modeling of SSD write performance", SYSTOR '12, **Eq. 12**:
///
/// ```text
///     A_greedy(alpha, b) = A_LRU(k * alpha) / k,    k = 1 + 1/(2b),    alpha = 1/(1 - sf)
/// ```
///
/// where `A_LRU` is Eq. 4 ([`crate::fifo_waf`]). Written out (as in the author's Mathematica
/// derivation distributed with ftlsim, `greedy-perf.nb`):
///
/// ```text
///     A = 2 alpha b / (alpha + 2b (alpha + W0(-alpha (2b+1)/(2b) * e^(-alpha - alpha/(2b)))))
/// ```
///
/// Derivation in the paper: in steady state a fraction `f_i = c/i` of blocks hold `i` valid
/// pages for `X0 <= i <= b` (a block with `i` valid pages loses one at a rate proportional to
/// `i`), with `sum i f_i = b/alpha` and `sum f_i = 1`; the second sum is replaced by
/// `integral from X0 - 1/2 to b + 1/2 of c/i di` (continuity correction), which yields the
/// Lambert-W form; victims hold `X0 - 1` valid pages, so `A = b/(b - X0 + 1)`.
///
/// The integral replaces the exact harmonic sum, so the formula approximates the exact fixed
/// point [`greedy_waf_mean_field`], and the error grows as blocks shrink and WAF rises
/// (victims then hold few pages and the sum is coarse): -0.07% at sf = 0.07, b = 128; -0.7% at
/// sf = 0.07, b = 32; -1.6% at sf = 0.03, b = 32; -4% at sf = 0.05, b = 16; -11% at sf = 0.03,
/// b = 8. For large `sf` it even drops below 1 (sf = 0.9, b = 32 gives 0.985), outside its
/// domain. Prefer the mean-field model for comparisons; this one is here because it is the
/// published closed form.
pub fn greedy_waf_desnoyers(spare_factor: f64, pages_per_block: u32) -> Result<f64, ModelError> {
    check_spare_factor(spare_factor)?;
    check_pages_per_block(pages_per_block)?;
    let alpha = 1.0 / (1.0 - spare_factor);
    let k = 1.0 + 1.0 / (2.0 * f64::from(pages_per_block));
    Ok(lru_waf_of_alpha(k * alpha) / k)
}

/// Greedy WAF from the exact fixed point of the mean-field model (number of blocks `N -> infinity`,
/// `b` finite).
///
/// Van Houdt, "A mean field model for a class of garbage collection algorithms in flash-based
/// solid state drives", SIGMETRICS '13 (extended: Queueing Systems 77(2), 2014); greedy is the
/// `d -> infinity` member of the d-Choices family analysed there. Bux and Iliadis, "Performance
/// of greedy garbage collection in flash-based solid-state drives", Performance Evaluation 67
/// (2010), reach the same large-system behaviour: victims hold one of two successive valid-page
/// counts. We could not retrieve the papers' text, so the fixed point is derived here and
/// their equation numbers are not quoted. Checks: Desnoyers' Eq. 12 is this fixed point with
/// the harmonic sum replaced by an integral and stays within 0.7% of it for b >= 32,
/// sf >= 0.07; a Monte-Carlo simulation of greedy GC with 4096 blocks agrees within 0.07%
/// (see the crate's tests).
///
/// Model: `x_i` is the fraction of blocks holding `i` valid pages, `rho = 1 - sf` the fraction of
/// physical pages holding valid data. Each host write invalidates one valid page chosen
/// uniformly among `rho N b`, so per host write `x_i i / (rho b)` of the blocks move from `i` to
/// `i - 1`. A cleaned block is refilled (its own valid pages plus host writes) and re-enters at
/// `i = b`. With `r` cleanings per host write, WAF `= b r` (every cleaned block is programmed
/// again in full). Greedy always takes the emptiest block, so at the fixed point states below
/// some `k` are empty, states `k+1 ..= b` are in transit, `x_i = rho b r / i`, and victims hold
/// `k` or `k - 1` valid pages (the blocks that drain from `k` to `k - 1` are taken at once).
/// Conservation of blocks and of valid pages give
///
/// ```text
///     rho b r (H_b - H_k) + x_k = 1
///     rho b r (b - k)     + k x_k = rho b
///  => WAF = b r = (rho b - k) / (rho [(b - k) - k (H_b - H_k)])
/// ```
///
/// with `H_n` the n-th harmonic number and `k` the unique integer with
/// `F(k - 1) < 0 <= F(k)`, `F(j) = (b - j) - rho b (H_b - H_j)`. At `F(k) = 0` this is
/// `b/(b - k)` and at `F(k - 1) = 0` it is `b/(b - k + 1)`, so WAF is continuous in `sf`. If
/// `rho H_b <= 1` fully invalid blocks are always available and WAF = 1.
///
/// Cost: O(log b) with harmonic numbers from their asymptotic series (exact sum below 64), well
/// under a microsecond; deterministic.
pub fn greedy_waf_mean_field(spare_factor: f64, pages_per_block: u32) -> Result<f64, ModelError> {
    check_spare_factor(spare_factor)?;
    check_pages_per_block(pages_per_block)?;
    let rho = 1.0 - spare_factor;
    let b = u64::from(pages_per_block);
    let b_f = b as f64;
    let harmonic_b = harmonic(b);
    if rho * harmonic_b <= 1.0 {
        return Ok(1.0);
    }
    let crossing = |j: u64| (b - j) as f64 - rho * b_f * (harmonic_b - harmonic(j));
    // F(0) < 0 (checked above) and F(j) >= 0 for j >= rho b (F falls from there to F(b) = 0),
    // and F rises on [0, rho b]; bisect for the first j with F(j) >= 0.
    let mut lo = 0_u64; // F(lo) < 0
    let mut hi = ((rho * b_f).ceil() as u64).clamp(1, b); // F(hi) >= 0
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if crossing(mid) >= 0.0 {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    let k = hi;
    let k_f = k as f64;
    let tail = harmonic_b - harmonic(k);
    let waf = (rho * b_f - k_f) / (rho * ((b_f - k_f) - k_f * tail));
    // Rounding in F near its root can only move k by one, where the two neighbouring solutions
    // meet; the bracket keeps the result between the pure states b/(b-k+1) and b/(b-k).
    let lower = b_f / (b_f - k_f + 1.0);
    let upper = b_f / (b_f - k_f);
    Ok(waf.clamp(lower, upper))
}

/// Greedy WAF as pages per block grow without bound.
///
/// The closed form exists and equals LRU/FIFO's, Desnoyers SYSTOR '12 Eq. 4 ([`fifo_waf`]):
///
/// ```text
///     lim_{b -> inf} A_greedy = alpha / (alpha + W0(-alpha e^(-alpha))),   alpha = 1/(1 - sf)
/// ```
///
/// Both greedy models above converge to it: in Eq. 12, `k = 1 + 1/(2b) -> 1`; in the mean-field
/// fixed point, `H_b - H_k -> ln(b/k)`, so the victim's valid fraction `y = k/b` solves
/// `1 - y = rho ln(1/y)`, i.e. `y = e^(-alpha (1 - y))`, the LRU equation. Desnoyers (SYSTOR '12)
/// and Bux and Iliadis (2010, "as the number of pages per block increases, the write
/// amplification increases and approaches an upper bound") report the same: greedy's advantage
/// over FIFO vanishes for uniform traffic as blocks grow.
pub fn greedy_waf_limit(spare_factor: f64) -> Result<f64, ModelError> {
    fifo_waf(spare_factor)
}

/// Euler-Mascheroni constant.
const EULER_GAMMA: f64 = 0.577_215_664_901_532_9;

/// Harmonic number `H_n = sum_{i=1}^n 1/i`; exact summation below 64, the asymptotic series
/// (truncation error below 1/(240 n^8) < 1e-16) above, so large `b` stays O(1).
fn harmonic(n: u64) -> f64 {
    if n < 64 {
        return (1..=n).rev().map(|i| 1.0 / i as f64).sum();
    }
    let x = n as f64;
    let inv2 = 1.0 / (x * x);
    x.ln() + EULER_GAMMA + 0.5 / x - inv2 * (1.0 / 12.0 - inv2 * (1.0 / 120.0 - inv2 / 252.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPARE_FACTORS: [f64; 5] = [0.07, 0.1, 0.2, 0.3, 0.5];
    const BLOCK_SIZES: [u32; 4] = [32, 64, 128, 256];

    /// Slow reference: scan every k and keep the one whose block and page balances hold with
    /// non-negative occupancy and non-negative GC rate at state k.
    fn mean_field_by_scan(spare_factor: f64, b: u32) -> f64 {
        let rho = 1.0 - spare_factor;
        let bf = f64::from(b);
        let h: Vec<f64> = (0..=b)
            .scan(0.0, |acc, i| {
                if i > 0 {
                    *acc += 1.0 / f64::from(i);
                }
                Some(*acc)
            })
            .collect();
        if rho * h[b as usize] <= 1.0 {
            return 1.0;
        }
        for k in 1..b {
            let kf = f64::from(k);
            let tail = h[b as usize] - h[k as usize];
            let denominator = rho * bf * ((bf - kf) - kf * tail);
            if denominator <= 0.0 {
                continue;
            }
            let r = (rho * bf - kf) / denominator;
            let x_k = 1.0 - rho * bf * r * tail;
            let r_k = r - x_k * kf / (rho * bf);
            if x_k >= -1e-12 && r_k >= -1e-12 {
                return bf * r;
            }
        }
        panic!("no fixed point found");
    }

    #[test]
    fn harmonic_series_matches_summation() {
        let mut sum = 0.0;
        for n in 1..=5000_u64 {
            sum += 1.0 / n as f64;
            assert!((harmonic(n) - sum).abs() < 1e-13, "n={n}");
        }
    }

    #[test]
    fn bisection_matches_exhaustive_scan() {
        for i in 1..200 {
            let sf = f64::from(i) / 200.0;
            for &b in &[1_u32, 2, 3, 8, 16, 32, 64, 128, 256] {
                let fast = greedy_waf_mean_field(sf, b).unwrap();
                let slow = mean_field_by_scan(sf, b);
                assert!((fast - slow).abs() <= 1e-9 * slow, "sf={sf} b={b} {fast} {slow}");
            }
        }
    }

    #[test]
    fn desnoyers_is_an_approximation_of_the_mean_field() {
        for &sf in &SPARE_FACTORS {
            for &b in &BLOCK_SIZES {
                let d = greedy_waf_desnoyers(sf, b).unwrap();
                let m = greedy_waf_mean_field(sf, b).unwrap();
                assert!((d - m).abs() < 0.008 * m, "sf={sf} b={b} {d} {m}");
            }
        }
    }

    #[test]
    fn desnoyers_closed_form_matches_the_mathematica_expression() {
        use crate::lambert_w0;
        for &(sf, b) in &[(0.07, 64_u32), (0.2, 32), (0.3, 256)] {
            let alpha = 1.0 / (1.0 - sf);
            let bf = f64::from(b);
            let arg = -alpha * (2.0 * bf + 1.0) / (2.0 * bf) * (-alpha - alpha / (2.0 * bf)).exp();
            let expanded = 2.0 * alpha * bf / (alpha + 2.0 * bf * (alpha + lambert_w0(arg).unwrap()));
            let ours = greedy_waf_desnoyers(sf, b).unwrap();
            assert!((ours - expanded).abs() < 1e-9 * ours, "sf={sf} b={b}");
        }
    }

    #[test]
    fn waf_falls_as_spare_factor_rises() {
        for &b in &[1_u32, 4, 32, 64, 128, 256, 4096] {
            let mut previous = (f64::INFINITY, f64::INFINITY, f64::INFINITY);
            for i in 1..1000 {
                let sf = f64::from(i) / 1000.0;
                let now = (
                    greedy_waf_mean_field(sf, b).unwrap(),
                    greedy_waf_desnoyers(sf, b).unwrap(),
                    fifo_waf(sf).unwrap(),
                );
                assert!(now.0 <= previous.0 + 1e-12, "mean field b={b} sf={sf}");
                assert!(now.1 <= previous.1 + 1e-12, "desnoyers b={b} sf={sf}");
                assert!(now.2 <= previous.2 + 1e-12, "fifo sf={sf}");
                assert!(now.0 >= 1.0);
                previous = now;
            }
        }
    }

    #[test]
    fn greedy_never_exceeds_fifo() {
        for i in 1..1000 {
            let sf = f64::from(i) / 1000.0;
            let fifo = fifo_waf(sf).unwrap();
            for &b in &[1_u32, 2, 8, 32, 64, 128, 256, 1 << 20] {
                assert!(greedy_waf_mean_field(sf, b).unwrap() <= fifo * (1.0 + 1e-12));
                assert!(greedy_waf_desnoyers(sf, b).unwrap() <= fifo * (1.0 + 1e-12));
            }
        }
    }

    #[test]
    fn mean_field_grows_with_block_size_towards_the_limit() {
        for &sf in &SPARE_FACTORS {
            let limit = greedy_waf_limit(sf).unwrap();
            let mut previous = 0.0;
            for shift in 0..=24 {
                let waf = greedy_waf_mean_field(sf, 1 << shift).unwrap();
                assert!(waf >= previous - 1e-12, "sf={sf} b=2^{shift}");
                previous = waf;
            }
            // O(1/b) convergence: at b = 2^24 the gap is far below 1e-5.
            assert!((previous - limit).abs() < 1e-5 * limit, "sf={sf} {previous} {limit}");
            let gap_256 = limit - greedy_waf_mean_field(sf, 256).unwrap();
            let gap_512 = limit - greedy_waf_mean_field(sf, 512).unwrap();
            assert!(gap_512 < 0.6 * gap_256, "sf={sf}: gap should roughly halve");
        }
    }

    #[test]
    fn trivial_cases() {
        // One page per block: a victim is always a fully invalid block.
        assert_eq!(greedy_waf_mean_field(0.1, 1).unwrap(), 1.0);
        // rho H_b <= 1: b = 32 has H_b = 4.058, so sf >= 0.7536 needs no copies.
        assert_eq!(greedy_waf_mean_field(0.76, 32).unwrap(), 1.0);
        assert!(greedy_waf_mean_field(0.75, 32).unwrap() > 1.0);
        // Eq. 12 leaves its domain at large sf: it falls below 1.
        let desnoyers = greedy_waf_desnoyers(0.9, 32).unwrap();
        assert!((desnoyers - 0.985).abs() < 0.001, "{desnoyers}");
    }

    #[test]
    fn continuous_in_spare_factor() {
        for &b in &[8_u32, 32, 256] {
            let mut previous = greedy_waf_mean_field(0.05, b).unwrap();
            for i in 1..=90_000 {
                let sf = 0.05 + f64::from(i) * 1e-5;
                let waf = greedy_waf_mean_field(sf, b).unwrap();
                assert!((previous - waf).abs() < 2e-3 * waf, "b={b} sf={sf}");
                previous = waf;
            }
        }
    }

    #[test]
    fn rejects_bad_inputs() {
        assert_eq!(greedy_waf_mean_field(0.1, 0), Err(ModelError::ZeroPagesPerBlock));
        assert_eq!(greedy_waf_desnoyers(0.1, 0), Err(ModelError::ZeroPagesPerBlock));
        assert!(greedy_waf_mean_field(0.0, 32).is_err());
        assert!(greedy_waf_desnoyers(1.0, 32).is_err());
        assert!(greedy_waf_limit(f64::NAN).is_err());
    }
}
