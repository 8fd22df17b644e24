//! The ext4-like file system: layout (block groups, static metadata, journal area, directory),
//! files as extent maps, the page cache, the ordered JBD2-like journal, and the simulated
//! threads (application, journal thread, discard workers, fstrim) that issue its commands.
//!
//! The application calls methods; each advances the application's clock (`now()`). Background
//! threads are events on a [`EventQueue`]; before every submission the queue is run up to the
//! submitting thread's instant, so commands reach the device in non-decreasing time.
//!
//! Commit order (ordered mode): data of dirty pages -> (XFS's and btrfs' stand-in logs: a
//! checkpoint if full; ext4's handles make room first, journal.rs) -> descriptor + metadata
//! blocks into the journal -> commit block + FLUSH -> the policy's TRIMs of the transaction's
//! freed blocks -> fsync waiters wake.

use crate::bitmap::BlockBitmap;
use crate::config::FsConfig;
use crate::extent::{coalesce, ExtentMap, FreedRun, Run};
use crate::policy::{self, TrimMode, TrimPolicy, WorkerPick};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::OnceLock;
use trimlab_device::{transfer_chunks, BlockDevice, Command, TrimSplitter};
use trimlab_sim::{EventQueue, SimTime};

mod btrfs;
mod btrfs_chunk;
mod btrfs_tree;
mod call_latency;
mod delalloc;
mod discard_worker;
mod fallocate;
mod fitrim;
mod inode_alloc;
mod inode_table;
mod inodegc;
mod journal;
mod journal_log;
mod layout;
mod layout_fs;
mod lazyinit;
mod lg_prealloc;
mod namespace;
mod page_cache;
pub mod page_runs;
mod request_merge;
mod unmount;
mod xfs_alloc;
mod xfs_fitrim;
mod xfs_unmount;

pub use call_latency::CallLatencies;
use discard_worker::Worker;
use fitrim::{Fitrim, PeriodicFstrim};
use inode_alloc::InodeGroups;
use inode_table::InodeTable;
use journal::{Commit, Transaction};
use journal_log::JournalLog;
use layout::Layout;
use layout_fs::LayoutFs;
use namespace::{Dir, DirPaths, RootSlots};
use page_runs::{PageRun, PageRuns};

pub type Ino = u32;

/// Pages handed to write-back with their tags, as runs in (inode, block) order.
type PageTags = Vec<PageRun>;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FsError {
    #[error("no space left on the file system")]
    NoSpace,
    #[error("no such file or directory: {0}")]
    NotFound(String),
    #[error("file exists: {0}")]
    Exists(String),
    #[error("no such inode: {0}")]
    BadInode(Ino),
    #[error("no free inode or directory slot")]
    NoInodes,
    #[error("file system layout: {0}")]
    Layout(String),
    #[error("directory not empty: {0}")]
    NotEmpty(String),
    #[error("not a directory: {0}")]
    NotADirectory(String),
    #[error("is a directory: {0}")]
    IsADirectory(String),
    #[error("invalid argument: {0}")]
    Invalid(String),
}

/// Counters of the file system and its threads.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FsStats {
    pub syscalls: u64,
    pub commits: u64,
    pub commit_ns_total: u64,
    pub commit_ns_max: u64,
    pub checkpoints: u64,
    pub data_blocks_written: u64,
    pub journal_blocks_written: u64,
    pub metadata_blocks_checkpointed: u64,
    /// jbd2's journal (ext4): commits started because the running transaction reached a
    /// quarter of the journal, journal-superblock writes that moved the log's tail, and the
    /// time the application waited for log space (checkpoints) or for a capped transaction
    /// to start committing. Absent from reports while 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub commits_capped: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub journal_tail_updates: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub journal_wait_ns: u64,
    pub blocks_read: u64,
    pub write_commands: u64,
    pub read_commands: u64,
    pub flush_commands: u64,
    /// Every TRIM command (policy, FITRIM, mkfs, lazy inode-table init) and its bytes.
    pub trim_commands: u64,
    pub trim_bytes: u64,
    /// mke2fs's zeroing (journal, end of the device, used inode-table blocks): BLKZEROOUT,
    /// written here (trimlab's devices have no WRITE_ZEROES); also in `write_commands`.
    pub zeroout_commands: u64,
    pub zeroout_bytes: u64,
    /// TRIMs of the lazy inode-table init (`ext4lazyinit`), also in `trim_commands`.
    pub itable_init_commands: u64,
    pub fitrim_trim_commands: u64,
    pub fitrim_trim_bytes: u64,
    /// Passes of the fstrim policy's periodic FITRIM (absent from reports while 0).
    #[serde(skip_serializing_if = "is_zero")]
    pub fitrim_periodic_passes: u64,
    /// Time the application waited for blocks held by the TRIM policy or a commit.
    pub space_wait_ns: u64,
    /// When the last background TRIM (worker or commit) completed.
    pub last_trim_done_ns: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

struct Inode {
    size: u64,
    extents: ExtentMap,
    /// The entry's slot in its parent directory.
    dir_slot: u64,
    /// Blocks allocated by fallocate and not written since: logical start -> length. They
    /// read as zeroes (ext4's and XFS's unwritten extents), so a read does not fetch them.
    unwritten: BTreeMap<u64, u64>,
    /// Where the file's first data block is sought instead of the stream goal: XFS, a file in
    /// a subdirectory, near its inode (namespace.rs, `data_home`).
    data_home: Option<u64>,
}

/// Requests a thread issues one after another (serial: each waits for the previous completion)
/// or back to back (then one wait for the last).
#[derive(Default)]
struct Batch {
    reqs: VecDeque<Command>,
    serial: bool,
    done_max: SimTime,
}

enum Step {
    Next(SimTime),
    Finished(SimTime),
}

#[derive(Clone, Copy, Debug)]
enum Ev {
    CommitTimer(u64),
    Journal,
    Worker(usize),
    Fitrim,
    FitrimTimer,
    LazyInit,
    /// btrfs' cleaner thread, woken by the transaction kthread every commit interval.
    BtrfsCleaner,
    /// XFS's inodegc delayed work (its generation: a re-armed timer makes earlier ones stale).
    InodeGc(u64),
    /// The page cache's flusher (delalloc.rs): it writes back pages dirty for 30 s.
    Flusher,
}

const META_TAG: u64 = 1 << 62;

