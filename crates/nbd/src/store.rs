//! Where the exported bytes live. The device model carries only a tag per page, so the real
//! data sits beside it: in memory (an anonymous `memfd`, sparse) or in a backing file. Trimmed
//! and never-written ranges read as zeros in both.
//!
//! Why a memfd for the in-memory store: TRIM and WRITE_ZEROES punch holes in it
//! (`fallocate(PUNCH_HOLE)`), which hands the pages back to the kernel at once, and a full
//! memory is an `ENOSPC` instead of an allocation failure that aborts the process (issue 13).
//! Its pages are shared memory, not heap: they show in the server's RSS only as `RssShmem`
//! (once written through the mapping below), and exactly in the memfd's allocated blocks,
//! which [`Store::resident_bytes`] reports.
//!
//! Why the memfd is also mapped (issue 15): a `pwrite` to shmem costs a lock, a dirty mark and
//! an LRU move per 4 KiB page, which made the store most of the device thread's time under
//! `nbdcopy`. Writes are therefore copies into a shared mapping of the same memfd. Pages a
//! write needs are first created with `MADV_POPULATE_WRITE`, so running out of memory is an
//! `ENOMEM` from that call (refused as `ENOSPC`, nothing written), never a fault in the copy;
//! a bitmap of the 4 KiB pages known to exist skips that call on overwrites. Reads stay
//! `pread`s: reading a hole through the mapping would allocate it, reading it through the file
//! does not, so a read never changes the footprint.

use rustix::fs::FallocateFlags;
use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Byte storage of the export. Callers pass ranges already checked against `size_bytes`.
pub trait Store: Send {
    fn size_bytes(&self) -> u64;
    fn read(&self, offset: u64, buf: &mut [u8]) -> io::Result<()>;
    /// Fails with `ENOSPC` (and changes nothing) when the data would exceed the memory limit.
    fn write(&mut self, offset: u64, data: &[u8]) -> io::Result<()>;
    /// Makes the range read as zeros, freeing what it can.
    fn zero(&mut self, offset: u64, length: u64) -> io::Result<()>;
    /// Makes everything written so far durable (a no-op in memory).
    fn flush(&mut self) -> io::Result<()>;
    /// Bytes of storage the data occupies (allocated blocks: holes cost nothing).
    fn resident_bytes(&self) -> u64;

    /// Consecutive extents from `offset`, as (bytes, is a hole), covering at most `length`
    /// bytes in at most `max_extents` pieces. A hole reads as zeros and holds no data.
    fn extents(&self, offset: u64, length: u64, max_extents: usize) -> io::Result<Vec<(u64, bool)>>;

    /// A handle for receiving overwrites straight into the store, where the store has one.
    fn in_place(&self) -> Option<InPlace> {
        None
    }

    /// Applies a WRITE whose bytes a connection already received into the store through
    /// [`InPlace`]: as [`Store::write`] would leave them (whole pages of zeros become holes).
    fn commit_in_place(&mut self, offset: u64, length: u64) -> io::Result<()> {
        let _ = (offset, length);
        Err(io::Error::other("this store receives no writes in place"))
    }
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
/// write many) so that they cost no storage. `put(pos, bytes, hole)` stores one piece: a run
/// of data, or (`hole`) one whole page of zeros to punch.
fn write_sparse(
    page: u64,
    offset: u64,
    data: &[u8],
    mut put: impl FnMut(u64, &[u8], bool) -> io::Result<()>,
) -> io::Result<()> {
    let mut at = 0usize;
    while at < data.len() {
        let pos = offset + at as u64;
        let page_end = ((pos / page + 1) * page - offset) as usize;
        let end = page_end.min(data.len());
        let piece = &data[at..end];
        if piece.len() as u64 == page && piece.iter().all(|&b| b == 0) {
            put(pos, piece, true)?;
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
            put(pos, &data[at..run_end], false)?;
            at = run_end;
            continue;
        }
        at = end;
    }
    Ok(())
}

/// The size of the kernel's pages in a memfd (shmem without huge pages): the unit in which
/// memory is allocated and holes are punched. Linux on x86-64 and most arm64 kernels; a
/// larger kernel page only makes [`Mapping::copy_in`] ask the kernel more often (assumption).
const KERNEL_PAGE_BYTES: u64 = 4096;

/// A bitmap written by one thread (the device thread, which owns the store) and read by
/// others (connections deciding whether a WRITE may go straight into the store). Relaxed
/// atomics: a reader's own earlier requests are ordered by the channel and locks they passed.
struct Bits(Box<[AtomicU64]>);

impl Bits {
    fn new(bits: u64) -> Bits {
        Bits((0..bits.div_ceil(64)).map(|_| AtomicU64::new(0)).collect())
    }

