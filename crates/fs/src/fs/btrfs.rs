//! btrfs' chunk layout on one device (`FsConfig::btrfs_layout`): the block groups mkfs.btrfs
//! 6.2 makes, the data chunks the kernel adds on demand, data size classes, and what FITRIM
//! trims (each block group's free space, DUP block groups on both copies, then the device's
//! unallocated space), with the metadata allocation cluster that FITRIM cannot see.
//!
//! What mkfs.btrfs 6.2 (btrfs-progs 6.2-1+deb12u2, the recording's) makes on a 1 GiB device,
//! read with `btrfs inspect-internal dump-tree -t chunk` / `-t extent` after `mkfs.btrfs -f`:
//! the first MiB reserved (superblock at 64 KiB; BTRFS_DEVICE_RANGE_RESERVED), 1..13 MiB
//! unallocated (mkfs' temporary 4 MiB system and 8 MiB metadata chunks, removed by
//! cleanup_temp_chunks because the defaults are DUP), the temporary 8 MiB single data chunk
//! at 13 MiB kept, system DUP 2 x 8 MiB at 21 and 29 MiB (the chunk tree's node at +16 KiB),
//! metadata DUP at 37 MiB with stripes of 53673984 bytes (10 % of the device, halved for DUP,
//! rounded down to the 64 KiB stripe length), its eight tree nodes at +0, 16, 80, 112, 128,
//! 144, 160, 176 KiB. Other sizes use the same rules (an assumption: mkfs.btrfs was read at
//! 1 GiB only, and for small devices it may choose mixed block groups, which are not modelled).
//! The kernel's data chunks (volumes.c, decide_stripe_size_regular): 10 % of the device
//! rounded up to 16 MiB, at most 1 GiB, in the first unallocated hole that holds it (else the
//! largest; find_free_dev_extent), and the next logical address.

use super::btrfs_chunk::{Chunk, ChunkKind, SizeClass, KIB, MIB};
use super::btrfs_tree::Trees;
use super::*;

#[derive(Clone, Debug)]
pub(super) struct Btrfs {
    pub(super) chunks: Vec<Chunk>,
    /// Blocks at the start of the device btrfs never allocates or trims (1 MiB).
    pub(super) reserved: u64,
    total: u64,
    /// Length of a kernel-allocated data chunk, blocks.
    data_chunk: u64,
    /// A tree node (16 KiB), blocks.
    node_blocks: u64,
    /// The trees' nodes, copied on write at each commit (btrfs_tree.rs).
    pub(super) trees: Trees,
    /// The metadata allocation cluster (fs_info->meta_alloc_cluster) exists: set up by the
    /// first metadata allocation after mount (a commit's copy-on-write here), it takes the
    /// metadata block group's free space from its window to the end out of the free-space tree
    /// that btrfs_trim_block_group walks (setup_cluster_no_bitmap), so fstrim skips what it
    /// still holds (`trees.cluster`) until umount.
    pub(super) meta_cluster: bool,
    /// btrfs_trim_free_extents marks what it trimmed CHUNK_TRIMMED in the device's in-memory
    /// alloc_state and skips it until umount.
    pub(super) unallocated_trimmed: bool,
    /// Data block groups on fs_info->unused_bgs: a chunk the kernel adds for a space
    /// reservation is still empty when btrfs_create_pending_block_groups inserts it, which
    /// marks it unused (btrfs_mark_bg_unused; the recording's trace shows
    /// btrfs_add_unused_block_group used=0 right after the 112 MiB chunk). The buffered
    /// write reserves data space (adding the chunk) before writeback allocates from it, so
    /// every chunk the model adds (at write-back, delalloc.rs) goes here.
    pub(super) unused: Vec<usize>,
    /// When the file system was mounted: the transaction kthread wakes the cleaner every
    /// commit interval from then on.
    pub(super) mounted_at: SimTime,
    /// A cleaner wake-up is queued.
    pub(super) cleaner_armed: bool,
}

