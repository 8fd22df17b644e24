//! N local worker threads: each takes the next pending point, runs it, and sends the row back to
//! the calling thread, which journals it. Rows arrive in completion order; the table sorts them,
//! so the result does not depend on the number of workers.

use crate::plan::Point;
use crate::row::Row;
use crate::runner::{run_point, Runner};
use crate::SweepError;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

/// Runs `points` on `jobs` threads (at least one), calling `on_row` on this thread for each
/// finished row. An error from `on_row` (the journal cannot be written) stops the workers after
/// the points in flight and is returned.
// Points are independent runs and rows are written in point order: threads change the wall time only.
#[allow(clippy::disallowed_methods)]
pub fn run_parallel(
    runner: &dyn Runner,
    base: &str,
    origin: &str,
    points: &[&Point],
    jobs: usize,
    mut on_row: impl FnMut(Row) -> Result<(), SweepError>,
) -> Result<(), SweepError> {
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (send, receive) = mpsc::channel::<Row>();
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, points.len().max(1)) {
            let send = send.clone();
            let (next, stop) = (&next, &stop);
            scope.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(point) = points.get(i) else { break };
                    if send.send(run_point(runner, base, origin, point)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(send);
        let mut result = Ok(());
        for row in receive {
            if result.is_ok() {
                result = on_row(row);
                if result.is_err() {
                    stop.store(true, Ordering::Relaxed);
                }
            }
        }
        result
    })
}
