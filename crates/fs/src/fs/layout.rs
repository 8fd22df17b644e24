//! Where mke2fs puts the static metadata: superblock, group descriptors, per-group bitmaps and
//! inode tables, the journal area and the root directory.

use super::*;

/// Where the static metadata lives.
#[derive(Clone, Debug)]
pub(super) struct Layout {
    pub(super) total_blocks: u64,
    pub(super) bpg: u64,
    pub(super) groups: u64,
    pub(super) inodes_per_group: u64,
    pub(super) itable_blocks: u64,
    pub(super) gdt_blocks: u64,
    pub(super) journal_start: u64,
    pub(super) journal_blocks: u64,
    pub(super) dir_start: u64,
    pub(super) dir_blocks: u64,
    pub(super) static_blocks: u64,
}

impl Layout {
    pub(super) fn new(capacity_bytes: u64, c: &FsConfig) -> Result<Layout, FsError> {
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
    pub(super) fn static_runs(&self) -> Vec<Run> {
        let mut v = vec![Run::new(0, self.dir_start + self.dir_blocks)];
        for g in 1..self.groups {
            v.push(Run::new(g * self.bpg, 2 + self.itable_blocks));
        }
        v
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
        self.group_meta_start(g) + 2 + (i % self.inodes_per_group) * inode_bytes / block_bytes
    }
    pub(super) fn inode_group(&self, ino: Ino) -> u64 {
        (ino as u64 - 1) / self.inodes_per_group
    }
}
