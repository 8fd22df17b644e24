//! A WRITE's data as it comes off the wire, split at the store's page boundaries, and the pool
//! of pages it is received into.
//!
//! Why: copying each payload into the store was most of the serial work every connection
//! goes through (a `pwrite` into the memfd, about 90 % of the then device thread's samples
//! under nbdcopy). Received straight into whole pages by the connection's own thread, a
//! payload's pages move into the in-memory store by ownership under the drive's lock, and the
//! pages they replace go back to the pool for the next payload: the lock is held to move
//! pointers, and the only copy left is the kernel's, from the socket.

use std::io::{self, IoSliceMut, Read};
use std::sync::Mutex;

/// One page of the in-memory store.
pub type Page = Box<[u8]>;

/// Spare pages for payloads to be received into. Bounded, so that a burst of TRIMs gives its
/// pages back to the allocator instead of keeping them here.
pub struct PagePool {
    page_bytes: usize,
    keep: usize,
    free: Mutex<Vec<Page>>,
}

impl PagePool {
    /// Keeps at most `keep` spare pages of `page_bytes`.
    pub fn new(page_bytes: usize, keep: usize) -> PagePool {
        PagePool { page_bytes, keep, free: Mutex::new(Vec::new()) }
    }

    pub fn page_bytes(&self) -> usize {
        self.page_bytes
    }

    /// `n` pages: spare ones first, new (zeroed) ones for the rest. Their contents are
    /// whatever they last held; a receive overwrites them whole.
    pub fn take(&self, n: usize) -> Vec<Page> {
        let mut out = {
            let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
            let from = free.len().saturating_sub(n);
            free.split_off(from)
        };
        while out.len() < n {
            out.push(vec![0u8; self.page_bytes].into_boxed_slice());
        }
        out
    }

    /// Takes pages back (those over the bound are freed).
    pub fn give(&self, pages: impl IntoIterator<Item = Page>) {
        let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
        for page in pages {
            if free.len() >= self.keep {
                break;
            }
            if page.len() == self.page_bytes {
                free.push(page);
            }
        }
    }

