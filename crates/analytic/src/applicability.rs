//! Where the greedy models can be trusted to predict a simulated drive, and the spare factor a
//! simulated drive's garbage collector actually sees.
//!
//! The thresholds are not from the papers (they validate on large drives: Van Houdt uses
//! N = 50,000 blocks); they come from this crate's Monte-Carlo calibration
//! (`tests/monte_carlo.rs`, `calibration_table`): a single-frontier greedy FTL with 16..4096
//! blocks of 8..128 pages at sf = 0.03..0.5, compared with [`crate::greedy_waf_mean_field`]
//! evaluated at [`spare_factor_seen_by_gc`].

use crate::error::ModelError;
use crate::{check_pages_per_block, check_spare_factor};

/// Spare factors below this were not calibrated.
const MIN_SPARE_FACTOR: f64 = 0.03;

const SPARE_FACTOR_TOO_SMALL: &str = "spare factor below 0.03: WAF of 11 or more grows like \
    1/(2 sf), too sensitive to idle pages and warm-up to compare within 2% (not calibrated)";

/// Whether the greedy models describe a drive whose GC pools (e.g. planes) hold at least 256
/// blocks, at this spare factor and block size. `Err` carries the reason, phrased to follow
/// "the model does not apply here, because ...". Use [`applicability_for_pool`] when the pool
/// size is known: it accepts smaller blocks in larger pools and checks small pools.
///
/// With 256+ blocks per pool, the calibration puts simulated greedy WAF within 0.9% of
/// [`crate::greedy_waf_mean_field`] (at the GC-visible spare factor) for `b >= 16` and
/// `sf >= 0.03`. Outside:
///
/// * `b < 16`: simulated WAF stays up to 1-5% above the model when the victim's valid count
///   sits near an integer (b = 8, sf = 0.07: +1.8% at 128 blocks, +1.0% at 256), and only
///   pools of 1024+ blocks bring it within 0.2%;
/// * `sf < 0.03`: not calibrated; WAF is 11 or more and grows like `1/(2 sf)`, so a miscount of a
///   few idle pages moves it by percents, and steady state takes many device-writes to reach.
pub fn applicability(spare_factor: f64, pages_per_block: u32) -> Result<(), &'static str> {
    check_inputs(spare_factor, pages_per_block)?;
    if pages_per_block < 16 {
        return Err("fewer than 16 pages per block: greedy WAF of drives with a few hundred \
                    blocks per GC pool stays 1-5% above the mean-field value (Monte-Carlo \
                    calibration)");
    }
    if spare_factor < MIN_SPARE_FACTOR {
        return Err(SPARE_FACTOR_TOO_SMALL);
    }
    Ok(())
}

/// Whether the greedy models describe one GC pool (e.g. one plane) of `blocks_in_pool` blocks,
/// given the spare factor that pool's GC sees ([`spare_factor_seen_by_gc`], not the nominal
/// one). Where this returns `Ok`, the calibration put simulated greedy WAF within 1% of
/// [`crate::greedy_waf_mean_field`] (Desnoyers' Eq. 12 adds its own error, see
/// [`crate::greedy_waf_desnoyers`]).
///
/// Rules, with the calibration result (simulated minus mean-field) that motivates each:
///
/// * fewer than 32 blocks: cleaning one block moves several percent of the space at once; far
///   from the many-blocks limit the models assume;
/// * `b < 8`: not calibrated;
/// * `sf < 0.03`: not calibrated (see [`applicability`]);
/// * `b < 16` with fewer than 1024 blocks: b = 8 runs up to +4.8% with 32-64 blocks, +1.8%
///   with 128, +1.0% with 256, within 0.2% with 1024;
/// * `b < 32` with fewer than 256 blocks: b = 16 runs up to +1.4% with 32-128 blocks, within
///   0.9% with 256;
/// * `sf < 0.05` with fewer than 128 blocks: up to +1.7% at sf = 0.03 with 32-64 blocks.
///
/// For `b >= 32`, `sf >= 0.05` and 32 to 4096 blocks the calibration stayed within 0.4%.
pub fn applicability_for_pool(
    spare_factor: f64,
    pages_per_block: u32,
    blocks_in_pool: u32,
) -> Result<(), &'static str> {
    check_inputs(spare_factor, pages_per_block)?;
    if blocks_in_pool < 32 {
        return Err("fewer than 32 blocks per GC pool: far from the many-blocks limit the \
                    models assume");
    }
    if pages_per_block < 8 {
        return Err("fewer than 8 pages per block: not calibrated");
    }
    if spare_factor < MIN_SPARE_FACTOR {
        return Err(SPARE_FACTOR_TOO_SMALL);
    }
    if pages_per_block < 16 && blocks_in_pool < 1024 {
        return Err("fewer than 16 pages per block in a GC pool of fewer than 1024 blocks: \
                    simulated greedy WAF runs 1-5% above the mean-field value (Monte-Carlo \
                    calibration)");
    }
    if pages_per_block < 32 && blocks_in_pool < 256 {
        return Err("fewer than 32 pages per block in a GC pool of fewer than 256 blocks: \
                    simulated greedy WAF runs up to 1.4% above the mean-field value \
                    (Monte-Carlo calibration)");
    }
    if spare_factor < 0.05 && blocks_in_pool < 128 {
        return Err("spare factor below 0.05 in a GC pool of fewer than 128 blocks: simulated \
                    greedy WAF runs up to 1.7% above the mean-field value (Monte-Carlo \
                    calibration)");
    }
    Ok(())
}

