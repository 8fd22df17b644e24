//! The line parsers of crate::line, each reached through its format's registered spec.

use super::TraceFormat;
use crate::line::*;
use crate::record::{CommandKind, TraceRecord};

fn opts() -> LineOptions {
    LineOptions { blk_action: BlkAction::Issue, fio_time_unit: FioTimeUnit::Micros }
}

fn request(format: TraceFormat, line: &str) -> TraceRecord {
    match format.parse_line(line, &opts()) {
        Line::Request(r) => r,
        Line::Skip | Line::OtherAction => panic!("skipped: {line}"),
        Line::Bad(e) => panic!("bad: {line}: {e}"),
    }
}

#[test]
fn seconds_parse_exactly() {
    assert_eq!(seconds_to_ns("1.5"), Some(1_500_000_000));
    assert_eq!(seconds_to_ns("0.000000001"), Some(1));
    assert_eq!(seconds_to_ns("12"), Some(12_000_000_000));
    assert_eq!(seconds_to_ns("1.0000000001"), None);
    assert_eq!(seconds_to_ns("x.1"), None);
}

#[test]
fn blkparse_lines() {
    let r = request(
        TraceFormat::Blkparse,
        "  8,0    3       11     0.001000000   697  D  WS 2048 + 16 [jbd2/sda1-8]",
    );
    assert_eq!(
        r,
        TraceRecord { time_ns: Some(1_000_000), op: CommandKind::Write, offset: 1 << 20, bytes: 8192 }
    );
    let r = request(
        TraceFormat::Blkparse,
        "259,0    0       12     2.000000000  1234  D  DS 4096 + 2048 [fstrim]",
    );
    assert_eq!((r.op, r.offset, r.bytes), (CommandKind::Trim, 4096 * 512, 1 << 20));
    let r = request(TraceFormat::Blkparse, "  8,0    1       13     2.5   99  D  FN [kworker]");
    assert_eq!(r.op, CommandKind::Flush);
    assert!(matches!(
        TraceFormat::Blkparse.parse_line("  8,0    3  1  0.1  697  Q  WS 2048 + 16 [x]", &opts()),
        Line::OtherAction
    ));
    assert!(matches!(TraceFormat::Blkparse.parse_line("CPU0 (8,0):", &opts()), Line::Skip));
    assert!(matches!(
        TraceFormat::Blkparse.parse_line("  8,0  3  1  zero  697  D  W 1 + 1 [x]", &opts()),
        Line::Bad(_)
    ));
    assert!(matches!(
        TraceFormat::Blkparse.parse_line("  8,0  3  1  0.1  697  D  W 1 + x [x]", &opts()),
        Line::Bad(_)
    ));
}

#[test]
fn ftrace_lines() {
    let r = request(
        TraceFormat::FtraceBlk,
        "  kworker/u8:2-123   [002] d..1.  2469.390374: 8,0    D   W 1234 + 8 [kworker/u8:2]",
    );
    assert_eq!(
        r,
        TraceRecord {
            time_ns: Some(2_469_390_374_000),
            op: CommandKind::Write,
            offset: 1234 * 512,
            bytes: 4096
        }
    );
    let r = request(
        TraceFormat::FtraceBlk,
        "   fstrim-999 [001] ..... 10.000001: block_rq_issue: 8,0 DS 1048576 () 4096 + 2048 [fstrim]",
    );
    assert_eq!(
        (r.op, r.offset, r.bytes, r.time_ns),
        (CommandKind::Trim, 4096 * 512, 1 << 20, Some(10_000_001_000))
    );
    assert!(matches!(
        TraceFormat::FtraceBlk
            .parse_line(" dd-1 [000] .... 1.0: block_rq_complete: 8,0 W () 8 + 8 [0]", &opts()),
        Line::OtherAction
    ));
    assert!(matches!(
        TraceFormat::FtraceBlk.parse_line(" dd-1 [000] .... one: 8,0 D W 8 + 8 [dd]", &opts()),
        Line::Bad(_)
    ));
}

#[test]
fn fio_lines() {
    let r = request(TraceFormat::FioV3, "1500 /dev/nbd0 trim 1048576 65536");
    assert_eq!(
        r,
        TraceRecord { time_ns: Some(1_500_000), op: CommandKind::Trim, offset: 1 << 20, bytes: 65536 }
    );
    let r = request(TraceFormat::FioV2, "/dev/sdb write 4096 4096");
    assert_eq!(r.time_ns, None);
    assert_eq!(request(TraceFormat::FioV3, "7 f sync 0 0").op, CommandKind::Flush);
    assert!(matches!(TraceFormat::FioV3.parse_line("0 f open", &opts()), Line::Skip));
    assert!(matches!(TraceFormat::FioV3.parse_line("0 f scribble 0 1", &opts()), Line::Bad(_)));
    assert!(matches!(TraceFormat::FioV3.parse_line("x f read 0 1", &opts()), Line::Bad(_)));
    assert!(matches!(TraceFormat::FioV2.parse_line("f read 0", &opts()), Line::Bad(_)));
}

