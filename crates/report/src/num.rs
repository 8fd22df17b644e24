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
