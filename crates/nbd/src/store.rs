//! Where the exported bytes live. The device model carries only a tag per page, so the real
//! data sits beside it: in memory (a sparse table of pages) or in a backing file. Trimmed and
//! never-written ranges read as zeros in both.
//!
//! The in-memory store counts its pages against `--memory-max` before it allocates any, so a
//! full memory is an `ENOSPC` for the write, not an allocation failure that aborts the process
//! (issue 13), and TRIM and WRITE_ZEROES drop the pages they cover. Dropped pages go to the
//! allocator (glibc's), which reuses them for the next writes but may keep them from the kernel:
//! the process's RSS can stay at its peak after a TRIM while [`Store::resident_bytes`], the
//! data the store holds, falls. The backing file punches holes (`fallocate(PUNCH_HOLE)`).

use crate::payload::{Page, PagePool, Payload};
use rustix::fs::FallocateFlags;
use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;
use std::sync::Arc;

/// Byte storage of the export. Callers pass ranges already checked against `size_bytes`.
pub trait Store: Send {
    fn size_bytes(&self) -> u64;
    fn read(&self, offset: u64, buf: &mut [u8]) -> io::Result<()>;
    /// Fails with `ENOSPC` (and changes nothing) when the data would exceed the memory limit.
    fn write(&mut self, offset: u64, data: &[u8]) -> io::Result<()>;
    /// Writes a payload as received; a store that takes pages ([`Store::page_pool`]) moves
    /// them in instead of copying (and leaves the payload without them).
    fn write_payload(&mut self, payload: &mut Payload) -> io::Result<()> {
        if payload.pages.is_empty() && payload.trail.is_empty() {
            self.write(payload.offset, &payload.lead)
        } else {
            self.write(payload.offset, &payload.to_vec())
        }
    }
    /// Where WRITE payloads should be received, if this store takes whole pages.
    fn page_pool(&self) -> Option<Arc<PagePool>> {
        None
    }
    /// Makes the range read as zeros, freeing what it can.
    fn zero(&mut self, offset: u64, length: u64) -> io::Result<()>;
    /// Puts back the `page_bytes` at `offset` a power cut takes back: `saved` (its bytes before
    /// the lost writes), or zeros. The saved copy is already in memory, so a store that can
    /// take it as it is does so even past its memory limit: a power cut must not fail
    /// halfway for room (issue 26).
    fn restore_page(&mut self, offset: u64, page_bytes: u64, saved: Option<Box<[u8]>>) -> io::Result<()> {
        match saved {
            Some(bytes) => self.write(offset, &bytes),
            None => self.zero(offset, page_bytes),
        }
    }
    /// Makes everything written so far durable (a no-op in memory).
    fn flush(&mut self) -> io::Result<()>;
    /// Bytes of storage the data occupies (allocated blocks: holes cost nothing).
    fn resident_bytes(&self) -> u64;

    /// Consecutive extents from `offset`, as (bytes, is a hole), covering at most `length`
    /// bytes in at most `max_extents` pieces. A hole reads as zeros and holds no data.
    fn extents(&self, offset: u64, length: u64, max_extents: usize) -> io::Result<Vec<(u64, bool)>>;
}

/// Appends an extent, merging it with the last one when of the same kind.
fn push_extent(out: &mut Vec<(u64, bool)>, bytes: u64, hole: bool) {
    match out.last_mut() {
        Some(last) if last.1 == hole => last.0 += bytes,
        _ => out.push((bytes, hole)),
    }
}

/// Extents of a file from SEEK_DATA / SEEK_HOLE.
fn file_extents(file: &File, offset: u64, length: u64, max_extents: usize) -> io::Result<Vec<(u64, bool)>> {
    use rustix::fs::SeekFrom;
    let end = offset + length;
    let mut out = Vec::new();
    let mut at = offset;
    while at < end && out.len() < max_extents {
        let data = match rustix::fs::seek(file, SeekFrom::Data(at)) {
            Ok(d) => d.min(end),
            Err(rustix::io::Errno::NXIO) => end, // no data past `at`
            Err(e) => return Err(e.into()),
        };
        if data > at {
            push_extent(&mut out, data - at, true);
            at = data;
            continue;
        }
        let hole = rustix::fs::seek(file, SeekFrom::Hole(at))?.min(end);
        push_extent(&mut out, hole.max(at + 1) - at, false);
        at = hole.max(at + 1);
    }
    Ok(out)
}