/// Whether a TRIM being submitted zeroes static metadata (ext4lazyinit) rather than
/// discarding blocks the file system holds free.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Zeroing {
    No,
    ItableInit,
}

/// The bytes a TRIM command covers (None for other commands).
fn trimmed_bytes(command: &Command) -> Option<u64> {
    match command {
        Command::Trim { ranges } => Some(ranges.iter().map(|r| r.bytes).sum()),
        _ => None,
    }
}

/// A mounted file system over its block device.
pub struct FileSystem<D: BlockDevice> {
    dev: D,
    config: FsConfig,
    layout: Layout,
    /// The layout's own state: ext4's, XFS's or btrfs' (layout_fs.rs).
    layout_fs: LayoutFs,
    bitmap: BlockBitmap,
    inodes: InodeTable,
    /// Directories other than the root, by inode, each with its entries (namespace.rs).
    dirs: BTreeMap<Ino, Dir>,
    /// Every entry's full path, built when `entries` or `names` asks after a change
    /// (namespace.rs); emptied by every change of the tree.
    listing: OnceLock<Vec<(String, Ino, bool)>>,
    /// Directories' full paths noted as they were resolved (namespace.rs).
    dir_paths: DirPaths,
    /// Free inodes per group and the allocators' state (inode_alloc.rs).
    inode_groups: InodeGroups,
    /// The root directory's entry slots (its blocks are static, at `layout.dir_start`).
    root_slots: RootSlots,
    /// Directory blocks freed while the commit in flight holds them as metadata: that commit
    /// must not queue them for checkpoint (jbd2's revoke records).
    revoked: BTreeSet<u64>,
    /// Dirty pages and their tags, as runs (page_runs.rs).
    dirty: PageRuns,
    /// Pages taken for write-back whose write has not been submitted yet: still readable
    /// from the page cache (the kernel keeps them cached under PG_writeback).
    writeback: PageRuns,
    /// Delayed allocation's reservation and write-back order (delalloc.rs).
    delalloc: delalloc::DelayedAlloc,
    running: Transaction,
    commit: Option<Commit>,
    commit_requested: u64,
    committed_tid: u64,
    /// jbd2's log: head, tail, free space, checkpoint transactions (journal_log.rs).
    log: JournalLog,
    checkpoint: BTreeSet<u64>,
    policy: Box<dyn TrimPolicy>,
    events: EventQueue<Ev>,
    now: SimTime,
    last_arrival: SimTime,
    next_tag: u64,
    journal_tag: u64,
    workers: Vec<Worker>,
    fitrim: Option<Fitrim>,
    fitrim_timer_armed: bool,
    /// The periodic fstrim's passes since mount and its notes (fitrim.rs).
    periodic: PeriodicFstrim,
    group_trimmed: Vec<Option<u64>>,
    /// Where the last allocation ended: the goal of a file's first extent.
    stream_goal: u64,
    /// What the TRIM being submitted is: a discard of held free blocks, or zeroing.
    zeroing: Zeroing,
    /// Run [`FileSystem::check`] after every commit (tests).
    verify: bool,
    stats: FsStats,
    /// How long the application's fsync and write calls took.
    calls: call_latency::CallLatency,
}

impl<D: BlockDevice> FileSystem<D> {
    /// mke2fs at `start`: optionally discards the whole device (in 2 GiB steps, each split at
    /// the device's largest TRIM and issued back to back, as mke2fs + blkdev_issue_discard do),
    /// then writes superblock, descriptors, bitmaps, root directory and zeroes the journal
    /// (inode tables are initialised lazily, lazy_itable_init). Returns the mounted file system;
    /// its `now()` is when mkfs finished.
    pub fn mkfs(mut dev: D, config: FsConfig, start: SimTime, discard: bool) -> Result<Self, FsError> {
        // The model checks its data per block: the device carries one tag per block, which a
        // drive of larger mapping units does once asked (crates/device/src/host_page_tags.rs).
        dev.use_tag_bytes(config.block_bytes)
            .map_err(|e| FsError::Layout(format!("block_bytes = {}: {e}", config.block_bytes)))?;
        if config.inodegc.as_ref().is_some_and(|gc| gc.tick_ns == 0) {
            return Err(FsError::Layout(
                "inodegc.tick_ns = 0 (must be > 0: the scheduler tick, 4 ms at CONFIG_HZ = 250)".into(),
            ));
        }
        let mut fs = FileSystem::unformatted(dev, config, start)?;
        let bitmap = BlockBitmap::new(fs.layout.total_blocks, fs.layout.bpg);
        if discard {
            fs.mkfs_discard_device();
        }
        fs.mkfs_write_metadata(bitmap);
        Ok(fs)
    }

    /// The file system's in-memory state over `dev` before mkfs writes anything: its layout,
    /// an empty namespace and journal, the policy built, no thread running.
    fn unformatted(dev: D, config: FsConfig, start: SimTime) -> Result<Self, FsError> {
        let layout = Layout::new(dev.capacity_bytes(), &config)?;
        let layout_fs = LayoutFs::new(&config, &layout)?;
        Ok(FileSystem {
            policy: policy::build(config.policy, &config.params, config.block_bytes),
            group_trimmed: vec![None; layout.groups as usize],
            dev,
            bitmap: BlockBitmap::new(1, 64),
            inodes: InodeTable::default(),
            dirs: BTreeMap::new(),
            listing: OnceLock::new(),
            dir_paths: DirPaths::default(),
            inode_groups: InodeGroups::new(layout.groups, layout.inodes_per_group, layout.first_ino()),
            root_slots: RootSlots::default(),
            revoked: BTreeSet::new(),
            dirty: PageRuns::new(),
            writeback: PageRuns::new(),
            delalloc: delalloc::DelayedAlloc::default(),
            running: Transaction { tid: 1, ..Default::default() },
            commit: None,
            commit_requested: 0,
            committed_tid: 0,
            log: journal::new_log(&layout, &config, 1),
            checkpoint: BTreeSet::new(),
            events: EventQueue::new(),
            now: start,
            last_arrival: SimTime::ZERO,
            next_tag: 1,
            journal_tag: 1 << 63,
            workers: Vec::new(),
            fitrim: None,
            fitrim_timer_armed: false,
            periodic: PeriodicFstrim::default(),
            stream_goal: 0,
            zeroing: Zeroing::No,
            verify: false,
            stats: FsStats::default(),
            calls: call_latency::CallLatency::new(),
            config,
            layout,
            layout_fs,
        })
    }

