//! Inode allocation: which group (ext4 block group, XFS allocation group) a new inode goes
//! to, and the lowest free inode there. The allocators are the kernels' (Linux 6.x):
//! * ext4 (fs/ext4/ialloc.c, `__ext4_new_inode`): a directory by `find_group_orlov` (a
//!   top-level one spread over the groups from a hash of its name; others near the parent's
//!   last allocation), any other inode by `find_group_other` (the parent's group, else a
//!   quadratic hash from it, else linearly); then the first group from there with a free
//!   inode, its lowest free inode (`ext4_find_next_zero_bit`). With flex_bg both work on
//!   flex groups of 16 and pack inodes at the start of the flex group.
//! * XFS (fs/xfs/libxfs/xfs_ialloc.c, `xfs_dialloc`): a directory in the next AG of the
//!   mount's rotor (`m_agirotor`), any other inode in its parent's AG.
//! * btrfs: inodes are items of one tree, with no per-directory locality: the lowest free
//!   number, as before.
//!
//! Regular files created in the root directory keep the model's earlier rule, the lowest free
//! inode of the whole file system: every existing workload creates them, and their placement
//! was measured against kernel recordings. It is `find_group_other` while the root's group
//! has free inodes and blocks (the kernel then hashes to another group; the model fills the
//! next group).

use super::layout::Flavor;
use super::namespace::{dir_name_hash, ROOT};
use super::*;

/// Groups per flex group of mke2fs' flex_bg (`-G 16`, the default of the ext4 feature set).
const FLEX_BG_GROUPS: u64 = 16;

/// Per-group inode counts and the allocators' state.
#[derive(Clone, Debug)]
pub(super) struct InodeGroups {
    inodes_per_group: u64,
    /// Inodes freed (each below its group's `never_used`).
    pub(super) freed: BTreeSet<Ino>,
    /// Per group, the lowest inode number never handed out; inodes freed below it are in
    /// `freed`. Group 0 starts at `first_ino` (`InodeGroups::new`).
    never_used: Vec<Ino>,
    /// The lowest group whose `never_used` has not reached its end.
    fill_group: usize,
    pub(super) free: Vec<u64>,
    pub(super) dirs: Vec<u64>,
    pub(super) free_total: u64,
    pub(super) dirs_total: u64,
    /// XFS's `m_agirotor`: the AG the next directory starts its search at.
    ag_rotor: u64,
    /// ext4's `s_hash_seed` (random at mkfs; here fixed per run, see `set_hash_seed`).
    pub(super) hash_seed: u64,
}

impl InodeGroups {
    /// `first_ino`: the first inode mkfs leaves free. mke2fs reserves inodes 1 to 10
    /// (EXT2_GOOD_OLD_FIRST_INO = 11, the root is 2) and makes lost+found, inode 11: 12. The
    /// paper experiments' layout and the other layouts keep the model's earlier 2 (the root
    /// has no inode of its own in the model).
    pub(super) fn new(groups: u64, inodes_per_group: u64, first_ino: Ino) -> Self {
        let first_ino = first_ino.clamp(2, inodes_per_group as Ino);
        let never_used: Vec<Ino> =
            (0..groups).map(|g| if g == 0 { first_ino } else { (g * inodes_per_group + 1) as Ino }).collect();
        let mut free = vec![inodes_per_group; groups as usize];
        free[0] = inodes_per_group - (first_ino as u64 - 1);
        InodeGroups {
            freed: BTreeSet::new(),
            inodes_per_group,
            never_used,
            fill_group: 0,
            free_total: free.iter().sum(),
            free,
            dirs: vec![0; groups as usize],
            dirs_total: 0,
            ag_rotor: 0,
            hash_seed: 0x5eed_0fe4_7fc0_ffee,
        }
    }

    /// Inodes in use (mkfs' reserved ones included).
    pub(super) fn live(&self) -> u64 {
        self.free.len() as u64 * self.inodes_per_group - self.free_total
    }