    fn get(&self, i: u64) -> bool {
        self.0[(i / 64) as usize].load(Ordering::Relaxed) & (1 << (i % 64)) != 0
    }

    /// Sets bit `i` to `on`; returns its old value. Single writer: a load and a store.
    fn put(&self, i: u64, on: bool) -> bool {
        let word = &self.0[(i / 64) as usize];
        let (old, bit) = (word.load(Ordering::Relaxed), 1u64 << (i % 64));
        word.store(if on { old | bit } else { old & !bit }, Ordering::Relaxed);
        old & bit != 0
    }

    /// Clears word `w`; returns how many bits were set.
    fn clear_word(&self, w: usize) -> u32 {
        self.0[w].swap(0, Ordering::Relaxed).count_ones()
    }

    fn all(&self, range: std::ops::Range<u64>) -> bool {
        range.into_iter().all(|i| self.get(i))
    }
}

/// A shared read-write mapping of the whole memfd, and which of its kernel pages exist.
struct Mapping {
    base: std::ptr::NonNull<u8>,
    len: usize,
    /// One bit per kernel page: allocated in the memfd, so a copy into it cannot fault for
    /// memory. Cleared where a hole is punched.
    present: Bits,
}

// SAFETY: the mapping is plain shared bytes with no thread affinity. The store writes it
// from the device thread; connections receive WRITE payloads into it only through
// `InPlace`, for ranges no earlier request of theirs still uses (see `InPlace`).
unsafe impl Send for Mapping {}
unsafe impl Sync for Mapping {}

impl Mapping {
    fn new(file: &File, len: u64) -> io::Result<Mapping> {
        use rustix::mm::{MapFlags, ProtFlags};
        let len =
            usize::try_from(len).map_err(|_| io::Error::other("store larger than the address space"))?;
        // SAFETY: a fresh mapping of a file we own; nothing else maps or truncates it, and it
        // is unmapped in `drop`, after the last handle to it is gone.
        let base = unsafe {
            rustix::mm::mmap(
                std::ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED,
                file,
                0,
            )?
        };
        let base =
            std::ptr::NonNull::new(base.cast::<u8>()).ok_or_else(|| io::Error::other("mmap gave null"))?;
        Ok(Mapping { base, len, present: Bits::new((len as u64).div_ceil(KERNEL_PAGE_BYTES)) })
    }

    /// Kernel pages `[first, end)` of a byte range.
    fn pages(offset: u64, length: u64) -> std::ops::Range<u64> {
        offset / KERNEL_PAGE_BYTES..(offset + length).div_ceil(KERNEL_PAGE_BYTES)
    }

    /// Copies `data` to `offset`, allocating missing pages first. Nothing is written when
    /// the allocation fails.
    fn copy_in(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        let pages = Mapping::pages(offset, data.len() as u64);
        assert!(offset as usize + data.len() <= self.len, "store: copy past the mapping");
        if !self.present.all(pages.clone()) {
            let start = pages.start * KERNEL_PAGE_BYTES;
            let bytes = ((pages.end * KERNEL_PAGE_BYTES) as usize).min(self.len) - start as usize;
            // SAFETY: the range lies inside our mapping (checked above, rounded to its pages).
            let populated = unsafe {
                rustix::mm::madvise(
                    self.base.as_ptr().add(start as usize).cast(),
                    bytes,
                    rustix::mm::Advice::LinuxPopulateWrite,
                )
            };
            match populated {
                Ok(()) => {}
                Err(rustix::io::Errno::NOMEM) => {
                    return Err(no_space(format!(
                        "the machine has no memory for {bytes} more bytes of the in-memory store (lower --memory-max)"
                    )))
                }
                Err(e) => return Err(e.into()),
            }
            for p in pages {
                self.present.put(p, true);
            }
        }
        // SAFETY: in bounds (checked above); `data` is a separate buffer, never the mapping.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), self.base.as_ptr().add(offset as usize), data.len());
        }
        Ok(())
    }

