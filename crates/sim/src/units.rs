//! Quantities that configs spell in human units: byte sizes ("8GiB", "512 KB", 4096) and
//! durations ("5s", "200us", "1ms", "1d").
//!
//! A duration must carry its unit: `idle = 5` or `fstrim:10` once meant 5 or 10 nanoseconds,
//! which nobody who wrote it meant, so a bare number other than 0 is an error that says how to
//! write it. Byte sizes keep bare integers because the keys that take them end in `_bytes`.

use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A size in bytes. Accepts an integer or a string with a unit: B, KiB, MiB, GiB, TiB, PiB
/// (powers of 1024) or KB, MB, GB, TB, PB (powers of 1000); K, M, G, T, P mean the binary units.
/// Case is ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ByteSize(pub u64);

/// A duration in nanoseconds. Accepts a string with ns, us, ms, s, min, h or d, or the bare
/// number 0; any other bare number is refused (its unit would be a guess).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct DurationNs(pub u64);

/// The number in front of a unit: exact when it is an integer, else a decimal fraction.
#[derive(Clone, Copy)]
enum Number {
    Integer(u64),
    Decimal(f64),
}

fn split_number(text: &str) -> Option<(Number, &str)> {
    let text = text.trim();
    let end = text.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_')).unwrap_or(text.len());
    let digits = text[..end].replace('_', "");
    // Integers are read exactly: through an f64, 2^64 - 1 became 2^64 and was taken.
    let number = match digits.parse::<u64>() {
        Ok(n) => Number::Integer(n),
        Err(_) if digits.bytes().all(|b| b.is_ascii_digit()) && !digits.is_empty() => return None,
        Err(_) => Number::Decimal(digits.parse().ok()?),
    };
    Some((number, text[end..].trim()))
}

/// `number` x `multiplier`, when it is a whole number below 2^64.
fn scaled(number: Number, multiplier: u64) -> Option<u64> {
    match number {
        Number::Integer(n) => n.checked_mul(multiplier),
        Number::Decimal(x) => {
            let value = x * multiplier as f64;
            // 2^64 itself is not a u64 (`u64::MAX as f64` rounds up to it).
            ((0.0..18_446_744_073_709_551_616.0).contains(&value) && value.fract() == 0.0)
                .then_some(value as u64)
        }
    }
}

impl ByteSize {
    pub const ACCEPTED: &'static str =
        "an integer number of bytes or a number with a unit, B, KiB, MiB, GiB, TiB, PiB (powers of 1024) or KB, MB, GB, TB, PB (powers of 1000), like \"4KiB\", \"512MiB\", \"8GiB\", \"10GB\"";

    pub fn parse(text: &str) -> Result<ByteSize, String> {
        let bad = || format!("\"{text}\" is not a byte size (expected {})", ByteSize::ACCEPTED);
        let (number, unit) = split_number(text).ok_or_else(bad)?;
        let multiplier: u64 = match unit.to_ascii_lowercase().as_str() {
            "" | "b" => 1,
            "k" | "kib" => 1 << 10,
            "m" | "mib" => 1 << 20,
            "g" | "gib" => 1 << 30,
            "t" | "tib" => 1 << 40,
            "p" | "pib" => 1 << 50,
            "kb" => 1_000,
            "mb" => 1_000_000,
            "gb" => 1_000_000_000,
            "tb" => 1_000_000_000_000,
            "pb" => 1_000_000_000_000_000,
            _ => return Err(bad()),
        };
        scaled(number, multiplier).map(ByteSize).ok_or_else(bad)
    }
}

/// A size in bytes (sector, page, mapping unit) that offsets and lengths are divided by and
/// rounded to. Sizes are powers of two on every preset, so a mask and a shift replace the
/// 64-bit divisions that were a few percent of a device command's and a replayed request's
/// cost; any other size still divides, with the same results.
#[derive(Clone, Copy, Debug)]
pub struct ByteUnit {
    bytes: u64,
    shift: Option<u32>,
}

impl ByteUnit {
    /// `bytes` must be positive. Inline: callers that make one per request paid a call.
    #[inline]
    pub fn new(bytes: u64) -> ByteUnit {
        assert!(bytes > 0, "a byte unit of 0 bytes");
        ByteUnit { bytes, shift: bytes.is_power_of_two().then(|| bytes.trailing_zeros()) }
    }

    #[inline]
    pub fn bytes(self) -> u64 {
        self.bytes
    }

    /// `x / bytes`.
    #[inline]
    pub fn divide(self, x: u64) -> u64 {
        match self.shift {
            Some(shift) => x >> shift,
            None => x / self.bytes,
        }
    }

    /// Whether `bytes` divides `x`.
    #[inline]
    pub fn divides(self, x: u64) -> bool {
        match self.shift {
            Some(_) => x & (self.bytes - 1) == 0,
            None => x.is_multiple_of(self.bytes),
        }
    }

    /// `x` rounded down to a multiple of the unit.
    #[inline]
    pub fn floor(self, x: u64) -> u64 {
        match self.shift {
            Some(_) => x & !(self.bytes - 1),
            None => x / self.bytes * self.bytes,
        }
    }

