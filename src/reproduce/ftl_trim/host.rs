//! The host side of `ftl-trim`: a minimal file-system allocator and the two workloads of 004
//! §5 (an OS install and IOZone), synthesized at block level.
//!
//! There is no file-system layer in trimlab yet, so the host is the smallest thing that makes
//! TRIM matter the way it does under a file system: files own extents of 4 KiB clusters, a
//! deleted file's clusters become free (and are trimmed if the host sends TRIM), and new files
//! are placed next-fit (after the last allocation, wrapping), so freed space is reused only
//! after the allocator has gone round. 004 §5.5 observes Windows 7 allocating new clusters
//! instead of reusing freed ones once TRIM is on; next-fit gives that behaviour with and
//! without TRIM, so the two runs differ only in what the drive is told.
//!
//! Requests run in a closed loop at queue depth 1 (synchronous writes), so the simulated time
//! of a phase is the device's service time of its requests.

use anyhow::{Context, Result};
use rand::Rng;
use std::collections::BTreeMap;
use trimlab_hybrid::{Driver, FtlModel, HostCommand};
use trimlab_sim::SimTime;

pub const CLUSTER_BYTES: u64 = 4096;
/// ATA DATA SET MANAGEMENT: 64 ranges per 512-byte block of entries.
const TRIM_RANGES_PER_COMMAND: usize = 64;
const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;

/// A file: extents of clusters `(first, count)` in file order.
#[derive(Clone, Debug, Default)]
pub struct File {
    pub extents: Vec<(u32, u32)>,
}

impl File {
    pub fn clusters(&self) -> u64 {
        self.extents.iter().map(|e| e.1 as u64).sum()
    }
}

/// Next-fit cluster allocator over free extents.
struct Allocator {
    free: BTreeMap<u32, u32>,
    free_clusters: u64,
    cursor: u32,
}

impl Allocator {
    fn new(clusters: u32) -> Self {
        Allocator { free: BTreeMap::from([(0, clusters)]), free_clusters: clusters as u64, cursor: 0 }
    }

    fn alloc(&mut self, mut clusters: u32) -> Result<File> {
        if clusters as u64 > self.free_clusters {
            anyhow::bail!("host: the volume is full ({} clusters free, {clusters} wanted)", self.free_clusters);
        }
        let mut file = File::default();
        while clusters > 0 {
            // The first free extent that ends after the cursor, else wrap to the lowest.
            let (&start, &len) = self
                .free
                .range(..=self.cursor)
                .next_back()
                .filter(|(&s, &l)| s + l > self.cursor)
                .or_else(|| self.free.range(self.cursor..).next())
                .or_else(|| self.free.iter().next())
                .context("host: free-extent map empty while clusters remain")?;
            let from = if start <= self.cursor && self.cursor < start + len { self.cursor } else { start };
            let take = clusters.min(start + len - from);
            self.free.remove(&start);
            if from > start {
                self.free.insert(start, from - start);
            }
            if from + take < start + len {
                self.free.insert(from + take, start + len - from - take);
            }
            file.extents.push((from, take));
            self.free_clusters -= take as u64;
            self.cursor = from + take;
            clusters -= take;
        }
        Ok(file)
    }

    fn release(&mut self, file: &File) {
        for &(mut start, mut len) in &file.extents {
            self.free_clusters += len as u64;
            if let Some((&s, &l)) = self.free.range(..start).next_back() {
                if s + l == start {
                    self.free.remove(&s);
                    start = s;
                    len += l;
                }
            }
            if let Some(&l) = self.free.get(&(start + len)) {
                self.free.remove(&(start + len));
                len += l;
            }
            self.free.insert(start, len);
        }
    }
}

/// Time and bytes of one named phase, summed over its occurrences.
#[derive(Clone, Debug, Default)]
pub struct PhaseMeter {
    pub name: &'static str,
    pub bytes: u64,
    pub ns: u64,
}

impl PhaseMeter {
    /// MB/s (10^6 bytes per second of simulated time).
    pub fn throughput_mb_s(&self) -> f64 {
        self.bytes as f64 * 1e3 / self.ns.max(1) as f64
    }
}

