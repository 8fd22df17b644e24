//! What the server knows of each connection to police it: its socket (to cut it), its source
//! address, its handshake deadline, and when its current WRITE payload and reply began and last
//! made progress. The accept loop looks at these every few milliseconds and cuts a connection
//! past a deadline; a request waiting for the server-wide budget cuts those that hold budget
//! without progress ([`Watch::stalled`]).
//!
//! Deadlines are on the whole transfer, not on each system call (issue 26: a per-send timeout
//! restarted on every partial send, and one connection held its reply 346 s).

use crate::budget::Budget;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Shutdown, TcpStream};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A client's socket, shared by the threads that read, write and cut it: one descriptor per
/// connection (until issue 26 each connection took four, and 1024 descriptors ended the
/// server at its 255th client).
pub enum Conn {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Conn {
    pub fn shutdown(&self, how: Shutdown) {
        let _ = match self {
            Conn::Tcp(s) => s.shutdown(how),
            Conn::Unix(s) => s.shutdown(how),
        };
    }

    /// Makes the close a reset: bytes still queued for the client are dropped instead of
    /// delivered (a client cut for not reading would otherwise be fed its queued megabytes for
    /// as long as it reads slowly, and the kernel would hold them).
    fn reset_on_close(&self) {
        if let Conn::Tcp(s) = self {
            let _ = rustix::net::sockopt::set_socket_linger(s, Some(Duration::ZERO));
        }
    }

    pub fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        match self {
            Conn::Tcp(s) => s.set_nonblocking(on),
            Conn::Unix(s) => s.set_nonblocking(on),
        }
    }
}

/// Reads and writes a shared [`Conn`].
pub struct ConnStream(pub Arc<Conn>);

impl Read for ConnStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match &*self.0 {
            Conn::Tcp(s) => (&*s).read(buf),
            Conn::Unix(s) => (&*s).read(buf),
        }
    }

    fn read_vectored(&mut self, bufs: &mut [io::IoSliceMut<'_>]) -> io::Result<usize> {
        match &*self.0 {
            Conn::Tcp(s) => (&*s).read_vectored(bufs),
            Conn::Unix(s) => (&*s).read_vectored(bufs),
        }
    }
}

impl Write for ConnStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &*self.0 {
            Conn::Tcp(s) => (&*s).write(buf),
            Conn::Unix(s) => (&*s).write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One transfer that depends on the client: when it began and when it last moved (nanoseconds
/// since the watch's base instant, plus one; 0: no transfer).
#[derive(Default)]
pub struct Slot {
    started_ns: AtomicU64,
    progress_ns: AtomicU64,
}

impl Slot {
    fn begin(&self, now_ns: u64) {
        self.progress_ns.store(now_ns, Ordering::Relaxed);
        self.started_ns.store(now_ns, Ordering::Relaxed);
    }

    fn progress(&self, now_ns: u64) {
        self.progress_ns.store(now_ns, Ordering::Relaxed);
    }

    fn end(&self) {
        self.started_ns.store(0, Ordering::Relaxed);
    }

    /// (began, last progress) of the transfer under way.
    fn under_way(&self) -> Option<(u64, u64)> {
        let started = self.started_ns.load(Ordering::Relaxed);
        (started != 0).then(|| (started, self.progress_ns.load(Ordering::Relaxed).max(started)))
    }
}

/// Which transfer a [`Slot`] watches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transfer {
    /// A WRITE's payload (or a refused WRITE's payload being drained).
    Payload,
    /// A reply (or a batch of replies) being written.
    Reply,
}

/// Why the server cut a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cut {
    HandshakeDeadline,
    /// A newer connection needed the handshake slot (per source address, or the last slots).
    HandshakeEvicted,
    /// A payload or reply not transferred within the I/O deadline.
    Deadline(Transfer),
    /// It held budget without progress while other requests waited for budget.
    Stalled(Transfer),
}

pub struct Watch {
    pub id: u64,
    /// The peer's address, for the per-address handshake limit (`None`: a Unix socket; they
    /// all count as one local address).
    pub ip: Option<IpAddr>,
    base: Instant,
    conn: Option<Arc<Conn>>,
    /// Handshake deadline (ns since base, plus one); 0 once in transmission.
    handshake_deadline_ns: AtomicU64,
    handshake_started_ns: u64,
    payload: Slot,
    reply: Slot,
    /// The connection's budget: what its requests hold now.
    pub budget: Arc<Budget>,
    cut: AtomicBool,
}

impl Watch {
    pub fn new(
        id: u64,
        ip: Option<IpAddr>,
        base: Instant,
        conn: Option<Arc<Conn>>,
        handshake_timeout: Duration,
        budget: Arc<Budget>,
    ) -> Watch {
        let now = base.elapsed().as_nanos() as u64 + 1;
        Watch {
            id,
            ip,
            base,
            conn,
            handshake_deadline_ns: AtomicU64::new(now + handshake_timeout.as_nanos() as u64),
            handshake_started_ns: now,
            payload: Slot::default(),
            reply: Slot::default(),
            budget,
            cut: AtomicBool::new(false),
        }
    }

