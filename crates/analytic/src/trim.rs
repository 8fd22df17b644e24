//! TRIM under uniform random traffic: the steady-state fraction of logical pages that hold data,
//! the effective spare factor it leaves to garbage collection, and greedy WAF at that spare
//! factor.

use crate::error::ModelError;
use crate::{check_spare_factor, greedy_waf_mean_field};

/// Which logical pages a TRIM may target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrimTarget {
    /// A uniformly random page of the whole logical space; trimming an unmapped page does
    /// nothing. This is trimlab's workload.
    AnyLogicalPage,
    /// A uniformly random page among those currently holding data: our reading of the
    /// "Trim-modified uniform random workload" of Frankie, Hughes and Kreutz-Delgado. Needs
    /// `q < 1/2`.
    InUsePage,
}

/// Steady-state mean fraction `u` of logical pages that hold data when a fraction `q` of host
/// operations are single-page TRIMs and the rest single-page writes, both uniformly random.
///
/// * [`TrimTarget::AnyLogicalPage`]: `u = 1 - q`. Every operation picks one page uniformly; a
///   write maps it, a TRIM unmaps it. Each page is therefore a two-state chain that, whenever
///   touched, becomes mapped with probability `1 - q` regardless of its past, so its stationary
///   probability of being mapped is `1 - q`, and the count of mapped pages is
///   Binomial(`U`, `1 - q`) (relative spread `sqrt(q / ((1 - q) U))`, negligible for large `U`).
///   This is our own derivation for trimlab's workload; it is not in the papers below.
/// * [`TrimTarget::InUsePage`]: `u = (1 - 2q) / (1 - q)`, `q < 1/2`. Frankie, Hughes and
///   Kreutz-Delgado model the in-use count `n` as a Markov birth-death chain ("A mathematical
///   model of the trim command in NAND-flash SSDs", ACM-SE '12; "Analysis of trim commands on
///   overprovisioning and write amplification in solid state drives", ACM TOS 2013,
///   arXiv:1208.1794; T. Frankie, PhD dissertation, UC San Diego 2012, Ch. 3): a write to an
///   unused page (`(1 - q)(U - n)/U`) adds one, a TRIM (`q`) removes one. The steady state is
///   close to Gaussian (dissertation abstract) with its mean where the drift vanishes,
///   `(1 - q)(1 - u) = q`, which is the expression above. We could not retrieve the texts, so
///   the chain's transition rule is as we recall it and the mean is re-derived, not quoted.
///
/// Returns an error unless `0 <= q < 1` (`q < 1/2` for `InUsePage`, where at `q >= 1/2` TRIMs
/// outpace writes and the drive drains to empty).
pub fn in_use_fraction(trim_fraction: f64, target: TrimTarget) -> Result<f64, ModelError> {
    let q = trim_fraction;
    match target {
        TrimTarget::AnyLogicalPage if (0.0..1.0).contains(&q) => Ok(1.0 - q),
        TrimTarget::InUsePage if (0.0..0.5).contains(&q) => Ok((1.0 - 2.0 * q) / (1.0 - q)),
        _ => Err(ModelError::TrimFractionOutOfRange(q)),
    }
}

/// Spare factor that greedy GC effectively sees under trimlab's write/TRIM mix
/// ([`TrimTarget::AnyLogicalPage`]).
///
/// Frankie, Hughes and Kreutz-Delgado (ACM TOS 2013, arXiv:1208.1794; dissertation Sec. 3.5
/// "Effective Overprovisioning") observe that trimmed pages are invalid in flash exactly like spare
/// pages, so only the `u U` in-use pages occupy space:
///
/// ```text
///     s_eff = (T - u U) / T = 1 - u (1 - sf),    u = 1 - q   (see in_use_fraction)
/// ```
pub fn trim_effective_spare_factor(spare_factor: f64, trim_fraction: f64) -> Result<f64, ModelError> {
    check_spare_factor(spare_factor)?;
    let in_use = in_use_fraction(trim_fraction, TrimTarget::AnyLogicalPage)?;
    // Same as 1 - u (1 - sf), arranged so that q = 0 returns sf bit for bit.
    Ok(spare_factor + (1.0 - in_use) * (1.0 - spare_factor))
}

