//! Where mke2fs puts the static metadata: superblock, group descriptors, per-group bitmaps and
//! inode tables, the journal area (mke2fs's default size, in the middle group) and the root
//! directory.

use super::*;

/// Where the static metadata lives.
#[derive(Clone, Debug)]
pub(super) struct Layout {
    pub(super) total_blocks: u64,
    pub(super) bpg: u64,
    pub(super) groups: u64,
    pub(super) inodes_per_group: u64,
    /// Inodes the (stand-in) inode table of a group has slots for: `inodes_per_group` on ext4
    /// and XFS; btrfs' 64-block stand-in, onto which its unbounded inode numbers wrap.
    pub(super) itable_inodes: u64,
    pub(super) itable_blocks: u64,
    pub(super) gdt_blocks: u64,
    pub(super) journal_start: u64,
    pub(super) journal_blocks: u64,
    pub(super) dir_start: u64,
    pub(super) dir_blocks: u64,
    pub(super) static_blocks: u64,
    /// mke2fs's journal size and place (`FsConfig::mke2fs_layout`), else trimlab's earlier one.
    pub(super) mke2fs: bool,
}

/// btrfs' inode numbers: items of the fs tree, limited by its metadata space
/// (`FileSystem::btrfs_room_for_inode`), not by a table: as many as an `Ino` holds.
const BTRFS_INODES: u64 = (u32::MAX / 2) as u64;

/// Slots of the inode table of a group: ext4's from the inode ratio; btrfs' stand-in inode
/// table and root directory as many as 64 blocks of each hold (8192 with
/// `FsConfig::btrfs_defaults`' 32-byte entries), so both fit in the reserved first MiB.
fn itable_inodes(c: &FsConfig, bpg: u64, total_bytes: u64) -> u64 {
    match c.btrfs_layout {
        true => (64 * c.block_bytes / c.inode_bytes.max(1)).min(64 * c.dir_entries_per_block).max(16),
        false => (bpg * c.block_bytes / inode_ratio_bytes(c, total_bytes)).max(16),
    }
}

/// The inode ratio: the config's, or with 0 (`FsConfig::ext4_defaults`) mke2fs's for the
/// file system's size type (e2fsprogs 1.47.0-1.47.4 misc/mke2fs.c: "floppy" below 3 MiB,
/// "small" below 512 MiB, "default" below 4 TiB, "big" below 16 TiB, else "huge"; their
/// inode_ratio in misc/mke2fs.conf.in: 8192, 4096, 16384, 32768, 65536). mke2fs.conf's
/// "small" and "floppy" also ask for 1 KiB blocks, which the model takes only when told
/// (`[host] block_bytes = "1KiB"` on a drive of 1 KiB pages): its devices carry a data tag
/// per 4 KiB page.
pub(super) fn inode_ratio_bytes(c: &FsConfig, total_bytes: u64) -> u64 {
    const MIB: u64 = 1 << 20;
    match c.inode_ratio_bytes {
        0 if total_bytes < 3 * MIB => 8192,
        0 if total_bytes < 512 * MIB => 4096,
        0 if total_bytes < 4 << 40 => 16384,
        0 if total_bytes < 16 << 40 => 32768,
        0 => 65536,
        r => r,
    }
}