fn no_space(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::StorageFull, message)
}

/// Zeros `[offset, offset+length)` of `file`: a hole where the file system can punch one (whole
/// blocks are freed, partial ones zeroed by the kernel), else written zeros.
fn punch(file: &File, offset: u64, length: u64) -> io::Result<()> {
    if length == 0 {
        return Ok(());
    }
    match rustix::fs::fallocate(file, FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE, offset, length)
    {
        Ok(()) => Ok(()),
        Err(e) if e == rustix::io::Errno::OPNOTSUPP || e == rustix::io::Errno::NOSYS => {
            let zeros = vec![0u8; length.min(1 << 20) as usize];
            let (mut at, end) = (offset, offset + length);
            while at < end {
                let n = (end - at).min(zeros.len() as u64) as usize;
                file.write_all_at(&zeros[..n], at)?;
                at += n as u64;
            }
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}

/// Writes `data` at `offset`, turning whole all-zero pages into holes (mkfs and zeroing tools
/// write many) so that they cost no storage.
fn write_sparse(file: &File, page: u64, offset: u64, data: &[u8]) -> io::Result<()> {
    let mut at = 0usize;
    while at < data.len() {
        let pos = offset + at as u64;
        let page_end = ((pos / page + 1) * page - offset) as usize;
        let end = page_end.min(data.len());
        let piece = &data[at..end];
        if piece.len() as u64 == page && piece.iter().all(|&b| b == 0) {
            punch(file, pos, page)?;
        } else {
            // Extend the run over the following pages that are not all zeros.
            let mut run_end = end;
            while run_end < data.len() {
                let next = (run_end + page as usize).min(data.len());
                if next - run_end == page as usize && data[run_end..next].iter().all(|&b| b == 0) {
                    break;
                }
                run_end = next;
            }
            file.write_all_at(&data[at..run_end], pos)?;
            at = run_end;
            continue;
        }
        at = end;
    }
    Ok(())
}

/// Pages per leaf of the in-memory store's page table: at 4 KiB pages a leaf maps 16 MiB and
/// costs 64 KiB, and an export costs 8 bytes per 16 MiB until written (1 MiB for 2 TiB).
const LEAF_PAGES: u64 = 4096;
/// Spare pages the store keeps for receiving payloads. Assumption: nbdcopy's default of four
/// connections with a 256 KiB request each in flight needs 256 pages; eight times that covers
/// deeper queues, and a TRIM frees anything beyond it at once.
const POOL_PAGES: usize = 2048;

/// Whether every byte is zero (in 64-byte blocks the compiler vectorizes).
fn is_zero(bytes: &[u8]) -> bool {
    let (blocks, rest) = bytes.as_chunks::<64>();
    blocks.iter().all(|b| b.iter().fold(0u8, |a, &x| a | x) == 0) && rest.iter().all(|&x| x == 0)
}

/// The in-memory store: a two-level table of pages, allocated on first write, with a limit on
/// the memory its pages may take. Pages are owned boxes so that a payload received into pages
/// ([`Payload`]) moves in without a copy; the pages it replaces and the pages TRIM frees go to
/// a bounded [`PagePool`] for the next payloads, and beyond its bound back to the allocator.
///
/// (Until issue 15 this was a memfd written with `pwrite`: about 90 % of the device thread's
/// time under nbdcopy. A page table of owned pages keeps what the memfd gave, namely memory
/// returned at TRIM and `--memory-max` as an `ENOSPC` instead of an abort, because the limit is
/// counted here before anything is allocated.)
pub struct SparseStore {
    size_bytes: u64,
    page_bytes: u64,
    leaves: Vec<Option<Box<[Option<Page>]>>>,
    leaves_held: u64,
    allocated_pages: u64,
    memory_max_pages: u64,
    pool: Arc<PagePool>,
}

impl SparseStore {
    /// `page_bytes` must be a power of two (the device's page size is the natural choice);
    /// `memory_max_bytes` bounds the data held (rounded down to whole pages).
    pub fn new(size_bytes: u64, page_bytes: u64, memory_max_bytes: u64) -> io::Result<SparseStore> {
        assert!(page_bytes.is_power_of_two(), "store: page size {page_bytes} is not a power of two");
        let pages = size_bytes.div_ceil(page_bytes);
        Ok(SparseStore {
            size_bytes,
            page_bytes,
            leaves: (0..pages.div_ceil(LEAF_PAGES)).map(|_| None).collect(),
            leaves_held: 0,
            allocated_pages: 0,
            memory_max_pages: memory_max_bytes / page_bytes,
            pool: Arc::new(PagePool::new(page_bytes as usize, POOL_PAGES)),
        })
    }

    /// Pages holding data (each costs `page_bytes` of memory).
    pub fn pages_allocated(&self) -> u64 {
        self.allocated_pages
    }

    fn page(&self, p: u64) -> Option<&Page> {
        self.leaves[(p / LEAF_PAGES) as usize]
            .as_ref()
            .and_then(|leaf| leaf[(p % LEAF_PAGES) as usize].as_ref())
    }

    fn page_mut(&mut self, p: u64) -> Option<&mut Page> {
        self.leaves[(p / LEAF_PAGES) as usize]
            .as_mut()
            .and_then(|leaf| leaf[(p % LEAF_PAGES) as usize].as_mut())
    }

    /// Puts `page` (or a hole) at page `p`; returns what was there.
    fn put(&mut self, p: u64, page: Option<Page>) -> Option<Page> {
        let leaf = &mut self.leaves[(p / LEAF_PAGES) as usize];
        if leaf.is_none() {
            // A hole where there is no leaf is already a hole.
            page.as_ref()?;
            *leaf = Some(vec![None; LEAF_PAGES as usize].into_boxed_slice());
            self.leaves_held += 1;
        }
        let slot = &mut leaf.as_mut().expect("leaf made above")[(p % LEAF_PAGES) as usize];
        let old = std::mem::replace(slot, page);
        match (old.is_some(), slot.is_some()) {
            (false, true) => self.allocated_pages += 1,
            (true, false) => self.allocated_pages -= 1,
            _ => {}
        }
        old
    }

    /// Pages that writing `bytes` at `at` would newly fill: holes that get a non-zero byte.
    fn new_pages_for(&self, at: u64, bytes: &[u8]) -> u64 {
        let pb = self.page_bytes;
        let mut n = 0;
        let mut done = 0usize;
        while done < bytes.len() {
            let pos = at + done as u64;
            let piece = ((pb - pos % pb) as usize).min(bytes.len() - done);
            if self.page(pos / pb).is_none() && !is_zero(&bytes[done..done + piece]) {
                n += 1;
            }
            done += piece;
        }
        n
    }

    /// Copies `bytes` in at `at`, page by page. A page the bytes cover whole with zeros becomes
    /// a hole (mkfs and zeroing tools write many), zeros into a hole leave it one.
    fn copy_in(&mut self, at: u64, bytes: &[u8]) {
        let pb = self.page_bytes;
        let mut done = 0usize;
        while done < bytes.len() {
            let pos = at + done as u64;
            let (p, within) = (pos / pb, (pos % pb) as usize);
            let piece = &bytes[done..done + (pb as usize - within).min(bytes.len() - done)];
            let zeros = is_zero(piece);
            if piece.len() as u64 == pb && zeros {
                let old = self.put(p, None);
                self.pool.give(old);
            } else if let Some(page) = self.page_mut(p) {
                page[within..within + piece.len()].copy_from_slice(piece);
            } else if !zeros {
                let mut page = self.pool.take(1).pop().expect("the pool hands out what it is asked");
                page[..within].fill(0);
                page[within..within + piece.len()].copy_from_slice(piece);
                page[within + piece.len()..].fill(0);
                self.put(p, Some(page));
            }
            done += piece.len();
        }
    }

    /// Writes `lead` at `offset`, then whole `pages`, then `trail`; refuses (changing nothing)
    /// when the data would exceed the memory limit.
    fn write_parts(&mut self, offset: u64, lead: &[u8], pages: Vec<Page>, trail: &[u8]) -> io::Result<()> {
        let pb = self.page_bytes;
        let pages_at = offset + lead.len() as u64;
        debug_assert!(
            pages.is_empty() || pages_at.is_multiple_of(pb),
            "whole pages start on a page boundary"
        );
        let trail_at = pages_at + pages.len() as u64 * pb;
        let first = pages_at / pb;
        let new_pages = self.new_pages_for(offset, lead)
            + self.new_pages_for(trail_at, trail)
            + (first..).zip(&pages).filter(|&(p, page)| self.page(p).is_none() && !is_zero(page)).count()
                as u64;
        if self.allocated_pages + new_pages > self.memory_max_pages {
            self.pool.give(pages);
            return Err(no_space(format!(
                "the in-memory store is full: {} of {} pages (--memory-max) in use, this write needs {new_pages} more",
                self.allocated_pages, self.memory_max_pages
            )));
        }
        self.copy_in(offset, lead);
        let mut spare = Vec::new();
        for (p, page) in (first..).zip(pages) {
            if is_zero(&page) {
                spare.extend(self.put(p, None));
                spare.push(page);
            } else {
                spare.extend(self.put(p, Some(page)));
            }
        }
        self.pool.give(spare);
        self.copy_in(trail_at, trail);
        Ok(())
    }
}

impl Store for SparseStore {
    fn size_bytes(&self) -> u64 {
        self.size_bytes
    }

    fn read(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let pb = self.page_bytes;
        let mut done = 0usize;
        while done < buf.len() {
            let pos = offset + done as u64;
            let within = (pos % pb) as usize;
            let n = (pb as usize - within).min(buf.len() - done);
            match self.page(pos / pb) {
                Some(page) => buf[done..done + n].copy_from_slice(&page[within..within + n]),
                None => buf[done..done + n].fill(0),
            }
            done += n;
        }
        Ok(())
    }

    fn write(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.write_parts(offset, data, Vec::new(), &[])
    }

    fn write_payload(&mut self, payload: &mut Payload) -> io::Result<()> {
        let pages = std::mem::take(&mut payload.pages);
        self.write_parts(payload.offset, &payload.lead, pages, &payload.trail)
    }

    fn page_pool(&self) -> Option<Arc<PagePool>> {
        Some(self.pool.clone())
    }

    fn restore_page(&mut self, offset: u64, page_bytes: u64, saved: Option<Box<[u8]>>) -> io::Result<()> {
        match saved {
            Some(bytes)
                if page_bytes == self.page_bytes
                    && offset.is_multiple_of(page_bytes)
                    && bytes.len() as u64 == page_bytes =>
            {
                // Moved in, not counted against the limit (the copy is already in memory).
                let old = self.put(offset / page_bytes, Some(bytes));
                self.pool.give(old);
                Ok(())
            }
            Some(bytes) => {
                let limit = std::mem::replace(&mut self.memory_max_pages, u64::MAX);
                let written = self.write(offset, &bytes);
                self.memory_max_pages = limit;
                written
            }
            None => self.zero(offset, page_bytes),
        }
    }

    fn zero(&mut self, offset: u64, length: u64) -> io::Result<()> {
        let (pb, end) = (self.page_bytes, offset + length);
        let mut at = offset;
        while at < end {
            let p = at / pb;
            let within = at % pb;
            let n = (pb - within).min(end - at);
            if n == pb && p.is_multiple_of(LEAF_PAGES) && at + LEAF_PAGES * pb <= end {
                // A whole leaf: drop it, pages and table.
                let leaf = (p / LEAF_PAGES) as usize;
                if let Some(pages) = self.leaves[leaf].take() {
                    self.leaves_held -= 1;
                    let held: Vec<Page> = pages.into_vec().into_iter().flatten().collect();
                    self.allocated_pages -= held.len() as u64;
                    self.pool.give(held);
                }
                at += LEAF_PAGES * pb;
                continue;
            }
            if n == pb {
                let old = self.put(p, None);
                self.pool.give(old);
            } else if let Some(page) = self.page_mut(p) {
                page[within as usize..(within + n) as usize].fill(0);
            }
            at += n;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }

    /// The data pages held and the page table (the pool's spare pages are receive buffers,
    /// bounded by [`POOL_PAGES`], and not counted).
    fn resident_bytes(&self) -> u64 {
        self.allocated_pages * self.page_bytes
            + self.leaves_held * LEAF_PAGES * std::mem::size_of::<Option<Page>>() as u64
    }

    fn extents(&self, offset: u64, length: u64, max_extents: usize) -> io::Result<Vec<(u64, bool)>> {
        let (pb, end) = (self.page_bytes, offset + length);
        let mut out: Vec<(u64, bool)> = Vec::new();
        let mut at = offset;
        while at < end {
            let p = at / pb;
            let unwritten_leaf = self.leaves[(p / LEAF_PAGES) as usize].is_none();
            let span_end = if unwritten_leaf { (p / LEAF_PAGES + 1) * LEAF_PAGES * pb } else { (p + 1) * pb };
            let span_end = span_end.min(end);
            let hole = unwritten_leaf || self.page(p).is_none();
            if out.len() == max_extents && out.last().is_some_and(|l| l.1 != hole) {
                break;
            }
            push_extent(&mut out, span_end - at, hole);
            at = span_end;
        }
        Ok(out)
    }
}

/// A store backed by a regular file of exactly the export's size.
pub struct FileStore {
    file: File,
    size_bytes: u64,
    page_bytes: u64,
}

impl FileStore {
    /// Opens (or creates) `path`. An existing file of another size is refused unless `resize`:
    /// shrinking would silently drop data, growing would hide a configuration mistake.
    pub fn open(path: &Path, size_bytes: u64, page_bytes: u64, resize: bool) -> io::Result<FileStore> {
        let file =
            std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)?;
        let meta = file.metadata()?;
        if !meta.file_type().is_file() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a regular file"));
        }
        let existing = meta.len();
        if existing != size_bytes {
            if existing != 0 && !resize {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "the file holds {existing} bytes but the export is {size_bytes} bytes; pass --resize to {} it (data past the new end is lost), or change the config",
                        if existing > size_bytes { "shrink" } else { "grow" }
                    ),
                ));
            }
            file.set_len(size_bytes)?;
        }
        Ok(FileStore { file, size_bytes, page_bytes: page_bytes.max(512) })
    }
}