    /// How many units cover `x` bytes: `x.div_ceil(bytes)`, for every `x`.
    #[inline]
    pub fn count_ceil(self, x: u64) -> u64 {
        self.divide(x) + u64::from(!self.divides(x))
    }
}

impl DurationNs {
    pub const ACCEPTED: &'static str =
        "a string with a unit like \"200us\", \"5ms\", \"2s\", \"1min\", \"1d\", \"1w\" (ns, us, ms, s, min, h, d, w), \"hourly\", \"daily\", \"weekly\", or 0";

    pub fn parse(text: &str) -> Result<DurationNs, String> {
        // systemd's calendar words, as fstrim.timer's `OnCalendar=weekly` writes its period.
        match text.trim() {
            "hourly" => return Ok(DurationNs(3_600_000_000_000)),
            "daily" => return Ok(DurationNs(86_400_000_000_000)),
            "weekly" => return Ok(DurationNs(7 * 86_400_000_000_000)),
            _ => {}
        }
        let bad = || format!("\"{text}\" is not a duration (expected {})", DurationNs::ACCEPTED);
        let (number, unit) = split_number(text).ok_or_else(bad)?;
        let is_zero = match number {
            Number::Integer(n) => n == 0,
            Number::Decimal(x) => x == 0.0,
        };
        let multiplier: u64 = match unit {
            "" if is_zero => 1,
            "" => return Err(DurationNs::no_unit(text)),
            "ns" => 1,
            "us" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "min" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            "d" => 86_400_000_000_000,
            "w" | "week" | "weeks" => 7 * 86_400_000_000_000,
            _ => return Err(bad()),
        };
        let ns = match (scaled(number, multiplier), number) {
            (Some(ns), _) => ns,
            // A whole number past u64 nanoseconds is too long, not malformed.
            (None, Number::Integer(_)) => u64::MAX,
            (None, Number::Decimal(x)) if x * multiplier as f64 >= DurationNs::MAX_NS as f64 => u64::MAX,
            (None, Number::Decimal(_)) => return Err(bad()),
        };
        DurationNs::checked(ns).map_err(|e| format!("\"{text}\" {e}"))
    }

    /// The longest duration a config, grid or flag may give: a year. The simulated clock
    /// counts u64 nanoseconds (584 years); a duration a run adds again and again (a think
    /// time, an idle gap, a period) must stay far below that for the sum to fit.
    pub const MAX_NS: u64 = 365 * 86_400_000_000_000;

    fn checked(ns: u64) -> Result<DurationNs, String> {
        if ns > DurationNs::MAX_NS {
            return Err(
                "is longer than the longest duration trimlab takes, 365d (the simulated clock counts u64 nanoseconds)"
                    .to_string(),
            );
        }
        Ok(DurationNs(ns))
    }

    /// The error for a bare number: say what it would have meant and how to write it.
    fn no_unit(number: impl fmt::Display) -> String {
        format!(
            "{number} has no unit; write it with one, e.g. \"{number}ms\" or \"{number}s\" (accepted units: ns, us, ms, s, min, h, d, w)"
        )
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(u64, &str); 4] =
            [(1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
        for (size, name) in UNITS {
            if self.0 >= size && self.0.is_multiple_of(size) {
                return write!(f, "{}{name}", self.0 / size);
            }
        }
        write!(f, "{}B", self.0)
    }
}

impl fmt::Display for DurationNs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(u64, &str); 3] = [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")];
        for (size, name) in UNITS {
            if self.0 >= size && self.0.is_multiple_of(size) {
                return write!(f, "{}{name}", self.0 / size);
            }
        }
        write!(f, "{}ns", self.0)
    }
}

macro_rules! string_or_integer {
    ($ty:ident) => {
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct Visitor;
                impl<'de> de::Visitor<'de> for Visitor {
                    type Value = $ty;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str($ty::ACCEPTED)
                    }
                    fn visit_u64<E: de::Error>(self, v: u64) -> Result<$ty, E> {
                        $ty::from_integer(v).map_err(E::custom)
                    }
                    fn visit_i64<E: de::Error>(self, v: i64) -> Result<$ty, E> {
                        let v = u64::try_from(v).map_err(|_| {
                            E::custom(format!("{v} is negative (expected {})", $ty::ACCEPTED))
                        })?;
                        $ty::from_integer(v).map_err(E::custom)
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<$ty, E> {
                        $ty::parse(v).map_err(E::custom)
                    }
                }
                d.deserialize_any(Visitor)
            }
        }
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.to_string())
            }
        }
    };
}
string_or_integer!(ByteSize);
string_or_integer!(DurationNs);

impl ByteSize {
    /// A bare integer is a number of bytes (every key that takes one ends in `_bytes`).
    fn from_integer(v: u64) -> Result<ByteSize, String> {
        Ok(ByteSize(v))
    }
}

