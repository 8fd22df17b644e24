//! The ext4-like file system: layout (block groups, static metadata, journal area, directory),
//! files as extent maps, the page cache, the ordered JBD2-like journal, and the simulated
//! threads (application, journal thread, discard workers, fstrim) that issue its commands.
//!
//! The application calls methods; each advances the application's clock (`now()`). Background
//! threads are events on a [`EventQueue`]; before every submission the queue is run up to the
//! submitting thread's instant, so commands reach the device in non-decreasing time.
//!
//! Commit order (ordered mode): data of dirty pages -> checkpoint if the journal is full ->
//! descriptor + metadata blocks into the journal -> commit block + FLUSH -> the policy's TRIMs
//! of the transaction's freed blocks -> fsync waiters wake.

use crate::bitmap::BlockBitmap;
use crate::block_device::{BlockDevice, DevRequest};
use crate::config::FsConfig;
use crate::extent::{coalesce, ExtentMap, FreedRun, Run};
use crate::policy::{self, TrimMode, TrimPolicy, WorkerPick};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use trimlab_sim::{EventQueue, SimTime};

pub type Ino = u32;

/// Pages handed to write-back with their tags.
type PageTags = Vec<((Ino, u64), u64)>;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FsError {
    #[error("no space left on the file system")]
    NoSpace,
    #[error("no such file: {0}")]
    NotFound(String),
    #[error("file exists: {0}")]
    Exists(String),
    #[error("no such inode: {0}")]
    BadInode(Ino),
    #[error("no free inode or directory slot")]
    NoInodes,
    #[error("file system layout: {0}")]
    Layout(String),
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
    pub blocks_read: u64,
    pub write_commands: u64,
    pub read_commands: u64,
    pub flush_commands: u64,
    /// Every TRIM command (policy, FITRIM, mkfs) and its bytes.
    pub trim_commands: u64,
    pub trim_bytes: u64,
    pub fitrim_trim_commands: u64,
    pub fitrim_trim_bytes: u64,
    /// Time the application waited for blocks held by the TRIM policy or a commit.
    pub space_wait_ns: u64,
    /// When the last background TRIM (worker or commit) completed.
    pub last_trim_done_ns: u64,
}

/// Where the static metadata lives.
#[derive(Clone, Debug)]
struct Layout {
    total_blocks: u64,
    bpg: u64,
    groups: u64,
    inodes_per_group: u64,
    itable_blocks: u64,
    gdt_blocks: u64,
    journal_start: u64,
    journal_blocks: u64,
    dir_start: u64,
    dir_blocks: u64,
    static_blocks: u64,
}

impl Layout {
    fn new(capacity_bytes: u64, c: &FsConfig) -> Result<Layout, FsError> {
        let total = capacity_bytes / c.block_bytes;
        let bpg = c.blocks_per_group;
        if bpg == 0 || !bpg.is_multiple_of(64) {
            return Err(FsError::Layout(format!(
                "blocks_per_group = {bpg} (must be a positive multiple of 64)"
            )));
        }
        let groups = total.div_ceil(bpg);
        let inodes_per_group = (bpg * c.block_bytes / c.inode_ratio_bytes).max(16);
        let itable_blocks = (inodes_per_group * c.inode_bytes).div_ceil(c.block_bytes);
        let gdt_blocks = (groups * 64).div_ceil(c.block_bytes);
        let journal_blocks =
            if c.journal_blocks > 0 { c.journal_blocks } else { (total / 64).clamp(1024, 16384) };
        // One flat root directory, large enough for every inode up to 2^17 entries.
        let dir_blocks = (groups * inodes_per_group).min(1 << 17).div_ceil(c.dir_entries_per_block);
        let group0 = 1 + gdt_blocks + 2 + itable_blocks;
        let l = Layout {
            total_blocks: total,
            bpg,
            groups,
            inodes_per_group,
            itable_blocks,
            gdt_blocks,
            journal_start: group0,
            journal_blocks,
            dir_start: group0 + journal_blocks,
            dir_blocks,
            static_blocks: 0,
        };
        let last = total - (groups - 1) * bpg;
        if l.dir_start + dir_blocks >= bpg.min(total) || last < 2 + itable_blocks + 16 {
            return Err(FsError::Layout(format!(
                "{total} blocks in {groups} groups of {bpg} cannot hold the journal ({journal_blocks} blocks), directory and inode tables"
            )));
        }
        Ok(l)
    }

    /// Static metadata runs (superblock, descriptors, bitmaps, inode tables, journal, dir).
    fn static_runs(&self) -> Vec<Run> {
        let mut v = vec![Run::new(0, self.dir_start + self.dir_blocks)];
        for g in 1..self.groups {
            v.push(Run::new(g * self.bpg, 2 + self.itable_blocks));
        }
        v
    }
    fn group_meta_start(&self, g: u64) -> u64 {
        if g == 0 {
            1 + self.gdt_blocks
        } else {
            g * self.bpg
        }
    }
    fn bitmap_block(&self, g: u64) -> u64 {
        self.group_meta_start(g)
    }
    fn gdt_block(&self, g: u64) -> u64 {
        1 + (g * 64) / 4096
    }
    fn inode_block(&self, ino: Ino, block_bytes: u64, inode_bytes: u64) -> u64 {
        let i = ino as u64 - 1;
        let g = i / self.inodes_per_group;
        self.group_meta_start(g) + 2 + (i % self.inodes_per_group) * inode_bytes / block_bytes
    }
    fn inode_group(&self, ino: Ino) -> u64 {
        (ino as u64 - 1) / self.inodes_per_group
    }
}

struct Inode {
    size: u64,
    extents: ExtentMap,
    dir_slot: u64,
}

#[derive(Default)]
struct Transaction {
    tid: u64,
    meta: BTreeSet<u64>,
    freed: Vec<FreedRun>,
}

impl Transaction {
    fn is_empty(&self) -> bool {
        self.meta.is_empty() && self.freed.is_empty()
    }
}