    pub fn now_ns(&self) -> u64 {
        self.base.elapsed().as_nanos() as u64 + 1
    }

    fn slot(&self, t: Transfer) -> &Slot {
        match t {
            Transfer::Payload => &self.payload,
            Transfer::Reply => &self.reply,
        }
    }

    pub fn begin(&self, t: Transfer) {
        self.slot(t).begin(self.now_ns());
    }

    pub fn progress(&self, t: Transfer) {
        self.slot(t).progress(self.now_ns());
    }

    pub fn end(&self, t: Transfer) {
        self.slot(t).end();
    }

    /// The handshake succeeded: no deadline in transmission (idle clients are fine).
    pub fn negotiated(&self) {
        self.handshake_deadline_ns.store(0, Ordering::Relaxed);
    }

    pub fn in_handshake(&self) -> bool {
        self.handshake_deadline_ns.load(Ordering::Relaxed) != 0
    }

    pub fn handshake_started_ns(&self) -> u64 {
        self.handshake_started_ns
    }

    pub fn is_cut(&self) -> bool {
        self.cut.load(Ordering::Relaxed)
    }

    /// Ends the connection from outside: both directions of its socket are shut, so the
    /// threads blocked on it return, and its close (when they have) resets it, dropping what
    /// is still queued for the client. False if it was cut already.
    pub fn cut(&self) -> bool {
        if self.cut.swap(true, Ordering::SeqCst) {
            return false;
        }
        if let Some(conn) = &self.conn {
            conn.reset_on_close();
            conn.shutdown(Shutdown::Both);
        }
        true
    }

    /// Shuts the reading side (server shutdown: replies already computed still go out).
    pub fn shutdown_read(&self) {
        if let Some(conn) = &self.conn {
            conn.shutdown(Shutdown::Read);
        }
    }

    /// The deadline this connection has passed at `now_ns`, if any: the handshake's, or
    /// `io_timeout` on a payload or a reply under way.
    pub fn overdue(&self, now_ns: u64, io_timeout: Duration) -> Option<Cut> {
        let handshake = self.handshake_deadline_ns.load(Ordering::Relaxed);
        if handshake != 0 && now_ns >= handshake {
            return Some(Cut::HandshakeDeadline);
        }
        let limit = io_timeout.as_nanos() as u64;
        [Transfer::Payload, Transfer::Reply].into_iter().find_map(|t| {
            let (started, _) = self.slot(t).under_way()?;
            (now_ns.saturating_sub(started) >= limit).then_some(Cut::Deadline(t))
        })
    }

    /// Whether this connection holds budget while a transfer that depends on its client has
    /// not moved for `stall` (then it may be cut when others wait for budget).
    pub fn stalled(&self, now_ns: u64, stall: Duration) -> Option<Cut> {
        if self.budget.used() == 0 {
            return None;
        }
        let limit = stall.as_nanos() as u64;
        [Transfer::Payload, Transfer::Reply].into_iter().find_map(|t| {
            let (_, progress) = self.slot(t).under_way()?;
            (now_ns.saturating_sub(progress) >= limit).then_some(Cut::Stalled(t))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_are_on_the_whole_transfer_and_stalls_need_held_budget() {
        let budget = Arc::new(Budget::new(1 << 20));
        let w = Watch::new(1, None, Instant::now(), None, Duration::from_secs(30), budget.clone());
        let now = w.now_ns();
        assert_eq!(w.overdue(now, Duration::from_secs(1)), None);
        assert_eq!(w.overdue(now + 31_000_000_000, Duration::from_secs(1)), Some(Cut::HandshakeDeadline));
        w.negotiated();
        assert!(!w.in_handshake());
        w.begin(Transfer::Reply);
        let began = w.now_ns();
        // Progress does not move the deadline: it is for the whole reply.
        w.progress(Transfer::Reply);
        assert_eq!(w.overdue(began + 999_000_000, Duration::from_secs(1)), None);
        assert_eq!(
            w.overdue(began + 1_001_000_000, Duration::from_secs(1)),
            Some(Cut::Deadline(Transfer::Reply))
        );
        // Stalled only while the connection holds budget.
        assert_eq!(w.stalled(began + 10_000_000_000, Duration::from_secs(5)), None);
        assert!(budget.try_take(100));
        assert_eq!(
            w.stalled(began + 10_000_000_000, Duration::from_secs(5)),
            Some(Cut::Stalled(Transfer::Reply))
        );
        w.end(Transfer::Reply);
        assert_eq!(w.stalled(began + 10_000_000_000, Duration::from_secs(5)), None);
        assert!(w.cut() && !w.cut(), "cut once");
    }
}