pub struct Host<'a, F> {
    pub driver: &'a mut Driver<F>,
    pub now: SimTime,
    /// Whether deletes send TRIM.
    pub trim: bool,
    tag: u64,
    alloc: Allocator,
}

impl<'a, F: FtlModel> Host<'a, F> {
    pub fn new(driver: &'a mut Driver<F>, trim: bool) -> Self {
        let clusters = (driver.capacity_bytes() / CLUSTER_BYTES) as u32;
        Host { driver, now: SimTime::ZERO, trim, tag: 1, alloc: Allocator::new(clusters) }
    }

    pub fn capacity_bytes(&self) -> u64 {
        self.driver.capacity_bytes()
    }

    fn submit(&mut self, command: HostCommand) -> Result<()> {
        let done = self.driver.submit(self.now, &command, None).map_err(anyhow::Error::msg)?.done;
        self.now = done;
        Ok(())
    }

    pub fn create(&mut self, bytes: u64) -> Result<File> {
        self.alloc.alloc(bytes.div_ceil(CLUSTER_BYTES).max(1) as u32)
    }

    /// Writes clusters `[first, first + count)` of `file` (file-relative) in requests of at most
    /// `record_bytes`.
    pub fn write_range(&mut self, file: &File, first: u64, count: u64, record_bytes: u64) -> Result<u64> {
        let per_record = (record_bytes / CLUSTER_BYTES).max(1);
        let mut skip = first;
        let mut left = count;
        let mut written = 0;
        for &(start, len) in &file.extents {
            if left == 0 {
                break;
            }
            if skip >= len as u64 {
                skip -= len as u64;
                continue;
            }
            let mut at = start as u64 + skip;
            let mut in_extent = (len as u64 - skip).min(left);
            skip = 0;
            while in_extent > 0 {
                let n = in_extent.min(per_record);
                let bytes = n * CLUSTER_BYTES;
                let tag = self.tag;
                self.tag += bytes;
                self.submit(HostCommand::Write { offset: at * CLUSTER_BYTES, bytes, tag })?;
                at += n;
                in_extent -= n;
                left -= n;
                written += bytes;
            }
        }
        Ok(written)
    }

    pub fn write_file(&mut self, file: &File, record_bytes: u64) -> Result<u64> {
        self.write_range(file, 0, file.clusters(), record_bytes)
    }

    /// Deletes `file`: its clusters are free, and trimmed if the host sends TRIM.
    pub fn delete(&mut self, file: &File) -> Result<()> {
        self.alloc.release(file);
        if self.trim {
            for chunk in file.extents.chunks(TRIM_RANGES_PER_COMMAND) {
                let ranges =
                    chunk.iter().map(|&(s, l)| (s as u64 * CLUSTER_BYTES, l as u64 * CLUSTER_BYTES)).collect();
                self.submit(HostCommand::Trim { ranges })?;
            }
        }
        Ok(())
    }

    /// Lets the device idle (file close, the benchmark's own work between tests).
    pub fn idle(&mut self, ns: u64) {
        self.now = self.now.after(ns);
    }

    /// Runs `f` and adds its bytes and simulated time to `meter`.
    pub fn phase(&mut self, meter: &mut PhaseMeter, f: impl FnOnce(&mut Self) -> Result<u64>) -> Result<()> {
        let start = self.now;
        let bytes = f(self)?;
        meter.bytes += bytes;
        meter.ns += self.now.since(start);
        Ok(())
    }
}

/// Size of a file of the OS image: 60 % small (4-64 KiB), 30 % medium (64 KiB-1 MiB), 10 %
/// large (1-16 MiB); most bytes are in large files, most files are small.
fn os_file_bytes(rng: &mut impl Rng) -> u64 {
    match rng.gen_range(0..10) {
        0..=5 => rng.gen_range(4 * KIB..64 * KIB),
        6..=8 => rng.gen_range(64 * KIB..MIB),
        _ => rng.gen_range(MIB..16 * MIB),
    }
}