    /// mke2fs_discard_device: optionally a one-block probe, then the whole device in 2 GiB
    /// steps, each split at the device's largest TRIM and issued back to back.
    fn mkfs_discard_device(&mut self) {
        let bs = self.config.block_bytes;
        // mke2fs_discard_device first tries one block (so that it can stop before printing
        // progress if discard fails); e2fsprogs 1.47 on Linux 6.18 sends it at block 0
        // (tests/data/discard-patterns/ext4.trims), then the whole device.
        if self.config.mkfs_discard_probe {
            let reqs = self.trim_requests(Run::new(0, 1));
            self.app_io(reqs, false);
        }
        let step = 2u64 << 30;
        let cap = self.layout.total_blocks * bs;
        let mut off = 0;
        while off < cap {
            let len = step.min(cap - off);
            let reqs = self.trim_requests(Run::new(off / bs, len / bs));
            self.app_io(reqs, false);
            off += len;
        }
    }

    /// The static metadata: its blocks taken in `bitmap` (which becomes the file system's),
    /// mke2fs' zeroing, superblock, descriptors, bitmaps, journal and root directory written and
    /// flushed; then the allocators' goal, btrfs' mount state and lazyinit's start.
    fn mkfs_write_metadata(&mut self, mut bitmap: BlockBitmap) {
        let bs = self.config.block_bytes;
        let mut writes = Vec::new();
        for r in self.static_runs() {
            bitmap.take(r.start, r.len);
        }
        self.bitmap = bitmap;
        self.layout.static_blocks = self.bitmap.used_count();
        // superblock + descriptors, each group's bitmaps, the journal, the directory.
        // mke2fs zeroes (BLKZEROOUT) the journal (ext2fs_zero_blocks2) and, with
        // `mke2fs_layout`, also the inode-table blocks of the inodes it uses and the last 16
        // blocks of the device (old RAID superblocks): four WRITE_ZEROES in the recording, of
        // which the model makes these three. trimlab's block devices have no WRITE_ZEROES, so
        // they are written, as blkdev_issue_zeroout does for a device without it (a loop
        // device over NBD punches holes instead, which `trimlab serve` serves as a TRIM);
        // counted as `zeroout_*`, apart from `trim_*`.
        let journal = Run::new(self.layout.journal_start, self.layout.journal_blocks);
        let mut zero = vec![journal];
        if self.config.mke2fs_layout {
            let bpb = self.layout.itable_used_blocks(0, bs, self.config.inode_bytes);
            let tail = 16.min(self.layout.total_blocks);
            zero = vec![
                Run::new(self.layout.itable_start(0), bpb),
                Run::new(self.layout.total_blocks - tail, tail),
                journal,
            ];
        }
        self.stats.zeroout_commands += self.write_requests_meta(&zero).len() as u64;
        self.stats.zeroout_bytes += zero.iter().map(|r| r.len * bs).sum::<u64>();
        writes.push(Run::new(0, 1 + self.layout.gdt_blocks + 2));
        for g in 1..self.layout.groups {
            writes.push(Run::new(g * self.layout.bpg, 2));
        }
        writes.extend(zero);
        writes.push(Run::new(self.layout.dir_start, 1));
        // mkfs.btrfs writes its tree nodes (both copies of DUP).
        writes.extend(self.layout_fs.btrfs().map_or(Vec::new(), |b| b.static_runs()));
        let reqs = self.write_requests_meta(&writes);
        self.app_io(reqs, false);
        self.app_io(vec![Command::Flush], true);
        self.stream_goal = (self.config.first_data_group * self.layout.bpg) % self.layout.total_blocks;
        self.btrfs_mounted();
        self.log_worker_mounted();
        self.fitrim_mounted();
        if let Some(ext4) = self.layout_fs.ext4_mut().filter(|_| self.config.lazy_itable_init) {
            ext4.lazy_init_group = Some(0);
            self.lazy_init_register(self.now);
        }
    }

    // ----- accessors -----

    /// Runs the full [`FileSystem::check`] after every commit (panics on a violation).
    pub fn set_verify(&mut self, on: bool) {
        self.verify = on;
    }

    pub fn now(&self) -> SimTime {
        self.now
    }
    pub fn device(&self) -> &D {
        &self.dev
    }
    pub fn device_mut(&mut self) -> &mut D {
        &mut self.dev
    }
    pub fn into_device(self) -> D {
        self.dev
    }
    /// Latency percentiles of the application's fsync and write calls since mkfs (or since
    /// [`FileSystem::restart_call_latencies`]).
    pub fn call_latencies(&self) -> CallLatencies {
        self.calls.summary()
    }

    /// Forgets the calls timed so far: the figures cover from here (advise's measured rounds
    /// after aging).
    pub fn restart_call_latencies(&mut self) {
        self.calls = call_latency::CallLatency::new();
    }

    pub fn stats(&self) -> &FsStats {
        &self.stats
    }
    pub fn policy(&self) -> &dyn TrimPolicy {
        self.policy.as_ref()
    }
    pub fn config(&self) -> &FsConfig {
        &self.config
    }
    pub fn data_blocks(&self) -> u64 {
        self.layout.total_blocks - self.layout.static_blocks
    }
    /// File blocks in use / data blocks (what SeT and the aging procedure call utilization).
    ///
    /// Blocks of XFS inodes queued for inactivation count as free: they are what `df` shows
    /// after an `rm`, since statfs kicks the inodegc workers (Linux 6.18 fs/xfs/xfs_super.c,
    /// `xfs_fs_statfs` -> `xfs_inodegc_push`; a blocking `xfs_inodegc_flush` before 5.19's
    /// "xfs: introduce xfs_inodegc_push()"), which free them within a tick. Without this a
    /// loop deleting down to a utilization never saw it drop and removed every file. The push
    /// itself is not modelled: a user's `rm` does not call statfs, and running the worker at
    /// each look would move the discards of an rm burst (see inodegc.rs).
    pub fn utilization(&self) -> f64 {
        // Locality-group preallocations' unused tails are free to statfs too (the kernel counts
        // only the blocks a file took, ext4_mb_mark_diskspace_used).
        // Blocks reserved by delayed allocation are used to statfs (ext4_statfs subtracts
        // s_dirtyclusters_counter from the free count).
        let used = self.bitmap.used_count() - self.layout.static_blocks - self.layout_fs.free_to_statfs()
            + self.delalloc.reserved_blocks;
        used as f64 / self.data_blocks() as f64
    }
    /// Free-space fragmentation and the files' layout score, measured now (free_space.rs).
    pub fn free_space(&self) -> (crate::free_space::FreeSpace, crate::free_space::Layout) {
        let free = crate::free_space::free_space(&self.bitmap, self.config.block_bytes);
        (free, crate::free_space::layout(self.inodes.values().map(|i| &i.extents)))
    }
    pub fn available_blocks(&self) -> u64 {
        self.bitmap.avail_count()
    }
    pub fn file_size(&self, ino: Ino) -> Option<u64> {
        self.inodes.get(ino).map(|i| i.size)
    }
    pub fn extent_count(&self, ino: Ino) -> Option<usize> {
        self.inodes.get(ino).map(|i| i.extents.len())
    }
    /// Physical runs of a file (for tests and reports).
    pub fn file_runs(&self, ino: Ino) -> Vec<Run> {
        self.inodes
            .get(ino)
            .map_or_else(Vec::new, |i| i.extents.iter().map(|e| Run::new(e.physical, e.len)).collect())
    }