impl Store for FileStore {
    fn size_bytes(&self) -> u64 {
        self.size_bytes
    }

    fn read(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.file.read_exact_at(buf, offset)
    }

    fn write(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        write_sparse(&self.file, self.page_bytes, offset, data)
    }

    fn zero(&mut self, offset: u64, length: u64) -> io::Result<()> {
        punch(&self.file, offset, length)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn resident_bytes(&self) -> u64 {
        self.file.metadata().map_or(0, |m| m.blocks() * 512)
    }

    fn extents(&self, offset: u64, length: u64, max_extents: usize) -> io::Result<Vec<(u64, bool)>> {
        file_extents(&self.file, offset, length, max_extents)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// Random writes, zeroings and reads against a flat `Vec` reference.
    fn against_reference(store: &mut dyn Store, seed: u64) {
        let size = store.size_bytes() as usize;
        let mut reference = vec![0u8; size];
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        for step in 0..2000 {
            let offset = rng.gen_range(0..size);
            let length = rng.gen_range(0..=(size - offset).min(20_000));
            match rng.gen_range(0..4) {
                0 | 1 => {
                    let fill: u8 = if rng.gen_bool(0.2) { 0 } else { rng.gen() };
                    let data: Vec<u8> = (0..length).map(|i| fill.wrapping_add(i as u8)).collect();
                    let data = if rng.gen_bool(0.1) { vec![0u8; length] } else { data };
                    store.write(offset as u64, &data).unwrap();
                    reference[offset..offset + length].copy_from_slice(&data);
                }
                2 => {
                    store.zero(offset as u64, length as u64).unwrap();
                    reference[offset..offset + length].fill(0);
                }
                _ => {
                    let mut buf = vec![0xeeu8; length];
                    store.read(offset as u64, &mut buf).unwrap();
                    assert!(
                        buf == reference[offset..offset + length],
                        "seed {seed} step {step}: read {offset}+{length} differs"
                    );
                }
            }
        }
        let mut all = vec![0u8; size];
        store.read(0, &mut all).unwrap();
        assert!(all == reference, "seed {seed}: final contents differ");
    }

    fn temp(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("trimlab-nbd-store-{name}-{}", std::process::id()))
    }

    #[test]
    fn sparse_store_matches_a_flat_reference_and_counts_its_pages() {
        for seed in 0..8 {
            let mut s = SparseStore::new(256 << 10, 4096, u64::MAX).unwrap();
            against_reference(&mut s, seed);
            // The page count agrees with the pages that hold any non-zero byte or were
            // written partly (a superset is allowed only for partly written pages).
            let mut all = vec![0u8; 256 << 10];
            s.read(0, &mut all).unwrap();
            let nonzero = all.chunks(4096).filter(|c| c.iter().any(|&b| b != 0)).count() as u64;
            assert!(s.pages_allocated() >= nonzero, "seed {seed}");
        }
    }

    #[test]
    fn file_store_matches_a_flat_reference() {
        let path = temp("ref");
        let _ = std::fs::remove_file(&path);
        let mut store = FileStore::open(&path, 128 << 10, 4096, false).unwrap();
        against_reference(&mut store, 1);
        drop(store);
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn trim_and_zero_writes_return_memory() {
        // Issue 13 item 12: memory never shrank after TRIM / WRITE_ZEROES.
        let mut s = SparseStore::new(64 << 20, 4096, u64::MAX).unwrap();
        s.write(0, &vec![7u8; 32 << 20]).unwrap();
        assert_eq!(s.pages_allocated(), 8192);
        assert!(s.resident_bytes() >= 32 << 20, "{}", s.resident_bytes());
        s.zero(0, 16 << 20).unwrap();
        s.write(16 << 20, &vec![0u8; 8 << 20]).unwrap();
        assert_eq!(s.pages_allocated(), 2048);
        let resident = s.resident_bytes();
        // 8 MiB of data and the one leaf of the page table that maps it.
        assert!(resident <= (8 << 20) + (64 << 10), "freed pages went back: {resident} bytes still held");
        let mut back = vec![1u8; 32 << 20];
        s.read(0, &mut back).unwrap();
        assert!(back[..24 << 20].iter().all(|&b| b == 0) && back[24 << 20..].iter().all(|&b| b == 7));
    }

    #[test]
    fn received_pages_move_into_the_store_and_replaced_ones_go_to_the_pool() {
        let mut s = SparseStore::new(1 << 20, 4096, u64::MAX).unwrap();
        let pool = s.page_pool().unwrap();
        let data: Vec<u8> = (0..3 * 4096 + 1000).map(|i| (i % 253) as u8 + 1).collect();
        let receive = |offset| {
            Payload::receive(&mut &data[..], offset, data.len(), Some(&pool), Vec::new(), &mut [], &mut ())
                .unwrap()
                .0
        };
        let mut p = receive(512);
        assert_eq!((p.lead.len(), p.pages.len(), p.trail.len()), (3584, 2, 1512));
        let moved: Vec<*const u8> = p.pages.iter().map(|pg| pg.as_ptr()).collect();
        s.write_payload(&mut p).unwrap();
        assert!(p.pages.is_empty(), "the store took the pages");
        assert_eq!(s.page(1).unwrap().as_ptr(), moved[0], "moved, not copied");
        assert_eq!(s.pages_allocated(), 4);
        let mut back = vec![0u8; data.len()];
        s.read(512, &mut back).unwrap();
        assert!(back == data);
        // Overwriting the same range hands the two replaced pages to the pool.
        let spare = pool.spare();
        s.write_payload(&mut receive(512)).unwrap();
        assert_eq!(pool.spare(), spare + 2);
        // Whole zero pages in a payload become holes.
        let zeros = vec![0u8; 8192];
        let mut z = Payload::receive(&mut &zeros[..], 4096, 8192, Some(&pool), Vec::new(), &mut [], &mut ())
            .unwrap()
            .0;
        s.write_payload(&mut z).unwrap();
        assert_eq!(s.pages_allocated(), 2);
        assert_eq!(
            s.extents(0, 5 * 4096, 8).unwrap(),
            vec![(4096, false), (8192, true), (4096, false), (4096, true)]
        );
    }

    #[test]
    fn a_full_memory_store_refuses_payloads_and_keeps_its_data() {
        let mut s = SparseStore::new(1 << 20, 4096, 8 << 10).unwrap();
        let pool = s.page_pool().unwrap();
        let data = vec![5u8; 12288];
        let mut p =
            Payload::receive(&mut &data[..], 0, data.len(), Some(&pool), Vec::new(), &mut [], &mut ())
                .unwrap()
                .0;
        let e = s.write_payload(&mut p).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::StorageFull, "{e}");
        assert_eq!(s.pages_allocated(), 0);
        assert_eq!(s.resident_bytes(), 0);
    }

    #[test]
    fn a_full_memory_store_refuses_writes_and_keeps_its_data() {
        // Issue 13 item 4: a full store aborted the process.
        let mut s = SparseStore::new(1 << 20, 4096, 16 << 10).unwrap();
        s.write(0, &[1u8; 12288]).unwrap();
        let e = s.write(65536, &[2u8; 8192]).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::StorageFull, "{e}");
        assert!(e.to_string().contains("--memory-max"), "{e}");
        // Nothing of the refused write landed; rewrites, zero pages and trims still work.
        let mut back = vec![9u8; 8192];
        s.read(65536, &mut back).unwrap();
        assert!(back.iter().all(|&b| b == 0));
        s.write(0, &[3u8; 4096]).unwrap();
        s.write(8192, &[0u8; 4096]).unwrap();
        assert_eq!(s.pages_allocated(), 2);
        s.write(65536, &[2u8; 8192]).unwrap();
        let mut back = vec![0u8; 4096];
        s.read(4096, &mut back).unwrap();
        assert_eq!(back, vec![1u8; 4096]);
    }