/// Greedy WAF per host page *written* under trimlab's write/TRIM mix: the mean-field greedy
/// model ([`greedy_waf_mean_field`]) evaluated at [`trim_effective_spare_factor`], the
/// substitution Frankie, Hughes and Kreutz-Delgado (ACM TOS 2013, arXiv:1208.1794;
/// dissertation Sec. 4.2) make in the no-TRIM greedy models.
///
/// Why it holds for this workload and why the denominator is host writes: in steady state the
/// `u U` mapped pages are exactly the valid flash pages, each write adds one valid page and
/// each invalidation (an overwrite or a TRIM of a mapped page) removes one, so there is on
/// average exactly one invalidation per host write, and it hits a uniformly random valid page
/// because writes and TRIMs pick logical pages uniformly. That is the no-TRIM model with
/// `rho = u (1 - sf)` valid pages per physical page, measured per host write. WAF per host
/// *operation* would be `(1 - q)` times this value.
pub fn greedy_waf_with_trim(
    spare_factor: f64,
    pages_per_block: u32,
    trim_fraction: f64,
) -> Result<f64, ModelError> {
    let effective = trim_effective_spare_factor(spare_factor, trim_fraction)?;
    greedy_waf_mean_field(effective, pages_per_block)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_use_fractions() {
        assert_eq!(in_use_fraction(0.0, TrimTarget::AnyLogicalPage).unwrap(), 1.0);
        assert!((in_use_fraction(0.25, TrimTarget::AnyLogicalPage).unwrap() - 0.75).abs() < 1e-15);
        assert_eq!(in_use_fraction(0.0, TrimTarget::InUsePage).unwrap(), 1.0);
        // q = 0.1: (1 - 0.2) / 0.9 = 0.888...
        assert!((in_use_fraction(0.1, TrimTarget::InUsePage).unwrap() - 8.0 / 9.0).abs() < 1e-15);
        assert!(in_use_fraction(0.5, TrimTarget::InUsePage).is_err());
        assert!(in_use_fraction(1.0, TrimTarget::AnyLogicalPage).is_err());
        assert!(in_use_fraction(-0.1, TrimTarget::AnyLogicalPage).is_err());
        assert!(in_use_fraction(f64::NAN, TrimTarget::AnyLogicalPage).is_err());
    }

    #[test]
    fn no_trim_changes_nothing() {
        for &sf in &[0.07, 0.2, 0.5] {
            assert_eq!(trim_effective_spare_factor(sf, 0.0).unwrap(), sf);
            assert_eq!(greedy_waf_with_trim(sf, 64, 0.0).unwrap(), greedy_waf_mean_field(sf, 64).unwrap());
        }
    }

    #[test]
    fn effective_spare_factor_values() {
        // sf = 0.1, q = 0.1: 1 - 0.9 * 0.9 = 0.19.
        assert!((trim_effective_spare_factor(0.1, 0.1).unwrap() - 0.19).abs() < 1e-15);
        // q = 0.5 halves the data: 1 - 0.5 * 0.8 = 0.6.
        assert!((trim_effective_spare_factor(0.2, 0.5).unwrap() - 0.6).abs() < 1e-15);
    }

    #[test]
    fn trim_lowers_waf() {
        for &sf in &[0.07, 0.1, 0.2] {
            let mut previous = f64::INFINITY;
            for i in 0..20 {
                let q = f64::from(i) / 20.0;
                let waf = greedy_waf_with_trim(sf, 64, q).unwrap();
                assert!(waf <= previous);
                previous = waf;
            }
        }
    }

    #[test]
    fn frankie_ten_percent_trims_nearly_halve_waf() {
        // Frankie's dissertation (UCSD 2012, abstract): "write amplification drops by almost
        // half over the no-Trim case if just 10% of the requests are Trim instead of Write".
        // With sf = 0.1 (their usual setting, assumed here) and either TRIM target:
        let base = greedy_waf_mean_field(0.1, 64).unwrap();
        for target in [TrimTarget::AnyLogicalPage, TrimTarget::InUsePage] {
            let u = in_use_fraction(0.1, target).unwrap();
            let trimmed = greedy_waf_mean_field(1.0 - u * 0.9, 64).unwrap();
            let ratio = trimmed / base;
            assert!(ratio > 0.45 && ratio < 0.65, "{target:?}: {ratio}");
        }
    }

    #[test]
    fn rejects_bad_inputs() {
        assert!(trim_effective_spare_factor(0.0, 0.1).is_err());
        assert!(trim_effective_spare_factor(0.1, 1.0).is_err());
        assert!(greedy_waf_with_trim(0.1, 0, 0.1).is_err());
        assert!(greedy_waf_with_trim(0.1, 32, -0.5).is_err());
    }
}
