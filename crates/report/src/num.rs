//! The one number formatter used for every printed float (CSV, text, HTML, axis labels).
//!
//! One routine everywhere means a value reads the same in the terminal, the CSV and the plot,
//! and the fixed rules keep files byte-stable: Rust's `{:.N}` / `{:.Ne}` formatting is exact
//! decimal rounding of the binary value, independent of platform and locale.

/// Formats a float with fixed rules:
///
/// * NaN -> `NaN`, +inf -> `inf`, -inf -> `-inf` (what pandas/numpy read back);
/// * zero (also `-0.0`) -> `0`;
/// * `1e-6 <= |x| < 1`: 4 significant digits, e.g. `0.0001235`, `0.5`;
/// * `1 <= |x| < 1e15`: at most 4 decimals, e.g. `3.1416`, `1234567.5`, `42`;
/// * otherwise scientific with 4 significant digits, e.g. `1.235e-7`, `2e15`.
///
/// Trailing zeros (and a trailing `.`) are always removed, so integral values print as integers.
pub fn format_num(x: f64) -> String {
    if x.is_nan() {
        return "NaN".to_owned();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    if x == 0.0 {
        return "0".to_owned();
    }
    let a = x.abs();
    if !(1e-6..1e15).contains(&a) {
        return scientific(x);
    }
    let s = if a >= 1.0 {
        format!("{x:.4}")
    } else {
        // Decade of |x| taken from Rust's exact shortest representation rather than
        // log10(), whose last-bit behaviour is libm-dependent.
        let exp = decimal_exponent(a);
        let decimals = (3 - exp) as usize;
        format!("{x:.decimals$}")
    };
    trim_fraction(&s)
}

/// A float as a reader of the HTML page sees it: [`format_num`] with at most six significant
/// digits at or above 1 (`624222.9991` ms reads `624223`, `726.3864` reads `726.386`; WAF
/// `1.1145` keeps its four decimals). The files (CSV, JSON, summary.txt) keep [`format_num`]'s
/// digits, so nothing a script reads loses precision.
pub fn format_display(x: f64) -> String {
    let a = x.abs();
    if !x.is_finite() || !(1.0..1e15).contains(&a) {
        return format_num(x);
    }
    let decimals = (5 - decimal_exponent(a)).clamp(0, 4) as usize;
    trim_fraction(&format!("{x:.decimals$}"))
}

/// Exponent `e` with `10^e <= a < 10^(e+1)` for finite `a > 0`.
pub(crate) fn decimal_exponent(a: f64) -> i32 {
    let s = format!("{a:e}");
    let (_, e) = s.split_once('e').expect("{:e} always has an exponent");
    e.parse().expect("{:e} exponent is an integer")
}

pub(crate) fn scientific(x: f64) -> String {
    let s = format!("{x:.3e}");
    let (mantissa, exp) = s.split_once('e').expect("{:e} always has an exponent");
    format!("{}e{}", trim_fraction(mantissa), exp)
}

fn trim_fraction(s: &str) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::format_num as f;

    #[test]
    fn special_values() {
        assert_eq!(f(f64::NAN), "NaN");
        assert_eq!(f(f64::INFINITY), "inf");
        assert_eq!(f(f64::NEG_INFINITY), "-inf");
        assert_eq!(f(0.0), "0");
        assert_eq!(f(-0.0), "0");
    }

    #[test]
    fn at_least_one_keeps_four_decimals() {
        assert_eq!(f(1.0), "1");
        assert_eq!(f(42.0), "42");
        assert_eq!(f(-42.5), "-42.5");
        assert_eq!(f(std::f64::consts::PI), "3.1416");
        assert_eq!(f(2.00004), "2");
        assert_eq!(f(2.00006), "2.0001");
        assert_eq!(f(1234567.891), "1234567.891");
        assert_eq!(f(1.99999), "2");
        assert_eq!(f(0.1 + 0.2 + 1.0), "1.3");
        assert_eq!(f(999_999_999_999_999.0), "999999999999999");
    }

    #[test]
    fn below_one_keeps_four_significant_digits() {
        assert_eq!(f(0.5), "0.5");
        assert_eq!(f(0.1 + 0.2), "0.3");
        assert_eq!(f(0.123456), "0.1235");
        assert_eq!(f(0.000123456), "0.0001235");
        assert_eq!(f(-0.000123456), "-0.0001235");
        assert_eq!(f(0.99999), "1");
        assert_eq!(f(0.0099996), "0.01");
        assert_eq!(f(1e-6), "0.000001");
    }

    #[test]
    fn display_keeps_six_significant_digits() {
        use super::format_display as d;
        assert_eq!(d(624222.9991), "624223");
        assert_eq!(d(726.3864), "726.386");
        assert_eq!(d(1.1145), "1.1145");
        assert_eq!(d(-1042808.831), "-1042809");
        assert_eq!(d(0.123456), "0.1235");
        assert_eq!(d(f64::NAN), "NaN");
    }

    #[test]
    fn extremes_are_scientific() {
        assert_eq!(f(1.23456e-7), "1.235e-7");
        assert_eq!(f(-1e-9), "-1e-9");
        assert_eq!(f(1e15), "1e15");
        assert_eq!(f(2.5e20), "2.5e20");
        assert_eq!(f(f64::MAX), "1.798e308");
        assert_eq!(f(f64::MIN_POSITIVE), "2.225e-308");
    }
}