impl Layout {
    pub(super) fn new(capacity_bytes: u64, c: &FsConfig) -> Result<Layout, FsError> {
        let total = capacity_bytes / c.block_bytes;
        // btrfs: one group over the whole device (btrfs has no ext4 groups; FITRIM walks its
        // block groups instead) and a compact stand-in inode table of 64 blocks (8192 inodes
        // of `FsConfig::btrfs_defaults`' 32 bytes: a limit of the model, btrfs' inodes are tree
        // items, crates/fs/src/fs/btrfs_tree.rs) so that the model's own metadata fits in
        // btrfs' reserved first MiB; a 96-block journal (btrfs has none: the model's commit writes
        // stand for btrfs' tree writes).
        let bpg = if c.btrfs_layout { total.next_multiple_of(64).max(64) } else { c.blocks_per_group };
        if bpg == 0 || !bpg.is_multiple_of(64) {
            return Err(FsError::Layout(format!(
                "blocks_per_group = {bpg} (must be a positive multiple of 64)"
            )));
        }
        let groups = total.div_ceil(bpg);
        let itable_inodes = itable_inodes(c, bpg, total * c.block_bytes);
        let inodes_per_group = if c.btrfs_layout { BTRFS_INODES } else { itable_inodes };
        let itable_blocks = (itable_inodes * c.inode_bytes).div_ceil(c.block_bytes);
        let gdt_blocks = (groups * 64).div_ceil(c.block_bytes);
        // One flat root directory, large enough for every inode up to 2^17 entries (btrfs:
        // a stand-in of 64 blocks its entries wrap onto, as its inodes do).
        let dir_blocks = (groups * itable_inodes).min(1 << 17).div_ceil(c.dir_entries_per_block);
        let group0 = 1 + gdt_blocks + 2 + itable_blocks;
        let meta = 2 + itable_blocks;
        // ext2fs_mkjournal puts the journal at the start of the middle group (group count / 2);
        // here after that group's bitmaps and inode table, which trimlab keeps in each group
        // (no flex_bg). It must fit in that group: mke2fs's sizes above 16 GiB (32768 blocks
        // and more, which real ext4 lays across groups freed of their metadata by flex_bg)
        // are cut to the group's free space, a deliberate difference.
        let jg = if c.mke2fs_layout { groups / 2 } else { 0 };
        let group0_room = bpg.min(total).saturating_sub(group0 + dir_blocks + 16);
        let (journal_start, room) = if !c.mke2fs_layout {
            // trimlab's earlier place, kept for the paper experiments: right after group 0's
            // inode table, the directory after it.
            (group0, group0_room)
        } else if jg == 0 {
            (group0 + dir_blocks, group0_room)
        } else {
            let end = ((jg + 1) * bpg).min(total);
            (jg * bpg + meta, end.saturating_sub(jg * bpg + meta + 16))
        };
        let journal_blocks = journal_size(c, total, room)?;
        let dir_start = if c.mke2fs_layout { group0 } else { group0 + journal_blocks };
        let l = Layout {
            total_blocks: total,
            bpg,
            groups,
            inodes_per_group,
            itable_inodes,
            itable_blocks,
            gdt_blocks,
            journal_start,
            journal_blocks,
            dir_start,
            dir_blocks,
            static_blocks: 0,
            mke2fs: c.mke2fs_layout,
        };
        let last = total - (groups - 1) * bpg;
        let journal_group_end = ((jg + 1) * bpg).min(total);
        if l.dir_start + dir_blocks >= bpg.min(total)
            || last < 2 + itable_blocks + 16
            || (c.mke2fs_layout
                && (journal_blocks < 1024 || journal_start + journal_blocks > journal_group_end))
        {
            return Err(FsError::Layout(format!(
                "{total} blocks in {groups} groups of {bpg} cannot hold the journal ({journal_blocks} blocks), directory and inode tables"
            )));
        }
        l.btrfs_fits(c)
    }

    /// btrfs' stand-ins (inode table, root directory, journal) must sit in the first MiB
    /// btrfs never allocates, without mke2fs's journal.
    fn btrfs_fits(self, c: &FsConfig) -> Result<Layout, FsError> {
        let end = self.dir_start + self.dir_blocks;
        if c.btrfs_layout && (c.mke2fs_layout || end * c.block_bytes > 1 << 20) {
            return Err(FsError::Layout(format!(
                "btrfs_layout: the model's metadata ({end} blocks of {} bytes) must fit in btrfs' reserved first MiB, and mke2fs_layout must be off",
                c.block_bytes
            )));
        }
        Ok(self)
    }

