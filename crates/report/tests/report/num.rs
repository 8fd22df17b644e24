//! The one number format of every report: special values, decimals and significant digits, scientific extremes.

use trimlab_report::format_num as f;

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
    use trimlab_report::format_display as d;
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
