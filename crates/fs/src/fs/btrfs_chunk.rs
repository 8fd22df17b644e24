//! btrfs' block groups (chunks) as both the allocator (btrfs.rs) and the trees' node
//! placement (btrfs_tree.rs) see them: a chunk's kind, its size class and its copies.

use super::*;

pub(super) const KIB: u64 = 1024;
pub(super) const MIB: u64 = 1024 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ChunkKind {
    Data,
    System,
    Metadata,
}

/// A data block group's size class (block-group.c, btrfs_calc_block_group_size_class, Linux
/// 6.3+): set by its first allocation; find_free_extent tries block groups of the request's
/// class first, then unclassed ones, then allocates a chunk, then takes any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SizeClass {
    /// <= 128 KiB
    Small,
    /// <= 8 MiB
    Medium,
    Large,
}

impl SizeClass {
    pub(super) fn of(bytes: u64) -> SizeClass {
        if bytes <= 128 * KIB {
            SizeClass::Small
        } else if bytes <= 8 * MIB {
            SizeClass::Medium
        } else {
            SizeClass::Large
        }
    }
}

/// One block group: its kind, length (blocks) and the physical start of each copy (one for
/// single, two for DUP).
#[derive(Clone, Debug)]
pub(super) struct Chunk {
    pub(super) kind: ChunkKind,
    pub(super) len: u64,
    pub(super) stripes: Vec<u64>,
    pub(super) size_class: Option<SizeClass>,
}

impl Chunk {
    pub(super) fn run(&self, stripe: usize) -> Run {
        Run::new(self.stripes[stripe], self.len)
    }
}
