//! mballoc's locality-group preallocations (Linux fs/ext4/mballoc.c): the chunks of
//! `s_mb_group_prealloc` blocks that small files (at most `s_mb_stream_request`, 16 blocks) are
//! packed into, and what happens to a chunk's unused tail.
//!
//! Why the tail matters for TRIMs: `ext4_mb_new_group_pa` takes the whole chunk in the buddy
//! ("new PA: buddy += N", the header comment of mballoc.c) and each small file then takes the
//! next blocks of it (`ext4_mb_use_group_pa`, `ext4_mb_release_context` advancing `pa_pstart`).
//! What a chunk has left stays used in the in-core buddy until the preallocation is discarded,
//! and both the discard worker (`ext4_try_to_trim_range`, extending a freed extent to the end of
//! its free run) and FITRIM (`ext4_trim_all_free`) scan that buddy: a freed small file next to a
//! chunk's tail is trimmed only up to the tail, and fstrim leaves the tail alone. Linux 6.18's
//! recordings show it: after `rm -r` of a whole tree of 8 KiB files, fstrim still skips the 32
//! blocks the last chunk had left (tests/data/discard-patterns/ext4-discard-tree-rm).
//!
//! A preallocation is discarded (its tail made free in the buddy, with no TRIM and nothing
//! journaled: `ext4_mb_release_group_pa` calls only `mb_free_blocks`) when its list holds more
//! than 8 of them (`ext4_mb_add_n_trim` -> `ext4_mb_discard_lg_preallocations`, keeping 5), when
//! an allocation finds no space (`ext4_mb_discard_preallocations`), or at umount (the in-core
//! structures go; the on-disk bitmap never had the tails).
//!
//! Simplifications: one locality group (the kernel has one per CPU, so a workload whose
//! write-back runs on several CPUs fills several chunks at once); a new chunk is placed where
//! the model placed it before (at the stream goal), not on the first 512-aligned free buddy of
//! the goal group that `ext4_mb_regular_allocator`'s power-of-two scan finds.

use super::*;

/// `PREALLOC_TB_SIZE` (fs/ext4/mballoc.h): the lists of a locality group, by the order of
/// their preallocations' free blocks.
const PREALLOC_TB_SIZE: usize = 10;
/// `ext4_mb_add_n_trim`: a list longer than this is trimmed...
const LG_LIST_MAX: usize = 8;
/// ...down to this many (`ext4_mb_discard_lg_preallocations`: "keep only 5 entries").
const LG_LIST_KEEP: usize = 5;

/// One locality-group preallocation: its unused blocks `[start, start + free)` (for a group
/// preallocation `pa_len` and `pa_free` move together, so the tail is always one run).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct GroupPa {
    pub(super) start: u64,
    pub(super) free: u64,
}

impl GroupPa {
    fn run(&self) -> Run {
        Run::new(self.start, self.free)
    }
}

/// `struct ext4_locality_group`: `lg_prealloc_list[order]`, each ordered by free blocks.
#[derive(Default)]
pub(super) struct LocalityGroup {
    lists: [Vec<GroupPa>; PREALLOC_TB_SIZE],
}

/// `fls(free) - 1`, capped at the last list.
fn list_order(free: u64) -> usize {
    debug_assert!(free > 0);
    ((63 - free.leading_zeros()) as usize).min(PREALLOC_TB_SIZE - 1)
}

impl LocalityGroup {
    /// Blocks the preallocations hold unused.
    pub(super) fn reserved_blocks(&self) -> u64 {
        self.lists.iter().flatten().map(|pa| pa.free).sum()
    }