    // ----- the event loop -----

    fn advance_to(&mut self, t: SimTime) {
        while let Some(et) = self.events.peek_time() {
            if et > t {
                break;
            }
            let (et, ev) = self.events.pop().unwrap_or_else(|| unreachable!());
            self.handle(et, ev);
        }
    }

    /// Runs background threads until `cond` holds; the application's clock follows. Returns
    /// false if nothing is left to run and `cond` still fails.
    fn wait_until(&mut self, cond: impl Fn(&Self) -> bool) -> bool {
        self.advance_to(self.now);
        loop {
            if cond(self) {
                return true;
            }
            let Some((t, ev)) = self.events.pop() else { return false };
            self.now = self.now.max(t);
            self.handle(t, ev);
        }
    }

    fn handle(&mut self, t: SimTime, ev: Ev) {
        match ev {
            Ev::CommitTimer(tid) => {
                if self.running.tid == tid && !self.running.is_empty() {
                    self.request_commit(t, tid);
                }
            }
            Ev::Journal => self.journal_step(t),
            Ev::Worker(i) => self.worker_step(t, i),
            Ev::Fitrim => self.fitrim_step(t),
            Ev::LazyInit => self.lazy_init_step(t),
            Ev::BtrfsCleaner => self.btrfs_cleaner(t),
            Ev::InodeGc(generation) => self.inodegc_timer(t, generation),
            Ev::Flusher => self.flusher(t),
            Ev::FitrimTimer => self.periodic_fitrim_due(t),
        }
    }

    /// Lets simulated time pass with the application idle until `t`.
    pub fn idle_until(&mut self, t: SimTime) {
        let t = t.max(self.now);
        self.advance_to(t);
        self.now = t;
    }

    /// Runs every background thread to completion (queued TRIMs, pending commits).
    pub fn quiesce(&mut self) {
        while let Some((t, ev)) = self.events.pop() {
            self.now = self.now.max(t);
            self.handle(t, ev);
        }
    }

    // ----- device access -----

    fn dev_submit(&mut self, at: SimTime, req: &Command, out: Option<&mut Vec<u64>>) -> SimTime {
        assert!(
            at >= self.last_arrival,
            "fs: submission at {at} before the previous one at {}",
            self.last_arrival
        );
        self.last_arrival = at;
        let bs = self.config.block_bytes;
        match req {
            Command::Trim { .. } if self.zeroing == Zeroing::ItableInit => {
                // Static metadata (an inode table), so not "held free": it reaches the device
                // as a TRIM all the same.
                self.stats.trim_commands += 1;
                self.stats.trim_bytes += trimmed_bytes(req).unwrap_or(0);
            }
            Command::Trim { ranges } => {
                for b in ranges.iter().flat_map(|r| r.offset / bs..(r.offset + r.bytes) / bs) {
                    // Blocks past mkfs's layout are trimmed only by mkfs itself.
                    if self.layout.static_blocks > 0 && (self.bitmap.is_used(b) || self.bitmap.is_avail(b)) {
                        panic!(
                            "fs: TRIM of block {b} that is not held free (used {}, available {})",
                            self.bitmap.is_used(b),
                            self.bitmap.is_avail(b)
                        );
                    }
                }
                self.stats.trim_commands += 1;
                self.stats.trim_bytes += trimmed_bytes(req).unwrap_or(0);
            }
            Command::Write { .. } => self.stats.write_commands += 1,
            Command::Read { bytes, .. } => {
                self.stats.read_commands += 1;
                self.stats.blocks_read += bytes / bs;
            }
            Command::Flush => self.stats.flush_commands += 1,
        }
        self.dev.submit(at, req, out).unwrap_or_else(|e| panic!("fs: the device refused {req:?}: {e}")).done
    }

    /// The application issues `reqs` and waits for them.
    fn app_io(&mut self, reqs: Vec<Command>, serial: bool) {
        let h = self.config.host.clone();
        let mut done_max = self.now;
        for req in reqs {
            let t = self.now.after(h.submit_ns);
            self.advance_to(t);
            self.now = t;
            let done = self.dev_submit(t, &req, None);
            done_max = done_max.max(done);
            if serial {
                self.now = done.after(h.complete_ns);
            }
        }
        if done_max > self.now || !serial {
            self.now = self.now.max(done_max.after(h.complete_ns));
        }
        self.advance_to(self.now);
    }

    /// One step of a thread's batch at `now`.
    fn batch_step(&mut self, now: SimTime, batch: &mut Batch) -> Step {
        let h = &self.config.host;
        let (submit, complete) = (h.submit_ns, h.complete_ns);
        let Some(req) = batch.reqs.pop_front() else {
            return Step::Finished(now.max(batch.done_max));
        };
        let done = self.dev_submit(now, &req, None);
        batch.done_max = batch.done_max.max(done.after(complete));
        if batch.reqs.is_empty() {
            Step::Finished(batch.done_max.max(now))
        } else if batch.serial {
            Step::Next(done.after(complete + submit))
        } else {
            Step::Next(now.after(submit))
        }
    }

    /// The discards of `run`: one range per command (a discard bio), cut on blocks at the
    /// device's TRIM limit.
    fn trim_requests(&self, run: Run) -> Vec<Command> {
        let bs = self.config.block_bytes;
        let mut splitter = TrimSplitter::for_device(&self.dev.limits()).ranges_per_command(1).aligned_to(bs);
        let mut v = Vec::new();
        let split = splitter.split([(run.start * bs, run.len * bs)], |command| {
            v.push(command.clone());
            Ok::<(), std::convert::Infallible>(())
        });
        split.unwrap_or_else(|never| match never {});
        v
    }

