//! Where the exported bytes live. The device model carries only a tag per page, so the real
//! data sits beside it: in memory (an anonymous `memfd`, sparse) or in a backing file. Trimmed
//! and never-written ranges read as zeros in both.
//!
//! Why a memfd for the in-memory store: TRIM and WRITE_ZEROES punch holes in it
//! (`fallocate(PUNCH_HOLE)`), which hands the pages back to the kernel at once, and a full
//! memory is an `ENOSPC` from `pwrite` instead of an allocation failure that aborts the process
//! (issue 13). Its pages are shared memory, not heap: they do not show in the server's RSS but in
//! the memfd's allocated blocks, which [`Store::resident_bytes`] reports.

use rustix::fs::FallocateFlags;
use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;

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

/// The in-memory store: a sparse anonymous file of the export's size, with a limit on the
/// memory its pages may take.
pub struct SparseStore {
    file: File,
    size_bytes: u64,
    page_bytes: u64,
    /// One bit per page: does the page hold data (may it cost memory)?
    allocated: Vec<u64>,
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
        Ok(SparseStore {
            file,
            size_bytes,
            page_bytes,
            allocated: vec![0u64; pages.div_ceil(64) as usize],
            allocated_pages: 0,
            memory_max_pages: memory_max_bytes / page_bytes,
        })
    }

    /// Pages holding data (each may cost `page_bytes` of memory).
    pub fn pages_allocated(&self) -> u64 {
        self.allocated_pages
    }

    fn is_set(&self, page: u64) -> bool {
        self.allocated[(page / 64) as usize] & (1 << (page % 64)) != 0
    }

    fn set(&mut self, page: u64, on: bool) {
        let (word, bit) = ((page / 64) as usize, 1u64 << (page % 64));
        let was = self.allocated[word] & bit != 0;
        if on && !was {
            self.allocated[word] |= bit;
            self.allocated_pages += 1;
        } else if !on && was {
            self.allocated[word] &= !bit;
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
        write_sparse(&self.file, pb, offset, data)?;
        for p in first..end {
            let hole = self.covers(offset, len, p) && zero_page(p);
            self.set(p, !hole);
        }
        Ok(())
    }

    fn zero(&mut self, offset: u64, length: u64) -> io::Result<()> {
        punch(&self.file, offset, length)?;
        let pb = self.page_bytes;
        let (first, end) = (offset.div_ceil(pb), (offset + length) / pb);
        if end > first {
            if end - first > 1024 {
                // Clear whole words where the range covers them.
                let mut p = first;
                while p < end {
                    if p % 64 == 0 && p + 64 <= end {
                        let w = (p / 64) as usize;
                        self.allocated_pages -= self.allocated[w].count_ones() as u64;
                        self.allocated[w] = 0;
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
        assert!(resident <= 8 << 20, "freed pages went back: {resident} bytes still held");
        let mut back = vec![1u8; 32 << 20];
        s.read(0, &mut back).unwrap();
        assert!(back[..24 << 20].iter().all(|&b| b == 0) && back[24 << 20..].iter().all(|&b| b == 7));
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