    /// A hole was punched in `[offset, offset+length)`: its whole kernel pages are gone
    /// (partial ones were zeroed in place and stay).
    fn punched(&self, offset: u64, length: u64) {
        let (first, end) = (offset.div_ceil(KERNEL_PAGE_BYTES), (offset + length) / KERNEL_PAGE_BYTES);
        for p in first..end.max(first) {
            self.present.put(p, false);
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once, when no handle is left.
        let _ = unsafe { rustix::mm::munmap(self.base.as_ptr().cast(), self.len) };
    }
}

/// A connection's way to receive a WRITE payload straight into the in-memory store instead of
/// into a buffer the device thread then copies (issue 15: that copy was a third of the
/// server's time under nbdcopy). Only for overwrites of data already held
/// ([`InPlace::can_overwrite`]): no memory to charge against `--memory-max`, no page to
/// allocate. The device thread then applies the WRITE with [`Store::commit_in_place`].
///
/// Order: the caller must not use a range while an earlier request of its own connection on
/// that range is still queued for the device thread (that request must see the bytes before
/// this one); the server keeps that rule. Requests of different connections that overlap while
/// both are in flight have no order in NBD, and get none here.
#[derive(Clone)]
pub struct InPlace {
    map: Arc<Mapping>,
    allocated: Arc<Bits>,
    page_bytes: u64,
}

impl InPlace {
    /// Whether `[offset, offset+length)` is data the store holds already, in memory that
    /// exists. The device thread only ever clears these bits for an earlier request, which
    /// the caller has waited for (see the type's comment).
    pub fn can_overwrite(&self, offset: u64, length: u64) -> bool {
        let pb = self.page_bytes;
        length > 0
            && offset + length <= self.map.len as u64
            && self.allocated.all(offset / pb..(offset + length).div_ceil(pb))
            && self.map.present.all(Mapping::pages(offset, length))
    }

    /// Fills `[offset, offset+length)` of the store from `fill`, which gets the range as a
    /// slice. The range must have passed [`InPlace::can_overwrite`].
    pub fn receive<T>(&self, offset: u64, length: u64, fill: impl FnOnce(&mut [u8]) -> T) -> T {
        assert!(offset + length <= self.map.len as u64, "store: in-place range past the end");
        // SAFETY: in bounds; the memory is mapped while `self.map` lives. Exclusive within the
        // connection by the order rule above; another connection writing the same bytes at the
        // same time is a race the client made, on plain bytes, which NBD leaves undefined.
        let bytes = unsafe {
            std::slice::from_raw_parts_mut(self.map.base.as_ptr().add(offset as usize), length as usize)
        };
        fill(bytes)
    }
}

/// The in-memory store: a sparse anonymous file of the export's size, with a limit on the
/// memory its pages may take.
pub struct SparseStore {
    file: File,
    /// Where writes go (`None` for an empty export, or where `mmap` or
    /// `MADV_POPULATE_WRITE`, Linux 5.14, is missing: then `pwrite`).
    map: Option<Arc<Mapping>>,
    size_bytes: u64,
    page_bytes: u64,
    /// One bit per page: does the page hold data (may it cost memory)?
    allocated: Arc<Bits>,
    allocated_pages: u64,
    memory_max_pages: u64,
}

impl SparseStore {
    /// `page_bytes` must be a power of two (the device's page size is the natural choice);
    /// `memory_max_bytes` bounds the data held (rounded down to whole pages).
    pub fn new(size_bytes: u64, page_bytes: u64, memory_max_bytes: u64) -> io::Result<SparseStore> {
        assert!(page_bytes.is_power_of_two(), "store: page size {page_bytes} is not a power of two");
        let fd = rustix::fs::memfd_create("trimlab-store", rustix::fs::MemfdFlags::CLOEXEC)?;
        let file = File::from(fd);
        file.set_len(size_bytes)?;
        let pages = size_bytes.div_ceil(page_bytes);
        let map = if size_bytes > 0 { Mapping::new(&file, size_bytes).ok().map(Arc::new) } else { None };
        Ok(SparseStore {
            file,
            map,
            size_bytes,
            page_bytes,
            allocated: Arc::new(Bits::new(pages)),
            allocated_pages: 0,
            memory_max_pages: memory_max_bytes / page_bytes,
        })
    }