    fn write_requests_meta(&mut self, runs: &[Run]) -> Vec<Command> {
        let bs = self.config.block_bytes;
        // Whole blocks per request (at least one), as the block layer's requests hold.
        let max = (self.dev.max_transfer_bytes() / bs).max(1) * bs;
        let mut v = Vec::new();
        for r in runs {
            for (offset, bytes) in transfer_chunks(r.start * bs, r.len * bs, max) {
                v.push(Command::Write { offset, bytes, tag: META_TAG + offset / bs });
            }
        }
        v
    }

    // ----- application operations -----

    fn syscall(&mut self) {
        self.stats.syscalls += 1;
        self.now = self.now.after(self.config.host.syscall_ns);
        self.advance_to(self.now);
        self.start_handle();
    }

    fn inode_mut(&mut self, ino: Ino) -> Result<&mut Inode, FsError> {
        self.inodes.get_mut(ino).ok_or(FsError::BadInode(ino))
    }

    /// Waits until `need` blocks can be allocated: forces a commit of freed blocks and waits
    /// for the TRIM policy to release what it holds (ext4_should_retry_alloc).
    /// Blocks delayed allocation has reserved (delalloc.rs) are not available to `need`.
    fn ensure_space(&mut self, need: u64) -> Result<(), FsError> {
        let t0 = self.now;
        let need = need + self.delalloc.reserved_blocks;
        loop {
            let ready = self.bitmap.avail_count() + self.policy.reusable_blocks();
            if ready >= need {
                break;
            }
            // ext4_mb_discard_preallocations_should_retry: the small-file chunks' tails first.
            if self.inodegc_flush() || self.discard_lg_preallocations() {
                continue;
            }
            // A discard worker trimming a free run holds it too (ext4_try_to_trim_range
            // extends a freed extent to the end of its free run): wait for it.
            let pending = !self.running.freed.is_empty()
                || self.commit.is_some()
                || !self.policy.held().is_empty()
                || self.workers.iter().any(|w| !w.held.is_empty())
                || self.fitrim.is_some();
            if !pending || !self.may_wait_for_space() {
                return Err(FsError::NoSpace);
            }
            if !self.running.freed.is_empty() {
                let tid = self.running.tid;
                self.request_commit(self.now, tid);
            }
            let before = self.bitmap.avail_count() + self.policy.reusable_blocks();
            self.wait_until(|fs| {
                fs.bitmap.avail_count() + fs.policy.reusable_blocks() != before || fs.events.is_empty()
            });
            if self.bitmap.avail_count() + self.policy.reusable_blocks() == before && self.events.is_empty() {
                // Nothing left that could release a block.
                return Err(FsError::NoSpace);
            }
        }
        self.stats.space_wait_ns += self.now.since(t0);
        Ok(())
    }

    fn goal_for(&self, ino: Ino, logical: u64) -> u64 {
        let inode = &self.inodes[ino];
        match inode.extents.before(logical) {
            // ext4_ext_find_goal: continue the previous extent's physical layout.
            Some(e) => e.physical + (logical - e.logical),
            // A file's first blocks go where the last allocation ended (mballoc's stream
            // allocation, s_mb_last_group/s_mb_last_start): new data sweeps the whole disk
            // instead of refilling the lowest free blocks.
            None => inode.data_home.unwrap_or(self.stream_goal),
        }
    }

    /// mballoc's group-allocation hint (ext4_mb_group_or_file): any data allocation of a file
    /// that, with this allocation, is at most s_mb_stream_request (16 blocks): "if (size >
    /// sbi->s_mb_stream_request) group_pa_eligible = false", so a 64 KiB file is small. The
    /// kernel has no first-extent condition: an append to a small file also takes the group's
    /// chunk (a model that sent appends to the file's own goal left 4 blocks at the end of its
    /// first chunk, and the 6.8+ discard worker then trimmed that free run to the end of the
    /// group: 130 MB in the git-build strace, which the kernel never sent).
    fn small_file(&self, ino: Ino, end: u64) -> bool {
        let inode = &self.inodes[ino];
        let size_blocks = inode.size.div_ceil(self.config.block_bytes).max(end);
        self.config.small_file_chunk_blocks > 0 && size_blocks <= 16
    }

    /// Maps `count` unmapped blocks of `ino` from `logical`; delayed pages among them give
    /// their reservation to the allocation.
    fn allocate(&mut self, ino: Ino, logical: u64, count: u64) -> Result<(), FsError> {
        let delayed = self.delayed_pages_in(ino, logical, logical + count);
        self.delalloc.reserved_blocks -= delayed;
        let done = self.allocate_blocks(ino, logical, count);
        if done.is_err() {
            self.delalloc.reserved_blocks += self.delayed_pages_in(ino, logical, logical + count);
        }
        done
    }

    fn allocate_blocks(&mut self, ino: Ino, logical: u64, count: u64) -> Result<(), FsError> {
        self.ensure_space(count)?;
        let mut l = logical;
        let end = logical + count;
        while l < end {
            let want = end - l;
            let run = match self.policy.reuse(want) {
                Some(run) => {
                    self.bitmap.take_held(run.start, run.len);
                    let rel = self.policy.drain_releasable();
                    self.release(self.now, rel);
                    run
                }
                None if self.layout_fs.btrfs().is_some() => {
                    let run = self.btrfs_allocate(want).ok_or(FsError::NoSpace)?;
                    self.policy.on_allocate(run);
                    run
                }
                // Small files: the locality group's chunks (lg_prealloc.rs); large files
                // continue after them.
                None if self.small_file(ino, end) => self.allocate_small(ino, want)?,
                None => {
                    let goal = match self.flavor() == layout::Flavor::Xfs {
                        true => self.xfs_goal(ino, l, want),
                        false => self.goal_for(ino, l),
                    };
                    let run = self.bitmap.allocate(goal, want).ok_or(FsError::NoSpace)?;
                    self.policy.on_allocate(run);
                    if self.inodes[ino].data_home.is_none() {
                        self.stream_goal = run.end() % self.layout.total_blocks;
                    }
                    run
                }
            };
            let g0 = self.bitmap.group_of(run.start);
            let g1 = self.bitmap.group_of(run.end() - 1);
            for g in g0..=g1 {
                self.dirty_meta(self.layout.bitmap_block(g));
                self.dirty_meta(self.layout.gdt_block(g));
            }
            let max = self.config.max_extent_blocks;
            let mut off = 0;
            while off < run.len {
                let n = (run.len - off).min(max);
                self.inode_mut(ino)?.extents.insert(l + off, run.start + off, n);
                off += n;
            }
            l += run.len;
        }
        Ok(())
    }

