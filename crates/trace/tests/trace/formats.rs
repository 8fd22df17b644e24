//! Every reader on a small hand-written file of its format, and on a malformed one.

use std::path::PathBuf;
use trimlab_trace::{BlkAction, CommandKind, ReaderOptions, TraceFormat, TraceReader, TraceRecord};

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

fn read(name: &str, options: ReaderOptions) -> (TraceFormat, Result<Vec<TraceRecord>, String>) {
    let file = std::fs::File::open(data(name)).unwrap();
    let reader = TraceReader::new(std::io::BufReader::new(file), name, options).unwrap();
    let format = reader.format();
    (format, reader.collect::<Result<Vec<_>, _>>().map_err(|e| e.to_string()))
}

fn ops(records: &[TraceRecord]) -> Vec<(CommandKind, u64, u64)> {
    records.iter().map(|r| (r.op, r.offset, r.bytes)).collect()
}

#[test]
fn blkparse_file() {
    let (format, records) = read("blkparse.txt", ReaderOptions::default());
    assert_eq!(format, TraceFormat::Blkparse);
    let records = records.unwrap();
    assert_eq!(
        ops(&records),
        vec![
            (CommandKind::Write, 2048 * 512, 8192),
            (CommandKind::Read, 4096 * 512, 4096),
            (CommandKind::Trim, 8192 * 512, 1 << 20),
            (CommandKind::Flush, 0, 0)
        ]
    );
    assert_eq!(records[1].time_ns, Some(990_000), "relative to the first D event");
    let (_, queued) =
        read("blkparse.txt", ReaderOptions { blk_action: BlkAction::Queue, ..Default::default() });
    assert_eq!(queued.unwrap().len(), 1);
    let (_, bad) = read("blkparse-bad.txt", ReaderOptions::default());
    assert!(bad.unwrap_err().starts_with("blkparse-bad.txt:2: time"));
}

#[test]
fn ftrace_file() {
    let (format, records) = read("ftrace-blk.txt", ReaderOptions::default());
    assert_eq!(format, TraceFormat::FtraceBlk);
    assert_eq!(
        ops(&records.unwrap()),
        vec![(CommandKind::Write, 1234 * 512, 4096), (CommandKind::Trim, 4096 * 512, 1 << 20)]
    );
    let (_, bad) = read("ftrace-bad.txt", ReaderOptions::default());
    assert!(bad.unwrap_err().starts_with("ftrace-bad.txt:1: sector count"));
}

#[test]
fn fio_files() {
    let expect = vec![
        (CommandKind::Write, 0, 65536),
        (CommandKind::Trim, 0, 65536),
        (CommandKind::Read, 65536, 4096),
        (CommandKind::Flush, 0, 0),
    ];
    let (format, v2) = read("fio-v2.log", ReaderOptions::default());
    assert_eq!(format, TraceFormat::FioV2);
    let v2 = v2.unwrap();
    assert_eq!(ops(&v2), expect);
    assert!(v2.iter().all(|r| r.time_ns.is_none()));
    let (format, v3) = read("fio-v3.log", ReaderOptions::default());
    assert_eq!(format, TraceFormat::FioV3);
    let v3 = v3.unwrap();
    assert_eq!(ops(&v3), expect);
    assert_eq!(v3[1].time_ns, Some(150_000), "microseconds, relative to the first request");
    let (_, bad) = read("fio-v3-bad.log", ReaderOptions::default());
    let err = bad.unwrap_err();
    assert!(err.starts_with("fio-v3-bad.log:3: action \"erase\""), "{err}");
}

#[test]
fn msr_mqsim_and_disksim_files() {
    let (format, msr) = read("msr.csv", ReaderOptions::default());
    assert_eq!(format, TraceFormat::Msr);
    let msr = msr.unwrap();
    assert_eq!(
        ops(&msr),
        vec![(CommandKind::Read, 3_128_352_768, 4096), (CommandKind::Write, 3_128_356_864, 16384)]
    );
    assert_eq!(msr[1].time_ns, Some(1_000_000), "100 ns ticks");
    assert!(read("msr-bad.csv", ReaderOptions::default())
        .1
        .unwrap_err()
        .starts_with("msr-bad.csv:2: 5 comma"));
    let (format, mq) = read("mqsim.trace", ReaderOptions::default());
    assert_eq!(format, TraceFormat::Mqsim);
    assert_eq!(ops(&mq.unwrap()), vec![(CommandKind::Write, 8192, 4096), (CommandKind::Read, 8192, 4096)]);
    let (format, ds) = read("disksim.trace", ReaderOptions::default());
    assert_eq!(format, TraceFormat::Disksim);
    assert_eq!(ds.unwrap()[1].time_ns, Some(5_000));
    let (_, bad) = read("disksim-bad.trace", ReaderOptions::default());
    assert!(bad.unwrap_err().starts_with("disksim-bad.trace:2:"));
    let (_, skipped) = read("disksim-bad.trace", ReaderOptions { skip_bad: true, ..Default::default() });
    assert_eq!(skipped.unwrap().len(), 1);
}