    /// Static metadata runs (superblock, descriptors, bitmaps, inode tables, dir, journal),
    /// sorted and disjoint.
    pub(super) fn static_runs(&self) -> Vec<Run> {
        let mut v = vec![Run::new(0, self.dir_start + self.dir_blocks)];
        for g in 1..self.groups {
            v.push(Run::new(g * self.bpg, 2 + self.itable_blocks));
        }
        if self.mke2fs {
            v.push(Run::new(self.journal_start, self.journal_blocks));
        }
        coalesce(v)
    }

    /// Inode-table blocks of group `g` that hold the inodes mkfs used (root, lost+found and
    /// the reserved ones: the first 16 inodes, all in group 0), which mke2fs zeroes itself.
    pub(super) fn itable_used_blocks(&self, g: u64, block_bytes: u64, inode_bytes: u64) -> u64 {
        if g == 0 {
            (16 * inode_bytes).div_ceil(block_bytes)
        } else {
            0
        }
    }

    /// The first inode mkfs leaves free: mke2fs's 12 with `mke2fs_layout`, else the model's
    /// earlier 2 (inode_alloc.rs `InodeGroups::new`).
    pub(super) fn first_ino(&self) -> Ino {
        if self.mke2fs {
            12
        } else {
            2
        }
    }

    pub(super) fn itable_start(&self, g: u64) -> u64 {
        self.group_meta_start(g) + 2
    }
    pub(super) fn group_meta_start(&self, g: u64) -> u64 {
        if g == 0 {
            1 + self.gdt_blocks
        } else {
            g * self.bpg
        }
    }
    pub(super) fn bitmap_block(&self, g: u64) -> u64 {
        self.group_meta_start(g)
    }
    pub(super) fn gdt_block(&self, g: u64) -> u64 {
        1 + (g * 64) / 4096
    }
    pub(super) fn inode_block(&self, ino: Ino, block_bytes: u64, inode_bytes: u64) -> u64 {
        let i = ino as u64 - 1;
        let g = i / self.inodes_per_group;
        self.group_meta_start(g)
            + 2
            + (i % self.inodes_per_group % self.itable_inodes) * inode_bytes / block_bytes
    }
    pub(super) fn inode_group(&self, ino: Ino) -> u64 {
        (ino as u64 - 1) / self.inodes_per_group
    }
}

/// The journal's blocks: the config's, btrfs' 96-block stand-in, XFS's log stand-in (trimlab's
/// earlier total/64 within 1024..16384: mkfs.xfs sizes its log its own way), else mke2fs's size
/// cut to `room` (the free space of the group that holds it).
fn journal_size(c: &FsConfig, total: u64, room: u64) -> Result<u64, FsError> {
    Ok(if c.journal_blocks > 0 {
        c.journal_blocks
    } else if c.btrfs_layout {
        96
    } else if c.inodegc.is_some() {
        (total / 64).clamp(1024, 16384)
    } else if !c.mke2fs_layout {
        default_journal_blocks(total).unwrap_or(1024).min(room)
    } else {
        default_journal_blocks(total)
            .ok_or_else(|| {
                FsError::Layout(format!("{total} blocks: mke2fs needs at least 2048 for a journal"))
            })?
            .min(room)
    })
}

/// `ext2fs_default_journal_size` (e2fsprogs lib/ext2fs/mkjournal.c, 1.47): the journal mke2fs
/// makes for a file system of `blocks` 4 KiB blocks, or None below 2048 blocks (no journal).
pub(super) fn default_journal_blocks(blocks: u64) -> Option<u64> {
    Some(match blocks {
        0..2048 => return None,
        2048..32768 => 1024,
        32768..262_144 => 4096,
        262_144..524_288 => 8192,
        524_288..4_194_304 => 16384,
        4_194_304..8_388_608 => 32768,
        8_388_608..16_777_216 => 65536,
        16_777_216..33_554_432 => 131_072,
        _ => 262_144,
    })
}

