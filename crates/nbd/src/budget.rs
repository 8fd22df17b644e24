//! Budgets of bytes held for clients: what requests read but not yet answered keep in memory
//! (WRITE payloads as they arrive, READ data, queued replies), per connection and server-wide.
//!
//! Why each rule (issue 26):
//! - A WRITE is charged to the server-wide budget as its payload arrives, a window at a time,
//!   not when its header declares it: 16 clients that each declared a 32 MiB WRITE and sent 100
//!   bytes used to hold the whole 512 MiB and stall every other client until they hung up. The
//!   per-connection budget still takes the whole request at once (a connection only waits for
//!   its own replies there).
//! - A payload already under way may overdraw the server-wide budget when it cannot go on
//!   otherwise, one payload at a time ([`Budget::take_more`]): two half-received payloads that
//!   waited for each other's bytes would otherwise wait forever. So the server-wide budget can
//!   be exceeded by at most one request.
//! - Every charge includes what holding a reply really costs (`sink::REPLY_HOLD_BYTES`), not
//!   only its data: a flood of data-less requests under `--pace real` used 3.6x its charge.
//! - A taker that waits calls its `on_wait` about every [`WAIT_SLICE`], so the server can cut
//!   connections that hold budget without progress while others wait for it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// How long a taker sleeps between looks at the stop flag and calls of `on_wait`.
pub const WAIT_SLICE: Duration = Duration::from_millis(50);

#[derive(Default)]
struct State {
    used: u64,
    /// Takers waiting now (a notify is a system call even with nobody waiting, issue 15).
    waiting: usize,
    /// The payload allowed past the limit (its connection id), see [`Budget::take_more`].
    overdraft: Option<u64>,
}

/// Bytes of a shared budget in use; takers wait until theirs fits.
pub struct Budget {
    state: Mutex<State>,
    freed: Condvar,
    max: u64,
    peak: AtomicU64,
}

