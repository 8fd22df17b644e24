//! Replay on a small device: TRIM handling modes, pacing, and LBA checks.

use trimlab_device::{DeviceSection, Ssd, SsdConfig, TrimSection};
use trimlab_sim::ByteSize;
use trimlab_trace::{replay, LbaMode, Pacing, ReaderOptions, ReplayOptions, TraceReader, TrimHandling};

fn small_ssd(engine: trimlab_trim::EngineKind) -> Ssd {
    let device = DeviceSection {
        channels: Some(1),
        chips_per_channel: Some(1),
        dies_per_chip: Some(1),
        planes_per_die: Some(2),
        blocks_per_plane: Some(64),
        pages_per_block: Some(16),
        spare_factor: Some(0.2),
        write_buffer_bytes: Some(ByteSize(0)),
        ..Default::default()
    };
    let trim = TrimSection { engine: Some(engine), ..Default::default() };
    Ssd::new(SsdConfig::resolve(&device, &Default::default(), &trim).unwrap())
}

/// Fill the device, trim half of it at t = 1 s, rewrite a quarter, then churn the other half
/// for a while (fio iolog v3, microsecond timestamps).
fn trace(pages: u64) -> String {
    let mut t = 0u64;
    let mut out = String::from("fio version 3 iolog\n0 dev add\n0 dev open\n");
    for p in 0..pages {
        t += 100;
        out += &format!("{t} dev write {} 4096\n", p * 4096);
    }
    t = 1_000_000;
    out += &format!("{t} dev trim 0 {}\n", pages / 2 * 4096);
    for p in 0..pages / 4 {
        t += 100;
        out += &format!("{t} dev write {} 4096\n", p * 4096);
    }
    let mut x = 7u64;
    for _ in 0..pages * 6 {
        t += 100;
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let p = pages / 2 + (x >> 33) % (pages / 2);
        out += &format!("{t} dev write {} 4096\n", p * 4096);
    }
    out += &format!("{t} dev sync 0 0\n");
    out
}

fn run(
    engine: trimlab_trim::EngineKind,
    trims: TrimHandling,
    pacing: Pacing,
) -> trimlab_trace::ReplayOutcome {
    let mut ssd = small_ssd(engine);
    let pages = ssd.capacity_bytes() / 4096;
    let text = trace(pages);
    let reader = TraceReader::new(text.as_bytes(), "t", ReaderOptions::default()).unwrap();
    let outcome = replay(&mut ssd, reader, ReplayOptions { pacing, lba: LbaMode::Check, trims }).unwrap();
    ssd.check().unwrap();
    outcome
}

const OPEN: Pacing = Pacing::OpenLoop { speed: 1.0 };

#[test]
fn trims_lower_waf_and_periodic_fstrim_sends_only_what_is_still_free() {
    use trimlab_trim::EngineKind;
    let online = run(EngineKind::Immediate, TrimHandling::AsRecorded, OPEN);
    let none = run(EngineKind::Immediate, TrimHandling::Drop, OPEN);
    // One fstrim 1.5 s in: after the trim (1 s) and the rewrite of the first quarter.
    let fstrim = run(EngineKind::Immediate, TrimHandling::Periodic { period_ns: 1_500_000_000 }, OPEN);
    assert_eq!(online.stats.trims, 1);
    assert_eq!(none.stats.trims_dropped, 1);
    assert!(online.report.waf < none.report.waf, "{} vs {}", online.report.waf, none.report.waf);
    assert_eq!(fstrim.stats.fstrim_runs, 1);
    let pages = online.report.logical_pages;
    assert_eq!(fstrim.stats.fstrim_bytes, (pages / 2 - pages / 4) * 4096, "rewritten quarter is not trimmed");
    assert!(fstrim.report.waf <= none.report.waf);
    assert_eq!(online.report.trim.commands, 1);
    assert_eq!(none.report.trim.commands, 0);
}

#[test]
fn closed_loop_ignores_time_and_open_loop_keeps_gaps() {
    use trimlab_trim::EngineKind;
    let open = run(EngineKind::Immediate, TrimHandling::AsRecorded, OPEN);
    let closed = run(EngineKind::Immediate, TrimHandling::AsRecorded, Pacing::ClosedLoop { queue_depth: 4 });
    let fast = run(EngineKind::Immediate, TrimHandling::AsRecorded, Pacing::OpenLoop { speed: 10.0 });
    assert_eq!(open.report.host.pages_written, closed.report.host.pages_written);
    assert!(open.end > closed.end, "the trace's idle second is kept open loop only");
    assert!(fast.end < open.end);
}

#[test]
fn delayed_engine_drains_in_the_traces_idle_gap() {
    let delayed = run(trimlab_trim::EngineKind::Delayed, TrimHandling::AsRecorded, OPEN);
    let online = run(trimlab_trim::EngineKind::Immediate, TrimHandling::AsRecorded, OPEN);
    assert_eq!(delayed.report.trim.figure("pages_pending"), 0);
    assert!(delayed.report.trim.foreground_total_ns < online.report.trim.foreground_total_ns);
    assert!((delayed.report.waf - online.report.waf).abs() < 0.02);
}

