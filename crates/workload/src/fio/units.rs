//! fio's value syntax: sizes (`4k`, `1g`, `20%`), times (`60`, `2m`, `500ms`) and booleans.

use trimlab_sim::DurationNs;

/// A size, or a share of the device (`size=100%`, `offset=20%`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FioSize {
    Bytes(u64),
    Percent(f64),
}

impl FioSize {
    /// The bytes on a device (or the part after an offset) of `of` bytes.
    pub fn bytes(self, of: u64) -> u64 {
        match self {
            FioSize::Bytes(b) => b,
            FioSize::Percent(p) => (of as f64 * p / 100.0) as u64,
        }
    }
}

/// Parses a fio size: a number with an optional k/m/g/t suffix (fio's default `kb_base=1024`
/// makes them all powers of 1024, as do `KiB`...; `KB` is 1000 only with `kb_base=1000`, which
/// we do not support, so we read it as 1024 like fio).
pub fn fio_size(value: &str) -> Option<u64> {
    let v = value.trim();
    let lower = v.to_ascii_lowercase();
    let (digits, mult) = match lower.trim_end_matches(['b', 'i']).char_indices().last() {
        Some((i, 'k')) => (&v[..i], 1u64 << 10),
        Some((i, 'm')) => (&v[..i], 1 << 20),
        Some((i, 'g')) => (&v[..i], 1 << 30),
        Some((i, 't')) => (&v[..i], 1 << 40),
        _ => (lower.trim_end_matches('b'), 1),
    };
    digits.trim().parse::<u64>().ok()?.checked_mul(mult)
}

/// A size or a percentage 1..=100 (`20%`).
pub fn fio_size_or_percent(value: &str) -> Option<FioSize> {
    match value.trim().strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().ok().filter(|p| *p > 0.0 && *p <= 100.0).map(FioSize::Percent),
        None => fio_size(value).map(FioSize::Bytes),
    }
}

/// A fio time: a number in `bare_unit_ns` units (seconds for runtime and ramp_time,
/// microseconds for thinktime), or with fio's suffixes us/usec, ms/msec, s/sec, m/min, h, d.
pub fn fio_time(value: &str, bare_unit_ns: u64) -> Option<u64> {
    let v = value.trim().to_ascii_lowercase();
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (digits, unit) = v.split_at(split);
    let number: u64 = digits.parse().ok()?;
    let ns = match unit {
        "" => bare_unit_ns,
        "us" | "usec" => 1_000,
        "ms" | "msec" => 1_000_000,
        "s" | "sec" => 1_000_000_000,
        "m" | "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "d" => 86_400_000_000_000,
        _ => return None,
    };
    // The bound every config duration has (a year).
    number.checked_mul(ns).filter(|&ns| ns <= DurationNs::MAX_NS)
}

/// fio's booleans: a bare option is true; 0/1, true/false, yes/no, on/off.
pub fn fio_bool(value: Option<&str>) -> Option<bool> {
    match value.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
        None | Some("1" | "true" | "yes" | "on") => Some(true),
        Some("0" | "false" | "no" | "off") => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_times_and_percentages() {
        assert_eq!(fio_size("4k"), Some(4096));
        assert_eq!(fio_size("4K"), Some(4096));
        assert_eq!(fio_size("4KiB"), Some(4096));
        assert_eq!(fio_size("1g"), Some(1 << 30));
        assert_eq!(fio_size("512"), Some(512));
        assert_eq!(fio_size("lots"), None);
        assert_eq!(fio_size("16777216t"), None, "2^64 bytes");
        assert_eq!(fio_size_or_percent("100%"), Some(FioSize::Percent(100.0)));
        assert_eq!(fio_size_or_percent("0%"), None);
        assert_eq!(FioSize::Percent(25.0).bytes(1 << 20), 1 << 18);
        assert_eq!(fio_time("60", 1_000_000_000), Some(60_000_000_000), "bare runtime is seconds");
        assert_eq!(fio_time("50", 1_000), Some(50_000), "bare thinktime is microseconds");
        assert_eq!(fio_time("2m", 1), Some(120_000_000_000), "m is minutes for fio times");
        assert_eq!(fio_time("500ms", 1), Some(500_000_000));
        assert_eq!(fio_time("31536000000000", 1_000), Some(DurationNs::MAX_NS), "365 days in us");
        assert_eq!(fio_time("31536000000001", 1_000), None);
        assert_eq!(fio_time("366d", 1), None);
        assert_eq!(fio_bool(None), Some(true));
        assert_eq!(fio_bool(Some("0")), Some(false));
    }
}