impl Btrfs {
    /// The layout of mkfs.btrfs 6.2 on `total` blocks of `bs` bytes.
    pub(super) fn mkfs(total: u64, bs: u64) -> Result<Btrfs, FsError> {
        let blk = |bytes: u64| bytes / bs;
        let cap = total * bs;
        if !(16 * KIB).is_multiple_of(bs) {
            return Err(FsError::Layout(format!(
                "btrfs_layout: block_bytes = {bs} must divide btrfs' 16 KiB node size"
            )));
        }
        // Metadata DUP: min(10 % of the device, 256 MiB) per chunk (1 GiB above 50 GiB), two
        // stripes of half of it each, rounded down to BTRFS_STRIPE_LEN (64 KiB).
        let meta_chunk = (cap / 10).min(if cap > 50 << 30 { 1 << 30 } else { 256 * MIB });
        let meta_stripe = meta_chunk / 2 / (64 * KIB) * (64 * KIB);
        // Data goes to the 8 MiB chunk and to new chunks in the 12 MiB hole or after metadata.
        let need = 37 * MIB + 2 * meta_stripe;
        if cap < need || meta_stripe < 64 * KIB {
            return Err(FsError::Layout(format!(
                "btrfs_layout: {cap} bytes cannot hold mkfs.btrfs' chunks (at least {need} bytes)"
            )));
        }
        let system = Chunk {
            kind: ChunkKind::System,
            len: blk(8 * MIB),
            stripes: vec![blk(21 * MIB), blk(29 * MIB)],
            size_class: None,
        };
        let meta = Chunk {
            kind: ChunkKind::Metadata,
            len: blk(meta_stripe),
            stripes: vec![blk(37 * MIB), blk(37 * MIB + meta_stripe)],
            size_class: None,
        };
        let trees = Trees::mkfs(system.stripes[0], meta.stripes[0], bs);
        let data = Chunk {
            kind: ChunkKind::Data,
            len: blk(8 * MIB),
            stripes: vec![blk(13 * MIB)],
            size_class: None,
        };
        let data_chunk = blk((cap / 10).div_ceil(16 * MIB) * (16 * MIB)).min(blk(1 << 30));
        Ok(Btrfs {
            chunks: vec![data, system, meta],
            reserved: blk(MIB),
            total,
            data_chunk,
            node_blocks: blk(16 * KIB),
            trees,
            meta_cluster: false,
            unallocated_trimmed: false,
            unused: Vec::new(),
            mounted_at: SimTime::ZERO,
            cleaner_armed: false,
        })
    }

    /// The trees' nodes, live and pinned, on every copy, sorted (static metadata).
    pub(super) fn static_runs(&self) -> Vec<Run> {
        let node = self.node_blocks;
        let mut v: Vec<Run> = self
            .trees
            .all_nodes()
            .into_iter()
            .flat_map(|n| match self.chunk_of(n) {
                Some((ci, _)) => {
                    let c = &self.chunks[ci];
                    c.stripes.iter().map(|&s| Run::new(s + n - c.stripes[0], node)).collect()
                }
                None => vec![Run::new(n, node)],
            })
            .collect();
        v.sort_by_key(|r| r.start);
        v
    }

    /// Device ranges outside every chunk and the reserved first MiB, sorted.
    pub(super) fn unallocated(&self) -> Vec<Run> {
        let mut taken: Vec<Run> =
            self.chunks.iter().flat_map(|c| (0..c.stripes.len()).map(|i| c.run(i))).collect();
        taken.sort_by_key(|r| r.start);
        let mut v = Vec::new();
        let mut at = self.reserved;
        for r in taken {
            if r.start > at {
                v.push(Run::new(at, r.start - at));
            }
            at = at.max(r.end());
        }
        if at < self.total {
            v.push(Run::new(at, self.total - at));
        }
        v
    }

    /// The kernel's new data chunk: the first unallocated hole that holds a full chunk, else
    /// the largest (find_free_dev_extent); None when none is left of at least 1 MiB.
    fn add_data_chunk(&mut self) -> Option<usize> {
        let holes = self.unallocated();
        let pick = holes
            .iter()
            .find(|h| h.len >= self.data_chunk)
            .or_else(|| holes.iter().max_by_key(|h| (h.len, std::cmp::Reverse(h.start))))
            .copied()?;
        let len = pick.len.min(self.data_chunk);
        // Below 1 MiB (BTRFS_STRIPE_LEN-sized dev_extent_min of a few stripes) no chunk is made.
        if len < self.reserved {
            return None;
        }
        self.chunks.push(Chunk { kind: ChunkKind::Data, len, stripes: vec![pick.start], size_class: None });
        self.unallocated_trimmed = false;
        self.unused.push(self.chunks.len() - 1);
        Some(self.chunks.len() - 1)
    }

