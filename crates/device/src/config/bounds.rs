//! The largest values a config may give: bounds that keep every simulated time representable
//! (issue 26: `i64::MAX` as `firmware_ns` wrapped the clock and panicked the event queue).

use super::ConfigError;

/// The largest cost of one operation a config may give (NAND read, program, erase, command
/// cycles, firmware time, a TRIM's per-command and per-range costs): 1 s. The simulated clock
/// counts u64 nanoseconds (584 years); i64::MAX as `firmware_ns` wrapped it on the second
/// command and panicked the event queue (issue 26). Real values are micro- to milliseconds.
pub const OPERATION_NS_MAX: u64 = 1_000_000_000;
/// The largest per-page or per-bitmap-word TRIM cost: 1 ms (a TRIM may name 2^32 pages).
pub const PER_PAGE_NS_MAX: u64 = 1_000_000;
/// The slowest link a config may give, in picoseconds per byte: 1 us per byte (1 MB/s), so
/// that a transfer of up to 2^40 bytes still takes a representable time.
pub const PS_PER_BYTE_MAX: u64 = 1_000_000;

/// `value` when it is at most `max`, else the error naming `key`.
pub fn at_most(key: &str, value: u64, max: u64, what: &str) -> Result<u64, ConfigError> {
    if value <= max {
        Ok(value)
    } else {
        Err(ConfigError::new(key, value, format!("must be at most {max}: {what}")))
    }
}

/// Checks a cost in nanoseconds of one operation against [`OPERATION_NS_MAX`].
pub(super) fn operation_ns(key: &str, value: u64) -> Result<u64, ConfigError> {
    at_most(key, value, OPERATION_NS_MAX, "1 s per operation, the longest the simulated clock is sized for")
}

/// Checks a link or bus rate against [`PS_PER_BYTE_MAX`].
pub fn ps_per_byte(key: &str, value: u64) -> Result<u64, ConfigError> {
    at_most(
        key,
        value,
        PS_PER_BYTE_MAX,
        "1 us per byte (1 MB/s), the slowest link the simulated clock is sized for",
    )
}

/// `value` when it is above zero, else the error naming `key`.
pub(super) fn positive<T: PartialOrd + Default + ToString + Copy>(
    key: &str,
    value: T,
    accepted: &str,
) -> Result<T, ConfigError> {
    if value > T::default() {
        Ok(value)
    } else {
        Err(ConfigError::new(key, value, accepted))
    }
}
