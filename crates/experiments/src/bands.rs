//! How a claim is judged (docs/TARGETS.md "Bands"): in *shape* (ordering or direction as the paper
//! has it) and, where it compares with a paper number, in *band* (within 2x for times, sizes,
//! counts and ratios; within 15 percentage points, same sign, for percentages; within 0.15 for
//! WAF). Each verdict's claim text starts with its kind, so the text report, the HTML page and
//! `--strict` all see it: `[shape]`, `[direction only]` (the paper's numbers cannot all hold
//! together, or give no number), or `[band: ...]`.

use trimlab_report::Verdict;

/// A claim about ordering or direction only.
pub fn shape(claim: &str, holds: bool, detail: String) -> Verdict {
    Verdict { claim: format!("[shape] {claim}"), holds, detail }
}

/// A claim the paper's own numbers do not pin to a value: judged on direction only; `why` says
/// why (the arithmetic, where the paper's numbers contradict each other).
pub fn direction_only(claim: &str, holds: bool, detail: String, why: &str) -> Verdict {
    Verdict { claim: format!("[direction only: {why}] {claim}"), holds, detail }
}

/// A claim that must hold in shape and whose numbers must each lie in `band`.
pub fn band(claim: &str, band_text: &str, shape_holds: bool, in_band: bool, detail: String) -> Verdict {
    let verdict = match (shape_holds, in_band) {
        (true, true) => "in shape and in band",
        (true, false) => "in shape, OUT of band",
        (false, true) => "OUT of shape, in band",
        (false, false) => "OUT of shape and band",
    };
    Verdict {
        claim: format!("[band: {band_text}] {claim}"),
        holds: shape_holds && in_band,
        detail: format!("{verdict}: {detail}"),
    }
}

/// Times, sizes, counts and ratios: 0.5x to 2x of the paper's value.
pub fn within_2x(measured: f64, paper: f64) -> bool {
    paper > 0.0 && measured >= 0.5 * paper && measured <= 2.0 * paper
}

/// Reductions and increases in percent: within 15 percentage points and of the same sign.
pub fn within_15_pp(measured_pct: f64, paper_pct: f64) -> bool {
    (measured_pct - paper_pct).abs() <= 15.0 && measured_pct.signum() == paper_pct.signum()
}

/// WAF: within 0.15 absolute.
pub fn waf_within(measured: f64, paper: f64) -> bool {
    (measured - paper).abs() <= 0.15
}

/// A claim's kind, from its text: what the per-seed summary counts.
pub fn is_band_claim(claim: &str) -> bool {
    claim.starts_with("[band")
}

/// Whether a verdict holds in shape: a band claim says so at the start of its detail.
pub fn holds_in_shape(v: &Verdict) -> bool {
    if is_band_claim(&v.claim) {
        v.detail.starts_with("in shape")
    } else {
        v.holds
    }
}

/// "N claims: S hold in shape; B of K band claims in band", for one experiment and seed.
pub fn summary(verdicts: &[Verdict]) -> String {
    let shape = verdicts.iter().filter(|v| holds_in_shape(v)).count();
    let band_claims: Vec<_> = verdicts.iter().filter(|v| is_band_claim(&v.claim)).collect();
    let in_band = band_claims.iter().filter(|v| v.holds).count();
    format!(
        "{} claims: {shape} hold in shape; {in_band} of {} band claims in band",
        verdicts.len(),
        band_claims.len()
    )
}