/// The spare factor a garbage collector effectively works with:
///
/// ```text
///     sf_gc = 1 - logical / (physical - idle)
/// ```
///
/// The models assume every physical page is either valid, invalid, or about to be reclaimed.
/// Pages that are erased but parked (a free-block reserve kept by the GC trigger) or not yet
/// programmed in open blocks hold no data and cannot be invalidated, so they are not spare as
/// far as the models are concerned. Count as `idle_pages` the pages erased-and-unprogrammed at
/// a typical instant: the free-block reserve (for a GC that runs until `m` blocks are free and
/// restarts when one is taken, about `m - 1/2` blocks) plus about half of each open block
/// (an open block filled by host writes after a cleaning is on average `b/(2 WAF)` pages short
/// for a single write frontier, half a block for an open block that starts empty).
///
/// The correction matters: WAF's elasticity to the valid-page fraction is about
/// `(1 - sf)/sf`, so at sf = 0.07 three idle blocks in a 2048-block plane (0.15% of the space)
/// move WAF by 2%. Returns an error unless `0 < logical < physical - idle`.
pub fn spare_factor_seen_by_gc(
    logical_pages: u64,
    physical_pages: u64,
    idle_pages: u64,
) -> Result<f64, ModelError> {
    let usable = physical_pages.checked_sub(idle_pages);
    match usable {
        Some(usable) if logical_pages > 0 && logical_pages < usable => {
            Ok(1.0 - logical_pages as f64 / usable as f64)
        }
        _ => Err(ModelError::InvalidPageCounts { logical_pages, physical_pages, reserved_pages: idle_pages }),
    }
}

fn check_inputs(spare_factor: f64, pages_per_block: u32) -> Result<(), &'static str> {
    if check_spare_factor(spare_factor).is_err() {
        return Err("spare factor outside the open interval (0, 1)");
    }
    if check_pages_per_block(pages_per_block).is_err() {
        return Err("zero pages per block");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typical_settings_apply() {
        for &sf in &[0.07, 0.1, 0.2, 0.3, 0.5, 0.9] {
            for &b in &[32_u32, 64, 128, 256, 4096] {
                assert_eq!(applicability(sf, b), Ok(()));
                assert_eq!(applicability_for_pool(sf, b, 2048), Ok(()));
                assert_eq!(applicability_for_pool(sf, b, 64), Ok(()));
            }
            assert_eq!(applicability(sf, 16), Ok(()));
            assert_eq!(applicability_for_pool(sf, 16, 256), Ok(()));
            assert_eq!(applicability_for_pool(sf, 8, 1024), Ok(()));
        }
    }

    #[test]
    fn reasons_are_given() {
        assert!(applicability(0.1, 8).unwrap_err().contains("16 pages"));
        assert!(applicability(0.01, 64).unwrap_err().contains("0.03"));
        assert!(applicability(0.0, 64).unwrap_err().contains("(0, 1)"));
        assert!(applicability(0.1, 0).unwrap_err().contains("zero"));
        assert!(applicability_for_pool(0.1, 64, 16).unwrap_err().contains("32 blocks"));
        assert!(applicability_for_pool(0.1, 4, 4096).unwrap_err().contains("8 pages"));
        assert!(applicability_for_pool(0.02, 64, 4096).unwrap_err().contains("0.03"));
        assert!(applicability_for_pool(0.1, 8, 512).unwrap_err().contains("1024"));
        assert!(applicability_for_pool(0.1, 16, 128).unwrap_err().contains("256"));
        assert!(applicability_for_pool(0.04, 64, 64).unwrap_err().contains("0.05"));
        assert_eq!(applicability_for_pool(0.04, 64, 128), Ok(()));
    }

    #[test]
    fn gc_spare_factor() {
        // 2048 blocks x 128 pages at sf = 0.07 with 3.5 idle blocks.
        let physical = 2048 * 128;
        let logical = (physical as f64 * 0.93).floor() as u64;
        let sf = spare_factor_seen_by_gc(logical, physical, 448).unwrap();
        assert!((sf - (1.0 - logical as f64 / (physical - 448) as f64)).abs() < 1e-15);
        assert!(sf < 0.07 && sf > 0.068);
        assert_eq!(spare_factor_seen_by_gc(10, 100, 0).unwrap(), 0.9);
        assert!(spare_factor_seen_by_gc(90, 100, 10).is_err());
        assert!(spare_factor_seen_by_gc(0, 100, 10).is_err());
        assert!(spare_factor_seen_by_gc(10, 100, 200).is_err());
    }
}