/// The OS-install workload (004 §5.3, Windows 7 setup), synthesized:
/// - `volume` bytes of files are written sequentially in 128 KiB requests, sizes from
///   [`os_file_bytes`];
/// - 35 % of them (by count) are temporary (setup extracts archives, then copies and deletes
///   them): each is deleted after 1 to 64 later files, and all remaining ones at the end;
/// - after every file, with probability 1/2, one 4 KiB update of file-system metadata lands at
///   a random cluster of a metadata zone (the first 2 % of the volume, allocated up front).
///
/// Returns the phase meter of the whole install.
pub fn os_install<F: FtlModel>(host: &mut Host<F>, volume: u64, rng: &mut impl Rng) -> Result<PhaseMeter> {
    let mut meter = PhaseMeter { name: "os-install", ..Default::default() };
    let metadata = host.create(host.capacity_bytes() / 50)?;
    host.phase(&mut meter, |h| h.write_file(&metadata, 128 * KIB))?;
    let mut temps: Vec<(u64, File)> = Vec::new();
    let mut written = 0u64;
    let mut files = 0u64;
    while written < volume {
        let bytes = os_file_bytes(rng).min(volume - written).max(CLUSTER_BYTES);
        let temporary = rng.gen_bool(0.35);
        let file = host.create(bytes)?;
        host.phase(&mut meter, |h| h.write_file(&file, 128 * KIB))?;
        written += bytes;
        files += 1;
        if temporary {
            temps.push((files + rng.gen_range(1..=64), file));
        }
        if rng.gen_bool(0.5) {
            let cluster = rng.gen_range(0..metadata.clusters());
            host.phase(&mut meter, |h| h.write_range(&metadata, cluster, 1, CLUSTER_BYTES))?;
        }
        let (due, keep): (Vec<_>, Vec<_>) = temps.into_iter().partition(|(at, _)| *at <= files);
        temps = keep;
        for (_, f) in due {
            host.phase(&mut meter, |h| h.delete(&f).map(|()| 0))?;
        }
    }
    for (_, f) in temps {
        host.phase(&mut meter, |h| h.delete(&f).map(|()| 0))?;
    }
    Ok(meter)
}

/// IOZone's write / re-write / random-write tests (004 §5.4), at block level: for each record
/// size, a file of `file_bytes` is created and written sequentially, re-written, then written
/// at random record-aligned offsets (as many records as the file holds), and deleted. The host
/// idles `idle_ns` after each test (file close, IOZone's own work).
pub fn iozone<F: FtlModel>(
    host: &mut Host<F>,
    file_bytes: u64,
    record_sizes: &[u64],
    idle_ns: u64,
    rng: &mut impl Rng,
) -> Result<[PhaseMeter; 3]> {
    let mut write = PhaseMeter { name: "write", ..Default::default() };
    let mut rewrite = PhaseMeter { name: "re-write", ..Default::default() };
    let mut random = PhaseMeter { name: "random write", ..Default::default() };
    for &record in record_sizes {
        let file = host.create(file_bytes)?;
        host.phase(&mut write, |h| h.write_file(&file, record))?;
        host.idle(idle_ns);
        host.phase(&mut rewrite, |h| h.write_file(&file, record))?;
        host.idle(idle_ns);
        let per_record = (record / CLUSTER_BYTES).max(1);
        let records = (file.clusters() / per_record).max(1);
        host.phase(&mut random, |h| {
            let mut bytes = 0;
            for _ in 0..records {
                let r = rng.gen_range(0..records);
                bytes += h.write_range(&file, r * per_record, per_record, record)?;
            }
            Ok(bytes)
        })?;
        host.idle(idle_ns);
        host.delete(&file)?;
        host.idle(idle_ns);
    }
    Ok([write, rewrite, random])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_fit_reuses_freed_space_only_after_wrapping() {
        let mut a = Allocator::new(100);
        let f1 = a.alloc(30).unwrap();
        let f2 = a.alloc(30).unwrap();
        a.release(&f1);
        let f3 = a.alloc(30).unwrap();
        assert_eq!(f3.extents, vec![(60, 30)]);
        let f4 = a.alloc(20).unwrap();
        assert_eq!(f4.extents, vec![(90, 10), (0, 10)]);
        a.release(&f2);
        a.release(&f3);
        a.release(&f4);
        assert_eq!(a.free_clusters, 100);
        assert_eq!(a.free.len(), 1);
        assert!(a.alloc(101).is_err());
    }
}
