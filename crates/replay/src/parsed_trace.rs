//! A trace read and parsed on its own thread, handed to the replay in file order. Reading and
//! parsing text is I/O, not simulation: the single-threaded replay sees the same records, the
//! same error and the same skipped count in the same order as from the reader itself.

use anyhow::{Context, Result};
use std::io::BufRead;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::thread::JoinHandle;
use trimlab_trace::{TraceError, TraceFormat, TraceReader, TraceRecord};

/// Requests handed from the reader thread to the replay at a time: enough that the hand-over
/// costs nothing per request, few enough that what is in flight stays far below the device
/// model's own memory (memory flat in the trace's length). Assumption, tried with `trimlab
/// bench`.
pub const BATCH_RECORDS: usize = 4096;
/// Batch vectors in all (about 160 KB each): the reader thread fills one only when the replay
/// has handed one back, so at most this many are in flight.
pub const BATCHES: usize = 8;
/// Emptied batches go back to the reader thread this many at a time. The reader parses several
/// times faster than the replay simulates, so it waits for an empty batch nearly always, and
/// each hand-back that finds it waiting costs the replay's thread a futex wake (a cross-core
/// interrupt on this VM, about 20 us: 1.5 % of the replay's samples with one per batch, issue
/// 27). Handed back in fours, the reader wakes once per four batches and refills them while the
/// replay works through the four still queued.
const RETURN_GROUP: usize = 4;

enum Batch {
    Records(Vec<TraceRecord>),
    /// The trace ended, at its end or at its first error, after `skipped_bad` skipped lines.
    End {
        error: Option<TraceError>,
        skipped_bad: u64,
    },
}

/// A trace read and parsed on its own thread, its records handed over in file order through a
/// bounded channel, so parsing runs beside the simulation instead of before each request.
/// Reading and parsing text is I/O, not simulation: the single-threaded replay sees the same
/// records, the same error and the same skipped count in the same order as from the reader
/// itself, so no result changes.
pub struct ParsedTrace {
    format: TraceFormat,
    batches: Receiver<Batch>,
    /// Emptied batches go back to the reader thread to be filled again, in groups.
    recycle: Sender<Vec<TraceRecord>>,
    emptied: Vec<Vec<TraceRecord>>,
    current: Vec<TraceRecord>,
    position: usize,
    ended: bool,
    skipped_bad: u64,
    thread: Option<JoinHandle<()>>,
}

impl ParsedTrace {
    // Parsing runs ahead of the model on its own thread; records reach replay in file order.
    #[allow(clippy::disallowed_methods)]
    pub fn spawn<R: BufRead + Send + 'static>(mut reader: TraceReader<R>) -> Result<ParsedTrace> {
        let format = reader.format();
        // Unbounded, but only `BATCHES` vectors exist: the reader waits for an emptied one.
        let (batch_tx, batches) = channel();
        let (recycle, recycled) = channel::<Vec<TraceRecord>>();
        let thread = std::thread::Builder::new()
            .name("trace-reader".into())
            .spawn(move || {
                let mut made = 0;
                // A closed channel: the replay stopped (at a device error), so nobody wants the
                // rest.
                let mut empty_batch = || {
                    if made < BATCHES {
                        made += 1;
                        Some(Vec::with_capacity(BATCH_RECORDS))
                    } else {
                        recycled.recv().ok()
                    }
                };
                let Some(mut batch) = empty_batch() else { return };
                loop {
                    match reader.next() {
                        Some(Ok(record)) => {
                            batch.push(record);
                            if batch.len() == BATCH_RECORDS {
                                if batch_tx.send(Batch::Records(batch)).is_err() {
                                    return;
                                }
                                let Some(next) = empty_batch() else { return };
                                batch = next;
                            }
                        }
                        end => {
                            if !batch.is_empty() && batch_tx.send(Batch::Records(batch)).is_err() {
                                return;
                            }
                            let error = end.and_then(Result::err);
                            let _ = batch_tx.send(Batch::End { error, skipped_bad: reader.skipped_bad() });
                            return;
                        }
                    }
                }
            })
            .context("cannot start the trace reader thread")?;
        Ok(ParsedTrace {
            format,
            batches,
            recycle,
            emptied: Vec::with_capacity(RETURN_GROUP),
            current: Vec::new(),
            position: 0,
            ended: false,
            skipped_bad: 0,
            thread: Some(thread),
        })
    }

    pub fn format(&self) -> TraceFormat {
        self.format
    }

    /// Malformed lines skipped (with `--skip-bad`); final once the records have run out.
    pub fn skipped_bad(&self) -> u64 {
        self.skipped_bad
    }
}

impl ParsedTrace {
    /// The current batch is used up: takes the next one (waiting for the reader thread if it
    /// is behind), or ends the trace. Out of line: once per batch, while `next` is inlined into
    /// the replay loop (called, it returned each record through memory as a `Result` sized for
    /// the error, and the replay's loads of it waited on those stores).
    #[inline(never)]
    fn refill(&mut self) -> Option<Result<TraceRecord, Box<TraceError>>> {
        loop {
            if let Some(&record) = self.current.get(self.position) {
                self.position += 1;
                return Some(Ok(record));
            }
            if self.ended {
                return None;
            }
            match self.batches.recv() {
                Ok(Batch::Records(records)) => {
                    let mut done = std::mem::replace(&mut self.current, records);
                    self.position = 0;
                    if done.capacity() >= BATCH_RECORDS {
                        done.clear();
                        self.emptied.push(done);
                    }
                    if self.emptied.len() >= RETURN_GROUP {
                        // The reader thread may have finished; then the vectors are dropped.
                        for done in self.emptied.drain(..) {
                            let _ = self.recycle.send(done);
                        }
                    }
                }
                Ok(Batch::End { error, skipped_bad }) => {
                    self.ended = true;
                    self.skipped_bad = skipped_bad;
                    if let Some(error) = error {
                        return Some(Err(Box::new(error)));
                    }
                }
                Err(_) => {
                    // The thread always ends the trace before it returns, so it panicked: a bug.
                    if let Some(Err(panic)) = self.thread.take().map(JoinHandle::join) {
                        std::panic::resume_unwind(panic);
                    }
                    unreachable!("the trace reader thread stopped without ending the trace");
                }
            }
        }
    }
}

/// The error boxed: a record then travels the replay loop in its own 40 bytes, not in a `Result`
/// sized for the error (80), which the loop copied for every record (issue 27).
impl Iterator for ParsedTrace {
    type Item = Result<TraceRecord, Box<TraceError>>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match self.current.get(self.position) {
            Some(&record) => {
                self.position += 1;
                Some(Ok(record))
            }
            None => self.refill(),
        }
    }
}