/// Which kernel's allocators the file system follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Flavor {
    Ext4,
    Xfs,
    Btrfs,
}

impl<D: BlockDevice> FileSystem<D> {
    pub(super) fn flavor(&self) -> Flavor {
        self.layout_fs.flavor()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journal_follows_mke2fs_and_sits_in_the_middle_group() {
        // e2fsprogs' table: 1 GiB (262144 blocks) gets 32 MiB, 512 MiB gets 16 MiB.
        assert_eq!(default_journal_blocks(262_144), Some(8192));
        assert_eq!(default_journal_blocks(131_072), Some(4096));
        assert_eq!(default_journal_blocks(16_384), Some(1024));
        assert_eq!(default_journal_blocks(1000), None);
        let mke2fs = FsConfig::default().ext4_defaults();
        let l = Layout::new(1 << 30, &mke2fs).unwrap();
        assert_eq!((l.groups, l.journal_blocks), (8, 8192));
        assert_eq!(l.journal_start, 4 * 32768 + 2 + 512, "after group 4's bitmaps and inode table");
        // 64 GiB: mke2fs wants 65536 blocks; the model's group holds 32768 - 514 - 16.
        let l = Layout::new(64 << 30, &mke2fs).unwrap();
        assert_eq!(l.journal_blocks, 32768 - 514 - 16);
        let runs = l.static_runs();
        assert!(runs.windows(2).all(|w| w[0].end() < w[1].start), "{runs:?}");
        // The paper experiments' layout: mke2fs's size right after group 0's inode table, cut
        // to group 0's room; XFS's stand-in keeps total/64.
        let l = Layout::new(1 << 30, &FsConfig::default()).unwrap();
        assert_eq!((l.journal_start, l.journal_blocks), (1 + 1 + 2 + 512, 8192));
        assert_eq!(l.dir_start, l.journal_start + 8192);
        assert_eq!(Layout::new(256 << 20, &FsConfig::default()).unwrap().journal_blocks, 4096);
        let l = Layout::new(64 << 30, &FsConfig::default()).unwrap();
        assert!(l.journal_blocks < 32768 && l.dir_start + l.dir_blocks < 32768, "{l:?}");
        let xfs = FsConfig::default().xfs_defaults();
        assert_eq!(Layout::new(1 << 30, &xfs).unwrap().journal_blocks, 4096);
    }

    #[test]
    fn inodes_follow_mke2fs_size_types_and_btrfs_has_no_table() {
        let mke2fs = FsConfig::default().ext4_defaults();
        let ratio = |bytes: u64| inode_ratio_bytes(&mke2fs, bytes);
        assert_eq!(
            [ratio(2 << 20), ratio(256 << 20), ratio(1 << 30), ratio(8 << 40), ratio(32 << 40)],
            [8192, 4096, 16384, 32768, 65536]
        );
        // dumpe2fs of mke2fs 1.47.0's 256 MiB: 65,536 inodes, the first free one 12.
        let l = Layout::new(256 << 20, &mke2fs).unwrap();
        assert_eq!((l.groups * l.inodes_per_group, l.first_ino()), (65536, 12));
        let set = FsConfig { inode_ratio_bytes: 16384, ..mke2fs };
        assert_eq!(Layout::new(256 << 20, &set).unwrap().inodes_per_group, 8192, "a set ratio wins");
        // The paper layout keeps its 16 KiB and inode 2.
        let l = Layout::new(256 << 20, &FsConfig::default()).unwrap();
        assert_eq!((l.groups * l.inodes_per_group, l.first_ino()), (16384, 2));
        // btrfs: numbers without a table, wrapping onto the 64-block stand-in.
        let l = Layout::new(1 << 30, &FsConfig::default().btrfs_defaults()).unwrap();
        assert!(l.inodes_per_group > 1 << 30 && l.itable_blocks == 64, "{l:?}");
        assert_eq!(l.inode_block(8193, 4096, 32), l.inode_block(1, 4096, 32));
    }
}