    /// The chunk stripe holding block `b`: (chunk index, stripe run).
    pub(super) fn chunk_of(&self, b: u64) -> Option<(usize, Run)> {
        self.chunks.iter().enumerate().find_map(|(i, c)| {
            (0..c.stripes.len()).map(|s| c.run(s)).find(|r| r.start <= b && b < r.end()).map(|r| (i, r))
        })
    }
}

impl<D: BlockDevice> FileSystem<D> {
    /// find_free_extent for data: block groups of the request's size class, then unclassed
    /// ones, then a new chunk, then any (LOOP_WRONG_SIZE_CLASS). A block group serves the
    /// request only from a free extent that holds all of it (btrfs_find_space_for_alloc
    /// returns an entry of at least the requested bytes): btrfs keeps a file's extent whole
    /// and adds a chunk rather than split it over block groups (issue 22: the model took a
    /// group's largest free extent whatever its size, split a 3 MiB file over the 8 MiB data
    /// block group and a new chunk, and its 2 MiB piece there got an async TRIM of its own
    /// 120 s after the rm, which the kernel never sends). Only when no block group, not even a
    /// new chunk, holds it does btrfs_reserve_extent retry with a smaller size: then the
    /// largest free extent anywhere. In a block group the allocation uses the free-space
    /// cache's bytes index (btrfs_find_space_for_alloc, use_bytes_index): the largest free
    /// extent (the lowest one among equals, an assumption), from its start. Returns at most
    /// `want` blocks.
    pub(super) fn btrfs_allocate(&mut self, want: u64) -> Option<Run> {
        let class = SizeClass::of(want * self.config.block_bytes);
        let bt = self.layout_fs.btrfs()?;
        let data: Vec<usize> =
            (0..bt.chunks.len()).filter(|&i| bt.chunks[i].kind == ChunkKind::Data).collect();
        let largest = |fs: &Self, i: usize| -> Option<Run> {
            let r = fs.layout_fs.btrfs()?.chunks[i].run(0);
            fs.bitmap
                .avail_runs(r.start, r.end(), 1)
                .into_iter()
                .max_by_key(|x| (x.len, std::cmp::Reverse(x.start)))
        };
        let holding = |fs: &Self, i: usize| largest(fs, i).filter(|r| r.len >= want);
        let classes = |fs: &Self, i: usize| fs.layout_fs.btrfs().and_then(|b| b.chunks[i].size_class);
        let mut found = None;
        for pass in 0..2 {
            found = data
                .iter()
                .copied()
                .filter(|&i| match pass {
                    0 => classes(self, i) == Some(class),
                    _ => classes(self, i).is_none(),
                })
                .find_map(|i| holding(self, i).map(|r| (i, r)));
            if found.is_some() {
                break;
            }
        }
        if found.is_none() {
            if let Some(i) = self.layout_fs.btrfs_mut().and_then(|b| b.add_data_chunk()) {
                found = largest(self, i).map(|r| (i, r));
                self.arm_btrfs_cleaner();
            }
        }
        if found.is_none() {
            found = data.iter().copied().find_map(|i| holding(self, i).map(|r| (i, r)));
        }
        if found.is_none() {
            found = data
                .iter()
                .copied()
                .filter_map(|i| largest(self, i).map(|r| (i, r)))
                .max_by_key(|(_, r)| (r.len, std::cmp::Reverse(r.start)));
        }
        let (i, run) = found?;
        if let Some(c) = self.layout_fs.btrfs_mut().map(|b| &mut b.chunks[i]) {
            c.size_class.get_or_insert(class);
        }
        let run = Run::new(run.start, run.len.min(want));
        self.bitmap.take(run.start, run.len);
        Some(run)
    }

