//! Lifetime projection: the documented formula, drive writes from TBW or DWPD.

use trimlab_device::lifetime::*;

fn wear(at_s: u64, host_gb: u64, erased: u64, max: u32) -> Wear {
    Wear {
        at_ns: at_s * 1_000_000_000,
        host_bytes_written: host_gb * 1_000_000_000,
        nand_bytes_programmed: 0,
        blocks_erased: erased,
        erase_count_max: max,
    }
}

/// The formula of docs/lifetime.md by hand: 1000 blocks, 100 GB capacity; a day's span
/// of 50 GB host writes erasing 2000 blocks (2 per block) and raising the maximum by 5.
#[test]
fn the_projection_is_the_documented_formula() {
    let rating = Rating {
        pe_cycles: Some(3000),
        tbw_bytes: Some(600_000_000_000_000),
        tbw_capacity_bytes: Some(1_000_000_000_000),
        ..Rating::default()
    };
    let (before, after) = (wear(0, 10, 500, 3), wear(86_400, 60, 2500, 8));
    let l = project(&rating, 1000, 100_000_000_000, &before, &after).unwrap();
    assert_eq!((l.daily_host_bytes, l.daily_host_bytes_from), (50e9, "measured"));
    assert!((l.drive_writes_per_day - 0.5).abs() < 1e-12);
    // Mean: 2 erases per block a day: 3000 / 2 days. Most worn: 5 a day.
    assert!((l.years_mean.unwrap() - 1500.0 / 365.25).abs() < 1e-9, "{l:?}");
    assert!((l.years_most_worn.unwrap() - 600.0 / 365.25).abs() < 1e-9, "{l:?}");
    // 600 drive writes at half a drive a day.
    assert!((l.years_rated_writes.unwrap() - 1200.0 / 365.25).abs() < 1e-9, "{l:?}");
    // A given daily volume replaces the measured rate: twice the volume, half the years.
    let given = Rating { daily_host_bytes: Some(100_000_000_000), ..rating.clone() };
    let g = project(&given, 1000, 100_000_000_000, &before, &after).unwrap();
    assert_eq!(g.daily_host_bytes_from, "given");
    assert!((g.years_mean.unwrap() * 2.0 - l.years_mean.unwrap()).abs() < 1e-9);
    // The maximum not moving does not make the most-worn block outlive the mean.
    let flat = project(&rating, 1000, 100_000_000_000, &before, &wear(86_400, 60, 2500, 3)).unwrap();
    assert_eq!(flat.years_most_worn, flat.years_mean);
    // No rating, no host writes: no projection; no erases: no years.
    assert!(project(&Rating::default(), 1000, 1, &before, &after).is_none());
    assert!(project(&rating, 1000, 1, &after, &after).is_none());
    let idle = project(&rating, 1000, 1, &before, &wear(86_400, 60, 500, 3)).unwrap();
    assert_eq!((idle.years_mean, idle.years_most_worn), (None, None));
    assert!(idle.summary_line().contains("never"), "{}", idle.summary_line());
}

#[test]
fn drive_writes_come_from_tbw_or_dwpd() {
    let dwpd = Rating { dwpd: Some(1.0), years: Some(5.0), ..Rating::default() };
    assert_eq!(dwpd.drive_writes(), Some(5.0 * 365.25));
    assert_eq!(Rating { dwpd: Some(1.0), ..Rating::default() }.drive_writes(), None);
}
