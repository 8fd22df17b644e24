//! Claim verdicts: the paper's bands, and a band claim failing when its shape or its band fails.

use trimlab_experiments::bands::{
    band, holds_in_shape, is_band_claim, shape, summary, waf_within, within_15_pp, within_2x,
};

#[test]
fn bands_accept_inside_and_refuse_outside() {
    assert!(within_2x(420.0, 840.0) && within_2x(1680.0, 840.0));
    assert!(!within_2x(342.0, 840.0) && !within_2x(1700.0, 840.0));
    assert!(within_15_pp(-50.0, -60.0) && !within_15_pp(-40.0, -60.0));
    assert!(!within_15_pp(5.0, -5.0), "a change of the other sign is out of band");
    assert!(waf_within(1.15, 1.02) && !waf_within(1.32, 1.02));
}

#[test]
fn a_band_claim_fails_when_either_part_fails() {
    assert!(band("x", "within 2x", true, true, String::new()).holds);
    let v = band("x", "within 2x", true, false, "0.41x".into());
    assert!(!v.holds && v.detail.starts_with("in shape, OUT of band"));
    assert!(is_band_claim(&v.claim));
    assert!(!is_band_claim(&shape("y", true, String::new()).claim));
    assert!(holds_in_shape(&v));
    let all = [v, shape("y", false, String::new()), band("z", "2x", true, true, String::new())];
    assert_eq!(summary(&all), "3 claims: 2 hold in shape; 1 of 2 band claims in band");
}
