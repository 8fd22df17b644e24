//! The `[device] rated_*` keys and `daily_host_bytes`: a drive's rated endurance and the daily
//! host volume the lifetime projection assumes, checked into a [`Rating`] (docs/lifetime.md).

use super::device::{DeviceSection, DeviceSpec};
use super::ConfigError;
use crate::lifetime::Rating;
use trimlab_sim::ByteSize;

/// The keys as one layer set them (the complete spec and the user's section share them).
pub(super) struct Keys {
    pe_cycles: Option<u32>,
    tbw: Option<ByteSize>,
    capacity: Option<ByteSize>,
    dwpd: Option<f64>,
    years: Option<f64>,
    daily: Option<ByteSize>,
}

impl Keys {
    pub(super) fn of_spec(d: &DeviceSpec) -> Keys {
        Keys {
            pe_cycles: d.rated_pe_cycles,
            tbw: d.rated_tbw,
            capacity: d.rated_capacity,
            dwpd: d.rated_dwpd,
            years: d.rated_years,
            daily: d.daily_host_bytes,
        }
    }

    pub(super) fn of_section(d: &DeviceSection) -> Keys {
        Keys {
            pe_cycles: d.rated_pe_cycles,
            tbw: d.rated_tbw,
            capacity: d.rated_capacity,
            dwpd: d.rated_dwpd,
            years: d.rated_years,
            daily: d.daily_host_bytes,
        }
    }
}

/// The rating of `keys`, checked: positive values, and, when `complete` (the preset's keys
/// under the user's), TBW with the capacity it is rated for and DWPD with its years.
pub(super) fn rating(keys: &Keys, complete: bool) -> Result<Rating, ConfigError> {
    if complete {
        let pairs = [
            ("device.rated_tbw", keys.tbw.is_some(), "device.rated_capacity", keys.capacity.is_some()),
            ("device.rated_dwpd", keys.dwpd.is_some(), "device.rated_years", keys.years.is_some()),
        ];
        for (a, a_set, b, b_set) in pairs {
            if a_set != b_set {
                let (set, unset) = if a_set { (a, b) } else { (b, a) };
                return Err(ConfigError::new(
                    set,
                    "set",
                    format!("only with {unset}, which the preset does not give"),
                ));
            }
        }
    }
    if keys.pe_cycles == Some(0) {
        return Err(ConfigError::new("device.rated_pe_cycles", 0, "a count of at least 1"));
    }
    for (key, value) in [("device.rated_tbw", keys.tbw), ("device.rated_capacity", keys.capacity)] {
        if value == Some(ByteSize(0)) {
            return Err(ConfigError::new(key, "0", "a size above 0, like \"600TB\""));
        }
    }
    for (key, value) in [("device.rated_dwpd", keys.dwpd), ("device.rated_years", keys.years)] {
        if let Some(v) = value.filter(|v| !(v.is_finite() && *v > 0.0)) {
            return Err(ConfigError::new(key, v, "a number above 0"));
        }
    }
    Ok(Rating {
        pe_cycles: keys.pe_cycles,
        tbw_bytes: keys.tbw.map(|b| b.0),
        tbw_capacity_bytes: keys.capacity.map(|b| b.0),
        dwpd: keys.dwpd,
        years: keys.years,
        daily_host_bytes: keys.daily.map(|b| b.0),
    })
}