    /// Pages holding data (each may cost `page_bytes` of memory).
    pub fn pages_allocated(&self) -> u64 {
        self.allocated_pages
    }

    fn is_set(&self, page: u64) -> bool {
        self.allocated.get(page)
    }

    fn set(&mut self, page: u64, on: bool) {
        let was = self.allocated.put(page, on);
        if on && !was {
            self.allocated_pages += 1;
        } else if !on && was {
            self.allocated_pages -= 1;
        }
    }

    /// Whether `[offset, offset+length)` covers page `p` whole.
    fn covers(&self, offset: u64, length: u64, p: u64) -> bool {
        p * self.page_bytes >= offset && (p + 1) * self.page_bytes <= offset + length
    }
}

impl Store for SparseStore {
    fn size_bytes(&self) -> u64 {
        self.size_bytes
    }

    fn read(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.file.read_exact_at(buf, offset)
    }

    fn write(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        let (pb, len) = (self.page_bytes, data.len() as u64);
        let (first, end) = (offset / pb, (offset + len).div_ceil(pb));
        // Pages this write would newly fill, counted before anything changes, so that a
        // refused write leaves the store as it was. Whole zero pages become holes, not data.
        let zero_page = |p: u64| {
            let (s, e) = ((p * pb - offset) as usize, ((p + 1) * pb - offset) as usize);
            data[s..e].iter().all(|&b| b == 0)
        };
        let whole_zero = |p: u64| self.covers(offset, len, p) && zero_page(p);
        let new_pages = (first..end).filter(|&p| !self.is_set(p) && !whole_zero(p)).count() as u64;
        if self.allocated_pages + new_pages > self.memory_max_pages {
            return Err(no_space(format!(
                "the in-memory store is full: {} of {} pages (--memory-max) in use, this write needs {new_pages} more",
                self.allocated_pages, self.memory_max_pages
            )));
        }
        let (file, map) = (&self.file, &mut self.map);
        write_sparse(pb, offset, data, |pos, piece, hole| {
            if hole {
                punch(file, pos, piece.len() as u64)?;
                if let Some(m) = map.as_ref() {
                    m.punched(pos, piece.len() as u64);
                }
                return Ok(());
            }
            if let Some(m) = map.as_ref() {
                match m.copy_in(pos, piece) {
                    // A kernel without MADV_POPULATE_WRITE (before 5.14): write through the file.
                    Err(e) if e.raw_os_error() == Some(rustix::io::Errno::INVAL.raw_os_error()) => {
                        *map = None
                    }
                    done => return done,
                }
            }
            file.write_all_at(piece, pos)
        })?;
        for p in first..end {
            let hole = self.covers(offset, len, p) && zero_page(p);
            self.set(p, !hole);
        }
        Ok(())
    }

    fn in_place(&self) -> Option<InPlace> {
        let map = self.map.clone()?;
        Some(InPlace { map, allocated: self.allocated.clone(), page_bytes: self.page_bytes })
    }

