//! 004's host: a minimal NTFS-like cluster allocator and the two workloads of 004 §5 (an OS
//! install and IOZone), synthesized at block level and sent to the device as commands.
//!
//! The host is the smallest thing that makes TRIM matter the way it does under a Windows 7 file
//! system: files own 4 KiB clusters, and a deleted file's clusters become free (and are
//! trimmed if the host sends TRIM).
//!
//! 004 §5.5 reports that Windows 7 changes how it allocates once it finds a TRIM-capable drive:
//! "Windows 7 file system allocates new file system block to perform update instead of
//! overwriting the new content to the same logical block". The host follows that:
//! with TRIM, an update of file data is written to newly allocated clusters and the old ones
//! are freed and trimmed (copy on write); without TRIM, updates overwrite the file's clusters in
//! place. New clusters are placed first-fit (the lowest free clusters, so freed space is reused
//! at once, as NTFS's allocator prefers) by default, or next-fit (after the last allocation,
//! wrapping, so freed space is reused only after the allocator has gone round) when asked;
//! `ftl-trim` runs next-fit as a labelled sensitivity run, because 004's "always writes to free
//! block" once TRIM is on could also be read as "reuses freed blocks without". Next-fit keeps
//! deleted files valid on a drive without TRIM for a whole lap of the volume.
//!
//! Requests run in a closed loop at queue depth 1 (synchronous writes), so the simulated time
//! of a phase is the device's service time of its requests.

use crate::config::{Volume, WorkloadConfig, WorkloadKind};
use crate::kind::{iozone, os_install, KeyError};
use rand::Rng;
use serde::Serialize;
use std::collections::BTreeMap;
use trimlab_device::{BlockDevice, Command, CommandError, Ssd, TrimSplitter};
use trimlab_ftl::FtlMeasures;
use trimlab_sim::{DurationNs, SeedTree, SimTime};

/// Why the host could not go on.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("host: the volume is full ({free} clusters free, {wanted} wanted)")]
    Full { free: u64, wanted: u32 },
    #[error("host: the device refused a command: {0}")]
    Refused(#[from] CommandError),
    #[error("workload.{0} = {1}: {2}")]
    Key(String, String, String),
}

type Result<T> = std::result::Result<T, HostError>;

pub const CLUSTER_BYTES: u64 = 4096;
/// ATA DATA SET MANAGEMENT: 64 ranges per 512-byte block of entries.
const TRIM_RANGES_PER_COMMAND: usize = 64;
const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;

/// A file: its clusters in file order.
#[derive(Clone, Debug, Default)]
pub struct File {
    pub clusters: Vec<u32>,
}

impl File {
    pub fn len(&self) -> u64 {
        self.clusters.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.clusters.is_empty()
    }

    /// Runs of consecutive clusters `(first, count)` in file order.
    fn extents(clusters: &[u32]) -> Vec<(u32, u32)> {
        let mut out: Vec<(u32, u32)> = Vec::new();
        for &c in clusters {
            match out.last_mut() {
                Some((s, n)) if *s + *n == c => *n += 1,
                _ => out.push((c, 1)),
            }
        }
        out
    }
}

/// Next-fit cluster allocator over free extents.
struct Allocator {
    free: BTreeMap<u32, u32>,
    free_clusters: u64,
    cursor: u32,
    /// Start every search at cluster 0 (reuse freed space at once) instead of next-fit.
    first_fit: bool,
}

impl Allocator {
    fn new(clusters: u32) -> Self {
        Allocator {
            free: BTreeMap::from([(0, clusters)]),
            free_clusters: clusters as u64,
            cursor: 0,
            first_fit: false,
        }
    }

    fn alloc(&mut self, mut clusters: u32) -> Result<File> {
        if self.first_fit {
            self.cursor = 0;
        }
        if clusters as u64 > self.free_clusters {
            return Err(HostError::Full { free: self.free_clusters, wanted: clusters });
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
                .unwrap_or_else(|| {
                    unreachable!("host: free-extent map empty while {clusters} clusters remain")
                });
            let from = if start <= self.cursor && self.cursor < start + len { self.cursor } else { start };
            let take = clusters.min(start + len - from);
            self.free.remove(&start);
            if from > start {
                self.free.insert(start, from - start);
            }
            if from + take < start + len {
                self.free.insert(from + take, start + len - from - take);
            }
            file.clusters.extend(from..from + take);
            self.free_clusters -= take as u64;
            self.cursor = from + take;
            clusters -= take;
        }
        Ok(file)
    }