    /// Maps every hole of `[b0, b1)`.
    fn fill_holes(&mut self, ino: Ino, b0: u64, b1: u64) -> Result<(), FsError> {
        let holes: Vec<(u64, u64)> = {
            let inode = self.inodes.get(ino).ok_or(FsError::BadInode(ino))?;
            delalloc::unmapped_parts(&inode.extents, b0, b1).collect()
        };
        let need: u64 = holes.iter().map(|h| h.1).sum();
        self.ensure_space(need - self.delayed_pages_in(ino, b0, b1))?;
        for (s, n) in holes {
            self.allocate(ino, s, n)?;
        }
        Ok(())
    }

    /// Buffered write of `bytes` at `offset`. Returns the first data tag: block i of the range
    /// holds `tag + i` (the model's stand-in for the data).
    pub fn write(&mut self, ino: Ino, offset: u64, bytes: u64) -> Result<u64, FsError> {
        let start = self.now;
        let tag = self.buffered_write(ino, offset, bytes);
        self.calls.write(self.now.since(start));
        tag
    }

    fn buffered_write(&mut self, ino: Ino, offset: u64, bytes: u64) -> Result<u64, FsError> {
        self.syscall();
        if bytes == 0 {
            return Ok(self.next_tag);
        }
        self.now = self.now.after((bytes * self.config.host.copy_ps_per_byte) / 1000);
        self.advance_to(self.now);
        let bs = self.config.block_bytes;
        let (b0, b1) = (offset / bs, (offset + bytes).div_ceil(bs));
        if !self.inodes.contains_key(ino) {
            return Err(FsError::BadInode(ino));
        }
        // A partial block that is on disk and not cached is read first.
        let mut rmw = Vec::new();
        for (b, partial) in [(b0, !offset.is_multiple_of(bs)), (b1 - 1, !(offset + bytes).is_multiple_of(bs))]
        {
            if partial && !self.dirty.contains(ino, b) && !self.is_unwritten(ino, b) {
                if let Some(p) = self.inodes[ino].extents.lookup(b) {
                    if !rmw.contains(&p) {
                        rmw.push(p);
                    }
                }
            }
        }
        if !rmw.is_empty() {
            let reqs = rmw.iter().map(|&p| Command::Read { offset: p * bs, bytes: bs }).collect();
            self.app_io(reqs, false);
        }
        if self.config.delalloc {
            self.delalloc_reserve(ino, b0, b1)?;
        } else {
            self.fill_holes(ino, b0, b1)?;
        }
        self.clear_unwritten(ino, b0, b1);
        let tag = self.next_tag;
        self.next_tag += b1 - b0;
        self.dirty.insert(PageRun { ino, first: b0, len: b1 - b0, tag });
        let inode = self.inode_mut(ino)?;
        inode.size = inode.size.max(offset + bytes);
        let ib = self.layout.inode_block(ino, bs, self.config.inode_bytes);
        self.dirty_meta(ib);
        if self.dirty.len() * bs > self.config.dirty_limit_bytes {
            // balance_dirty_pages: the writer writes back and waits.
            self.write_back_over_limit(ino);
        }
        Ok(tag)
    }

    /// O_DIRECT write: blocks allocated and written before the call returns (dd oflag=direct).
    pub fn write_direct(&mut self, ino: Ino, offset: u64, bytes: u64) -> Result<u64, FsError> {
        let start = self.now;
        let tag = self.direct_write(ino, offset, bytes);
        self.calls.write(self.now.since(start));
        tag
    }

    fn direct_write(&mut self, ino: Ino, offset: u64, bytes: u64) -> Result<u64, FsError> {
        self.syscall();
        let bs = self.config.block_bytes;
        if !offset.is_multiple_of(bs) || !bytes.is_multiple_of(bs) || bytes == 0 {
            return Err(FsError::Layout(format!(
                "O_DIRECT write at {offset} of {bytes} bytes is not block-aligned"
            )));
        }
        let (b0, b1) = (offset / bs, (offset + bytes) / bs);
        self.fill_holes(ino, b0, b1)?;
        self.clear_unwritten(ino, b0, b1);
        let tag = self.next_tag;
        self.next_tag += b1 - b0;
        let mut reqs = Vec::new();
        let max = (self.dev.max_transfer_bytes() / bs).max(1);
        // The write replaces every cached page of the range.
        self.dirty.remove(ino, b0, b1);
        self.writeback.remove(ino, b0, b1);
        let mut b = b0;
        while b < b1 {
            let p = self.inodes[ino].extents.lookup(b).unwrap_or_else(|| unreachable!());
            let mut n = 1;
            while b + n < b1 && n < max && self.inodes[ino].extents.lookup(b + n) == Some(p + n) {
                n += 1;
            }
            reqs.push(Command::Write { offset: p * bs, bytes: n * bs, tag: tag + (b - b0) });
            b += n;
        }
        self.stats.data_blocks_written += b1 - b0;
        self.app_io(reqs, false);
        let inode = self.inode_mut(ino)?;
        inode.size = inode.size.max(offset + bytes);
        let ib = self.layout.inode_block(ino, bs, self.config.inode_bytes);
        self.dirty_meta(ib);
        Ok(tag)
    }