/// Requests a thread issues one after another (serial: each waits for the previous completion)
/// or back to back (then one wait for the last).
#[derive(Default)]
struct Batch {
    reqs: VecDeque<DevRequest>,
    serial: bool,
    done_max: SimTime,
}

enum Step {
    Next(SimTime),
    Finished(SimTime),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    Data,
    Log,
    CommitBlock,
    Trim,
}

struct Commit {
    tid: u64,
    phase: Phase,
    batch: Batch,
    started: SimTime,
    meta: Vec<u64>,
    freed: Vec<FreedRun>,
    trimming: Vec<FreedRun>,
    pages: Vec<((Ino, u64), u64)>,
}

#[derive(Default)]
struct Worker {
    scheduled: bool,
    ticket: Option<u64>,
    batch: Batch,
    finishing: bool,
}

struct Fitrim {
    groups: VecDeque<u64>,
    start: u64,
    end: u64,
    minlen: u64,
    group: Option<u64>,
    pending: VecDeque<Run>,
    current: Option<(Run, Batch)>,
    finishing: bool,
    trimmed_bytes: u64,
    done: bool,
    /// Started by the fstrim policy's timer (nobody waits for it).
    periodic: bool,
}

#[derive(Clone, Copy, Debug)]
enum Ev {
    CommitTimer(u64),
    Journal,
    Worker(usize),
    Fitrim,
    FitrimTimer,
}

const META_TAG: u64 = 1 << 62;

/// A mounted file system over its block device.
pub struct FileSystem<D: BlockDevice> {
    dev: D,
    config: FsConfig,
    layout: Layout,
    bitmap: BlockBitmap,
    inodes: BTreeMap<Ino, Inode>,
    names: BTreeMap<String, Ino>,
    free_inos: BTreeSet<Ino>,
    next_ino: Ino,
    free_slots: BTreeSet<u64>,
    next_slot: u64,
    dirty: BTreeMap<(Ino, u64), u64>,
    /// Pages taken for write-back whose write has not been submitted yet: still readable
    /// from the page cache (the kernel keeps them cached under PG_writeback).
    writeback: BTreeMap<(Ino, u64), u64>,
    running: Transaction,
    commit: Option<Commit>,
    commit_requested: u64,
    committed_tid: u64,
    journal_head: u64,
    journal_used: u64,
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
    group_trimmed: Vec<Option<u64>>,
    /// Where the last allocation ended: the goal of a file's first extent.
    stream_goal: u64,
    /// Run [`FileSystem::check`] after every commit (tests).
    verify: bool,
    stats: FsStats,
}