    /// The unused runs, for the consistency check.
    pub(super) fn runs(&self) -> impl Iterator<Item = Run> + '_ {
        self.lists.iter().flatten().map(GroupPa::run)
    }

    /// `ext4_mb_use_preallocated` for a group allocation: from the list of `want`'s order
    /// upwards, the preallocation with at least `want` free blocks whose start is nearest the
    /// goal (the first found on a tie, `ext4_mb_check_group_pa`), taken off its list.
    fn take_fitting(&mut self, want: u64, goal: u64) -> Option<GroupPa> {
        let mut best: Option<(u64, usize, usize)> = None;
        for (order, list) in self.lists.iter().enumerate().skip(list_order(want)) {
            for (i, pa) in list.iter().enumerate().filter(|(_, pa)| pa.free >= want) {
                let distance = goal.abs_diff(pa.start);
                if best.is_none_or(|(d, _, _)| distance < d) {
                    best = Some((distance, order, i));
                }
            }
        }
        best.map(|(_, order, i)| self.lists[order].remove(i))
    }

    /// `ext4_mb_add_n_trim`: `pa` (just used, so not discarded now) goes before the first of
    /// its list with more free blocks; a list then longer than 8 loses its first entries down
    /// to 5 (`ext4_mb_discard_lg_preallocations`). Returns the discarded preallocations' runs.
    fn add_n_trim(&mut self, pa: GroupPa) -> Vec<Run> {
        let list = &mut self.lists[list_order(pa.free)];
        let at = list.iter().position(|p| pa.free < p.free).unwrap_or(list.len());
        list.insert(at, pa);
        let mut discarded = Vec::new();
        if list.len() > LG_LIST_MAX {
            let mut total = list.len();
            let mut i = 0;
            while i < list.len() && total > LG_LIST_KEEP {
                if list[i] == pa {
                    i += 1;
                    continue;
                }
                discarded.push(list.remove(i).run());
                total -= 1;
            }
        }
        discarded
    }

    /// Every preallocation discarded (ENOSPC, umount); their runs.
    fn discard_all(&mut self) -> Vec<Run> {
        self.lists.iter_mut().flat_map(std::mem::take).map(|pa| pa.run()).collect()
    }
}

impl<D: BlockDevice> FileSystem<D> {
    /// `ext4_inode_to_goal_block` with delayed allocation: the first block of the inode's
    /// group, with flex_bg the flex group's second group for a regular file (its first keeps
    /// directories).
    fn lg_goal(&self, ino: Ino) -> u64 {
        let flex = self.flex_groups();
        let mut group = self.layout.inode_group(ino);
        if flex > 1 {
            group = (group & !(flex - 1)) + 1;
        }
        (group % self.layout.groups) * self.layout.bpg
    }

    /// A small file's `want` blocks from the locality group (`ext4_mb_new_blocks` with
    /// EXT4_MB_HINT_GROUP_ALLOC): from a preallocation if one has room, else from a new chunk
    /// of `small_file_chunk_blocks` at the stream goal (`ext4_mb_normalize_group_request`),
    /// whose rest becomes a preallocation. Returns the file's run (shorter than `want` only
    /// when the free run found was).
    pub(super) fn allocate_small(&mut self, ino: Ino, want: u64) -> Result<Run, FsError> {
        let goal = self.lg_goal(ino);
        if let Some(pa) = self.layout_fs.ext4_mut().and_then(|e| e.lg_prealloc.take_fitting(want, goal)) {
            let run = Run::new(pa.start, want);
            self.keep_pa(GroupPa { start: pa.start + want, free: pa.free - want });
            return Ok(run);
        }
        let chunk = self
            .bitmap
            .allocate(self.stream_goal, self.config.small_file_chunk_blocks)
            .ok_or(FsError::NoSpace)?;
        self.policy.on_allocate(chunk);
        self.stream_goal = chunk.end() % self.layout.total_blocks;
        if chunk.len <= want {
            // Nothing left over to preallocate (ext4_mb_new_blocks frees the PA when the
            // request took the whole extent found).
            return Ok(chunk);
        }
        self.keep_pa(GroupPa { start: chunk.start + want, free: chunk.len - want });
        Ok(Run::new(chunk.start, want))
    }

    /// `ext4_mb_release_context`: a preallocation with blocks left goes back on its list (a
    /// used-up one is dropped, `ext4_mb_put_pa`); those the list sheds become free.
    fn keep_pa(&mut self, pa: GroupPa) {
        if pa.free > 0 {
            let Some(ext4) = self.layout_fs.ext4_mut() else {
                unreachable!("a locality-group preallocation on a {:?} layout", self.flavor())
            };
            let discarded = ext4.lg_prealloc.add_n_trim(pa);
            self.release_pa_runs(discarded);
        }
    }

