//! The principal branch W0 of the Lambert W function, in which the LRU/FIFO cleaning model is
//! published in closed form.

use std::f64::consts::E;

/// Principal branch `W0(x)` of the Lambert W function: the solution `w >= -1` of `w * e^w = x`,
/// defined for `x >= -1/e`. Returns `None` below `-1/e` (beyond rounding slack) and for NaN.
///
/// Halley's iteration from a branch-point series start (near `-1/e`, where Newton-type steps
/// lose accuracy because `dw/dx` is infinite) or a logarithmic start (large `x`).
pub fn lambert_w0(x: f64) -> Option<f64> {
    let branch_point = -1.0 / E;
    if x.is_nan() || x < branch_point - 4.0 * f64::EPSILON {
        return None;
    }
    if x == 0.0 {
        return Some(0.0);
    }
    if x == f64::INFINITY {
        return Some(f64::INFINITY);
    }
    // p = sqrt(2 (e x + 1)) measures the distance from the branch point; W0 = -1 + p - p^2/3 + ...
    let p = (2.0 * (E * x + 1.0)).max(0.0).sqrt();
    if p < 1e-3 {
        // The series' first omitted term is O(p^7) < 1e-21: already exact in f64.
        return Some(
            -1.0 + p - p * p / 3.0 + 11.0 / 72.0 * p.powi(3) - 43.0 / 540.0 * p.powi(4)
                + 769.0 / 17280.0 * p.powi(5)
                - 221.0 / 8505.0 * p.powi(6),
        );
    }
    let mut w = if x < -0.25 {
        -1.0 + p - p * p / 3.0 + 11.0 / 72.0 * p.powi(3)
    } else if x < E {
        // ln(1 + x) is within a factor of two of W0 on this range, enough for Halley.
        (1.0 + x).ln() * 0.75
    } else {
        let l1 = x.ln();
        let l2 = l1.ln();
        l1 - l2 + l2 / l1
    };
    for _ in 0..64 {
        let ew = w.exp();
        let f = w * ew - x;
        let wp1 = w + 1.0;
        let step = f / (ew * wp1 - (w + 2.0) * f / (2.0 * wp1));
        w -= step;
        if step.abs() <= 4.0 * f64::EPSILON * w.abs().max(1.0) {
            break;
        }
    }
    Some(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn satisfies_the_defining_equation() {
        for &x in &[-0.367_879, -0.36, -0.3, -0.1, -1e-8, 1e-8, 0.5, 1.0, 2.0, 10.0, 1e6] {
            let w = lambert_w0(x).unwrap();
            assert!(w >= -1.0);
            let residual = (w * w.exp() - x).abs();
            assert!(residual <= 1e-14 * x.abs().max(1e-300) + 1e-300, "x={x} w={w}");
        }
    }

    #[test]
    fn known_values() {
        // Omega constant W0(1) and W0(-1/e) = -1, W0(e) = 1.
        assert!((lambert_w0(1.0).unwrap() - 0.567_143_290_409_783_8).abs() < 1e-15);
        assert!((lambert_w0(-1.0 / E).unwrap() + 1.0).abs() < 1e-7);
        assert!((lambert_w0(E).unwrap() - 1.0).abs() < 1e-15);
    }

    #[test]
    fn continuous_across_the_series_switch() {
        // p = 1e-3 is where the code switches from the series to Halley.
        let x_switch = (1e-6 / 2.0 - 1.0) / E;
        let below = lambert_w0(x_switch - 1e-16).unwrap();
        let above = lambert_w0(x_switch + 1e-16).unwrap();
        assert!((below - above).abs() < 1e-10);
    }

    #[test]
    fn rejects_outside_domain() {
        assert_eq!(lambert_w0(-0.5), None);
        assert_eq!(lambert_w0(f64::NAN), None);
    }
}