impl<D: BlockDevice> FileSystem<D> {
    /// mke2fs at `start`: optionally discards the whole device (in 2 GiB steps, each split at
    /// the device's largest TRIM and issued back to back, as mke2fs + blkdev_issue_discard do),
    /// then writes superblock, descriptors, bitmaps, root directory and zeroes the journal
    /// (inode tables are initialised lazily, lazy_itable_init). Returns the mounted file system;
    /// its `now()` is when mkfs finished.
    pub fn mkfs(dev: D, config: FsConfig, start: SimTime, discard: bool) -> Result<Self, FsError> {
        if dev.tag_bytes() != config.block_bytes {
            return Err(FsError::Layout(format!(
                "block_bytes = {} must equal the device's data unit of {} bytes",
                config.block_bytes,
                dev.tag_bytes()
            )));
        }
        let layout = Layout::new(dev.capacity_bytes(), &config)?;
        let mut bitmap = BlockBitmap::new(layout.total_blocks, layout.bpg);
        let mut fs = FileSystem {
            policy: policy::build(config.policy, &config.params, config.block_bytes),
            group_trimmed: vec![None; layout.groups as usize],
            dev,
            bitmap: BlockBitmap::new(1, 64),
            inodes: BTreeMap::new(),
            names: BTreeMap::new(),
            free_inos: BTreeSet::new(),
            next_ino: 2,
            free_slots: BTreeSet::new(),
            next_slot: 0,
            dirty: BTreeMap::new(),
            writeback: BTreeMap::new(),
            running: Transaction { tid: 1, ..Default::default() },
            commit: None,
            commit_requested: 0,
            committed_tid: 0,
            journal_head: 0,
            journal_used: 0,
            checkpoint: BTreeSet::new(),
            events: EventQueue::new(),
            now: start,
            last_arrival: SimTime::ZERO,
            next_tag: 1,
            journal_tag: 1 << 63,
            workers: (0..config.params.lazy_workers_max.max(1)).map(|_| Worker::default()).collect(),
            fitrim: None,
            fitrim_timer_armed: false,
            stream_goal: 0,
            verify: false,
            stats: FsStats::default(),
            config,
            layout,
        };
        let bs = fs.config.block_bytes;
        if discard {
            let step = 2u64 << 30;
            let cap = fs.layout.total_blocks * bs;
            let mut off = 0;
            while off < cap {
                let len = step.min(cap - off);
                let reqs = fs.trim_requests(Run::new(off / bs, len / bs));
                fs.app_io(reqs, false);
                off += len;
            }
        }
        let mut writes = Vec::new();
        for r in fs.layout.static_runs() {
            bitmap.take(r.start, r.len);
        }
        fs.bitmap = bitmap;
        fs.layout.static_blocks = fs.bitmap.used_count();
        // superblock + descriptors, each group's bitmaps, the journal, the directory.
        writes.push(Run::new(0, 1 + fs.layout.gdt_blocks + 2));
        for g in 1..fs.layout.groups {
            writes.push(Run::new(g * fs.layout.bpg, 2));
        }
        writes.push(Run::new(fs.layout.journal_start, fs.layout.journal_blocks));
        writes.push(Run::new(fs.layout.dir_start, 1));
        let reqs = fs.write_requests_meta(&writes);
        fs.app_io(reqs, false);
        fs.app_io(vec![DevRequest::Flush], true);
        Ok(fs)
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
    pub fn utilization(&self) -> f64 {
        (self.bitmap.used_count() - self.layout.static_blocks) as f64 / self.data_blocks() as f64
    }
    pub fn available_blocks(&self) -> u64 {
        self.bitmap.avail_count()
    }
    pub fn lookup(&self, name: &str) -> Option<Ino> {
        self.names.get(name).copied()
    }
    pub fn names(&self) -> impl Iterator<Item = (&String, &Ino)> {
        self.names.iter()
    }
    pub fn file_size(&self, ino: Ino) -> Option<u64> {
        self.inodes.get(&ino).map(|i| i.size)
    }
    pub fn extent_count(&self, ino: Ino) -> Option<usize> {
        self.inodes.get(&ino).map(|i| i.extents.len())
    }
    /// Physical runs of a file (for tests and reports).
    pub fn file_runs(&self, ino: Ino) -> Vec<Run> {
        self.inodes
            .get(&ino)
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
            Ev::FitrimTimer => {
                self.fitrim_timer_armed = false;
                if let Some((_, minlen)) = self.policy.periodic_fitrim() {
                    if self.fitrim.is_none() {
                        self.start_fitrim(t, 0, self.layout.total_blocks, minlen / self.config.block_bytes);
                        if let Some(j) = self.fitrim.as_mut() {
                            j.periodic = true;
                        }
                    }
                }
            }
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

    fn dev_submit(&mut self, at: SimTime, req: &DevRequest, out: Option<&mut Vec<u64>>) -> SimTime {
        assert!(
            at >= self.last_arrival,
            "fs: submission at {at} before the previous one at {}",
            self.last_arrival
        );
        self.last_arrival = at;
        let bs = self.config.block_bytes;
        match *req {
            DevRequest::Trim { offset, bytes } => {
                for b in offset / bs..(offset + bytes) / bs {
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
                self.stats.trim_bytes += bytes;
            }
            DevRequest::Write { bytes, .. } => {
                self.stats.write_commands += 1;
                let _ = bytes;
            }
            DevRequest::Read { bytes, .. } => {
                self.stats.read_commands += 1;
                self.stats.blocks_read += bytes / bs;
            }
            DevRequest::Flush => self.stats.flush_commands += 1,
        }
        self.dev.submit(at, req, out).unwrap_or_else(|e| panic!("fs: the device refused {req:?}: {e}"))
    }

    /// The application issues `reqs` and waits for them.
    fn app_io(&mut self, reqs: Vec<DevRequest>, serial: bool) {
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

    fn trim_requests(&self, run: Run) -> Vec<DevRequest> {
        let bs = self.config.block_bytes;
        let max_blocks = (self.dev.max_trim_bytes() / bs).max(1);
        let mut v = Vec::new();
        let mut s = run.start;
        while s < run.end() {
            let n = max_blocks.min(run.end() - s);
            v.push(DevRequest::Trim { offset: s * bs, bytes: n * bs });
            s += n;
        }
        v
    }

    fn write_requests_meta(&mut self, runs: &[Run]) -> Vec<DevRequest> {
        let bs = self.config.block_bytes;
        let max = (self.dev.max_transfer_bytes() / bs).max(1);
        let mut v = Vec::new();
        for r in runs {
            let mut s = r.start;
            while s < r.end() {
                let n = max.min(r.end() - s);
                v.push(DevRequest::Write { offset: s * bs, bytes: n * bs, tag: META_TAG + s });
                s += n;
            }
        }
        v
    }

    /// Takes dirty pages (all, or one file's) and returns the write requests: physically
    /// contiguous blocks with consecutive tags share a request.
    fn take_dirty(&mut self, only: Option<Ino>) -> (Vec<DevRequest>, PageTags) {
        let keys: Vec<(Ino, u64)> = match only {
            Some(ino) => self.dirty.range((ino, 0)..=(ino, u64::MAX)).map(|(k, _)| *k).collect(),
            None => self.dirty.keys().copied().collect(),
        };
        let mut blocks: Vec<(u64, u64)> = Vec::with_capacity(keys.len());
        let mut pages = Vec::with_capacity(keys.len());
        for k in keys {
            let tag = self.dirty.remove(&k).unwrap_or_else(|| unreachable!());
            self.writeback.insert(k, tag);
            pages.push((k, tag));
            let phys = self.inodes[&k.0]
                .extents
                .lookup(k.1)
                .unwrap_or_else(|| unreachable!("fs: dirty page {k:?} is not mapped"));
            blocks.push((phys, tag));
        }
        blocks.sort_unstable();
        self.stats.data_blocks_written += blocks.len() as u64;
        let bs = self.config.block_bytes;
        let max = (self.dev.max_transfer_bytes() / bs).max(1);
        let mut reqs = Vec::new();
        let mut i = 0;
        while i < blocks.len() {
            let (p0, t0) = blocks[i];
            let mut n = 1;
            while i + (n as usize) < blocks.len()
                && n < max
                && blocks[i + n as usize] == (p0 + n, t0.wrapping_add(n))
            {
                n += 1;
            }
            reqs.push(DevRequest::Write { offset: p0 * bs, bytes: n * bs, tag: t0 });
            i += n as usize;
        }
        (reqs, pages)
    }

    /// Write-back of `pages` has been submitted: they leave the write-back set.
    fn end_writeback(&mut self, pages: Vec<((Ino, u64), u64)>) {
        for (k, tag) in pages {
            if self.writeback.get(&k) == Some(&tag) {
                self.writeback.remove(&k);
            }
        }
    }

    // ----- journal -----

    fn dirty_meta(&mut self, block: u64) {
        if self.running.is_empty() {
            let at = self.now.after(self.config.commit_interval_ns);
            self.events.push(at, Ev::CommitTimer(self.running.tid));
        }
        self.running.meta.insert(block);
    }

    fn free_run(&mut self, run: Run) {
        if self.running.is_empty() {
            let at = self.now.after(self.config.commit_interval_ns);
            self.events.push(at, Ev::CommitTimer(self.running.tid));
        }
        self.bitmap.free(run.start, run.len);
        let g0 = self.bitmap.group_of(run.start);
        let g1 = self.bitmap.group_of(run.end() - 1);
        for g in g0..=g1 {
            self.running.meta.insert(self.layout.bitmap_block(g));
            self.running.meta.insert(self.layout.gdt_block(g));
        }
        self.running.freed.push(FreedRun { run, freed_at: self.now });
    }

    fn request_commit(&mut self, now: SimTime, tid: u64) {
        self.commit_requested = self.commit_requested.max(tid);
        if self.commit.is_none() {
            self.start_commit(now);
        }
    }

    fn start_commit(&mut self, now: SimTime) {
        if self.running.is_empty() || self.running.tid > self.commit_requested {
            return;
        }
        let tid = self.running.tid;
        let txn = std::mem::replace(&mut self.running, Transaction { tid: tid + 1, ..Default::default() });
        let mut freed = txn.freed;
        freed.sort_by_key(|f| f.run.start);
        let mut merged: Vec<FreedRun> = Vec::with_capacity(freed.len());
        for f in freed {
            match merged.last_mut() {
                Some(m) if m.run.end() == f.run.start => {
                    m.run.len += f.run.len;
                    m.freed_at = m.freed_at.min(f.freed_at);
                }
                _ => merged.push(f),
            }
        }
        self.commit = Some(Commit {
            tid,
            phase: Phase::Data,
            batch: Batch::default(),
            started: now,
            meta: txn.meta.into_iter().collect(),
            freed: merged,
            trimming: Vec::new(),
            pages: Vec::new(),
        });
        // The journal thread wakes up and writes the transaction's ordered data first.
        let (data, pages) = self.take_dirty(None);
        if let Some(c) = self.commit.as_mut() {
            c.batch = Batch { reqs: data.into(), serial: false, done_max: SimTime::ZERO };
            c.pages = pages;
        }
        let at = now.after(self.config.host.wakeup_ns + self.config.host.submit_ns);
        self.events.push(at, Ev::Journal);
    }

    fn journal_step(&mut self, now: SimTime) {
        let Some(mut c) = self.commit.take() else { unreachable!("fs: journal event without a commit") };
        let mut batch = std::mem::take(&mut c.batch);
        let step = self.batch_step(now, &mut batch);
        c.batch = batch;
        match step {
            Step::Next(t) => {
                self.commit = Some(c);
                self.events.push(t, Ev::Journal);
            }
            Step::Finished(t) if t > now => {
                // Wait for the batch's last completion, then move on.
                c.batch = Batch::default();
                self.commit = Some(c);
                self.events.push(t, Ev::Journal);
            }
            Step::Finished(_) => self.commit_next_phase(now, c),
        }
    }

    fn commit_next_phase(&mut self, now: SimTime, mut c: Commit) {
        let submit = self.config.host.submit_ns;
        match c.phase {
            Phase::Data => {
                let pages = std::mem::take(&mut c.pages);
                self.end_writeback(pages);
                // Descriptor blocks hold 16-byte tags; a checkpoint makes room first.
                let n = c.meta.len() as u64;
                let per_desc = self.config.block_bytes / 16 - 1;
                let log_blocks = n + n.div_ceil(per_desc).max(1);
                let mut reqs = Vec::new();
                if self.journal_used + log_blocks + 1 > self.layout.journal_blocks {
                    let home: Vec<Run> = coalesce(self.checkpoint.iter().map(|&b| Run::new(b, 1)).collect());
                    self.stats.metadata_blocks_checkpointed += self.checkpoint.len() as u64;
                    self.stats.checkpoints += 1;
                    self.checkpoint.clear();
                    reqs.extend(self.write_requests_meta(&home));
                    reqs.push(DevRequest::Flush);
                    self.journal_used = 0;
                }
                reqs.extend(self.journal_writes(log_blocks));
                c.phase = Phase::Log;
                c.batch = Batch { reqs: reqs.into(), serial: false, done_max: SimTime::ZERO };
            }
            Phase::Log => {
                let mut reqs = self.journal_writes(1);
                reqs.push(DevRequest::Flush);
                c.phase = Phase::CommitBlock;
                c.batch = Batch { reqs: reqs.into(), serial: true, done_max: SimTime::ZERO };
            }
            Phase::CommitBlock => {
                self.checkpoint.extend(c.meta.iter().copied());
                let util = self.utilization();
                let freed = std::mem::take(&mut c.freed);
                let plan = self.policy.on_commit(now, freed, util);
                self.release(now, plan.release);
                let mut reqs = Vec::new();
                for f in &plan.trim {
                    reqs.extend(self.trim_requests(f.run));
                }
                self.count_policy_trims(&reqs);
                c.trimming = plan.trim;
                c.phase = Phase::Trim;
                c.batch = Batch {
                    reqs: reqs.into(),
                    serial: plan.mode == TrimMode::Serial,
                    done_max: SimTime::ZERO,
                };
                if !c.batch.reqs.is_empty() {
                    self.commit = Some(c);
                    self.events.push(now.after(submit), Ev::Journal);
                    return;
                }
                return self.commit_next_phase(now, c);
            }
            Phase::Trim => {
                if !c.trimming.is_empty() {
                    self.stats.last_trim_done_ns = now.0;
                }
                let trimmed = std::mem::take(&mut c.trimming);
                self.release(now, trimmed);
                self.committed_tid = c.tid;
                let took = now.since(c.started);
                self.stats.commits += 1;
                self.stats.commit_ns_total += took;
                self.stats.commit_ns_max = self.stats.commit_ns_max.max(took);
                self.wake_workers(now);
                if self.verify {
                    self.check().unwrap_or_else(|e| panic!("fs: after commit {}: {e}", c.tid));
                }
                if let Some((period, _)) = self.policy.periodic_fitrim() {
                    if !self.fitrim_timer_armed {
                        self.fitrim_timer_armed = true;
                        self.events.push(now.after(period), Ev::FitrimTimer);
                    }
                }
                if self.commit_requested >= self.running.tid {
                    self.start_commit(now);
                }
                return;
            }
        }
        self.commit = Some(c);
        self.events.push(now.after(submit), Ev::Journal);
    }

    fn journal_writes(&mut self, blocks: u64) -> Vec<DevRequest> {
        let bs = self.config.block_bytes;
        let max = (self.dev.max_transfer_bytes() / bs).max(1);
        let mut reqs = Vec::new();
        let mut left = blocks;
        while left > 0 {
            let room = self.layout.journal_blocks - self.journal_head;
            let n = left.min(room).min(max);
            let off = (self.layout.journal_start + self.journal_head) * bs;
            reqs.push(DevRequest::Write { offset: off, bytes: n * bs, tag: self.journal_tag });
            self.journal_tag += n;
            self.journal_head = (self.journal_head + n) % self.layout.journal_blocks;
            left -= n;
        }
        self.journal_used += blocks;
        self.stats.journal_blocks_written += blocks;
        reqs
    }

    fn count_policy_trims(&mut self, reqs: &[DevRequest]) {
        for r in reqs {
            if let DevRequest::Trim { bytes, .. } = r {
                let s = self.policy.stats_mut();
                s.trim_commands += 1;
                s.trim_bytes += bytes;
            }
        }
    }

    /// Held runs become allocatable.
    fn release(&mut self, now: SimTime, runs: Vec<FreedRun>) {
        for f in runs {
            if f.run.len == 0 {
                continue;
            }
            self.bitmap.release(f.run.start, f.run.len);
            let s = self.policy.stats_mut();
            s.released_blocks += f.run.len;
            s.unusable_block_s += f.run.len as f64 * now.since(f.freed_at) as f64 / 1e9;
            let g0 = self.bitmap.group_of(f.run.start);
            let g1 = self.bitmap.group_of(f.run.end() - 1);
            for g in g0..=g1 {
                self.group_trimmed[g as usize] = None;
            }
        }
    }

    // ----- discard workers -----

    fn wake_workers(&mut self, now: SimTime) {
        let want = self.policy.workers_wanted().min(self.workers.len());
        for i in 0..want {
            if !self.workers[i].scheduled {
                self.workers[i].scheduled = true;
                self.events.push(now.after(self.config.host.wakeup_ns), Ev::Worker(i));
            }
        }
    }

    fn worker_step(&mut self, now: SimTime, i: usize) {
        if self.workers[i].finishing {
            self.workers[i].finishing = false;
            let ticket = self.workers[i]
                .ticket
                .take()
                .unwrap_or_else(|| unreachable!("worker {i} finishing without a ticket"));
            self.policy.trim_done(ticket, now);
            self.stats.last_trim_done_ns = now.0;
            let rel = self.policy.drain_releasable();
            self.release(now, rel);
        }
        if self.workers[i].ticket.is_some() {
            let mut batch = std::mem::take(&mut self.workers[i].batch);
            let step = self.batch_step(now, &mut batch);
            self.workers[i].batch = batch;
            match step {
                Step::Next(t) => self.events.push(t, Ev::Worker(i)),
                Step::Finished(t) => {
                    self.workers[i].finishing = true;
                    self.events.push(t, Ev::Worker(i));
                }
            }
            return;
        }
        if i >= self.policy.workers_wanted() {
            self.workers[i].scheduled = false;
            return;
        }
        match self.policy.next_for_worker(now) {
            WorkerPick::Trim { ticket, run, hold } => {
                if hold {
                    self.bitmap.hold(run.start, run.len);
                }
                let reqs = self.trim_requests(run);
                self.count_policy_trims(&reqs);
                self.workers[i].ticket = Some(ticket);
                self.workers[i].batch = Batch { reqs: reqs.into(), serial: true, done_max: SimTime::ZERO };
                self.events.push(now.after(self.config.host.submit_ns), Ev::Worker(i));
                self.wake_workers(now);
            }
            WorkerPick::WaitUntil(t) => self.events.push(t.max(now), Ev::Worker(i)),
            WorkerPick::Idle => self.workers[i].scheduled = false,
        }
    }

    // ----- FITRIM -----

    fn start_fitrim(&mut self, now: SimTime, start: u64, end: u64, minlen: u64) {
        let bpg = self.layout.bpg;
        let groups: VecDeque<u64> = (start / bpg..end.div_ceil(bpg).min(self.layout.groups)).collect();
        self.fitrim = Some(Fitrim {
            groups,
            start,
            end,
            minlen: minlen.max(1),
            group: None,
            pending: VecDeque::new(),
            current: None,
            finishing: false,
            trimmed_bytes: 0,
            done: false,
            periodic: false,
        });
        self.events.push(now.after(self.config.host.submit_ns), Ev::Fitrim);
    }

    fn fitrim_step(&mut self, now: SimTime) {
        let Some(mut job) = self.fitrim.take() else { return };
        if job.finishing {
            job.finishing = false;
            if let Some((run, _)) = job.current.take() {
                self.release(now, vec![FreedRun { run, freed_at: now }]);
                job.trimmed_bytes += run.len * self.config.block_bytes;
            }
        }
        if let Some((run, mut batch)) = job.current.take() {
            let step = self.batch_step(now, &mut batch);
            job.current = Some((run, batch));
            match step {
                Step::Next(t) => self.events.push(t, Ev::Fitrim),
                Step::Finished(t) => {
                    job.finishing = true;
                    self.events.push(t, Ev::Fitrim);
                }
            }
            self.fitrim = Some(job);
            return;
        }
        // ext4_trim_all_free: a group's free extents of at least minlen, each held while its
        // TRIM is in flight and waited for; a group trimmed since mount with this minlen or a
        // smaller one is skipped.
        while job.pending.is_empty() {
            if let Some(g) = job.group.take() {
                self.group_trimmed[g as usize] = Some(job.minlen);
            }
            let Some(g) = job.groups.pop_front() else {
                job.done = true;
                if !job.periodic {
                    self.fitrim = Some(job);
                }
                return;
            };
            if self.group_trimmed[g as usize].is_some_and(|m| job.minlen >= m) {
                continue;
            }
            let lo = (g * self.layout.bpg).max(job.start);
            let hi = ((g + 1) * self.layout.bpg).min(job.end).min(self.layout.total_blocks);
            job.pending = self.bitmap.avail_runs(lo, hi, job.minlen).into();
            job.group = Some(g);
        }
        let run = job.pending.pop_front().unwrap_or_else(|| unreachable!());
        if (run.start..run.end()).all(|b| self.bitmap.is_avail(b)) {
            self.bitmap.hold(run.start, run.len);
            self.policy.forget(run);
            let reqs = self.trim_requests(run);
            for r in &reqs {
                if let DevRequest::Trim { bytes, .. } = r {
                    self.stats.fitrim_trim_commands += 1;
                    self.stats.fitrim_trim_bytes += bytes;
                }
            }
            job.current = Some((run, Batch { reqs: reqs.into(), serial: true, done_max: SimTime::ZERO }));
        }
        self.fitrim = Some(job);
        self.events.push(now.after(self.config.host.submit_ns), Ev::Fitrim);
    }

    /// FITRIM (`fstrim`) over the byte range, trimming free extents of at least `minlen_bytes`.
    /// The caller waits until it is done; returns the bytes trimmed.
    pub fn fstrim(&mut self, start_bytes: u64, len_bytes: u64, minlen_bytes: u64) -> u64 {
        self.syscall();
        self.wait_until(|fs| fs.fitrim.is_none());
        let bs = self.config.block_bytes;
        let end = (start_bytes.saturating_add(len_bytes) / bs).min(self.layout.total_blocks);
        self.start_fitrim(self.now, start_bytes / bs, end, minlen_bytes.div_ceil(bs));
        self.wait_until(|fs| fs.fitrim.as_ref().is_some_and(|j| j.done));
        self.fitrim.take().map_or(0, |j| j.trimmed_bytes)
    }

    // ----- application operations -----

    fn syscall(&mut self) {
        self.stats.syscalls += 1;
        self.now = self.now.after(self.config.host.syscall_ns);
        self.advance_to(self.now);
    }

    fn inode_mut(&mut self, ino: Ino) -> Result<&mut Inode, FsError> {
        self.inodes.get_mut(&ino).ok_or(FsError::BadInode(ino))
    }

    pub fn create(&mut self, name: &str) -> Result<Ino, FsError> {
        self.syscall();
        if self.names.contains_key(name) {
            return Err(FsError::Exists(name.to_string()));
        }
        let max_ino = (self.layout.groups * self.layout.inodes_per_group) as Ino;
        let ino = match self.free_inos.pop_first() {
            Some(i) => i,
            None if self.next_ino <= max_ino => {
                self.next_ino += 1;
                self.next_ino - 1
            }
            None => return Err(FsError::NoInodes),
        };
        let slot = match self.free_slots.pop_first() {
            Some(s) => s,
            None if self.next_slot < self.layout.dir_blocks * self.config.dir_entries_per_block => {
                self.next_slot += 1;
                self.next_slot - 1
            }
            None => {
                self.free_inos.insert(ino);
                return Err(FsError::NoInodes);
            }
        };
        self.inodes.insert(
            ino,
            Inode { size: 0, extents: ExtentMap::new(self.config.max_extent_blocks), dir_slot: slot },
        );
        self.names.insert(name.to_string(), ino);
        let ib = self.layout.inode_block(ino, self.config.block_bytes, self.config.inode_bytes);
        self.dirty_meta(ib);
        self.dirty_meta(self.layout.dir_start + slot / self.config.dir_entries_per_block);
        self.dirty_meta(self.layout.bitmap_block(self.layout.inode_group(ino)) + 1);
        Ok(ino)
    }

    /// Waits until `need` blocks can be allocated: forces a commit of freed blocks and waits
    /// for the TRIM policy to release what it holds (ext4_should_retry_alloc).
    fn ensure_space(&mut self, need: u64) -> Result<(), FsError> {
        let t0 = self.now;
        loop {
            let ready = self.bitmap.avail_count() + self.policy.reusable_blocks();
            if ready >= need {
                break;
            }
            let pending = !self.running.freed.is_empty()
                || self.commit.is_some()
                || !self.policy.held().is_empty()
                || self.fitrim.is_some();
            if !pending {
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
        let inode = &self.inodes[&ino];
        match inode.extents.before(logical) {
            // ext4_ext_find_goal: continue the previous extent's physical layout.
            Some(e) => e.physical + (logical - e.logical),
            // A file's first blocks go where the last allocation ended (mballoc's stream
            // allocation, s_mb_last_group/s_mb_last_start): new data sweeps the whole disk
            // instead of refilling the lowest free blocks.
            None => self.stream_goal,
        }
    }

    /// Maps `count` unmapped blocks of `ino` from `logical`.
    fn allocate(&mut self, ino: Ino, logical: u64, count: u64) -> Result<(), FsError> {
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
                None => {
                    let goal = self.goal_for(ino, l);
                    let run = self.bitmap.allocate(goal, want).ok_or(FsError::NoSpace)?;
                    self.policy.on_allocate(run);
                    self.stream_goal = run.end() % self.layout.total_blocks;
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
            let inode = self.inodes.get(&ino).ok_or(FsError::BadInode(ino))?;
            let mut v = Vec::new();
            let mut b = b0;
            while b < b1 {
                if inode.extents.lookup(b).is_some() {
                    b += 1;
                    continue;
                }
                let s = b;
                while b < b1 && inode.extents.lookup(b).is_none() {
                    b += 1;
                }
                v.push((s, b - s));
            }
            v
        };
        let need: u64 = holes.iter().map(|h| h.1).sum();
        self.ensure_space(need)?;
        for (s, n) in holes {
            self.allocate(ino, s, n)?;
        }
        Ok(())
    }

    /// Buffered write of `bytes` at `offset`. Returns the first data tag: block i of the range
    /// holds `tag + i` (the model's stand-in for the data).
    pub fn write(&mut self, ino: Ino, offset: u64, bytes: u64) -> Result<u64, FsError> {
        self.syscall();
        if bytes == 0 {
            return Ok(self.next_tag);
        }
        self.now = self.now.after((bytes * self.config.host.copy_ps_per_byte) / 1000);
        self.advance_to(self.now);
        let bs = self.config.block_bytes;
        let (b0, b1) = (offset / bs, (offset + bytes).div_ceil(bs));
        if !self.inodes.contains_key(&ino) {
            return Err(FsError::BadInode(ino));
        }
        // A partial block that is on disk and not cached is read first.
        let mut rmw = Vec::new();
        for (b, partial) in [(b0, !offset.is_multiple_of(bs)), (b1 - 1, !(offset + bytes).is_multiple_of(bs))]
        {
            if partial && !self.dirty.contains_key(&(ino, b)) {
                if let Some(p) = self.inodes[&ino].extents.lookup(b) {
                    if !rmw.contains(&p) {
                        rmw.push(p);
                    }
                }
            }
        }
        if !rmw.is_empty() {
            let reqs = rmw.iter().map(|&p| DevRequest::Read { offset: p * bs, bytes: bs }).collect();
            self.app_io(reqs, false);
        }
        self.fill_holes(ino, b0, b1)?;
        let tag = self.next_tag;
        self.next_tag += b1 - b0;
        for (i, b) in (b0..b1).enumerate() {
            self.dirty.insert((ino, b), tag + i as u64);
        }
        let inode = self.inode_mut(ino)?;
        inode.size = inode.size.max(offset + bytes);
        let ib = self.layout.inode_block(ino, bs, self.config.inode_bytes);
        self.dirty_meta(ib);
        if self.dirty.len() as u64 * bs > self.config.dirty_limit_bytes {
            // balance_dirty_pages: the writer writes back and waits.
            let (reqs, pages) = self.take_dirty(None);
            self.app_io(reqs, false);
            self.end_writeback(pages);
        }
        Ok(tag)
    }

    /// O_DIRECT write: blocks allocated and written before the call returns (dd oflag=direct).
    pub fn write_direct(&mut self, ino: Ino, offset: u64, bytes: u64) -> Result<u64, FsError> {
        self.syscall();
        let bs = self.config.block_bytes;
        if !offset.is_multiple_of(bs) || !bytes.is_multiple_of(bs) || bytes == 0 {
            return Err(FsError::Layout(format!(
                "O_DIRECT write at {offset} of {bytes} bytes is not block-aligned"
            )));
        }
        let (b0, b1) = (offset / bs, (offset + bytes) / bs);
        self.fill_holes(ino, b0, b1)?;
        let tag = self.next_tag;
        self.next_tag += b1 - b0;
        let mut reqs = Vec::new();
        let max = (self.dev.max_transfer_bytes() / bs).max(1);
        let mut b = b0;
        while b < b1 {
            self.dirty.remove(&(ino, b));
            self.writeback.remove(&(ino, b));
            let p = self.inodes[&ino].extents.lookup(b).unwrap_or_else(|| unreachable!());
            let mut n = 1;
            while b + n < b1 && n < max && self.inodes[&ino].extents.lookup(b + n) == Some(p + n) {
                self.dirty.remove(&(ino, b + n));
                self.writeback.remove(&(ino, b + n));
                n += 1;
            }
            reqs.push(DevRequest::Write { offset: p * bs, bytes: n * bs, tag: tag + (b - b0) });
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
        let inode = self.inodes.get(&ino).ok_or(FsError::BadInode(ino))?;
        let end = (offset + bytes).min(inode.size);
        if end <= offset {
            return Ok(Vec::new());
        }
        let (b0, b1) = (offset / bs, end.div_ceil(bs));
        let mut out = vec![0u64; (b1 - b0) as usize];
        let mut fetch: Vec<(u64, u64)> = Vec::new();
        for b in b0..b1 {
            if let Some(&t) = self.dirty.get(&(ino, b)).or_else(|| self.writeback.get(&(ino, b))) {
                out[(b - b0) as usize] = t;
            } else if let Some(p) = inode.extents.lookup(b) {
                fetch.push((p, b));
            }
        }
        let max = (self.dev.max_transfer_bytes() / bs).max(1);
        let mut i = 0;
        let h = self.config.host.clone();
        let mut done_max = self.now;
        let mut tags = Vec::new();
        while i < fetch.len() {
            let (p0, l0) = fetch[i];
            let mut n = 1;
            while i + n < fetch.len() && (n as u64) < max && fetch[i + n] == (p0 + n as u64, l0 + n as u64) {
                n += 1;
            }
            let t = self.now.after(h.submit_ns);
            self.advance_to(t);
            self.now = t;
            let done = self.dev_submit(
                t,
                &DevRequest::Read { offset: p0 * bs, bytes: n as u64 * bs },
                Some(&mut tags),
            );
            done_max = done_max.max(done);
            for (k, tag) in tags.iter().enumerate() {
                out[(l0 - b0) as usize + k] = *tag;
            }
            i += n;
        }
        if !fetch.is_empty() {
            self.now = self.now.max(done_max.after(h.complete_ns));
            self.advance_to(self.now);
        }
        Ok(out)
    }

    fn drop_blocks_from(&mut self, ino: Ino, first: u64) -> Result<u64, FsError> {
        let keys: Vec<(Ino, u64)> =
            self.dirty.range((ino, first)..=(ino, u64::MAX)).map(|(k, _)| *k).collect();
        for k in keys {
            self.dirty.remove(&k);
        }
        let keys: Vec<(Ino, u64)> =
            self.writeback.range((ino, first)..=(ino, u64::MAX)).map(|(k, _)| *k).collect();
        for k in keys {
            self.writeback.remove(&k);
        }
        let freed = self.inode_mut(ino)?.extents.truncate_from(first);
        let mut blocks = 0;
        for r in freed {
            blocks += r.len;
            self.free_run(r);
        }
        self.now = self.now.after(blocks * self.config.host.free_block_ns);
        Ok(blocks)
    }

    pub fn truncate(&mut self, ino: Ino, size: u64) -> Result<(), FsError> {
        self.syscall();
        let bs = self.config.block_bytes;
        if !self.inodes.contains_key(&ino) {
            return Err(FsError::BadInode(ino));
        }
        self.drop_blocks_from(ino, size.div_ceil(bs))?;
        self.inode_mut(ino)?.size = size;
        let ib = self.layout.inode_block(ino, bs, self.config.inode_bytes);
        self.dirty_meta(ib);
        Ok(())
    }

    pub fn unlink(&mut self, name: &str) -> Result<(), FsError> {
        self.syscall();
        let ino = self.names.remove(name).ok_or_else(|| FsError::NotFound(name.to_string()))?;
        self.drop_blocks_from(ino, 0)?;
        let inode = self.inodes.remove(&ino).unwrap_or_else(|| unreachable!());
        let bs = self.config.block_bytes;
        self.dirty_meta(self.layout.inode_block(ino, bs, self.config.inode_bytes));
        self.dirty_meta(self.layout.dir_start + inode.dir_slot / self.config.dir_entries_per_block);
        self.dirty_meta(self.layout.bitmap_block(self.layout.inode_group(ino)) + 1);
        self.free_inos.insert(ino);
        self.free_slots.insert(inode.dir_slot);
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
        self.syscall();
        if !self.inodes.contains_key(&ino) {
            return Err(FsError::BadInode(ino));
        }
        let (reqs, pages) = self.take_dirty(Some(ino));
        self.app_io(reqs, false);
        self.end_writeback(pages);
        if !self.commit_and_wait() {
            self.app_io(vec![DevRequest::Flush], true);
        }
        Ok(())
    }

    /// sync: every dirty page and the running transaction.
    pub fn sync(&mut self) {
        self.syscall();
        let (reqs, pages) = self.take_dirty(None);
        self.app_io(reqs, false);
        self.end_writeback(pages);
        self.commit_and_wait();
    }

    /// umount: sync, let background TRIMs finish, checkpoint the journal.
    pub fn umount(&mut self) {
        self.sync();
        self.quiesce();
        let home: Vec<Run> = coalesce(self.checkpoint.iter().map(|&b| Run::new(b, 1)).collect());
        self.stats.metadata_blocks_checkpointed += self.checkpoint.len() as u64;
        self.checkpoint.clear();
        let mut reqs = self.write_requests_meta(&home);
        reqs.push(DevRequest::Flush);
        self.app_io(reqs, false);
    }

    /// umount, then mount again with `policy`: queued TRIMs finish first, and FITRIM's
    /// "trimmed since mount" group flags start clear.
    pub fn remount(&mut self, policy: crate::config::PolicyKind) {
        self.umount();
        self.config.policy = policy;
        self.policy = policy::build(policy, &self.config.params, self.config.block_bytes);
        self.group_trimmed.iter_mut().for_each(|g| *g = None);
        self.fitrim_timer_armed = false;
    }

    /// The full consistency check: every block is exactly one of static metadata, a file
    /// extent, available, or held by one owner (running or committing transaction, the TRIM
    /// policy, FITRIM); bitmaps agree with their counts; dirty pages are mapped; the policy's
    /// queued available runs are available; the device's own check passes.
    pub fn check(&self) -> Result<(), String> {
        self.bitmap.check()?;
        let n = self.layout.total_blocks as usize;
        let mut owner = vec![0u8; n];
        let mut mark = |r: Run, who: u8, what: &str| -> Result<(), String> {
            for b in r.start..r.end() {
                let o = &mut owner[b as usize];
                if *o != 0 {
                    return Err(format!("fs: block {b} owned twice ({what} and owner {})", *o));
                }
                *o = who;
            }
            Ok(())
        };
        for r in self.layout.static_runs() {
            mark(r, 1, "static metadata")?;
        }
        for (ino, inode) in &self.inodes {
            for e in inode.extents.iter() {
                mark(Run::new(e.physical, e.len), 2, &format!("inode {ino}"))?;
            }
        }
        for f in &self.running.freed {
            mark(f.run, 3, "running transaction's freed list")?;
        }
        if let Some(c) = &self.commit {
            for f in c.freed.iter().chain(&c.trimming) {
                mark(f.run, 3, "committing transaction")?;
            }
        }
        for r in self.policy.held() {
            mark(r, 4, "TRIM policy")?;
        }
        if let Some(j) = &self.fitrim {
            if let Some((r, _)) = &j.current {
                mark(*r, 5, "FITRIM")?;
            }
        }
        for b in 0..n as u64 {
            let o = owner[b as usize];
            let (used, avail) = (self.bitmap.is_used(b), self.bitmap.is_avail(b));
            let ok = match o {
                1 | 2 => used && !avail,
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
        for &(ino, b) in self.dirty.keys() {
            if self.inodes.get(&ino).and_then(|i| i.extents.lookup(b)).is_none() {
                return Err(format!("fs: dirty page ({ino}, {b}) is not mapped"));
            }
        }
        if self.names.len() != self.inodes.len() {
            return Err(format!("fs: {} names for {} inodes", self.names.len(), self.inodes.len()));
        }
        self.dev.check()
    }
}