    fn last_ino(&self, g: usize) -> Ino {
        ((g as u64 + 1) * self.inodes_per_group) as Ino
    }
}

impl<D: BlockDevice> FileSystem<D> {
    /// The seed of ext4's directory-name hash (`s_hash_seed`, which mke2fs draws at random):
    /// where top-level directories go. Callers fork it from the run's seed.
    pub fn set_hash_seed(&mut self, seed: u64) {
        self.inode_groups.hash_seed = seed;
    }

    /// A mount starts the allocators' in-memory state afresh: XFS's rotor
    /// (`xfs_sb_mount_common`: `atomic_set(&mp->m_agirotor, 0)`) and ext4's per-directory
    /// `i_last_alloc_group` (in the in-core inode, ~0 when read from disk).
    pub(super) fn inode_alloc_mounted(&mut self) {
        self.inode_groups.ag_rotor = 0;
        self.dirs.values_mut().for_each(|d| d.last_alloc_group = None);
    }

    /// Groups per flex group: ext4 as current mke2fs makes it (`first_data_group` > 0, the
    /// second group of a flex group, which only flex_bg gives) has 16; the paper experiments'
    /// layout has none.
    pub(super) fn flex_groups(&self) -> u64 {
        match self.flavor() == Flavor::Ext4 && self.config.first_data_group > 0 {
            true => FLEX_BG_GROUPS,
            false => 1,
        }
    }

    /// Allocates the inode of a new entry `name` in directory `parent` (its inode; ROOT for
    /// the root, whose group is 0 and inode 2 here).
    pub(super) fn place_inode(&mut self, parent: Ino, name: &str, dir: bool) -> Result<Ino, FsError> {
        let (parent_group, parent_ino) = match self.dirs.get(&parent) {
            Some(d) => (self.layout.inode_group(d.ino), d.ino),
            None => (0, 2),
        };
        if self.flavor() == Flavor::Btrfs {
            self.btrfs_room_for_inode(name)?;
        }
        let group = match self.flavor() {
            Flavor::Btrfs => None,
            _ if !dir && parent == ROOT => None,
            Flavor::Xfs if dir => {
                // xfs_dialloc: `start_agno = (atomic_inc_return(&mp->m_agirotor) - 1) % maxagi`.
                let ag = self.inode_groups.ag_rotor % self.layout.groups;
                self.inode_groups.ag_rotor += 1;
                Some(ag)
            }
            Flavor::Xfs => Some(parent_group),
            Flavor::Ext4 if dir => Some(self.find_group_orlov(parent, name, parent_group, parent == ROOT)),
            Flavor::Ext4 => Some(self.find_group_other(parent, parent_group, parent_ino)),
        };
        let ino = match group {
            None => self.lowest_free_ino(),
            Some(g) => self.free_ino_from_group(g),
        }
        .ok_or(FsError::NoInodes)?;
        if let Some(d) = self.dirs.get_mut(&parent) {
            // __ext4_new_inode: `EXT4_I(dir)->i_last_alloc_group = group`.
            d.last_alloc_group = Some(self.layout.inode_group(ino));
        }
        self.take_ino(ino, dir);
        Ok(ino)
    }

