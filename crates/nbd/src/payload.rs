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
    /// where the range covers them, else into `lead` (whose buffer is reused). Whatever of the
    /// stream's next bytes is already there when the payload is complete lands in `spill`
    /// (without waiting for more); returns how many did. A peer that hangs up before the
    /// payload's last byte is an `UnexpectedEof` error.
    pub fn receive(
        r: &mut impl Read,
        offset: u64,
        length: usize,
        pool: Option<&PagePool>,
        mut lead: Vec<u8>,
        spill: &mut [u8],
    ) -> io::Result<(Payload, usize)> {
        let (lead_bytes, pages, trail_bytes) = match pool {
            Some(pool) => split(offset, length, pool.page_bytes()),
            None => (length, 0, 0),
        };
        lead.clear();
        lead.resize(lead_bytes, 0);
        let mut payload = Payload {
            offset,
            lead,
            pages: pool.map_or_else(Vec::new, |p| p.take(pages)),
            trail: vec![0u8; trail_bytes],
        };
        let mut slices: Vec<IoSliceMut> = std::iter::once(&mut payload.lead[..])
            .chain(payload.pages.iter_mut().map(|p| &mut p[..]))
            .chain(std::iter::once(&mut payload.trail[..]))
            .chain(std::iter::once(spill))
            .filter(|s| !s.is_empty())
            .map(IoSliceMut::new)
            .collect();
        let mut bufs = &mut slices[..];
        let mut got = 0usize;
        while got < length {
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
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        drop(slices);
        Ok((payload, got - length))
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
            let p =
                Payload::receive(&mut Trickle(&data, step), offset, len, Some(&pool), Vec::new(), &mut [])
                    .unwrap()
                    .0;
            assert_eq!(p.to_vec(), data[..len], "offset {offset} step {step}");
            assert_eq!(p.lead.len() + p.pages.len() * 4096 + p.trail.len(), len);
            pool.give(p.pages);
        }
        let flat =
            Payload::receive(&mut Trickle(&data, 999), 512, 9000, None, Vec::new(), &mut []).unwrap().0;
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
            Payload::receive(&mut &stream[..], 0, 8192, Some(&pool), Vec::new(), &mut spill).unwrap();
        assert_eq!((p.to_vec(), n, &spill[..n]), (stream[..8192].to_vec(), 8, &b"NEXTHEAD"[..]));
        // Nothing follows: the payload alone, no error for the missing header.
        let (_, n) =
            Payload::receive(&mut &stream[..8192], 0, 8192, Some(&pool), Vec::new(), &mut spill).unwrap();
        assert_eq!(n, 0);
        // A reader that hands out a byte at a time never runs past the payload.
        let (_, n) =
            Payload::receive(&mut Trickle(&stream, 1), 0, 8192, Some(&pool), Vec::new(), &mut spill).unwrap();
        assert_eq!(n, 0);
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