    /// Reads `[offset, offset + bytes)`: one tag per block (0 for holes and unwritten blocks).
    pub fn read(&mut self, ino: Ino, offset: u64, bytes: u64) -> Result<Vec<u64>, FsError> {
        self.syscall();
        let bs = self.config.block_bytes;
        let inode = self.inodes.get(ino).ok_or(FsError::BadInode(ino))?;
        let end = (offset + bytes).min(inode.size);
        if end <= offset {
            return Ok(Vec::new());
        }
        let (b0, b1) = (offset / bs, end.div_ceil(bs));
        let mut out = vec![0u64; (b1 - b0) as usize];
        let mut fetch: Vec<(u64, u64)> = Vec::new();
        for b in b0..b1 {
            if let Some(t) = self.dirty.get(ino, b).or_else(|| self.writeback.get(ino, b)) {
                out[(b - b0) as usize] = t;
            } else if fallocate::in_runs(&inode.unwritten, b) {
                // An unwritten extent reads as zeroes without a device read.
            } else if let Some(p) = inode.extents.lookup(b) {
                fetch.push((p, b));
            }
        }
        let max = (self.dev.max_transfer_bytes() / bs).max(1);
        let h = self.config.host.clone();
        let mut done_max = self.now;
        let mut tags = Vec::new();
        for ((p0, l0), n) in request_merge::merged_runs(&fetch, max) {
            let t = self.now.after(h.submit_ns);
            self.advance_to(t);
            self.now = t;
            let done = self.dev_submit(t, &Command::Read { offset: p0 * bs, bytes: n * bs }, Some(&mut tags));
            done_max = done_max.max(done);
            for (k, tag) in tags.iter().enumerate() {
                out[(l0 - b0) as usize + k] = *tag;
            }
        }
        if !fetch.is_empty() {
            self.now = self.now.max(done_max.after(h.complete_ns));
            self.advance_to(self.now);
        }
        Ok(out)
    }

    fn drop_blocks_from(&mut self, ino: Ino, first: u64) -> Result<u64, FsError> {
        self.drop_cached_pages(ino, first, u64::MAX);
        self.clear_unwritten(ino, first, u64::MAX);
        let freed = self.inode_mut(ino)?.extents.truncate_from(first);
        let mut blocks = 0;
        // ext4_ext_remove_space frees from the file's last extent back to `first`: the order
        // ext4's tree of freed extents sees them (ext4_free_data.rs).
        for r in freed.into_iter().rev() {
            blocks += r.len;
            self.free_run(r);
        }
        self.now = self.now.after(blocks * self.config.host.free_block_ns);
        Ok(blocks)
    }

    pub fn truncate(&mut self, ino: Ino, size: u64) -> Result<(), FsError> {
        self.syscall();
        let bs = self.config.block_bytes;
        if !self.inodes.contains_key(ino) {
            return Err(FsError::BadInode(ino));
        }
        self.drop_blocks_from(ino, size.div_ceil(bs))?;
        self.inode_mut(ino)?.size = size;
        let ib = self.layout.inode_block(ino, bs, self.config.inode_bytes);
        self.dirty_meta(ib);
        Ok(())
    }

    /// Commits the running transaction (if it has changes) and waits for it; returns false if
    /// there was nothing to commit.
    fn commit_and_wait(&mut self) -> bool {
        let target = if !self.running.is_empty() {
            let tid = self.running.tid;
            self.request_commit(self.now, tid);
            tid
        } else if let Some(c) = &self.commit {
            c.tid
        } else {
            return false;
        };
        self.wait_until(|fs| fs.committed_tid >= target);
        true
    }

    /// fsync: the file's dirty pages, then a journal commit (or a FLUSH if nothing is pending).
    pub fn fsync(&mut self, ino: Ino) -> Result<(), FsError> {
        let start = self.now;
        let done = self.sync_file(ino);
        self.calls.fsync(self.now.since(start));
        done
    }

    fn sync_file(&mut self, ino: Ino) -> Result<(), FsError> {
        self.syscall();
        if !self.inodes.contains_key(ino) {
            return Err(FsError::BadInode(ino));
        }
        self.write_back(Some(ino));
        if !self.commit_and_wait() {
            self.app_io(vec![Command::Flush], true);
        }
        Ok(())
    }

    /// sync: every dirty page and the running transaction.
    pub fn sync(&mut self) {
        self.syscall();
        self.write_back(None);
        self.commit_and_wait();
    }

    /// umount: sync, let background work in flight finish, checkpoint the journal. ext4 and
    /// btrfs stop their threads and drop their timers (unmount.rs); XFS forces its log,
    /// flushes inodegc and cancels its timers (xfs_unmount.rs). The kernel's discard workers
    /// that check for a closing file system (ext4's discard worker, btrfs' async discard) give
    /// up what they have not started when the superblock is deactivated.
    pub fn umount(&mut self) {
        if self.config.inodegc.is_some() {
            self.xfs_unmount_quiesce();
        } else {
            self.sync();
            if self.policy.gives_up_at_umount() {
                // generic_shutdown_super (fs/super.c): sync_filesystem ends with
                // sync_blockdev, which writes ext4's committed metadata home while the
                // discard worker runs; then SB_ACTIVE is cleared.
                self.write_back_checkpoint();
                self.policy.give_up_queued();
            }
            self.stop_threads_at_unmount();
            // ext4_mb_release: the in-core preallocations go (no I/O).
            self.discard_lg_preallocations();
        }
        let mut reqs = self.checkpoint_requests();
        reqs.push(Command::Flush);
        self.app_io(reqs, false);
        self.fitrim_unmounted();
    }

    /// The block device's write-back that sync(2) and syncfs(2) end with (fs/sync.c:
    /// ksys_sync's `sync_bdevs`, sync_filesystem's `sync_blockdev`): ext4's metadata buffers,
    /// which jbd2 marks dirty once their transaction commits (the checkpoint list), are
    /// written home then, so a block journaled again later is written home again. XFS and
    /// btrfs keep their metadata in their own caches, which that write-back does not reach.
    pub fn write_back_checkpoint(&mut self) {
        if self.config.inodegc.is_none() && self.layout_fs.btrfs().is_none() && !self.checkpoint.is_empty() {
            let reqs = self.checkpoint_requests();
            self.app_io(reqs, false);
        }
    }

    /// The checkpoint list's blocks as home writes; the list is then empty.
    fn checkpoint_requests(&mut self) -> Vec<Command> {
        let home: Vec<Run> = coalesce(self.checkpoint.iter().map(|&b| Run::new(b, 1)).collect());
        self.stats.metadata_blocks_checkpointed += self.checkpoint.len() as u64;
        self.checkpoint.clear();
        self.write_requests_meta(&home)
    }

    /// umount, then mount again with `policy`: queued TRIMs finish first (but for what
    /// [`FileSystem::umount`] gives up), and FITRIM's "trimmed since mount" group flags start
    /// clear.
    pub fn remount(&mut self, policy: crate::config::PolicyKind) {
        let params = self.config.params.clone();
        self.remount_with(policy, params);
    }