    /// Queues the cleaner's next wake-up: the transaction kthread wakes it every commit
    /// interval from mount (transaction_kthread: `wake_up_process(cleaner_kthread)` before each
    /// sleep of commit_interval; the recording's trace has the cleaner 30 s after mount).
    /// Only while a block group waits on the unused list, so the event queue still runs dry.
    fn arm_btrfs_cleaner(&mut self) {
        let period = self.config.commit_interval_ns.max(1);
        let now = self.now;
        let Some(b) = self.layout_fs.btrfs_mut() else { return };
        if b.cleaner_armed || b.unused.is_empty() {
            return;
        }
        b.cleaner_armed = true;
        let since = now.since(b.mounted_at);
        let at = b.mounted_at.after((since / period + 1) * period);
        self.events.push(at, Ev::BtrfsCleaner);
    }

    /// The cleaner's btrfs_delete_unused_bgs: every block group on the unused list leaves it;
    /// one that is in use is skipped, but first btrfs_discard_cancel_work takes it off the
    /// discard lists and, as its free space is not all trimmed, btrfs_discard_queue_work
    /// queues it again with a new discard_eligible_time (now + BTRFS_DISCARD_DELAY). In the
    /// recording this moved the 1 MiB files' discards from 120 s after the rm's commit to
    /// 120 s after the cleaner ran, 30 s after mount (the first async TRIM 141.5 s after the
    /// rm). (An unused, fully trimmed block group would be removed; the model's chunks are
    /// never empty here, as it allocates at write().)
    pub(super) fn btrfs_cleaner(&mut self, now: SimTime) {
        let Some(b) = self.layout_fs.btrfs_mut() else { return };
        b.cleaner_armed = false;
        let runs: Vec<Run> = std::mem::take(&mut b.unused).into_iter().map(|i| b.chunks[i].run(0)).collect();
        let mut any = false;
        for r in runs {
            any |= self.policy.restart_delay(r, now);
        }
        if any {
            self.wake_workers(now);
        }
    }

    /// btrfs_discard_queue_work for the data block groups a commit freed `freed` in: one left
    /// with nothing in use goes on the unused list (due after BTRFS_DISCARD_UNUSED_DELAY), any
    /// other keeps the eligible time it got when it was first queued (`__add_to_discard_list`
    /// sets `discard_eligible_time` only for a group on no list).
    pub(super) fn btrfs_discard_queue_work(&mut self, freed: &[Run], now: SimTime) {
        let emptied = self.btrfs_emptied_groups(freed);
        for &group in &emptied {
            self.policy.unused_delay(group, now);
        }
        let Some(b) = self.layout_fs.btrfs() else { return };
        let mut groups: Vec<Run> = Vec::new();
        for f in freed {
            let Some((i, stripe)) = b.chunk_of(f.start) else { continue };
            if b.chunks[i].kind == ChunkKind::Data && !groups.contains(&stripe) && !emptied.contains(&stripe)
            {
                groups.push(stripe);
            }
        }
        for group in groups {
            self.policy.block_group_queued(group);
        }
    }

    /// The data block groups that `freed` leaves with nothing in use (every block free in
    /// the bitmap): btrfs_discard_queue_work puts them on the unused list, due after
    /// BTRFS_DISCARD_UNUSED_DELAY (fs/btrfs/discard.c add_to_discard_unused_list).
    fn btrfs_emptied_groups(&self, freed: &[Run]) -> Vec<Run> {
        let Some(b) = self.layout_fs.btrfs() else { return Vec::new() };
        let mut out: Vec<Run> = Vec::new();
        for f in freed {
            let Some((i, stripe)) = b.chunk_of(f.start) else { continue };
            if b.chunks[i].kind != ChunkKind::Data || out.contains(&stripe) {
                continue;
            }
            let free = self.bitmap.avail_runs(stripe.start, stripe.end(), 1);
            if free.len() == 1 && free[0] == stripe {
                out.push(stripe);
            }
        }
        out
    }

    /// A free run clipped to the block group holding block `anchor`: btrfs' free-space
    /// entries never cross a block group (the async worker's merged run must not take the
    /// unallocated space next to it).
    pub(super) fn btrfs_clip(&self, run: Run, anchor: u64) -> Run {
        match self.layout_fs.btrfs().and_then(|b| b.chunk_of(anchor)) {
            Some((_, c)) => {
                let s = run.start.max(c.start);
                Run::new(s, run.end().min(c.end()) - s)
            }
            None => run,
        }
    }

