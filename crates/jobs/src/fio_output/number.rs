//! fio's number formatting and latency arithmetic, ported so the figures read as fio's:
//! num2str (lib/num2str.c), the percentile values (stat.c calc_clat_percentiles, here from
//! the run's histogram), the latency distribution buckets (io_u.c io_u_mark_latency) and the
//! mean / standard deviation fio prints (stat.c calc_lat).

use trimlab_device::LatencyHistogram;

/// num2str's units (N2S_NONE, N2S_BYTE, N2S_BYTEPERSEC).
#[derive(Clone, Copy)]
pub enum Unit {
    None,
    Byte,
    BytePerSec,
}

/// fio's `num2str(num, maxlen, 1, pow2, unit)`: at most `maxlen` digits, scaled by 1000 or
/// 1024 with an SI or IEC prefix, decimals filling what the digits leave, with its carry.
pub fn num2str(num: u64, maxlen: usize, pow2: bool, unit: Unit) -> String {
    const SI: [&str; 7] = ["", "k", "M", "G", "T", "P", "E"];
    const IEC: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    let prefixes = if pow2 { IEC } else { SI };
    let thousand: u64 = if pow2 { 1024 } else { 1000 };
    let unit = match unit {
        Unit::None => "",
        Unit::Byte => "B",
        Unit::BytePerSec => "B/s",
    };
    let (mut num, mut post, mut modulo, mut carry) = (num, 0usize, None, false);
    while post < prefixes.len() && num.to_string().len() > maxlen {
        let m = num % thousand;
        num /= thousand;
        carry = m >= thousand / 2;
        modulo = Some(m);
        post += 1;
    }
    if post >= prefixes.len() {
        post = 0;
    }
    let Some(modulo) = modulo else { return format!("{num}{}{unit}", prefixes[post]) };
    let digits = num.to_string().len();
    if maxlen as i64 - digits as i64 <= 1 {
        return format!("{}{}{unit}", num + u64::from(carry), prefixes[post]);
    }
    let fraction = format!("{:.*}", maxlen - digits - 1, modulo as f64 / thousand as f64);
    if fraction.starts_with('1') {
        num += 1;
    }
    format!("{num}.{}{}{unit}", &fraction[2..], prefixes[post])
}

/// min, max, mean and sample standard deviation (n - 1, as fio's calc_lat), in ns.
pub struct Moments {
    pub min: u64,
    pub max: u64,
    pub mean: f64,
    pub stddev: f64,
    pub n: u64,
}

impl Moments {
    pub fn of(h: &LatencyHistogram) -> Moments {
        let n = h.len();
        if n == 0 {
            return Moments { min: 0, max: 0, mean: 0.0, stddev: 0.0, n };
        }
        // hdrhistogram's stdev divides by n; fio's by n - 1.
        let stddev = if n > 1 { h.stdev() * (n as f64 / (n - 1) as f64).sqrt() } else { 0.0 };
        Moments { min: h.min(), max: h.max(), mean: h.mean(), stddev, n }
    }
}

/// The latency at each of `percentiles` (ascending), in ns: the middle of the first bucket
/// whose running count reaches p / 100 × N (fio's calc_clat_percentiles and plat_idx_to_val,
/// on the run's histogram's buckets).
pub fn percentile_values(h: &LatencyHistogram, percentiles: &[f64]) -> Vec<u64> {
    percentiles.iter().map(|p| h.median_equivalent(h.value_at_quantile(p / 100.0))).collect()
}

/// fio's latency distribution bounds (io_u.c io_u_mark_lat_{nsec,usec,msec}): a latency
/// below 1 µs counts in the nsec bucket of the first bound above it, below 1 ms in the usec
/// one, else in the msec one (the last, ">=2000", holds the rest).
pub const LAT_BOUNDS: [u64; 10] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000];
pub const LAT_BOUNDS_MS: [u64; 11] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000, 2000];

/// The share of `all` commands in each nsec, usec and msec bucket, in percent (at least
/// 0.01 for a bucket that holds any: fio's stat_calc_lat).
pub fn latency_buckets<'a>(
    all: impl Iterator<Item = &'a LatencyHistogram>,
) -> ([f64; 10], [f64; 10], [f64; 12]) {
    let (mut n, mut u, mut m) = ([0u64; 10], [0u64; 10], [0u64; 12]);
    let bucket = |bounds: &[u64], v: u64| bounds.iter().position(|b| v < *b).unwrap_or(bounds.len());
    let mut total = 0u64;
    for h in all {
        for v in h.iter_recorded() {
            let (ns, count) = (v.value_iterated_to(), v.count_at_value());
            total += count;
            match ns {
                0..=999 => n[bucket(&LAT_BOUNDS, ns)] += count,
                1_000..=999_999 => u[bucket(&LAT_BOUNDS, ns / 1_000)] += count,
                _ => m[bucket(&LAT_BOUNDS_MS, ns / 1_000_000)] += count,
            }
        }
    }
    let share = |c: u64| match (c, total) {
        (0, _) | (_, 0) => 0.0,
        (c, t) => (100.0 * c as f64 / t as f64).max(0.01),
    };
    (n.map(share), u.map(share), m.map(share))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn num2str_matches_fios_output() {
        // From fio 3.33's own report of a randrw job: "BW=4061MiB/s (4258MB/s)(89.3MiB/22msec)",
        // "IOPS=1040k", "max=4107.7k".
        assert_eq!(num2str(4_258_000_000, 4, true, Unit::BytePerSec), "4061MiB/s");
        assert_eq!(num2str(4_258_000_000, 4, false, Unit::BytePerSec), "4258MB/s");
        assert_eq!(num2str(93_675_520, 4, true, Unit::Byte), "89.3MiB");
        assert_eq!(num2str(1_040_000, 4, false, Unit::None), "1040k");
        assert_eq!(num2str(4_107_700, 6, false, Unit::None), "4107.7k");
        assert_eq!(num2str(240, 6, false, Unit::None), "240");
        assert_eq!(num2str(67_108_864, 4, true, Unit::Byte), "64.0MiB");
    }
}
