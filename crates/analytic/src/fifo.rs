//! LRU/FIFO cleaning (the victim is the least recently written block) under uniform random
//! single-page writes.

use crate::check_spare_factor;
use crate::error::ModelError;

/// Write amplification of LRU/FIFO cleaning under uniform random single-page writes.
///
/// Desnoyers, "Analytic modeling of SSD write performance", SYSTOR '12, **Eq. 4** (also ACM TOS
/// 10(2), 2014, "Analytic Models of SSD Write Performance"):
///
/// ```text
///     A_LRU = alpha / (alpha + W0(-alpha * e^(-alpha))),    alpha = T/U = 1/(1 - sf)
/// ```
///
/// with `W0` the principal branch of Lambert's W. Xiang and Kurkoski, "An improved analytical
/// expression for write amplification in NAND flash" (arXiv:1110.4245, 2011) reach the same
/// expression for greedy cleaning with large blocks.
///
/// Where it comes from: a block written now is cleaned after the whole device has been
/// rewritten once, i.e. after `T (1 - v)` host writes if `v` is the valid fraction found in
/// cleaned blocks. Each host write invalidates a given valid page with probability `1/U`, so
/// `v = e^(-alpha (1 - v))` and `A = 1/(1 - v)`; the non-trivial root of that equation is the
/// Lambert-W expression above. We solve it as `1 - x = e^(-alpha x)` for the invalid fraction
/// `x = 1 - v` (Newton on a concave function, started right of the root, so it converges
/// monotonically) because `alpha + W0(..)` cancels badly as `sf -> 0`; the unit tests check both
/// forms agree. `b` does not enter the model: the pages of one block are written within about
/// `b` writes of each other and so see the same device cycle (the crate's Monte-Carlo test
/// checks this with 32-page blocks).
pub fn fifo_waf(spare_factor: f64) -> Result<f64, ModelError> {
    check_spare_factor(spare_factor)?;
    Ok(lru_waf_of_alpha(1.0 / (1.0 - spare_factor)))
}

/// `A_LRU(alpha)` for `alpha > 1`; also used by Desnoyers' greedy model at a scaled `alpha`.
pub(crate) fn lru_waf_of_alpha(alpha: f64) -> f64 {
    debug_assert!(alpha > 1.0);
    1.0 / lru_invalid_fraction(alpha)
}

/// Root in (0, 1] of `g(x) = 1 - x - e^(-alpha x)`, written as `-x - expm1(-alpha x)` so that
/// the small root near `alpha = 1` keeps its relative precision.
fn lru_invalid_fraction(alpha: f64) -> f64 {
    let mut x = 1.0_f64;
    for _ in 0..500 {
        let g = -x - (-alpha * x).exp_m1();
        let slope = -1.0 + alpha * (-alpha * x).exp();
        // g is concave with g(1) < 0, so from x = 1 Newton steps move left and never overshoot.
        if slope >= 0.0 {
            break;
        }
        let step = g / slope;
        x -= step;
        if step.abs() <= 2.0 * f64::EPSILON * x {
            break;
        }
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lambert_w0;

    fn lambert_form(spare_factor: f64) -> f64 {
        let alpha = 1.0 / (1.0 - spare_factor);
        alpha / (alpha + lambert_w0(-alpha * (-alpha).exp()).unwrap())
    }

    #[test]
    fn matches_the_published_lambert_w_form() {
        for &sf in &[0.02, 0.05, 0.07, 0.1, 0.2, 0.3, 0.5, 0.8, 0.95] {
            let direct = fifo_waf(sf).unwrap();
            let published = lambert_form(sf);
            assert!((direct - published).abs() <= 1e-11 * published, "sf={sf}");
        }
    }

    #[test]
    fn xiang_kurkoski_overprovisioning_0_3() {
        // arXiv:1110.4245 abstract: at overprovisioning (T-U)/U = 0.3 the Lambert-W expression
        // gives 2.36 (simulated greedy: 2.35). sf = 0.3 / 1.3 in this crate's convention.
        let waf = fifo_waf(0.3 / 1.3).unwrap();
        assert!((waf - 2.36).abs() < 0.005, "{waf}");
    }

    #[test]
    fn solves_the_fixed_point() {
        for &sf in &[0.001, 0.01, 0.1, 0.4, 0.9, 0.999] {
            let alpha = 1.0 / (1.0 - sf);
            let x = 1.0 / fifo_waf(sf).unwrap();
            let residual = 1.0 - x - (-alpha * x).exp();
            assert!(residual.abs() < 1e-15, "sf={sf} residual={residual}");
            assert!(x > 0.0 && x <= 1.0);
        }
    }

    #[test]
    fn small_spare_factor_asymptote() {
        // As sf -> 0, x ~ 2 sf, so A ~ 1/(2 sf) (expand e^(-alpha x) to second order).
        let sf = 1e-6;
        let waf = fifo_waf(sf).unwrap();
        assert!((waf * 2.0 * sf - 1.0).abs() < 1e-5, "{waf}");
    }

    #[test]
    fn rejects_bad_spare_factor() {
        for &sf in &[0.0, 1.0, -0.1, 1.1, f64::NAN, f64::INFINITY] {
            assert!(fifo_waf(sf).is_err());
        }
    }
}
