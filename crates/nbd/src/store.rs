//! Where the exported bytes live. The device model carries only a tag per page, so the real
//! data sits beside it: a sparse in-memory store (only chunks holding non-zero data cost memory)
//! or a file. Trimmed and never-written ranges read as zeros in both.

use rustc_hash::FxHashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Byte storage of the export. Callers pass ranges already checked against `size_bytes`.
pub trait Store: Send {
    fn size_bytes(&self) -> u64;
    fn read(&self, offset: u64, buf: &mut [u8]) -> io::Result<()>;
    fn write(&mut self, offset: u64, data: &[u8]) -> io::Result<()>;
    /// Makes the range read as zeros, freeing what it can.
    fn zero(&mut self, offset: u64, length: u64) -> io::Result<()>;
    /// Makes everything written so far durable (a no-op in memory).
    fn flush(&mut self) -> io::Result<()>;
    /// Bytes of data the store holds (memory for the sparse store, the file size for a file).
    fn resident_bytes(&self) -> u64;
}

/// An in-memory store of fixed-size chunks, allocated on the first non-zero write.
pub struct SparseStore {
    size_bytes: u64,
    chunk_bytes: u64,
    /// Only looked up by chunk index, never iterated in an order that reaches output.
    chunks: FxHashMap<u64, Box<[u8]>>,
}

impl SparseStore {
    /// `chunk_bytes` must be a power of two (the device's page size is the natural choice).
    pub fn new(size_bytes: u64, chunk_bytes: u64) -> SparseStore {
        assert!(chunk_bytes.is_power_of_two(), "store: chunk size {chunk_bytes} is not a power of two");
        SparseStore { size_bytes, chunk_bytes, chunks: FxHashMap::default() }
    }

    pub fn chunks_allocated(&self) -> usize {
        self.chunks.len()
    }

    /// Splits `[offset, offset+length)` into (chunk index, offset in chunk, bytes) pieces.
    fn pieces(&self, offset: u64, length: u64) -> impl Iterator<Item = (u64, usize, usize)> + '_ {
        let cb = self.chunk_bytes;
        let end = offset + length;
        let mut at = offset;
        std::iter::from_fn(move || {
            if at >= end {
                return None;
            }
            let index = at / cb;
            let within = at % cb;
            let n = (cb - within).min(end - at);
            at += n;
            Some((index, within as usize, n as usize))
        })
    }
}

impl Store for SparseStore {
    fn size_bytes(&self) -> u64 {
        self.size_bytes
    }

    fn read(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let mut done = 0;
        for (index, within, n) in self.pieces(offset, buf.len() as u64) {
            let dst = &mut buf[done..done + n];
            match self.chunks.get(&index) {
                Some(chunk) => dst.copy_from_slice(&chunk[within..within + n]),
                None => dst.fill(0),
            }
            done += n;
        }
        Ok(())
    }

    fn write(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        let cb = self.chunk_bytes as usize;
        let mut done = 0;
        let pieces: Vec<_> = self.pieces(offset, data.len() as u64).collect();
        for (index, within, n) in pieces {
            let src = &data[done..done + n];
            done += n;
            if n == cb && src.iter().all(|&b| b == 0) {
                // A whole chunk of zeros (mkfs, zeroing tools) costs no memory.
                self.chunks.remove(&index);
                continue;
            }
            let chunk = self.chunks.entry(index).or_insert_with(|| vec![0u8; cb].into_boxed_slice());
            chunk[within..within + n].copy_from_slice(src);
        }
        Ok(())
    }

    fn zero(&mut self, offset: u64, length: u64) -> io::Result<()> {
        let cb = self.chunk_bytes as usize;
        let first = offset / self.chunk_bytes;
        let last = (offset + length).div_ceil(self.chunk_bytes);
        if last - first > 2 * self.chunks.len() as u64 + 2 {
            // A range much larger than what is allocated: drop the whole chunks inside it by
            // scanning the map, then handle the two partial edges below.
            let (inner_first, inner_end) =
                (offset.div_ceil(self.chunk_bytes), (offset + length) / self.chunk_bytes);
            self.chunks.retain(|&i, _| i < inner_first || i >= inner_end);
        }
        let pieces: Vec<_> = self.pieces(offset, length).collect();
        for (index, within, n) in pieces {
            if n == cb {
                self.chunks.remove(&index);
            } else if let Some(chunk) = self.chunks.get_mut(&index) {
                chunk[within..within + n].fill(0);
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn resident_bytes(&self) -> u64 {
        self.chunks.len() as u64 * self.chunk_bytes
    }
}

/// A store backed by a regular file of the export's size (created or extended as needed).
pub struct FileStore {
    file: File,
    size_bytes: u64,
}

impl FileStore {
    pub fn open(path: &Path, size_bytes: u64) -> io::Result<FileStore> {
        let file =
            std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)?;
        if file.metadata()?.len() != size_bytes {
            file.set_len(size_bytes)?;
        }
        Ok(FileStore { file, size_bytes })
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
        self.file.write_all_at(data, offset)
    }

    fn zero(&mut self, offset: u64, length: u64) -> io::Result<()> {
        // Writing zeros keeps this portable without unsafe fallocate(PUNCH_HOLE).
        let zeros = vec![0u8; length.min(1 << 20) as usize];
        let mut at = offset;
        let end = offset + length;
        while at < end {
            let n = (end - at).min(zeros.len() as u64) as usize;
            self.file.write_all_at(&zeros[..n], at)?;
            at += n as u64;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn resident_bytes(&self) -> u64 {
        self.size_bytes
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

    #[test]
    fn sparse_store_matches_a_flat_reference() {
        for seed in 0..8 {
            against_reference(&mut SparseStore::new(256 << 10, 4096), seed);
        }
    }

    #[test]
    fn file_store_matches_a_flat_reference() {
        let path = std::env::temp_dir().join(format!("trimlab-nbd-store-{}", std::process::id()));
        let mut store = FileStore::open(&path, 128 << 10).unwrap();
        against_reference(&mut store, 1);
        drop(store);
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn sparse_store_frees_zeroed_and_zero_written_chunks() {
        let mut s = SparseStore::new(1 << 20, 4096);
        s.write(0, &[1u8; 8192]).unwrap();
        assert_eq!(s.chunks_allocated(), 2);
        s.write(0, &[0u8; 4096]).unwrap();
        assert_eq!(s.chunks_allocated(), 1);
        s.zero(0, 1 << 20).unwrap();
        assert_eq!(s.chunks_allocated(), 0);
        s.write(100, &[7u8; 10]).unwrap();
        s.zero(0, 4096).unwrap();
        assert_eq!(s.resident_bytes(), 0);
    }
}