    /// Spare pages held now.
    pub fn spare(&self) -> usize {
        self.free.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

/// A payload is received (and charged) in windows of at most this many bytes. Assumption:
/// large enough that a typical request (nbdcopy's 256 KiB) is one window, small enough that a
/// client that stops mid-payload holds little it has not sent.
pub const PAYLOAD_WINDOW_BYTES: usize = 1 << 20;

/// What [`Payload::receive`] tells its caller as the bytes come.
pub trait ReceiveHooks {
    /// The next `bytes` are about to be read (`first`: the payload's first window). May wait.
    fn window(&mut self, bytes: u64, first: bool) -> io::Result<()>;
    /// A read returned data.
    fn progress(&mut self);
}

/// No hooks: nothing charged or watched.
impl ReceiveHooks for () {
    fn window(&mut self, _: u64, _: bool) -> io::Result<()> {
        Ok(())
    }
    fn progress(&mut self) {}
}

/// The bytes of one WRITE at `offset`: `lead` up to the first page boundary, then whole
/// `pages`, then `trail`. A payload not received into pages has all its bytes in `lead`.
#[derive(Default)]
pub struct Payload {
    pub offset: u64,
    pub lead: Vec<u8>,
    pub pages: Vec<Page>,
    pub trail: Vec<u8>,
}

impl Payload {
    pub fn len(&self) -> u64 {
        (self.lead.len() + self.trail.len() + self.pages.iter().map(|p| p.len()).sum::<usize>()) as u64
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Reads `length` bytes of a WRITE at `offset` from `r`: into whole pages from `pool`
    /// where the range covers them, else into `lead` (whose buffer is reused). The bytes come
    /// in windows of at most [`PAYLOAD_WINDOW_BYTES`] (whole pages): `hooks.window` is told of
    /// each before it is read (the server charges it, and may wait there) and its pages are
    /// taken only then, so a client that declares a large WRITE and stops holds what it sent,
    /// not what it declared (issue 26). Whatever of the stream's next bytes is already there
    /// when the payload is complete lands in `spill` (without waiting for more); returns how
    /// many did. A peer that hangs up before the payload's last byte is an `UnexpectedEof`
    /// error.
    pub fn receive(
        r: &mut impl Read,
        offset: u64,
        length: usize,
        pool: Option<&PagePool>,
        mut lead: Vec<u8>,
        spill: &mut [u8],
        hooks: &mut dyn ReceiveHooks,
    ) -> io::Result<(Payload, usize)> {
        let page_bytes = pool.map_or(1, |p| p.page_bytes());
        let (lead_bytes, pages, trail_bytes) = match pool {
            Some(_) => split(offset, length, page_bytes),
            None => (length, 0, 0),
        };
        let window = PAYLOAD_WINDOW_BYTES.div_ceil(page_bytes) * page_bytes;
        lead.clear();
        let mut payload = Payload { offset, lead, pages: Vec::new(), trail: Vec::new() };
        let pages_end = lead_bytes + pages * page_bytes;
        let mut got = 0usize;
        let mut spilled = 0usize;
        while got < length {
            // Windows end on page boundaries: the first one after the lead and a window of
            // pages, then every window.
            let end = if pool.is_some() && got == 0 { lead_bytes + window } else { got + window }.min(length);
            hooks.window((end - got) as u64, got == 0)?;
            if got < lead_bytes {
                payload.lead.resize(end.min(lead_bytes), 0);
            }
            let (first_page, last_page) = (
                (got.max(lead_bytes) - lead_bytes) / page_bytes,
                (end.min(pages_end).max(lead_bytes) - lead_bytes) / page_bytes,
            );
            if last_page > first_page {
                payload.pages.extend(pool.map_or_else(Vec::new, |p| p.take(last_page - first_page)));
            }
            if end > pages_end {
                payload.trail.resize(trail_bytes, 0);
            }
            let last = end == length;
            let lead_range = got.min(lead_bytes)..end.min(lead_bytes);
            let trail_range = got.max(pages_end) - pages_end..end.max(pages_end) - pages_end;
            let mut slices: Vec<IoSliceMut> = std::iter::once(&mut payload.lead[lead_range])
                .chain(payload.pages[first_page..last_page].iter_mut().map(|p| &mut p[..]))
                .chain(std::iter::once(&mut payload.trail[trail_range]))
                .chain(std::iter::once(if last { &mut spill[..] } else { &mut [][..] }))
                .filter(|s| !s.is_empty())
                .map(IoSliceMut::new)
                .collect();
            let mut bufs = &mut slices[..];
            while got < end {
                match r.read_vectored(bufs) {
                    Ok(0) => {
                        return Err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            format!("peer vanished after {got} of {length} bytes of write data"),
                        ))
                    }
                    Ok(n) => {
                        got += n;
                        IoSliceMut::advance_slices(&mut bufs, n);
                        hooks.progress();
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            if got > end {
                spilled = got - end;
                got = end;
            }
        }
        Ok((payload, spilled))
    }

    /// The bytes in order, as one buffer (for stores that do not take pages).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len() as usize);
        out.extend_from_slice(&self.lead);
        for p in &self.pages {
            out.extend_from_slice(p);
        }
        out.extend_from_slice(&self.trail);
        out
    }
}

/// How `length` bytes at `offset` split into bytes before the first page boundary, whole
/// pages and bytes after the last boundary.
pub fn split(offset: u64, length: usize, page_bytes: usize) -> (usize, usize, usize) {
    let pb = page_bytes as u64;
    let end = offset + length as u64;
    let first_boundary = offset.div_ceil(pb) * pb;
    let last_boundary = end / pb * pb;
    if last_boundary <= first_boundary {
        return (length, 0, 0);
    }
    let lead = (first_boundary - offset) as usize;
    let pages = ((last_boundary - first_boundary) / pb) as usize;
    (lead, pages, (end - last_boundary) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_at_page_boundaries() {
        assert_eq!(split(0, 8192, 4096), (0, 2, 0));
        assert_eq!(split(512, 8192, 4096), (3584, 1, 512));
        assert_eq!(split(512, 1024, 4096), (1024, 0, 0));
        assert_eq!(split(4096, 100, 4096), (100, 0, 0));
        assert_eq!(split(4000, 200, 4096), (200, 0, 0));
        assert_eq!(split(0, 0, 4096), (0, 0, 0));
    }

    /// A reader that hands out at most `step` bytes per call, to exercise partial reads
    /// across slice boundaries.
    struct Trickle<'a>(&'a [u8], usize);
    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(self.1).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn a_payload_reads_back_in_order_whatever_the_read_sizes() {
        let pool = PagePool::new(4096, 8);
        let data: Vec<u8> = (0..20_000u32).map(|i| (i * 7 % 251) as u8).collect();
        for (offset, step) in [(0u64, 1usize), (512, 3000), (4096, 4096), (100, 70_000)] {
            let len = data.len() - 300;
            let p = Payload::receive(
                &mut Trickle(&data, step),
                offset,
                len,
                Some(&pool),
                Vec::new(),
                &mut [],
                &mut (),
            )
            .unwrap()
            .0;
            assert_eq!(p.to_vec(), data[..len], "offset {offset} step {step}");
            assert_eq!(p.lead.len() + p.pages.len() * 4096 + p.trail.len(), len);
            pool.give(p.pages);
        }
        let flat = Payload::receive(&mut Trickle(&data, 999), 512, 9000, None, Vec::new(), &mut [], &mut ())
            .unwrap()
            .0;
        assert!(flat.pages.is_empty() && flat.lead == data[..9000]);
    }

    #[test]
    fn bytes_after_the_payload_land_in_the_spill_without_waiting_for_more() {
        let pool = PagePool::new(4096, 8);
        let mut stream: Vec<u8> = (0..8192u32).map(|i| (i % 199) as u8).collect();
        stream.extend_from_slice(b"NEXTHEAD");
        let mut spill = [0u8; 28];
        // All 8 following bytes are there: they arrive with the payload.
        let (p, n) =
            Payload::receive(&mut &stream[..], 0, 8192, Some(&pool), Vec::new(), &mut spill, &mut ())
                .unwrap();
        assert_eq!((p.to_vec(), n, &spill[..n]), (stream[..8192].to_vec(), 8, &b"NEXTHEAD"[..]));
        // Nothing follows: the payload alone, no error for the missing header.
        let (_, n) =
            Payload::receive(&mut &stream[..8192], 0, 8192, Some(&pool), Vec::new(), &mut spill, &mut ())
                .unwrap();
        assert_eq!(n, 0);
        // A reader that hands out a byte at a time never runs past the payload.
        let (_, n) =
            Payload::receive(&mut Trickle(&stream, 1), 0, 8192, Some(&pool), Vec::new(), &mut spill, &mut ())
                .unwrap();
        assert_eq!(n, 0);
    }

    /// Records the windows and counts the reads.
    #[derive(Default)]
    struct Windows(Vec<(u64, bool)>, usize);
    impl ReceiveHooks for Windows {
        fn window(&mut self, bytes: u64, first: bool) -> io::Result<()> {
            self.0.push((bytes, first));
            Ok(())
        }
        fn progress(&mut self) {
            self.1 += 1;
        }
    }

    #[test]
    fn a_large_payload_comes_in_windows_of_whole_pages() {
        // Issue 26: pages for the whole declared length were taken before any byte arrived.
        let pool = PagePool::new(4096, 8);
        let window = PAYLOAD_WINDOW_BYTES;
        let len = 2 * window + 5000;
        let data: Vec<u8> = (0..len + 8).map(|i| (i % 241) as u8).collect();
        let mut spill = [0u8; 28];
        let mut w = Windows::default();
        let (p, spilled) =
            Payload::receive(&mut &data[..], 512, len, Some(&pool), Vec::new(), &mut spill, &mut w).unwrap();
        assert_eq!(p.to_vec(), data[..len]);
        assert_eq!(spilled, 8);
        // The lead (to the first page boundary) rides with the first window of pages.
        let lead = 4096 - 512;
        let expected = vec![
            ((lead + window) as u64, true),
            (window as u64, false),
            ((len - lead - 2 * window) as u64, false),
        ];
        assert_eq!(w.0, expected);
        assert!(w.1 >= 3, "progress after each read");
        // Without a pool the bytes land in the lead, still a window at a time.
        let mut w = Windows::default();
        let flat = Payload::receive(&mut &data[..], 0, len, None, Vec::new(), &mut [], &mut w).unwrap().0;
        assert_eq!(flat.lead, data[..len]);
        assert_eq!(w.0.iter().map(|x| x.0).collect::<Vec<_>>(), vec![window as u64, window as u64, 5000]);
    }

    /// A reader that hands out `n` bytes, then fails as a stalled socket would.
    struct Stops(usize);
    impl Read for Stops {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.0 == 0 {
                return Err(io::Error::new(io::ErrorKind::TimedOut, "stalled"));
            }
            let n = buf.len().min(self.0);
            buf[..n].fill(1);
            self.0 -= n;
            Ok(n)
        }
    }

    #[test]
    fn a_declared_payload_that_stops_takes_pages_only_for_the_windows_begun() {
        let pool = PagePool::new(4096, 0);
        let mut w = Windows::default();
        let r = Payload::receive(&mut Stops(100), 0, 32 << 20, Some(&pool), Vec::new(), &mut [], &mut w);
        assert!(r.is_err());
        assert_eq!(w.0, vec![(PAYLOAD_WINDOW_BYTES as u64, true)], "one window charged, not 32 MiB");
    }

    #[test]
    fn a_short_payload_is_an_error() {
        let e = Payload::receive(
            &mut &[1u8; 100][..],
            0,
            8192,
            Some(&PagePool::new(4096, 4)),
            Vec::new(),
            &mut [],
            &mut (),
        )
        .err()
        .unwrap();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        assert!(e.to_string().contains("100 of 8192"), "{e}");
    }

    #[test]
    fn the_pool_keeps_a_bounded_number_of_pages() {
        let pool = PagePool::new(4096, 3);
        let pages = pool.take(5);
        assert_eq!(pages.len(), 5);
        pool.give(pages);
        assert_eq!(pool.spare(), 3);
        assert_eq!(pool.take(2).len(), 2);
        assert_eq!(pool.spare(), 1);
        pool.give(vec![vec![0u8; 512].into_boxed_slice()]);
        assert_eq!(pool.spare(), 1, "a page of another size is not kept");
    }
}
