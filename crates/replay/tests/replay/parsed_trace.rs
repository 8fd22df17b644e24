//! Tests of src/parsed_trace.rs (moved out of the lib so the crate compiles once).

use trimlab_replay::parsed_trace::*;
use trimlab_trace::ReaderOptions;
use trimlab_trace::{TraceError, TraceReader, TraceRecord};

/// What the replay loop copies per record: the boxed error keeps it at the record's size.
#[test]
fn a_handed_over_record_is_no_larger_than_the_record() {
    use std::mem::size_of;
    assert_eq!(size_of::<Option<<ParsedTrace as Iterator>::Item>>(), size_of::<TraceRecord>());
}

/// The reader thread changes nothing: over several batches, with bad lines skipped or
/// stopping the trace, it yields what the reader yields, in order, and the same count.
#[test]
fn the_reader_thread_hands_over_the_same_records_error_and_skipped_count() {
    let mut text = String::from("fio version 3 iolog\n");
    // More batches than exist, so emptied ones go back to the reader thread several times.
    let records = ((2 * BATCHES + 3) * BATCH_RECORDS) as u64;
    for i in 0..records {
        text += &format!("{i} f {} {} 4096\n", if i % 10 == 3 { "trim" } else { "write" }, i * 4096);
        if i % 1000 == 999 {
            text += "7 f write zero 4096\n";
        }
    }
    let show = |r: Result<TraceRecord, TraceError>| match r {
        Ok(record) => format!("{record:?}"),
        Err(e) => e.to_string(),
    };
    let show_boxed = |r: Result<TraceRecord, Box<TraceError>>| show(r.map_err(|e| *e));
    for skip_bad in [true, false] {
        let options = ReaderOptions { skip_bad, ..Default::default() };
        let direct: Vec<String> =
            TraceReader::new(text.as_bytes(), "t", options).unwrap().map(show).collect();
        let input = std::io::Cursor::new(text.clone().into_bytes());
        let mut threaded = ParsedTrace::spawn(TraceReader::new(input, "t", options).unwrap()).unwrap();
        let got: Vec<String> = threaded.by_ref().map(show_boxed).collect();
        assert_eq!(got.len(), direct.len());
        assert_eq!(got, direct);
        assert_eq!(threaded.skipped_bad(), if skip_bad { records / 1000 } else { 0 });
        assert!(threaded.next().is_none());
    }
}