    /// [`FileSystem::remount`] with the policies' parameters replaced too (e.g. fstrim's period).
    pub fn remount_with(&mut self, policy: crate::config::PolicyKind, params: crate::config::PolicyParams) {
        self.umount();
        self.mount_with(policy, params);
    }

    /// The mount half of [`FileSystem::remount_with`], after an [`FileSystem::umount`] that
    /// left the file system unmounted for a while (a script's `umount`, then `mount`).
    pub fn mount_with(&mut self, policy: crate::config::PolicyKind, params: crate::config::PolicyParams) {
        self.config.params = params;
        self.config.policy = policy;
        self.policy = policy::build(policy, &self.config.params, self.config.block_bytes);
        self.group_trimmed.iter_mut().for_each(|g| *g = None);
        self.fitrim_timer_armed = false;
        self.inode_alloc_mounted();
        self.journal_mounted();
        self.fitrim_mounted();
        if self.delalloc.reserved_blocks > 0 && !self.delalloc.flusher_armed {
            // Pages a failed write-back left dirty: the flusher runs again.
            self.delalloc.flusher_armed = true;
            self.events.push(self.now, Ev::Flusher);
        }
        let now = self.now;
        if self.layout_fs.ext4().is_some_and(|e| e.lazy_init_group.is_some()) {
            // ext4lazyinit resumes where umount stopped it, after a new start delay.
            self.lazy_init_register(now);
        }
        if let Some(b) = self.layout_fs.btrfs_mut() {
            // In-memory only: the metadata cluster, the device's CHUNK_TRIMMED bits, the
            // unused list (the block groups are in use now); the transaction kthread restarts.
            b.meta_cluster = false;
            b.unallocated_trimmed = false;
            b.unused.clear();
            b.mounted_at = now;
        }
    }

    /// Static metadata runs: the layout's, and with btrfs mkfs' tree nodes; sorted, disjoint.
    fn static_runs(&self) -> Vec<Run> {
        let mut v = self.layout.static_runs();
        if let Some(b) = self.layout_fs.btrfs() {
            v.extend(b.static_runs());
        }
        v.sort_by_key(|r| r.start);
        coalesce(v)
    }

    /// Runs kept out of the allocator by the TRIM policy, a discard worker or a locality-group
    /// preallocation, for [`FileSystem::check`]: (run, owner id, owner).
    fn held_runs(&self) -> Vec<(Run, u8, &'static str)> {
        let policy = self.policy.held().into_iter().map(|r| (r, 4, "TRIM policy"));
        let workers = self.workers.iter().flat_map(|w| &w.held).map(|f| (f.run, 4, "discard worker"));
        let ext4 = self.layout_fs.ext4().into_iter();
        let pas = ext4.flat_map(|e| e.lg_prealloc.runs()).map(|r| (r, 7, "locality-group preallocation"));
        policy.chain(workers).chain(pas).collect()
    }

    /// The full consistency check: every block is exactly one of static metadata, a file
    /// extent, available, or held by one owner (running or committing transaction, the TRIM
    /// policy, FITRIM); bitmaps agree with their counts; dirty pages are mapped; the policy's
    /// queued available runs are available; the device's own check passes. (An owner's name is
    /// formatted only for an error: the check visits every file's extents.)
    pub fn check(&self) -> Result<(), String> {
        self.bitmap.check()?;
        let n = self.layout.total_blocks as usize;
        let mut owner = vec![0u8; n];
        let mut mark = |r: Run, who: u8, what: &dyn std::fmt::Display| -> Result<(), String> {
            for b in r.start..r.end() {
                let o = &mut owner[b as usize];
                if *o != 0 {
                    return Err(format!("fs: block {b} owned twice ({what} and owner {})", *o));
                }
                *o = who;
            }
            Ok(())
        };
        for r in self.static_runs() {
            mark(r, 1, &"static metadata")?;
        }
        // Unlinked inodes awaiting XFS's inodegc still own their extents; directories (6) too.
        let files = self.inodes.iter().chain(self.layout_fs.inodegc_queued().iter().map(|(i, n)| (*i, n)));
        for (ino, extents, who) in files.map(|(i, n)| (i, &n.extents, 2)).chain(self.dir_blocks()) {
            for e in extents.iter() {
                mark(Run::new(e.physical, e.len), who, &format_args!("inode {ino}"))?;
            }
        }
        for f in &self.running.freed {
            mark(f.run, 3, &"running transaction's freed list")?;
        }
        if let Some(c) = &self.commit {
            for f in c.freed.iter().chain(&c.trimming) {
                mark(f.run, 3, &"committing transaction")?;
            }
        }
        for (r, who, what) in self.held_runs() {
            mark(r, who, &what)?;
        }
        for r in self.fitrim_held() {
            mark(r, 5, &"FITRIM")?;
        }
        for b in 0..n as u64 {
            let o = owner[b as usize];
            let (used, avail) = (self.bitmap.is_used(b), self.bitmap.is_avail(b));
            let ok = match o {
                1 | 2 | 6 | 7 => used && !avail,
                3..=5 => !used && !avail,
                _ => !used && avail,
            };
            if !ok {
                return Err(format!("fs: block {b} owner {o} but used {used} available {avail}"));
            }
        }
        for r in self.policy.queued_available() {
            for b in r.start..r.end() {
                if !self.bitmap.is_avail(b) {
                    return Err(format!("fs: async queue holds block {b} that is not available"));
                }
            }
        }
        self.delalloc_check()?;
        // Journal: the log fits its area, transactions are in order, and only metadata (static,
        // directory blocks; revoked ones in the commit in flight) is journaled or checkpointed.
        self.log.check()?;
        let committing = self.commit.as_ref().map(|c| c.tid);
        if self.committed_tid >= self.running.tid
            || committing.is_some_and(|t| t <= self.committed_tid || t >= self.running.tid)
        {
            return Err(format!(
                "fs: transaction order: committed {} committing {committing:?} running {}",
                self.committed_tid, self.running.tid
            ));
        }
        let journaled = self
            .running
            .meta
            .iter()
            .chain(self.checkpoint.iter())
            .chain(self.commit.iter().flat_map(|c| c.meta.iter()));
        for &b in journaled {
            if !matches!(owner.get(b as usize), Some(&1) | Some(&6)) && !self.revoked.contains(&b) {
                return Err(format!("fs: journaled block {b} is not metadata"));
            }
        }
        self.writeback_check()?;
        self.namespace_check()?;
        self.inodegc_check()?;
        self.dev.check()
    }
}