    /// The lowest free inode of the file system.
    fn lowest_free_ino(&self) -> Option<Ino> {
        let ig = &self.inode_groups;
        let watermark =
            ig.never_used.get(ig.fill_group).copied().filter(|&i| i <= ig.last_ino(ig.fill_group));
        match (ig.freed.first().copied(), watermark) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The lowest free inode of the first group from `g` (wrapping) that has one
    /// (`__ext4_new_inode`'s loop; xfs_dialloc's AG loop).
    fn free_ino_from_group(&self, g: u64) -> Option<Ino> {
        let ig = &self.inode_groups;
        let groups = ig.free.len();
        (0..groups).map(|i| (g as usize + i) % groups).find(|&g| ig.free[g] > 0).map(|g| {
            let first = (g as u64 * ig.inodes_per_group + 1) as Ino;
            ig.freed.range(first..=ig.last_ino(g)).next().copied().unwrap_or(ig.never_used[g])
        })
    }

    fn take_ino(&mut self, ino: Ino, dir: bool) {
        let g = self.layout.inode_group(ino) as usize;
        let ig = &mut self.inode_groups;
        if !ig.freed.remove(&ino) {
            debug_assert_eq!(ig.never_used[g], ino, "fs: inode {ino} is neither freed nor next");
            ig.never_used[g] += 1;
            while ig.fill_group < ig.free.len() && ig.never_used[ig.fill_group] > ig.last_ino(ig.fill_group) {
                ig.fill_group += 1;
            }
        }
        ig.free[g] -= 1;
        ig.free_total -= 1;
        if dir {
            ig.dirs[g] += 1;
            ig.dirs_total += 1;
        }
    }

    /// An inode becomes free (unlink, XFS inactivation, rmdir).
    pub(super) fn free_ino(&mut self, ino: Ino) {
        let g = self.layout.inode_group(ino) as usize;
        self.inode_groups.freed.insert(ino);
        self.inode_groups.free[g] += 1;
        self.inode_groups.free_total += 1;
    }

    /// A directory inode stops counting as a directory (rmdir), before it is freed.
    pub(super) fn forget_dir_inode(&mut self, ino: Ino) {
        let g = self.layout.inode_group(ino) as usize;
        self.inode_groups.dirs[g] -= 1;
        self.inode_groups.dirs_total -= 1;
    }

    /// (free inodes, free blocks, directories) of group or flex group `g`
    /// (`get_orlov_stats`).
    fn orlov_stats(&self, g: u64, flex: u64) -> (u64, u64, u64) {
        let ig = &self.inode_groups;
        let groups = g * flex..((g + 1) * flex).min(self.layout.groups);
        groups.fold((0, 0, 0), |(i, b, d), g| {
            (i + ig.free[g as usize], b + self.bitmap.group_avail(g), d + ig.dirs[g as usize])
        })
    }

    /// `find_group_orlov` (fs/ext4/ialloc.c): the group (flex group with flex_bg) for a new
    /// directory `name` in `parent`, then with flex_bg the first group of it with a free inode.
    /// `top_level`: a directory in the root; other inodes get the second rule, as
    /// `find_group_other` asks with a regular file's mode.
    fn find_group_orlov(&self, parent: Ino, name: &str, parent_group: u64, top_level: bool) -> u64 {
        let flex = self.flex_groups();
        let ig = &self.inode_groups;
        let ngroups = self.layout.groups.div_ceil(flex);
        let avefreei = ig.free_total / ngroups;
        let avefreec = self.bitmap.avail_count() / ngroups;
        let found = if top_level {
            // Top-level: start at the name's hash, take the group with the fewest
            // directories among those with at least average free inodes and blocks.
            let start = dir_name_hash(ig.hash_seed, name) % ngroups;
            let mut best: Option<(u64, u64)> = None;
            for g in (0..ngroups).map(|i| (start + i) % ngroups) {
                let (free, blocks, dirs) = self.orlov_stats(g, flex);
                let better = best.is_none_or(|(_, d)| dirs < d) && dirs < ig.inodes_per_group;
                if free > 0 && better && free >= avefreei && blocks >= avefreec {
                    best = Some((g, dirs));
                }
            }
            best.map(|b| b.0)
        } else {
            // Others: from the parent's last allocation, the first group with not too many
            // directories and not too few free inodes and blocks.
            let max_dirs = ig.dirs_total / ngroups + ig.inodes_per_group / 16;
            let min_inodes = avefreei.saturating_sub(ig.inodes_per_group * flex / 4).max(1);
            let min_blocks = avefreec.saturating_sub(self.layout.bpg * flex / 4);
            let last = self.dirs.get(&parent).and_then(|d| d.last_alloc_group).unwrap_or(parent_group);
            let start = last / flex;
            (0..ngroups).map(|i| (start + i) % ngroups).find(|&g| {
                let (free, blocks, dirs) = self.orlov_stats(g, flex);
                dirs < max_dirs && free >= min_inodes && blocks >= min_blocks
            })
        };
        // found_flex_bg: inodes packed at the start of the flex group.
        let packed = found.and_then(|fg| {
            (fg * flex..((fg + 1) * flex).min(self.layout.groups)).find(|&g| ig.free[g as usize] > 0)
        });
        packed.unwrap_or_else(|| self.orlov_fallback(parent_group))
    }

    /// `find_group_orlov`'s fallback: from the parent's group, the first group with at least
    /// the average free inodes, else any free inode.
    fn orlov_fallback(&self, parent_group: u64) -> u64 {
        let ig = &self.inode_groups;
        let groups = self.layout.groups;
        let avefreei = ig.free_total / groups;
        let order = |min: u64| {
            (0..groups).map(|i| (parent_group + i) % groups).find(|&g| {
                let free = ig.free[g as usize];
                free > 0 && free >= min
            })
        };
        order(avefreei).or_else(|| order(0)).unwrap_or(parent_group)
    }

    /// `find_group_other` (fs/ext4/ialloc.c): a non-directory inode's group.
    fn find_group_other(&self, parent: Ino, parent_group: u64, parent_ino: Ino) -> u64 {
        let flex = self.flex_groups();
        let ig = &self.inode_groups;
        let groups = self.layout.groups;
        let has_inode = |g: u64| ig.free[g as usize] > 0;
        let usable = |g: u64| has_inode(g) && self.bitmap.group_avail(g) > 0;
        if flex > 1 {
            // The parent's flex group, then the one of the parent's last allocation, then
            // an Orlov search (non-top-level rules) from the next flex group.
            let in_flex = |g: u64| {
                let first = g & !(flex - 1);
                (first..(first + flex).min(groups)).find(|&g| has_inode(g))
            };
            let last = self.dirs.get(&parent).and_then(|d| d.last_alloc_group);
            if let Some(g) = in_flex(parent_group).or_else(|| last.and_then(in_flex)) {
                return g;
            }
            return self.find_group_orlov(parent, "", parent_group, false);
        }
        if usable(parent_group) {
            return parent_group;
        }
        // A quadratic hash from the parent's group plus the parent's inode number, so that
        // files of different directories sharing a group spread apart.
        let mut g = (parent_group + parent_ino as u64) % groups;
        let mut step = 1;
        while step < groups {
            g = (g + step) % groups;
            if usable(g) {
                return g;
            }
            step <<= 1;
        }
        (1..=groups).map(|i| (parent_group + i) % groups).find(|&g| has_inode(g)).unwrap_or(parent_group)
    }

    /// `check`'s part: per-group free-inode and directory counts agree with the inode maps.
    pub(super) fn inode_groups_check(&self, dirs: u64) -> Result<(), String> {
        let ig = &self.inode_groups;
        let mut dirs_per_group = vec![0u64; ig.dirs.len()];
        for d in self.dirs.values() {
            dirs_per_group[self.layout.inode_group(d.ino) as usize] += 1;
        }
        if dirs_per_group != ig.dirs || dirs != ig.dirs_total {
            return Err(format!("fs: directories per group {:?}, counted {dirs_per_group:?}", ig.dirs));
        }
        for (g, &free) in ig.free.iter().enumerate() {
            let first = (g as u64 * ig.inodes_per_group + 1) as Ino;
            let untouched = (ig.last_ino(g) + 1).saturating_sub(ig.never_used[g]) as u64;
            let freed = ig.freed.range(first..=ig.last_ino(g)).count() as u64;
            if free != untouched + freed {
                return Err(format!("fs: group {g} counts {free} free inodes, holds {}", untouched + freed));
            }
        }
        if ig.free.iter().sum::<u64>() != ig.free_total {
            return Err(format!("fs: {} free inodes in total, groups sum to more or less", ig.free_total));
        }
        Ok(())
    }
}