    fn release(&mut self, clusters: &[u32]) {
        for (mut start, mut len) in File::extents(clusters) {
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
#[derive(Clone, Debug, Default, Serialize)]
pub struct PhaseMeter {
    pub name: &'static str,
    pub bytes: u64,
    pub ns: u64,
    /// Device commands of the phase, and how many of them left the drive's erased blocks at or
    /// below its GC threshold (004 §4.1: 30 % of each plane's blocks, rounded up to a block):
    /// 004's "GC running" regime is a claim about free space, so the experiment checks it
    /// rather than assuming it.
    pub commands: u64,
    pub commands_at_gc_threshold: u64,
    /// Lowest and highest share of erased blocks seen after a command of the phase.
    pub free_share_min: Option<f64>,
    pub free_share_max: Option<f64>,
    /// Pages GC copied during the phase (merges, for a hybrid FTL).
    pub gc_pages_copied: u64,
}

impl PhaseMeter {
    /// MB/s (10^6 bytes per second of simulated time).
    pub fn throughput_mb_s(&self) -> f64 {
        self.bytes as f64 * 1e3 / self.ns.max(1) as f64
    }

    /// Share of the phase's commands that left free space at or below the GC threshold.
    pub fn at_gc_threshold_share(&self) -> f64 {
        self.commands_at_gc_threshold as f64 / self.commands.max(1) as f64
    }

    fn sample_free(&mut self, free_blocks: u64, threshold_blocks: u64, blocks_total: u64) {
        let share = free_blocks as f64 / blocks_total as f64;
        self.commands += 1;
        if free_blocks <= threshold_blocks {
            self.commands_at_gc_threshold += 1;
        }
        self.free_share_min = Some(self.free_share_min.map_or(share, |m| m.min(share)));
        self.free_share_max = Some(self.free_share_max.map_or(share, |m| m.max(share)));
    }
}

pub struct Host<'a> {
    pub ssd: &'a mut Ssd,
    pub now: SimTime,
    /// Whether deletes send TRIM; it also selects the allocation policy (see the module doc).
    pub trim: bool,
    tag: u64,
    alloc: Allocator,
    blocks_total: u64,
    /// Erased blocks at which the drive's GC holds free space (its threshold over all planes).
    gc_threshold_blocks: u64,
    /// The meter of the phase running now: every command samples free space into it.
    watch: Option<PhaseMeter>,
}

impl<'a> Host<'a> {
    /// `first_fit`: place new clusters at the lowest free ones instead of next-fit.
    pub fn new(ssd: &'a mut Ssd, trim: bool, first_fit: bool) -> Self {
        let clusters = (ssd.capacity_bytes() / CLUSTER_BYTES) as u32;
        let mut alloc = Allocator::new(clusters);
        alloc.first_fit = first_fit;
        let config = ssd.config();
        let blocks_total = config.geometry.block_count().max(1) as u64;
        let gc_threshold_blocks = config.gc_free_blocks_min as u64 * config.geometry.plane_count() as u64;
        Host { ssd, now: SimTime::ZERO, trim, tag: 1, alloc, blocks_total, gc_threshold_blocks, watch: None }
    }

    pub fn capacity_bytes(&self) -> u64 {
        self.ssd.capacity_bytes()
    }

    /// Submits at `now` and waits for the completion (synchronous requests, queue depth 1).
    fn submit(&mut self, command: &Command) -> Result<()> {
        self.now = self.ssd.submit(self.now, command, None)?.done;
        if let Some(meter) = &mut self.watch {
            meter.sample_free(self.ssd.ftl().free_blocks(), self.gc_threshold_blocks, self.blocks_total);
        }
        Ok(())
    }

    pub fn create(&mut self, bytes: u64) -> Result<File> {
        self.alloc.alloc(bytes.div_ceil(CLUSTER_BYTES).max(1) as u32)
    }

    /// Writes `clusters` in requests of at most `record_bytes` that never cross a gap.
    fn write_clusters(&mut self, clusters: &[u32], record_bytes: u64) -> Result<u64> {
        let per_record = (record_bytes / CLUSTER_BYTES).max(1) as u32;
        let mut written = 0;
        for (mut at, mut left) in File::extents(clusters) {
            while left > 0 {
                let n = left.min(per_record);
                let bytes = n as u64 * CLUSTER_BYTES;
                let tag = self.tag;
                self.tag += bytes;
                self.submit(&Command::Write { offset: at as u64 * CLUSTER_BYTES, bytes, tag })?;
                at += n;
                left -= n;
                written += bytes;
            }
        }
        Ok(written)
    }

    /// Frees `clusters` and trims them if the host sends TRIM.
    fn discard(&mut self, clusters: &[u32]) -> Result<()> {
        self.alloc.release(clusters);
        if !self.trim {
            return Ok(());
        }
        // Windows packs a file's freed runs into DATA SET MANAGEMENT blocks of 64 ranges,
        // cut on clusters, each command sent when the previous one completes.
        let limits = BlockDevice::limits(&*self.ssd);
        let mut splitter = TrimSplitter::for_device(&limits)
            .ranges_per_command(TRIM_RANGES_PER_COMMAND)
            .aligned_to(CLUSTER_BYTES);
        let runs = File::extents(clusters)
            .into_iter()
            .map(|(start, len)| (start as u64 * CLUSTER_BYTES, len as u64 * CLUSTER_BYTES));
        splitter.split(runs, |command| self.submit(command))?;
        Ok(())
    }

    /// Updates clusters `[first, first + count)` of `file`: in place without TRIM, copy on
    /// write with TRIM (new clusters written, old ones freed and trimmed).
    pub fn update(&mut self, file: &mut File, first: u64, count: u64, record_bytes: u64) -> Result<u64> {
        let range = first as usize..(first + count) as usize;
        if !self.trim {
            return self.write_clusters(&file.clusters[range], record_bytes);
        }
        let fresh = self.alloc.alloc(count as u32)?;
        let written = self.write_clusters(&fresh.clusters, record_bytes)?;
        let old: Vec<u32> = file.clusters.splice(range, fresh.clusters).collect();
        self.discard(&old)?;
        Ok(written)
    }

    pub fn write_file(&mut self, file: &File, record_bytes: u64) -> Result<u64> {
        self.write_clusters(&file.clusters, record_bytes)
    }

    /// Deletes `file`: its clusters are free, and trimmed if the host sends TRIM.
    pub fn delete(&mut self, file: &File) -> Result<()> {
        self.discard(&file.clusters)
    }

    /// Lets the device idle (file close, the benchmark's own work between tests).
    pub fn idle(&mut self, ns: u64) {
        self.now = self.now.after(ns);
    }

    /// Runs `f` and adds its bytes and simulated time to `meter`.
    pub fn phase(&mut self, meter: &mut PhaseMeter, f: impl FnOnce(&mut Self) -> Result<u64>) -> Result<()> {
        let start = self.now;
        let copied_before = self.ssd.ftl().stats().gc_pages_copied;
        self.watch = Some(std::mem::take(meter));
        let result = f(self);
        *meter = self.watch.take().expect("the watch is set for the phase");
        let bytes = result?;
        meter.bytes += bytes;
        meter.ns += self.now.since(start);
        meter.gc_pages_copied += self.ssd.ftl().stats().gc_pages_copied - copied_before;
        Ok(())
    }
}

/// Size of a file of an OS image: most files are small, most bytes are in large files
/// (55 % 1-16 KiB, 30 % 16-128 KiB, 13 % 128 KiB-1 MiB, 2 % 1-16 MiB; mean about 270 KiB).
pub fn os_file_bytes(rng: &mut impl Rng) -> u64 {
    match rng.gen_range(0..100) {
        0..=54 => rng.gen_range(KIB..16 * KIB),
        55..=84 => rng.gen_range(16 * KIB..128 * KIB),
        85..=97 => rng.gen_range(128 * KIB..MIB),
        _ => rng.gen_range(MIB..16 * MIB),
    }
}

/// File-system metadata written for every file, as NTFS does: a file record in the MFT (1 KiB
/// records, four to a 4 KiB cluster, allocated in order, so each cluster is rewritten four
/// times), a journal record appended to a circular log, and an update of a directory index at a
/// random cluster of the directory zone. The zones are allocated once, up front.
pub struct Metadata {
    mft: File,
    journal: File,
    directories: File,
    records: u64,
    journal_at: u64,
}

impl Metadata {
    pub fn create(host: &mut Host) -> Result<Self> {
        let capacity = host.capacity_bytes();
        Ok(Metadata {
            mft: host.create(capacity / 100)?,
            journal: host.create(capacity / 200)?,
            directories: host.create(capacity / 200)?,
            records: 0,
            journal_at: 0,
        })
    }

    /// The metadata writes of one new file.
    pub fn file_created(&mut self, host: &mut Host, rng: &mut impl Rng) -> Result<u64> {
        let record_cluster = (self.records / 4) % self.mft.len();
        self.records += 1;
        let mut bytes =
            host.write_clusters(&self.mft.clusters[record_cluster as usize..][..1], CLUSTER_BYTES)?;
        let j = self.journal_at % self.journal.len();
        self.journal_at += 1;
        bytes += host.write_clusters(&self.journal.clusters[j as usize..][..1], CLUSTER_BYTES)?;
        let d = rng.gen_range(0..self.directories.len());
        bytes += host.write_clusters(&self.directories.clusters[d as usize..][..1], CLUSTER_BYTES)?;
        Ok(bytes)
    }
}

/// The OS-install workload (004 §5.3, Windows 7 setup), synthesized:
/// - `volume` bytes of files with sizes from [`os_file_bytes`], each written sequentially in
///   requests of up to 128 KiB, each followed by its [`Metadata`] writes;
/// - 35 % of the files (by count) are temporary (setup extracts archives, then copies and
///   deletes them): each is deleted after 1 to 64 later files, and all remaining ones at the
///   end.
///
/// Returns the phase meter of the whole install.
pub fn os_install(host: &mut Host, volume: u64, rng: &mut impl Rng) -> Result<PhaseMeter> {
    let mut meter = PhaseMeter { name: "os-install", ..Default::default() };
    let mut metadata = Metadata::create(host)?;
    let mut temps: Vec<(u64, File)> = Vec::new();
    let mut written = 0u64;
    let mut files = 0u64;
    while written < volume {
        let bytes = os_file_bytes(rng).min(volume - written).max(CLUSTER_BYTES);
        let temporary = rng.gen_bool(0.35);
        let file = host.create(bytes)?;
        host.phase(&mut meter, |h| {
            let data = h.write_file(&file, 128 * KIB)?;
            Ok(data + metadata.file_created(h, rng)?)
        })?;
        written += bytes;
        files += 1;
        if temporary {
            temps.push((files + rng.gen_range(1..=64), file));
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
/// size, a file of `file_bytes` is created and written sequentially, re-written, then updated
/// at random record-aligned offsets (as many records as the file holds), and deleted. Updates
/// follow the host's policy ([`Host::update`]). The host idles `idle_ns` after each test (file
/// close, IOZone's own work).
pub fn iozone(
    host: &mut Host,
    file_bytes: u64,
    record_sizes: &[u64],
    idle_ns: u64,
    rng: &mut impl Rng,
) -> Result<[PhaseMeter; 3]> {
    let mut write = PhaseMeter { name: "write", ..Default::default() };
    let mut rewrite = PhaseMeter { name: "re-write", ..Default::default() };
    let mut random = PhaseMeter { name: "random write", ..Default::default() };
    for &record in record_sizes {
        let mut file = host.create(file_bytes)?;
        host.phase(&mut write, |h| h.write_file(&file, record))?;
        host.idle(idle_ns);
        let len = file.len();
        host.phase(&mut rewrite, |h| h.update(&mut file, 0, len, record))?;
        host.idle(idle_ns);
        let per_record = (record / CLUSTER_BYTES).max(1);
        let records = (len / per_record).max(1);
        host.phase(&mut random, |h| {
            let mut bytes = 0;
            for _ in 0..records {
                let r = rng.gen_range(0..records);
                bytes += h.update(&mut file, r * per_record, per_record.min(len - r * per_record), record)?;
            }
            Ok(bytes)
        })?;
        host.idle(idle_ns);
        host.delete(&file)?;
        host.idle(idle_ns);
    }
    Ok([write, rewrite, random])
}

/// Defaults of the cluster-host kinds: 004's setup as `ftl-trim` runs it.
pub const OS_VOLUME: Volume = Volume::Capacity(0.75);
pub const IOZONE_IMAGE: Volume = Volume::Capacity(0.45);
pub const IOZONE_FILE: Volume = Volume::Capacity(0.10);
pub const IOZONE_RECORDS: [u64; 4] = [4096, 16384, 65536, 262144];
pub const IOZONE_PAUSE: DurationNs = DurationNs(200_000_000);
/// Largest write request of the installer and of the image (Windows 7 setup's copy size).
const INSTALL_REQUEST_BYTES: u64 = 128 * KIB;

/// What a cluster-host run did: 004's measures when measurement started (after IOZone's image),
/// its span and the phases' bytes and times.
#[derive(Clone, Debug, Serialize)]
pub struct ClusterRun {
    pub measures_before: FtlMeasures,
    pub start: SimTime,
    pub end: SimTime,
    pub phases: Vec<PhaseMeter>,
}

/// Runs an `os-install` or `iozone` workload on `ssd`; measurement (`Ssd::start_measurement`)
/// starts where 004 starts counting (the install's beginning, IOZone's first test). Random
/// draws come from `{stream}.host` and `{stream}.image` (stream default `cluster-host`).
pub fn run(ssd: &mut Ssd, w: &WorkloadConfig, seeds: &SeedTree) -> Result<ClusterRun> {
    let capacity = ssd.capacity_bytes();
    let read_keys = |e: KeyError| HostError::Key(e.0, e.1, e.2);
    // os-install's keys are some of IOZone's: one read serves both kinds.
    let k: iozone::Keys = match w.kind {
        WorkloadKind::Iozone => w.keys.read().map_err(read_keys)?,
        _ => {
            let os: os_install::Keys = w.keys.read().map_err(read_keys)?;
            iozone::Keys {
                volume: os.volume,
                host_discard: os.host_discard,
                first_fit: os.first_fit,
                stream: os.stream,
                ..Default::default()
            }
        }
    };
    let stream = k.stream.as_deref().unwrap_or("cluster-host");
    let mut rng = seeds.fork(&format!("{stream}.host"));
    let mut host = Host::new(ssd, k.host_discard.unwrap_or(true), k.first_fit.unwrap_or(true));
    let (measures_before, start, phases) = match w.kind {
        WorkloadKind::Iozone => {
            // The installed system: files written once and kept.
            let mut left = k.image.unwrap_or(IOZONE_IMAGE).bytes(capacity);
            let mut image_rng = seeds.fork(&format!("{stream}.image"));
            while left > 0 {
                // Drawn as i32, as ftl-trim always drew them: another type draws another stream.
                let bytes = (image_rng.gen_range(64 * 1024..8i32 << 20) as u64).min(left);
                let file = host.create(bytes)?;
                host.write_file(&file, INSTALL_REQUEST_BYTES)?;
                left -= bytes;
            }
            let pause = k.pause.unwrap_or(IOZONE_PAUSE).0;
            host.idle(pause);
            let start = host.now;
            host.ssd.start_measurement(start);
            let before = host.ssd.ftl().measures();
            let file_bytes = k.volume.unwrap_or(IOZONE_FILE).bytes(capacity);
            let records: Vec<u64> = match &k.record_bytes {
                Some(r) => r.iter().map(|b| b.0).collect(),
                None => IOZONE_RECORDS.to_vec(),
            };
            let meters = iozone(&mut host, file_bytes, &records, pause, &mut rng)?;
            (before, start, meters.to_vec())
        }
        _ => {
            host.ssd.start_measurement(SimTime::ZERO);
            let before = host.ssd.ftl().measures();
            let meter = os_install(&mut host, k.volume.unwrap_or(OS_VOLUME).bytes(capacity), &mut rng)?;
            (before, SimTime::ZERO, vec![meter])
        }
    };
    Ok(ClusterRun { measures_before, start, end: host.now, phases })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_fit_reuses_freed_space_only_after_wrapping() {
        let mut a = Allocator::new(100);
        let f1 = a.alloc(30).unwrap();
        let f2 = a.alloc(30).unwrap();
        a.release(&f1.clusters);
        let f3 = a.alloc(30).unwrap();
        assert_eq!(File::extents(&f3.clusters), vec![(60, 30)]);
        let f4 = a.alloc(20).unwrap();
        assert_eq!(File::extents(&f4.clusters), vec![(90, 10), (0, 10)]);
        a.release(&f2.clusters);
        a.release(&f3.clusters);
        a.release(&f4.clusters);
        assert_eq!(a.free_clusters, 100);
        assert_eq!(a.free.len(), 1);
        assert!(a.alloc(101).is_err());
    }

    /// IOZone on a drive whose image leaves free space above the GC threshold, and on one whose
    /// image pushes it under: the phase meters tell the two regimes apart.
    #[test]
    fn phase_meters_see_whether_free_space_sits_at_the_gc_threshold() {
        use trimlab_device::config::GcThreshold;
        use trimlab_device::{DeviceSection, FtlSection, SsdConfig, TrimSection};
        use trimlab_sim::ByteSize;
        let run_with_image = |image: f64| {
            let device = DeviceSection {
                channels: Some(2),
                chips_per_channel: Some(1),
                dies_per_chip: Some(1),
                planes_per_die: Some(1),
                pages_per_block: Some(64),
                logical_bytes: Some(ByteSize(32 << 20)),
                spare_factor: Some(0.07),
                write_buffer_bytes: Some(ByteSize(0)),
                ..Default::default()
            };
            let ftl = FtlSection { gc_free_blocks: Some(GcThreshold::Percent(30.0)), ..Default::default() };
            let config =
                SsdConfig::resolve(&device, &ftl, &TrimSection::default()).expect("valid test device");
            let mut ssd = Ssd::new(config);
            let keys = iozone::Keys {
                image: Some(Volume::Capacity(image)),
                record_bytes: Some(vec![ByteSize(16 << 10)]),
                host_discard: Some(false),
                ..Default::default()
            };
            let w = WorkloadConfig::of_kind(WorkloadKind::Iozone, &keys);
            run(&mut ssd, &w, &SeedTree::new(3)).expect("iozone runs").phases
        };
        let roomy = run_with_image(0.2);
        let full = run_with_image(0.8);
        for (a, b) in roomy.iter().zip(&full) {
            assert!(
                a.commands > 0 && a.commands == b.commands,
                "{} commands: {} vs {}",
                a.name,
                a.commands,
                b.commands
            );
            assert_eq!(a.commands_at_gc_threshold, 0, "{} on a roomy drive", a.name);
            assert!(a.free_share_min.unwrap() > 0.3, "{}: {:?}", a.name, a.free_share_min);
        }
        let random = &full[2];
        assert_eq!(random.commands_at_gc_threshold, random.commands, "random write on a full drive");
        assert!(random.free_share_max.unwrap() <= 0.32 && random.gc_pages_copied > 0, "{random:?}");
    }

    #[test]
    fn first_fit_reuses_freed_space_at_once() {
        let mut a = Allocator::new(100);
        a.first_fit = true;
        let f1 = a.alloc(30).unwrap();
        a.alloc(30).unwrap();
        a.release(&f1.clusters);
        let f3 = a.alloc(40).unwrap();
        assert_eq!(File::extents(&f3.clusters), vec![(0, 30), (60, 10)]);
    }
}