    /// FITRIM's work list on btrfs (btrfs_trim_fs): every block group's free extents of at
    /// least `minlen` in [start, end) in logical order, each on every copy, except what the
    /// metadata cluster holds; then the unallocated device space unless trimmed since mount.
    pub(super) fn btrfs_fitrim_runs(&mut self, unit: usize, start: u64, end: u64, minlen: u64) -> Vec<Run> {
        let Some(bt) = self.layout_fs.btrfs() else { return Vec::new() };
        let clip = |r: Run| -> Option<Run> {
            let (s, e) = (r.start.max(start), r.end().min(end));
            (e > s).then(|| Run::new(s, e - s))
        };
        if unit < bt.chunks.len() {
            let c = &bt.chunks[unit];
            let Some(r0) = clip(c.run(0)) else { return Vec::new() };
            let cluster: &[Run] = match c.kind == ChunkKind::Metadata && bt.meta_cluster {
                true => &bt.trees.cluster,
                false => &[],
            };
            let mut v = Vec::new();
            for free in self.btrfs_outside_cluster(r0, cluster, minlen) {
                for s in 0..c.stripes.len() {
                    let copy = Run::new(free.start - c.stripes[0] + c.stripes[s], free.len);
                    if (copy.start..copy.end()).all(|b| self.bitmap.is_avail(b)) {
                        v.push(copy);
                    }
                }
            }
            return v;
        }
        if bt.unallocated_trimmed {
            return Vec::new();
        }
        let holes = bt.unallocated();
        if let Some(b) = self.layout_fs.btrfs_mut() {
            b.unallocated_trimmed = true;
        }
        holes
            .into_iter()
            .filter_map(clip)
            .flat_map(|h| self.bitmap.avail_runs(h.start, h.end(), minlen))
            .collect()
    }

    /// The free runs of at least `minlen` in `r` that the cluster does not hold (the
    /// free-space tree btrfs_trim_block_group walks).
    fn btrfs_outside_cluster(&self, r: Run, cluster: &[Run], minlen: u64) -> Vec<Run> {
        let mut v = Vec::new();
        for free in self.bitmap.avail_runs(r.start, r.end(), 1) {
            let mut at = free.start;
            for c in cluster.iter().filter(|c| c.start < free.end() && c.end() > free.start) {
                if c.start > at {
                    v.push(Run::new(at, c.start - at));
                }
                at = at.max(c.end());
            }
            if at < free.end() {
                v.push(Run::new(at, free.end() - at));
            }
        }
        v.retain(|x| x.len >= minlen);
        v
    }

    /// FITRIM's units on btrfs: each block group, then the device.
    pub(super) fn btrfs_fitrim_units(&self) -> usize {
        self.layout_fs.btrfs().map_or(0, |b| b.chunks.len() + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mkfs_layout_is_what_mkfs_btrfs_6_2_made_on_1_gib() {
        let b = Btrfs::mkfs(262_144, 4096).unwrap();
        let bytes = |r: Run| (r.start * 4096, r.len * 4096);
        assert_eq!(bytes(b.chunks[0].run(0)), (13631488, 8388608), "data");
        assert_eq!(
            (bytes(b.chunks[1].run(0)), bytes(b.chunks[1].run(1))),
            ((22020096, 8388608), (30408704, 8388608))
        );
        assert_eq!(
            b.chunks[2].stripes.iter().map(|s| s * 4096).collect::<Vec<_>>(),
            vec![38797312, 92471296]
        );
        assert_eq!(b.chunks[2].len * 4096, 53673984);
        // 10 % of 1 GiB rounded up to 16 MiB: the 112 MiB data chunk the kernel added at
        // 139.375 MiB in the recording.
        assert_eq!(b.data_chunk * 4096, 112 << 20);
        let mut b = b;
        let i = b.add_data_chunk().unwrap();
        assert_eq!(bytes(b.chunks[i].run(0)), (146145280, 117440512));
        let u: Vec<(u64, u64)> = b.unallocated().into_iter().map(bytes).collect();
        assert_eq!(u, vec![(1048576, 12582912), (263585792, 810156032)], "the recording's two device TRIMs");
        assert!(Btrfs::mkfs(8192, 4096).is_err(), "32 MiB cannot hold the chunks");
    }
}