/// Strategy: every combination of the tokens on which the byte fast path and the general
/// parser could disagree (blanks of each kind, signs, leading zeros, overflow, non-ASCII,
/// control bytes, comments, other actions, zero lengths, extra fields, a line cut before
/// its newline), in v3 and v2. Invariant: a line the fast path takes is exactly the
/// general parser's request, and it takes the whole line.
#[test]
fn fio_fast_path_agrees_with_the_general_parser() {
    let leads = ["", " ", "\t"];
    let times = ["10", "007", "+5", "18446744073709551615", "18446744073709551616", "x"];
    let seps = [" ", "\t ", "\u{a0}", "\u{b}"];
    let files = ["/dev/nvme0n1", "#f", "d\u{e9}v", "a\u{1}b"];
    let actions = ["write", "trim", "read", "sync", "add", "Write", "writes"];
    let offsets = ["0", "4096", "+1", "18446744073709551616", "-1"];
    let lengths = ["4096", "0", "01"];
    let tails = ["", " ", "\r", " extra", "\u{e9}"];
    let ends = ["\n", ""];
    let (mut taken, mut lines) = (0u64, 0u64);
    for unit in [FioTimeUnit::Micros, FioTimeUnit::Millis] {
        let options = LineOptions { blk_action: BlkAction::Issue, fio_time_unit: unit };
        for lead in leads {
            for time in times {
                for sep in seps {
                    for file in files {
                        for action in actions {
                            for offset in offsets {
                                for length in lengths {
                                    for tail in tails {
                                        for end in ends {
                                            let v2 = format!(
                                                "{lead}{file}{sep}{action}{sep}{offset}{sep}{length}{tail}{end}"
                                            );
                                            let v3 = format!("{lead}{time}{sep}{file}{sep}{action}{sep}{offset}{sep}{length}{tail}{end}");
                                            for (line, is_v3) in [(v2, false), (v3, true)] {
                                                lines += 1;
                                                let Some((record, used)) =
                                                    fio_fast(line.as_bytes(), is_v3, unit)
                                                else {
                                                    continue;
                                                };
                                                taken += 1;
                                                assert_eq!(used, line.len(), "{line:?}");
                                                let format = if is_v3 {
                                                    TraceFormat::FioV3
                                                } else {
                                                    TraceFormat::FioV2
                                                };
                                                match format.parse_line(&line, &options) {
                                                    Line::Request(r) => assert_eq!(r, record, "{line:?}"),
                                                    _ => panic!("the fast path took {line:?}"),
                                                }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    // The common lines do take the fast path (else this test could not fail).
    assert!(taken > 1000, "{taken} of {lines}");
    assert_eq!(
        fio_fast(b"1500 /dev/nbd0 trim 1048576 65536\n", true, FioTimeUnit::Micros),
        Some((
            TraceRecord { time_ns: Some(1_500_000), op: CommandKind::Trim, offset: 1 << 20, bytes: 65536 },
            34
        ))
    );
}

#[test]
fn msr_and_simulator_lines() {
    let r = request(TraceFormat::Msr, "128166372003061629,hm,1,Read,3128352768,4096,3428");
    assert_eq!((r.op, r.offset, r.bytes), (CommandKind::Read, 3_128_352_768, 4096));
    assert!(matches!(TraceFormat::Msr.parse_line("1,hm,1,Erase,0,4096,3", &opts()), Line::Bad(_)));
    assert!(matches!(TraceFormat::Msr.parse_line("1,hm,1,Read,0,4096", &opts()), Line::Bad(_)));
    let r = request(TraceFormat::Mqsim, "5000 0 16 8 1");
    assert_eq!(r, TraceRecord { time_ns: Some(5000), op: CommandKind::Read, offset: 8192, bytes: 4096 });
    let r = request(TraceFormat::Disksim, "0.5 0 16 8 0");
    assert_eq!(r, TraceRecord { time_ns: Some(500_000), op: CommandKind::Write, offset: 8192, bytes: 4096 });
    assert!(matches!(TraceFormat::Mqsim.parse_line("5000 0 16 8", &opts()), Line::Bad(_)));
    // Issue 13 item 10: MQSim types other than 0 / 1 were read as reads or writes.
    for bad in ["5000 0 16 8 2", "5000 0 16 8 3", "5000 0 16 8 255"] {
        match TraceFormat::Mqsim.parse_line(bad, &opts()) {
            Line::Bad(e) => assert!(e.contains("0 (write) or 1 (read)"), "{e}"),
            _ => panic!("{bad} must be refused"),
        }
    }
    assert!(matches!(TraceFormat::Disksim.parse_line("0.5 0 16 8 3", &opts()), Line::Request(_)));
    assert!(matches!(TraceFormat::Mqsim.parse_line("1 0 18446744073709551615 8 0", &opts()), Line::Bad(_)));
    assert!(matches!(TraceFormat::Disksim.parse_line("-1 0 16 8 0", &opts()), Line::Bad(_)));
    // Issue 41: an arrival of 1e300 ms saturated the clock; it is refused, quoted cut.
    let hostile = format!("{}1e300 0 16 8 0", "0".repeat(10_000));
    for line in ["1e300 0 16 8 0", "18446744073709551615 0 16 8 0", hostile.as_str()] {
        let format = if line.contains('e') { TraceFormat::Disksim } else { TraceFormat::Mqsim };
        match format.parse_line(line, &opts()) {
            Line::Bad(e) => assert!(e.contains("past 4611686018427387904 ns") && e.len() < 200, "{e}"),
            _ => panic!("{line:.40} must be refused"),
        }
    }
}
