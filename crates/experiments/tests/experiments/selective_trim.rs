//! Selective TRIM's verdict on the steepest segment: a rise must clear the lower points' noise.

use trimlab_experiments::selective_trim::steepest_at_high_utilization as steepest;

#[test]
fn a_steepest_last_segment_must_rise_clear_of_the_lower_points_noise() {
    // Seed 1's Fig. 1a at scale 1 (issue 25): steepest by slope, but a 0.249 s rise against
    // lower moves of up to 0.176 s is noise.
    let seed1 = [
        (0.0048, 0.0965),
        (-0.0095, -0.0946),
        (0.0009, 0.0089),
        (-0.0176, -0.1764),
        (0.0041, 0.0206),
        (-0.0289, -0.1443),
        (0.0497, 0.2487),
    ];
    assert!(!steepest(&seed1));
    let mut clear = seed1;
    clear[6] = (0.08, 0.40);
    assert!(steepest(&clear));
    // Not the steepest by slope: fails however large its rise.
    let mut shallow = clear;
    shallow[0] = (0.09, 0.10);
    assert!(!steepest(&shallow));
    assert!(!steepest(&[]));
}