impl DurationNs {
    /// Only 0 is unambiguous without a unit.
    fn from_integer(v: u64) -> Result<DurationNs, String> {
        if v == 0 {
            Ok(DurationNs(0))
        } else {
            Err(DurationNs::no_unit(v))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shifts and masks give what division gives, at the edges of u64 too, for powers of two
    /// and other sizes.
    #[test]
    fn byte_units_divide_as_division_does() {
        for bytes in [1u64, 512, 4096, 16384, 65536, 1000, 4097] {
            let unit = ByteUnit::new(bytes);
            for x in [0, 1, bytes - 1, bytes, bytes + 1, 3 * bytes, 3 * bytes + 7, u64::MAX - 1, u64::MAX] {
                assert_eq!(unit.divide(x), x / bytes, "{x} / {bytes}");
                assert_eq!(unit.divides(x), x % bytes == 0, "{bytes} divides {x}");
                assert_eq!(unit.floor(x), x / bytes * bytes, "{x} floored to {bytes}");
                assert_eq!(unit.count_ceil(x), x.div_ceil(bytes), "{x} in units of {bytes}");
            }
        }
    }

    #[test]
    fn byte_sizes() {
        assert_eq!(ByteSize::parse("8GiB").unwrap().0, 8 << 30);
        assert_eq!(ByteSize::parse("512 KB").unwrap().0, 512_000);
        assert_eq!(ByteSize::parse("4096").unwrap().0, 4096);
        assert_eq!(ByteSize::parse("1.5MiB").unwrap().0, 3 << 19);
        assert!(ByteSize::parse("8 parsecs").is_err());
        assert!(ByteSize::parse("").is_err());
        assert_eq!(ByteSize(8 << 30).to_string(), "8GiB");
        assert_eq!(ByteSize(1000).to_string(), "1000B");
    }

    #[test]
    fn durations() {
        assert_eq!(DurationNs::parse("200us").unwrap().0, 200_000);
        assert_eq!(DurationNs::parse("5s").unwrap().0, 5_000_000_000);
        assert_eq!(DurationNs::parse("7ns").unwrap().0, 7);
        assert_eq!(DurationNs::parse("0").unwrap().0, 0);
        assert_eq!(DurationNs::parse("2d").unwrap().0, 2 * 86_400_000_000_000);
        assert!(DurationNs::parse("5 fortnights").is_err());
        // fstrim.timer's period, as systemd and fstrim(8) users write it.
        let week = 7 * 86_400_000_000_000;
        for text in ["1w", "1week", "weekly"] {
            assert_eq!(DurationNs::parse(text).unwrap().0, week, "{text}");
        }
        assert_eq!(DurationNs::parse("daily").unwrap().0, 86_400_000_000_000);
        assert_eq!(DurationNs::parse("2weeks").unwrap().0, 2 * week);
        assert!(DurationNs::parse("53w").is_err(), "past a year");
        assert_eq!(DurationNs(1_500_000).to_string(), "1500us");
    }

    /// Issue 26: 2^64 bytes was read through an f64, became u64::MAX and was accepted.
    #[test]
    fn sizes_and_durations_stop_below_two_to_the_64() {
        assert_eq!(ByteSize::parse("18446744073709551615").unwrap().0, u64::MAX, "exact, not via f64");
        assert!(ByteSize::parse("18446744073709551616").is_err());
        assert!(ByteSize::parse("18446744073709551616B").is_err());
        assert!(ByteSize::parse("16777216TiB").is_err(), "2^64 bytes");
        assert!(ByteSize::parse("1e30").is_err());
        assert_eq!(ByteSize::parse("16777215TiB").unwrap().0, 16_777_215 << 40);
        assert_eq!(ByteSize::parse("1PiB").unwrap().0, 1 << 50);
        assert_eq!(ByteSize::parse("2PB").unwrap().0, 2_000_000_000_000_000);
        assert!(ByteSize::parse("16384PiB").is_err(), "2^64 bytes");
        assert!(ByteSize::parse("1EiB").unwrap_err().contains("PiB"), "the error lists the units");
        assert_eq!(ByteSize::parse("1_024 KiB").unwrap().0, 1 << 20);
        assert!(DurationNs::parse("213503d").is_err(), "past u64 nanoseconds");
        let e = DurationNs::parse("366d").unwrap_err();
        assert!(e.contains("\"366d\" is longer than") && e.contains("365d"), "{e}");
        assert_eq!(DurationNs::parse("365d").unwrap().0, DurationNs::MAX_NS);
        assert!(DurationNs::parse("9223372036854775807ns").is_err());
    }

    #[test]
    fn a_bare_duration_is_an_error_that_shows_the_units() {
        let e = DurationNs::parse("10").unwrap_err();
        assert!(e.contains("10 has no unit") && e.contains("\"10ms\"") && e.contains("min, h, d"), "{e}");
        let e = DurationNs::from_integer(5).unwrap_err();
        assert!(e.starts_with("5 has no unit"), "{e}");
        assert_eq!(DurationNs::from_integer(0), Ok(DurationNs(0)));
    }
}