    /// `ext4_mb_release_group_pa`: the tail is freed in the buddy only (no TRIM, no journal).
    fn release_pa_runs(&mut self, runs: Vec<Run>) {
        for r in runs {
            self.bitmap.free(r.start, r.len);
            self.bitmap.release(r.start, r.len);
        }
    }

    /// Discards every locality-group preallocation (ENOSPC's `ext4_mb_discard_preallocations`,
    /// umount); whether any blocks became free.
    pub(super) fn discard_lg_preallocations(&mut self) -> bool {
        let runs = self.layout_fs.ext4_mut().map_or(Vec::new(), |e| e.lg_prealloc.discard_all());
        let any = !runs.is_empty();
        self.release_pa_runs(runs);
        any
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{FsConfig, PolicyKind};
    use std::cell::RefCell;
    use std::rc::Rc;
    use trimlab_device::{DeviceSection, FtlSection, Limits, Served, Ssd, SsdConfig, TrimSection};
    use trimlab_sim::ByteSize;

    const BS: u64 = 4096;

    /// A small drive that notes every TRIM range (first block, blocks).
    struct Noting {
        ssd: Ssd,
        trims: Rc<RefCell<Vec<Run>>>,
    }

    impl BlockDevice for Noting {
        fn limits(&self) -> Limits {
            self.ssd.limits()
        }
        fn commands_done_at(&self) -> SimTime {
            self.ssd.commands_done_at()
        }
        fn submit(&mut self, at: SimTime, c: &Command, out: Option<&mut Vec<u64>>) -> Served {
            if let Command::Trim { ranges } = c {
                self.trims.borrow_mut().extend(ranges.iter().map(|r| Run::new(r.offset / BS, r.bytes / BS)));
            }
            self.ssd.submit(at, c, out)
        }
        fn check(&self) -> Result<(), String> {
            self.ssd.check()
        }
    }

    /// ext4 as Linux 6.18 makes it (512-block chunks), mounted -o discard, on 48 MiB.
    fn ext4_discard() -> (FileSystem<Noting>, Rc<RefCell<Vec<Run>>>) {
        let device = DeviceSection {
            channels: Some(2),
            chips_per_channel: Some(1),
            dies_per_chip: Some(1),
            planes_per_die: Some(1),
            pages_per_block: Some(64),
            logical_bytes: Some(ByteSize(48 << 20)),
            spare_factor: Some(0.15),
            ..Default::default()
        };
        let ssd =
            Ssd::new(SsdConfig::resolve(&device, &FtlSection::default(), &TrimSection::default()).unwrap());
        let trims = Rc::new(RefCell::new(Vec::new()));
        let config = FsConfig { blocks_per_group: 8192, ..Default::default() }
            .ext4_defaults()
            .with_policy(PolicyKind::Ext4Discard);
        let dev = Noting { ssd, trims: trims.clone() };
        let mut fs = FileSystem::mkfs(dev, config, SimTime::ZERO, false).unwrap();
        fs.set_verify(true);
        fs.idle_until(SimTime(60_000_000_000));
        trims.borrow_mut().clear();
        (fs, trims)
    }

    fn create(fs: &mut FileSystem<Noting>, path: &str, bytes: u64) -> Ino {
        let ino = fs.create(path).unwrap();
        fs.write(ino, 0, bytes).unwrap();
        ino
    }

    #[test]
    fn a_freed_small_file_is_trimmed_up_to_its_chunks_tail_which_fstrim_leaves_alone() {
        let (mut fs, trims) = ext4_discard();
        let files: Vec<Ino> = (0..3).map(|i| create(&mut fs, &format!("f{i}"), 24 << 10)).collect();
        fs.sync();
        let last = fs.file_runs(files[2])[0];
        let tail = Run::new(last.end(), 512 - 3 * 6);
        assert_eq!(fs.layout_fs.ext4().unwrap().lg_prealloc.runs().collect::<Vec<_>>(), vec![tail]);
        // The last file sits against the chunk's tail: its TRIM stops there instead of running
        // on to the end of the group's free space.
        fs.unlink("f2").unwrap();
        fs.sync();
        fs.quiesce();
        assert_eq!(*trims.borrow(), vec![last]);
        trims.borrow_mut().clear();
        fs.fstrim(0, u64::MAX, 0);
        let overlaps = trims.borrow().iter().any(|r| r.start < tail.end() && tail.start < r.end());
        assert!(!overlaps, "fstrim trimmed the preallocated tail {tail:?}: {:?}", trims.borrow());
        // umount drops the preallocation: the tail is free again (and nothing is sent for it).
        let avail = fs.available_blocks();
        trims.borrow_mut().clear();
        fs.umount();
        assert_eq!(fs.available_blocks(), avail + tail.len);
        assert!(trims.borrow().is_empty());
    }

    #[test]
    fn a_file_of_exactly_sixteen_blocks_is_a_small_file() {
        // ext4_mb_group_or_file: "if (size > sbi->s_mb_stream_request)" (16 blocks) excludes
        // only larger files, so 64 KiB takes a locality-group chunk and leaves its tail.
        let (mut fs, _) = ext4_discard();
        create(&mut fs, "a", 64 << 10);
        fs.sync();
        assert_eq!(fs.layout_fs.ext4().unwrap().lg_prealloc.reserved_blocks(), 512 - 16);
        create(&mut fs, "b", 68 << 10);
        fs.sync();
        assert_eq!(fs.layout_fs.ext4().unwrap().lg_prealloc.reserved_blocks(), 512 - 16);
    }

    #[test]
    fn when_space_runs_out_the_tails_are_given_back() {
        let (mut fs, _) = ext4_discard();
        create(&mut fs, "small", 8 << 10);
        fs.sync();
        let reserved = fs.layout_fs.ext4().unwrap().lg_prealloc.reserved_blocks();
        assert!(reserved > 0);
        // A file as large as everything available: only with the tail given back.
        let need = fs.available_blocks() + reserved;
        create(&mut fs, "big", need * BS);
        fs.sync();
        assert_eq!(fs.layout_fs.ext4().unwrap().lg_prealloc.reserved_blocks(), 0);
    }

    fn lg(pas: &[(u64, u64)]) -> LocalityGroup {
        let mut g = LocalityGroup::default();
        for &(start, free) in pas {
            assert!(g.add_n_trim(GroupPa { start, free }).is_empty());
        }
        g
    }

    #[test]
    fn lists_are_by_the_order_of_the_free_count() {
        assert_eq!((list_order(1), list_order(2), list_order(3), list_order(4)), (0, 1, 1, 2));
        assert_eq!((list_order(511), list_order(512), list_order(1 << 20)), (8, 9, 9));
    }

    #[test]
    fn the_nearest_preallocation_with_room_is_used() {
        let mut g = lg(&[(1000, 2), (3000, 400), (2000, 300)]);
        // 6 blocks do not fit the 2-block tail; of the two that fit, 2000 is nearer 0.
        assert_eq!(g.take_fitting(6, 0), Some(GroupPa { start: 2000, free: 300 }));
        assert_eq!(g.take_fitting(2, 0), Some(GroupPa { start: 1000, free: 2 }));
        assert_eq!(g.take_fitting(500, 0), None);
        assert_eq!(g.reserved_blocks(), 400);
    }

    #[test]
    fn a_list_over_eight_sheds_its_first_down_to_five_but_not_the_new_one() {
        // Nine 2..3-block tails (order 1): the ninth trims the list to five, from the head
        // (fewest free blocks first), never the one just added.
        let mut g = lg(&[(100, 3), (200, 3), (300, 3), (400, 3), (500, 3), (600, 3), (700, 3), (800, 3)]);
        let shed = g.add_n_trim(GroupPa { start: 900, free: 2 });
        assert_eq!(shed, vec![Run::new(100, 3), Run::new(200, 3), Run::new(300, 3), Run::new(400, 3)]);
        let left: Vec<u64> = g.runs().map(|r| r.start).collect();
        assert_eq!(left, vec![900, 500, 600, 700, 800]);
        // Other orders are not counted.
        assert!(g.add_n_trim(GroupPa { start: 5000, free: 200 }).is_empty());
    }
}