    fn commit_in_place(&mut self, offset: u64, length: u64) -> io::Result<()> {
        let Some(map) = self.map.clone() else {
            return Err(io::Error::other("the in-memory store has no mapping to receive writes in"));
        };
        let pb = self.page_bytes;
        for p in offset / pb..(offset + length).div_ceil(pb) {
            if self.covers(offset, length, p) {
                // SAFETY: a page of the mapping inside the export; its bytes were received by
                // the connection before it queued this request.
                let page = unsafe {
                    std::slice::from_raw_parts(map.base.as_ptr().add((p * pb) as usize), pb as usize)
                };
                if page.iter().all(|&b| b == 0) {
                    punch(&self.file, p * pb, pb)?;
                    map.punched(p * pb, pb);
                    self.set(p, false);
                    continue;
                }
            }
            self.set(p, true);
        }
        Ok(())
    }

    fn zero(&mut self, offset: u64, length: u64) -> io::Result<()> {
        punch(&self.file, offset, length)?;
        if let Some(m) = self.map.as_ref() {
            m.punched(offset, length);
        }
        let pb = self.page_bytes;
        let (first, end) = (offset.div_ceil(pb), (offset + length) / pb);
        if end > first {
            if end - first > 1024 {
                // Clear whole words where the range covers them.
                let mut p = first;
                while p < end {
                    if p % 64 == 0 && p + 64 <= end {
                        let w = (p / 64) as usize;
                        self.allocated_pages -= self.allocated.clear_word(w) as u64;
                        p += 64;
                    } else {
                        self.set(p, false);
                        p += 1;
                    }
                }
            } else {
                for p in first..end {
                    self.set(p, false);
                }
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn resident_bytes(&self) -> u64 {
        self.file.metadata().map_or(0, |m| m.blocks() * 512)
    }

    fn extents(&self, offset: u64, length: u64, max_extents: usize) -> io::Result<Vec<(u64, bool)>> {
        let (pb, end) = (self.page_bytes, offset + length);
        let mut out: Vec<(u64, bool)> = Vec::new();
        let mut at = offset;
        while at < end {
            let page_end = ((at / pb + 1) * pb).min(end);
            let hole = !self.is_set(at / pb);
            if out.len() == max_extents && out.last().is_some_and(|l| l.1 != hole) {
                break;
            }
            push_extent(&mut out, page_end - at, hole);
            at = page_end;
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
        let file = &self.file;
        write_sparse(self.page_bytes, offset, data, |pos, piece, hole| {
            if hole {
                punch(file, pos, piece.len() as u64)
            } else {
                file.write_all_at(piece, pos)
            }
        })
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
            assert!(s.map.is_some(), "the memfd is mapped on this kernel");
            // Odd seeds write through the file, as on a kernel without MADV_POPULATE_WRITE.
            if seed % 2 == 1 {
                s.map = None;
            }
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
        assert!(resident <= 8 << 20, "freed pages went back: {resident} bytes still held");
        let mut back = vec![1u8; 32 << 20];
        s.read(0, &mut back).unwrap();
        assert!(back[..24 << 20].iter().all(|&b| b == 0) && back[24 << 20..].iter().all(|&b| b == 7));
    }

    #[test]
    fn mapped_writes_and_reads_of_holes_cost_what_pwrite_did() {
        // Issue 15: writes go through the mapping; the footprint must stay the memfd's exact
        // allocated pages (store_resident_bytes is in the metrics): a partial-page write
        // allocates only the kernel pages it touches, and reading holes allocates nothing.
        let mut s = SparseStore::new(1 << 20, 16384, u64::MAX).unwrap();
        s.write(4096, &[9u8; 4096]).unwrap();
        assert_eq!(s.resident_bytes(), 4096);
        let mut back = vec![1u8; 1 << 20];
        s.read(0, &mut back).unwrap();
        assert_eq!(s.resident_bytes(), 4096, "reading holes allocated memory");
        assert!(back[4096..8192].iter().all(|&b| b == 9));
        // Punch and rewrite the same page: the presence bitmap must notice the hole.
        s.zero(0, 16384).unwrap();
        assert_eq!(s.resident_bytes(), 0);
        s.write(4096, &[5u8; 4096]).unwrap();
        s.read(0, &mut back[..16384]).unwrap();
        assert!(back[..4096].iter().all(|&b| b == 0) && back[4096..8192].iter().all(|&b| b == 5));
        assert_eq!(s.resident_bytes(), 4096);
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