impl Budget {
    pub fn new(max: u64) -> Budget {
        Budget {
            state: Mutex::new(State::default()),
            freed: Condvar::new(),
            max: max.max(1),
            peak: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn max(&self) -> u64 {
        self.max
    }

    /// Bytes held now.
    pub fn used(&self) -> u64 {
        self.lock().used
    }

    /// The most bytes held at once.
    pub fn peak(&self) -> u64 {
        self.peak.load(Ordering::Relaxed)
    }

    /// Takes `n` bytes if they fit now.
    pub fn try_take(&self, n: u64) -> bool {
        let mut state = self.lock();
        self.add_if_fits(&mut state, n)
    }

    /// Takes `n` bytes, waiting while they do not fit. False if `stop` was raised while
    /// waiting.
    pub fn take(&self, n: u64, stop: &AtomicBool, on_wait: &mut dyn FnMut()) -> bool {
        self.take_with(n, stop, on_wait, |_, _| false)
    }

    /// Takes `n` more bytes for the payload of connection `id`, which is under way and holds
    /// bytes of this budget already. When they do not fit and no other payload overdraws the
    /// budget, they are taken past the limit: two half-received payloads must not wait for
    /// each other. The overdraft ends with [`Budget::end_overdraft`].
    pub fn take_more(&self, n: u64, id: u64, stop: &AtomicBool, on_wait: &mut dyn FnMut()) -> bool {
        self.take_with(n, stop, on_wait, |state, n| {
            if state.overdraft.is_none_or(|holder| holder == id) {
                state.overdraft = Some(id);
                state.used += n;
                true
            } else {
                false
            }
        })
    }

    fn take_with(
        &self,
        n: u64,
        stop: &AtomicBool,
        on_wait: &mut dyn FnMut(),
        mut otherwise: impl FnMut(&mut State, u64) -> bool,
    ) -> bool {
        let mut state = self.lock();
        loop {
            if self.add_if_fits(&mut state, n) || otherwise(&mut state, n) {
                self.peak.fetch_max(state.used, Ordering::Relaxed);
                return true;
            }
            if stop.load(Ordering::SeqCst) {
                return false;
            }
            state.waiting += 1;
            state = self.freed.wait_timeout(state, WAIT_SLICE).unwrap_or_else(|p| p.into_inner()).0;
            state.waiting -= 1;
            // Outside the lock: `on_wait` may cut connections, whose charges come back here.
            drop(state);
            on_wait();
            state = self.lock();
        }
    }

    /// One oversized charge fits an empty budget, so no request waits forever.
    fn add_if_fits(&self, state: &mut State, n: u64) -> bool {
        if state.used > 0 && state.used + n > self.max {
            return false;
        }
        state.used += n;
        self.peak.fetch_max(state.used, Ordering::Relaxed);
        true
    }

    pub fn give(&self, n: u64) {
        if n == 0 {
            return;
        }
        let mut state = self.lock();
        state.used -= n.min(state.used);
        if state.waiting > 0 {
            self.freed.notify_all();
        }
    }

    /// Connection `id`'s payload no longer overdraws the budget (it was received whole, or
    /// abandoned).
    pub fn end_overdraft(&self, id: u64) {
        let mut state = self.lock();
        if state.overdraft == Some(id) {
            state.overdraft = None;
            if state.waiting > 0 {
                self.freed.notify_all();
            }
        }
    }
}

/// A request's hold on its connection's budget and on the server-wide one, given back when
/// dropped (its reply written, or the connection gone).
pub struct Charge {
    connection: Arc<Budget>,
    total: Arc<Budget>,
    connection_bytes: u64,
    total_bytes: u64,
    /// The connection whose payload may overdraw `total` (ended when the payload is released).
    overdraft_id: Option<u64>,
}

impl Charge {
    /// A charge of bytes already taken from both budgets.
    pub fn new(
        connection: Arc<Budget>,
        total: Arc<Budget>,
        connection_bytes: u64,
        total_bytes: u64,
    ) -> Charge {
        Charge { connection, total, connection_bytes, total_bytes, overdraft_id: None }
    }

    pub fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    pub fn connection_bytes(&self) -> u64 {
        self.connection_bytes
    }

    /// Records `n` more bytes taken from the server-wide budget, by `take_more` for `id`.
    pub fn add_total(&mut self, n: u64, id: Option<u64>) {
        self.total_bytes += n;
        if id.is_some() {
            self.overdraft_id = id;
        }
    }

    /// Gives back what the charge holds beyond `connection_bytes` and `total_bytes` (a WRITE's
    /// payload, once its pages are in the store), and ends its overdraft.
    pub fn shrink_to(&mut self, connection_bytes: u64, total_bytes: u64) {
        if let Some(id) = self.overdraft_id.take() {
            self.total.end_overdraft(id);
        }
        let (c, t) = (
            self.connection_bytes.saturating_sub(connection_bytes),
            self.total_bytes.saturating_sub(total_bytes),
        );
        self.connection.give(c);
        self.total.give(t);
        self.connection_bytes -= c;
        self.total_bytes -= t;
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.shrink_to(0, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_wait() -> impl FnMut() {
        || ()
    }

    #[test]
    fn an_oversized_charge_fits_an_empty_budget_only() {
        let b = Budget::new(100);
        assert!(b.try_take(150));
        assert!(!b.try_take(1));
        b.give(150);
        assert!(b.try_take(60) && !b.try_take(41) && b.try_take(40));
        assert_eq!((b.used(), b.peak()), (100, 150));
    }

    #[test]
    fn one_payload_at_a_time_may_overdraw() {
        let b = Budget::new(100);
        let stop = AtomicBool::new(false);
        assert!(b.try_take(100));
        // Connection 1's payload goes on past the limit; connection 2's must wait.
        assert!(b.take_more(50, 1, &stop, &mut no_wait()));
        assert!(b.take_more(50, 1, &stop, &mut no_wait()));
        stop.store(true, Ordering::SeqCst);
        assert!(!b.take_more(10, 2, &stop, &mut no_wait()), "a second payload does not overdraw");
        b.end_overdraft(1);
        assert!(b.take_more(10, 2, &stop, &mut no_wait()), "now it may");
        assert_eq!(b.used(), 210);
    }

    #[test]
    fn a_waiting_taker_calls_on_wait_and_gets_what_is_given_back() {
        let b = Arc::new(Budget::new(100));
        let stop = AtomicBool::new(false);
        assert!(b.try_take(100));
        let giver = b.clone();
        let mut calls = 0;
        let got = b.take(30, &stop, &mut || {
            calls += 1;
            if calls == 2 {
                giver.give(100);
            }
        });
        assert!(got && calls >= 2 && b.used() == 30);
    }

    #[test]
    fn a_charge_gives_back_both_budgets_and_its_overdraft() {
        let (c, t) = (Arc::new(Budget::new(1000)), Arc::new(Budget::new(100)));
        let stop = AtomicBool::new(false);
        assert!(c.try_take(500) && t.try_take(100));
        let mut charge = Charge::new(c.clone(), t.clone(), 500, 100);
        assert!(t.take_more(300, 7, &stop, &mut no_wait()));
        charge.add_total(300, Some(7));
        charge.shrink_to(20, 20);
        assert_eq!((c.used(), t.used()), (20, 20));
        assert!(t.take_more(500, 8, &stop, &mut no_wait()), "the overdraft ended with the payload");
        t.give(500);
        drop(charge);
        assert_eq!((c.used(), t.used()), (0, 0));
    }
}