#[test]
fn out_of_range_requests_are_refused_or_remapped() {
    let text = "fio version 3 iolog\n0 dev write 0 4096\n5 dev write 1099511627776 8192\n";
    let mut ssd = small_ssd(trimlab_trim::EngineKind::Immediate);
    let reader = TraceReader::new(text.as_bytes(), "t", ReaderOptions::default()).unwrap();
    let options = ReplayOptions { pacing: OPEN, lba: LbaMode::Check, trims: TrimHandling::AsRecorded };
    let err = replay(&mut ssd, reader, options).err().expect("out of range").to_string();
    assert!(err.contains("--lba remap"), "{err}");
    let reader = TraceReader::new(text.as_bytes(), "t", ReaderOptions::default()).unwrap();
    let outcome = replay(&mut ssd, reader, ReplayOptions { lba: LbaMode::Remap, ..options }).unwrap();
    assert_eq!(outcome.stats.remapped, 1);
}

/// Issue 26: `replay --trims fstrim:1d` looped forever on a request stamped near u64::MAX ns
/// (the next run saturated there and was always due). Runs due before a request are counted,
/// the first one sends what is pending, and none is looped over.
#[test]
fn periodic_fstrim_reaches_a_request_at_the_end_of_the_clock() {
    use trimlab_trace::{CommandKind, TraceRecord};
    const DAY_NS: u64 = 86_400_000_000_000;
    let record = |time_ns, op, offset| {
        Ok::<_, trimlab_trace::TraceError>(TraceRecord { time_ns: Some(time_ns), op, offset, bytes: 4096 })
    };
    let records = vec![
        record(0, CommandKind::Write, 0),
        record(1, CommandKind::Trim, 0),
        record(3 * DAY_NS + 5, CommandKind::Write, 4096),
        record(u64::MAX - 1, CommandKind::Write, 8192),
        record(u64::MAX, CommandKind::Write, 8192),
    ];
    let mut ssd = small_ssd(trimlab_trim::EngineKind::Immediate);
    let options = ReplayOptions {
        pacing: Pacing::OpenLoop { speed: 1.0 },
        lba: LbaMode::Check,
        trims: TrimHandling::Periodic { period_ns: DAY_NS },
    };
    let outcome = replay(&mut ssd, records, options).unwrap();
    assert_eq!(outcome.stats.fstrim_bytes, 4096, "the first run sends the pending TRIM");
    assert_eq!(outcome.stats.fstrim_commands, 1);
    // Runs at 1..=3 days before the third request, then every day up to u64::MAX - 1 ns.
    assert_eq!(outcome.stats.fstrim_runs, (u64::MAX - 1) / DAY_NS);
    assert_eq!(outcome.stats.writes, 4);
    ssd.check().unwrap();
}

/// Issue 43 item 6: blktrace's binary per-CPU files (tests/data/blktrace, either byte order)
/// replay with every counter of the text `blkparse -i` printed of the same files, for each of
/// the three block actions.
#[test]
fn binary_blktrace_replays_like_its_blkparse_text() {
    use std::io::Read;
    use trimlab_trace::format::blktrace_bin::BlktraceLines;
    use trimlab_trace::{BlkAction, TraceFormat};
    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/blktrace");
    let device = DeviceSection { logical_bytes: Some(ByteSize(128 << 20)), ..Default::default() };
    let config = SsdConfig::resolve(&device, &Default::default(), &TrimSection::default()).unwrap();
    let run = |input: Box<dyn std::io::BufRead>, action| {
        let options = ReaderOptions { blk_action: action, ..Default::default() };
        let reader = TraceReader::new(input, "t", options).unwrap();
        let format = reader.format();
        let mut ssd = Ssd::new(config.clone());
        let options = ReplayOptions {
            pacing: Pacing::OpenLoop { speed: 1.0 },
            lba: LbaMode::Check,
            trims: TrimHandling::AsRecorded,
        };
        let outcome = replay(&mut ssd, reader, options).unwrap();
        ssd.check().unwrap();
        (format, format!("{:?}", outcome.stats), outcome.report)
    };
    for action in [BlkAction::Queue, BlkAction::Issue, BlkAction::Complete] {
        let text = std::fs::read(folder.join("loop0.blkparse.txt")).unwrap();
        let (format, stats, report) = run(Box::new(std::io::Cursor::new(text)), action);
        assert_eq!(format, TraceFormat::Blkparse);
        assert!(stats.contains("trims: 3") && stats.contains("flushes: 2"), "{action:?}: {stats}");
        for sub in ["", "be"] {
            let inputs = (0..2)
                .map(|cpu| {
                    let path = folder.join(sub).join(format!("loop0.blktrace.{cpu}"));
                    let file = std::fs::File::open(&path).unwrap();
                    (path.display().to_string(), Box::new(file) as Box<dyn Read + Send>)
                })
                .collect();
            let binary = BlktraceLines::new(inputs).unwrap();
            let (format, binary_stats, binary_report) = run(Box::new(binary), action);
            assert_eq!(format, TraceFormat::Blktrace);
            assert_eq!(binary_stats, stats, "{action:?} {sub}");
            assert_eq!(binary_report, report, "{action:?} {sub}");
        }
    }
}
