//! The sampled time series: intervals, WAF in bytes at a mapping unit, histogram buckets.

use hdrhistogram::Histogram;
use trimlab_device::timeseries::*;
use trimlab_device::CommandKind;
use trimlab_sim::SimTime;

fn counters(programmed: u64) -> DeviceCounters {
    DeviceCounters { nand_pages_programmed: programmed, ..DeviceCounters::default() }
}

#[test]
fn intervals_close_on_the_arrival_that_crosses_them_and_skip_empty_ones() {
    let mut t = Timeseries::new(100, SimTime(5), counters(0), 1);
    t.record(CommandKind::Write, 4, 10);
    assert!(!t.due(SimTime(104)) && t.due(SimTime(105)));
    // The next command arrives at 355: [5,105) closes, [105,305) were empty, [305,405) opens.
    t.advance(SimTime(355), counters(6), 7);
    t.record(CommandKind::Read, 2, 30);
    t.finish(SimTime(385), counters(6), 7);
    let rows = t.rows();
    assert_eq!(rows.len(), 2);
    assert_eq!((rows[0].start_ns, rows[0].end_ns, rows[0].host_pages_written), (5, 105, 4));
    assert_eq!((rows[0].nand_pages_programmed, rows[0].waf, rows[0].free_blocks), (6, Some(1.5), 7));
    assert_eq!(rows[0].write_p50_ns, 10);
    assert_eq!((rows[1].start_ns, rows[1].end_ns, rows[1].host_pages_read), (305, 385, 2));
    assert_eq!((rows[1].waf, rows[1].waf_so_far), (None, Some(1.5)));
    assert_eq!(rows[1].read_p99_ns, 30);
    let csv = rows_to_csv(rows);
    assert_eq!(csv.lines().count(), 3);
    assert!(csv.lines().nth(2).unwrap().contains(",,1.5000,"), "{csv}");
}

#[test]
fn the_waf_of_an_interval_is_in_bytes_with_a_mapping_unit() {
    // 16 KiB units of four 4 KiB pages: 10 units written, 24 of their 40 pages filled by
    // the read-modify-write (16 host pages), 10 units programmed: 40 / 16 = 2.5.
    let filled = |programmed, filled| DeviceCounters { unit_pages_filled: filled, ..counters(programmed) };
    let mut t = Timeseries::new(100, SimTime(0), counters(0), 4);
    for _ in 0..10 {
        t.record(CommandKind::Write, 1, 10);
    }
    t.advance(SimTime(150), filled(10, 24), 3);
    // The second interval writes whole units: 4 units, 8 programmed (GC copied 4): 32 / 16.
    t.record(CommandKind::Write, 4, 10);
    t.finish(SimTime(180), filled(18, 24), 3);
    let rows = t.rows();
    assert_eq!(rows[0].waf, Some(2.5));
    assert_eq!(rows[1].waf, Some(2.0));
    assert_eq!(rows[1].waf_so_far, Some(72.0 / 32.0), "18 units over 14 × 4 − 24 pages");
}

/// The device end to end at a 16 KiB unit: 4 KiB random writes into a full drive, sampled;
/// the series' last `waf_so_far` is the report's WAF, and each interval's WAF is in bytes
/// (without the correction a 4 KiB write to a 16 KiB unit would show about 1, not about 4).
#[test]
fn a_sampled_run_at_a_16_kib_unit_agrees_with_the_report() {
    use trimlab_device::{Command, DeviceSection, FtlSection, Ssd, SsdConfig, TrimSection};
    use trimlab_sim::ByteSize;
    let device = DeviceSection {
        blocks_per_plane: Some(48),
        page_bytes: Some(4096),
        flash_page_bytes: Some(4096),
        pages_per_block: Some(64),
        channels: Some(2),
        chips_per_channel: Some(1),
        dies_per_chip: Some(1),
        planes_per_die: Some(1),
        multi_plane: Some(false),
        spare_factor: Some(0.3),
        write_buffer_bytes: Some(ByteSize(0)),
        ..Default::default()
    };
    let ftl = FtlSection { mapping_unit: Some(ByteSize(16 << 10)), ..Default::default() };
    let config = SsdConfig::resolve(&device, &ftl, &TrimSection::default()).unwrap();
    let capacity = config.logical_bytes();
    let mut ssd = Ssd::new(config);
    let mut now = SimTime::ZERO;
    let submit = |ssd: &mut Ssd, now: SimTime, command: Command| {
        ssd.submit(now, &command, None).unwrap_or_else(|e| panic!("{command:?}: {e}"));
    };
    for offset in (0..capacity).step_by(1 << 20) {
        let bytes = (capacity - offset).min(1 << 20);
        submit(&mut ssd, now, Command::Write { offset, bytes, tag: 1 });
    }
    ssd.start_measurement(now);
    ssd.enable_timeseries(1_000_000_000, now);
    // A fixed odd stride walks every 4 KiB page in a scattered order, deterministically.
    let pages = capacity / 4096;
    for i in 0..3 * pages {
        now = now.after(1_000_000);
        let offset = (i * 2_654_435_761) % pages * 4096;
        submit(&mut ssd, now, Command::Write { offset, bytes: 4096, tag: 2 + i });
    }
    ssd.finish_timeseries(now);
    let report = ssd.report(now);
    let rows = ssd.timeseries();
    assert!(rows.len() >= 3, "{} rows", rows.len());
    let last = rows.last().unwrap().waf_so_far.unwrap();
    assert!((last - report.waf).abs() < 1e-9 * report.waf, "series {last} vs report {}", report.waf);
    assert!(report.waf > 4.0, "a 4 KiB write to a 16 KiB unit programs 16 KiB at least: {}", report.waf);
    for r in rows {
        assert!(r.waf.unwrap() >= 4.0, "interval WAF in bytes: {r:?}");
    }
}

#[test]
fn histogram_buckets_cover_every_sample_once() {
    let mut h = Histogram::<u64>::new_with_bounds(1, 1 << 50, 3).unwrap();
    for v in [3u64, 5, 6, 7, 1000, 1023, 1024] {
        h.record(v).unwrap();
    }
    let mut out = String::new();
    histogram_csv_rows("write", &h, &mut out);
    let counts: Vec<u64> = out.lines().map(|l| l.split(',').nth(3).unwrap().parse().unwrap()).collect();
    assert_eq!(counts.iter().sum::<u64>(), 7);
    assert!(out.starts_with("write,2,4,1,"), "{out}");
    assert!(out.lines().last().unwrap().starts_with("write,1024,2048,1,1.000000"), "{out}");
}
