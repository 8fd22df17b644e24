//! Published analytic models of SSD write amplification (WAF) under uniform random single-page
//! writes, optionally mixed with single-page TRIMs, for comparison with simulated WAF.
//!
//! Conventions shared by every function:
//!
//! * `spare_factor` is `sf = (T - U) / T`, with `T` physical and `U` logical pages (Desnoyers'
//!   `S_f`). Desnoyers writes `alpha = T / U = 1 / (1 - sf)`; the mean-field papers write
//!   `rho = U / T = 1 - sf` for the fraction of physical pages that hold valid data.
//! * `pages_per_block` is `b` (Desnoyers' `N_p`).
//! * WAF is NAND pages programmed (host writes plus GC copies) per host page *written*; TRIMs
//!   are not counted in the denominator.
//! * `trim_fraction` is `q`, the fraction of host operations that TRIM one uniformly random
//!   logical page; the rest write one uniformly random logical page.
//!
//! Models (see the README for where each applies):
//!
//! | function | source |
//! |---|---|
//! | [`fifo_waf`] | Desnoyers, SYSTOR '12, Eq. 4 (LRU/FIFO cleaning) |
//! | [`greedy_waf_desnoyers`] | Desnoyers, SYSTOR '12, Eq. 12 (greedy, finite `b`) |
//! | [`greedy_waf_mean_field`] | Van Houdt, SIGMETRICS '13 mean-field model, greedy fixed point |
//! | [`greedy_waf_limit`] | `b -> infinity` limit of both greedy models (equals [`fifo_waf`]) |
//! | [`trim_effective_spare_factor`] | Frankie, Hughes, Kreutz-Delgado, ACM TOS 2013 |
//! | [`greedy_waf_with_trim`] | mean-field greedy at Frankie et al.'s effective spare factor |
//!
//! Every model function validates its inputs and returns [`ModelError`] instead of NaN.
//!
//! Comparing with a simulator: evaluate the greedy models at [`spare_factor_seen_by_gc`] (the
//! nominal spare factor minus pages parked in a free-block reserve or not yet written in open
//! blocks), per GC pool (per plane if each plane collects its own garbage), and ask
//! [`applicability_for_pool`] whether a 2% agreement is to be expected.

mod applicability;
mod error;
mod fifo;
mod greedy;
mod lambert;
mod trim;

pub use applicability::{applicability, applicability_for_pool, spare_factor_seen_by_gc};
pub use error::ModelError;
pub use fifo::fifo_waf;
pub use greedy::{greedy_waf_desnoyers, greedy_waf_limit, greedy_waf_mean_field};
pub use lambert::lambert_w0;
pub use trim::{greedy_waf_with_trim, in_use_fraction, trim_effective_spare_factor, TrimTarget};

/// Rejects a spare factor outside the open interval (0, 1), NaN included.
fn check_spare_factor(spare_factor: f64) -> Result<(), ModelError> {
    if spare_factor > 0.0 && spare_factor < 1.0 {
        Ok(())
    } else {
        Err(ModelError::SpareFactorOutOfRange(spare_factor))
    }
}

fn check_pages_per_block(pages_per_block: u32) -> Result<(), ModelError> {
    if pages_per_block == 0 {
        Err(ModelError::ZeroPagesPerBlock)
    } else {
        Ok(())
    }
}
