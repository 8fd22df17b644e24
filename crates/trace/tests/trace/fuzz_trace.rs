//! Bounded fuzzing of the trace parsers and replay (issue 26): arbitrary lines never panic the
//! reader, format detection, or a replay of what they parse.
//!
//! Strategy: a trace is a header (one of the formats' first lines, or none) and up to 30 lines,
//! each a real line of one of the seven formats with fields replaced by edge values (0, huge
//! numbers, u64::MAX and past it, negative, NaN, empty, arbitrary text), or an arbitrary line.
//! The reader runs with and without a named format and with `skip_bad`; whatever it parses is
//! replayed on a small device, open loop at a random speed or closed loop, with out-of-range
//! requests checked or remapped and TRIMs as recorded, dropped or as a periodic fstrim.
//!
//! Invariants: no panic and no endless loop; every error names the source.
//!
//! Time: 2000 traces, a few seconds; the runner's random stream is fixed.

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use trimlab_device::{DeviceSection, Ssd, SsdConfig, TrimSection};
use trimlab_sim::ByteSize;
use trimlab_trace::{
    replay, BlkAction, LbaMode, Pacing, ReaderOptions, ReplayOptions, TraceFormat, TraceReader, TrimHandling,
};

/// Real lines with `{}` where a field is replaced.
const TEMPLATES: &[&str] = &[
    "  8,0    3        {}     {}   697  {}  {} {} + {} [jbd2/sda1-8]",
    "  kworker/u8:2-123     [002] d..1.  {}: 8,0    {}   {} {} + {} [kworker/u8:2]",
    "          fstrim-999   [001] .....  {}: block_rq_issue: 8,0 {} {} () {} + {} [fstrim]",
    "/dev/nbd0 {} {} {}",
    "{} /dev/nbd0 {} {} {}",
    "{},hm,1,{},{},{},3428",
    "{} 0 {} {} {}",
];

const HEADERS: &[&str] = &["", "fio version 2 iolog\n", "fio version 3 iolog\n", "# tracer: blk\n"];

const FIELDS: &[&str] = &[
    "0",
    "1",
    "8",
    "4096",
    "0.5",
    "0.000001",
    "2469.390374",
    "18446744073",
    "18446744073.709551615",
    "18446744073.709551616",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999",
    "9223372036854775807",
    "-1",
    "nan",
    "inf",
    "1e308",
    "",
    "D",
    "Q",
    "C",
    "W",
    "WS",
    "DS",
    "R",
    "F",
    "FWS",
    "read",
    "write",
    "trim",
    "sync",
    "Read",
    "Write",
    "add",
    "é",
];

fn line() -> impl Strategy<Value = String> {
    let templated = (prop::sample::select(TEMPLATES), prop::collection::vec(prop::sample::select(FIELDS), 6))
        .prop_map(|(template, fields)| {
            let mut out = String::new();
            let mut fields = fields.into_iter();
            for (i, piece) in template.split("{}").enumerate() {
                if i > 0 {
                    out += fields.next().unwrap_or("0");
                }
                out += piece;
            }
            out
        });
    prop_oneof![8 => templated, 1 => "[ -~]{0,60}", 1 => "\\PC{0,30}"]
}

fn small_ssd() -> Ssd {
    let device = DeviceSection {
        channels: Some(1),
        chips_per_channel: Some(1),
        dies_per_chip: Some(1),
        planes_per_die: Some(2),
        blocks_per_plane: Some(32),
        pages_per_block: Some(16),
        spare_factor: Some(0.25),
        write_buffer_bytes: Some(ByteSize(16 * 4096)),
        ..Default::default()
    };
    Ssd::new(SsdConfig::resolve(&device, &Default::default(), &TrimSection::default()).unwrap())
}

#[derive(Clone, Debug)]
struct Case {
    header: &'static str,
    lines: Vec<String>,
    format: Option<usize>,
    skip_bad: bool,
    blk_action: usize,
    closed_loop: Option<u32>,
    speed: f64,
    remap: bool,
    trims: usize,
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::sample::select(HEADERS),
        prop::collection::vec(line(), 0..30),
        prop::option::of(0..7usize),
        any::<bool>(),
        0..3usize,
        prop::option::of(1..8u32),
        prop::sample::select(vec![1.0, 1e-9, 1e9, 3.5]),
        any::<bool>(),
        0..3usize,
    )
        .prop_map(|(header, lines, format, skip_bad, blk_action, closed_loop, speed, remap, trims)| {
            Case { header, lines, format, skip_bad, blk_action, closed_loop, speed, remap, trims }
        })
}

#[test]
fn arbitrary_traces_never_panic_the_reader_or_a_replay() {
    let formats = TraceFormat::ALL;
    let config =
        Config { cases: 2000, failure_persistence: None, max_shrink_iters: 256, ..Config::default() };
    let mut runner = TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    let result = runner.run(&case(), |c| {
        let text = format!("{}{}\n", c.header, c.lines.join("\n"));
        let options = ReaderOptions {
            format: c.format.map(|i| formats[i]),
            blk_action: [BlkAction::Queue, BlkAction::Issue, BlkAction::Complete][c.blk_action],
            skip_bad: c.skip_bad,
            ..ReaderOptions::default()
        };
        let reader = match TraceReader::new(text.as_bytes(), "fuzz.trace", options) {
            Ok(reader) => reader,
            Err(e) => {
                prop_assert!(e.to_string().starts_with("fuzz.trace"), "{e}");
                return Ok(());
            }
        };
        let pacing = match c.closed_loop {
            Some(queue_depth) => Pacing::ClosedLoop { queue_depth },
            None => Pacing::OpenLoop { speed: c.speed },
        };
        let trims = [
            TrimHandling::AsRecorded,
            TrimHandling::Drop,
            TrimHandling::Periodic { period_ns: 86_400_000_000_000 },
        ][c.trims];
        let lba = if c.remap { LbaMode::Remap } else { LbaMode::Check };
        let mut ssd = small_ssd();
        if let Err(e) = replay(&mut ssd, reader, ReplayOptions { pacing, lba, trims }) {
            let e = e.to_string();
            prop_assert!(e.starts_with("fuzz.trace") || e.starts_with("request "), "{e}");
        }
        prop_assert!(ssd.check().is_ok(), "{:?}", ssd.check());
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