    #[test]
    fn extents_show_the_holes_trim_leaves() {
        let path = temp("extents");
        let _ = std::fs::remove_file(&path);
        let mut f = FileStore::open(&path, 1 << 20, 4096, false).unwrap();
        let mut m = SparseStore::new(1 << 20, 4096, u64::MAX).unwrap();
        for s in [&mut f as &mut dyn Store, &mut m] {
            s.write(0, &[1u8; 256 << 10]).unwrap();
            s.zero(64 << 10, 64 << 10).unwrap();
            let e = s.extents(0, 1 << 20, 16).unwrap();
            // A file system may allocate in larger units than 4 KiB; the memory store is exact.
            assert_eq!(e.iter().map(|x| x.0).sum::<u64>(), 1 << 20, "{e:?}");
            assert!(!e[0].1 && e.iter().any(|x| x.1), "{e:?}");
            assert_eq!(s.extents(0, 1 << 20, 1).unwrap().len(), 1);
            assert_eq!(s.extents(8192, 100, 4).unwrap(), vec![(100, false)]);
        }
        assert_eq!(
            m.extents(0, 1 << 20, 16).unwrap(),
            vec![(64 << 10, false), (64 << 10, true), (128 << 10, false), (768 << 10, true)]
        );
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_backing_file_of_another_size_is_refused_unless_resized() {
        // Issue 13 item 7: a smaller config silently truncated the file.
        let path = temp("size");
        std::fs::write(&path, vec![5u8; 256 << 10]).unwrap();
        let e = FileStore::open(&path, 128 << 10, 4096, false).err().unwrap();
        assert!(e.to_string().contains("262144 bytes") && e.to_string().contains("--resize"), "{e}");
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 256 << 10, "the file is untouched");
        FileStore::open(&path, 256 << 10, 4096, false).unwrap();
        FileStore::open(&path, 128 << 10, 4096, true).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 128 << 10);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn trim_punches_holes_in_the_backing_file() {
        // Issue 13 item 8: a TRIM wrote zeros, growing the file on disk.
        let path = temp("holes");
        let _ = std::fs::remove_file(&path);
        let mut f = FileStore::open(&path, 64 << 20, 4096, false).unwrap();
        assert!(f.resident_bytes() < 1 << 20, "a new file is sparse");
        f.zero(0, 64 << 20).unwrap();
        assert!(f.resident_bytes() < 1 << 20, "zeroing an empty file allocates nothing");
        f.write(0, &vec![4u8; 16 << 20]).unwrap();
        assert!(f.resident_bytes() >= 16 << 20);
        f.zero(0, 16 << 20).unwrap();
        assert!(f.resident_bytes() < 1 << 20, "{} bytes still allocated", f.resident_bytes());
        std::fs::remove_file(&path).unwrap();
    }
}
