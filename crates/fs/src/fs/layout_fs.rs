//! Each on-disk layout's own state, one type per layout behind one enum: ext4's locality-group
//! preallocations and lazy inode-table init, XFS's inodegc queue, btrfs' block groups and
//! trees. The shared machinery (namespace, page cache, journal, policy, event loop) stays in
//! `FileSystem`; a layout's behaviour is in its files (lg_prealloc.rs, inodegc.rs,
//! xfs_alloc.rs, xfs_fitrim.rs, btrfs.rs, btrfs_tree.rs) and reaches its state here.
//!
//! An enum rather than a `Box<dyn>`: the allocator asks for its layout's state on every
//! allocation and free, and a match on a three-way tag inlines to one compare where a trait
//! object would be an indirect call the optimizer cannot see through.

use super::btrfs::Btrfs;
use super::inodegc::InodeGcQueue;
use super::layout::{Flavor, Layout};
use super::lg_prealloc::LocalityGroup;
use super::{FsError, Ino, Inode};
use crate::config::FsConfig;

/// ext4's own state.
#[derive(Default)]
pub(super) struct Ext4 {
    /// mballoc's locality group: the small-file chunks' unused tails (lg_prealloc.rs).
    pub(super) lg_prealloc: LocalityGroup,
    /// The next group whose inode table `ext4lazyinit` zeroes.
    pub(super) lazy_init_group: Option<u64>,
    /// ext4lazyinit's clock (lazyinit.rs).
    pub(super) lazy_init: super::lazyinit::LazyInitClock,
}

/// XFS's own state.
#[derive(Default)]
pub(super) struct Xfs {
    /// Inodes waiting for inactivation (`FsConfig::inodegc`, inodegc.rs).
    pub(super) inodegc: InodeGcQueue,
    /// When the last mount queued `xfs_log_worker` (journal.rs `log_worker_due`): it runs
    /// every `xfs_syncd_centisecs` from there, whatever the file system does.
    pub(super) log_worker_from: trimlab_sim::SimTime,
}

// One value per mounted file system, never in a collection: its size costs nothing, while a
// box around ext4's state would add a pointer chase to every allocation and free.
#[allow(clippy::large_enum_variant)]
pub(super) enum LayoutFs {
    Ext4(Ext4),
    Xfs(Xfs),
    /// Boxed: btrfs' block groups and trees are large beside the other two.
    Btrfs(Box<Btrfs>),
}

impl LayoutFs {
    /// The layout `config` selects: btrfs' chunks with `btrfs_layout`, XFS with `inodegc`,
    /// else ext4. A config that asks for another layout's behaviour is refused.
    pub(super) fn new(config: &FsConfig, layout: &Layout) -> Result<Self, FsError> {
        let ext4_only = [
            ("lazy_itable_init", config.lazy_itable_init),
            ("small_file_chunk_blocks", config.small_file_chunk_blocks > 0),
        ];
        let fs = match (config.btrfs_layout, config.inodegc.is_some()) {
            (true, true) => {
                return Err(FsError::Layout("btrfs_layout with inodegc (XFS's): pick one layout".into()))
            }
            (true, false) => LayoutFs::Btrfs(Box::new(Btrfs::mkfs(layout.total_blocks, config.block_bytes)?)),
            (false, true) => LayoutFs::Xfs(Xfs::default()),
            (false, false) => return Ok(LayoutFs::Ext4(Ext4::default())),
        };
        match ext4_only.iter().find(|(_, on)| *on) {
            Some((key, _)) => {
                Err(FsError::Layout(format!("{key} is ext4's (this layout is {:?})", fs.flavor())))
            }
            None => Ok(fs),
        }
    }

    pub(super) fn flavor(&self) -> Flavor {
        match self {
            LayoutFs::Ext4(_) => Flavor::Ext4,
            LayoutFs::Xfs(_) => Flavor::Xfs,
            LayoutFs::Btrfs(_) => Flavor::Btrfs,
        }
    }

    pub(super) fn btrfs(&self) -> Option<&Btrfs> {
        match self {
            LayoutFs::Btrfs(b) => Some(b),
            _ => None,
        }
    }

    pub(super) fn btrfs_mut(&mut self) -> Option<&mut Btrfs> {
        match self {
            LayoutFs::Btrfs(b) => Some(b),
            _ => None,
        }
    }

    pub(super) fn ext4(&self) -> Option<&Ext4> {
        match self {
            LayoutFs::Ext4(e) => Some(e),
            _ => None,
        }
    }

    pub(super) fn ext4_mut(&mut self) -> Option<&mut Ext4> {
        match self {
            LayoutFs::Ext4(e) => Some(e),
            _ => None,
        }
    }

    pub(super) fn xfs(&self) -> Option<&Xfs> {
        match self {
            LayoutFs::Xfs(x) => Some(x),
            _ => None,
        }
    }

    /// XFS's state where only XFS gets (inodegc runs only with `FsConfig::inodegc`).
    pub(super) fn xfs_mut(&mut self) -> &mut Xfs {
        match self {
            LayoutFs::Xfs(x) => x,
            other => unreachable!("XFS's inodegc on a {:?} layout", other.flavor()),
        }
    }

    /// XFS's inodes awaiting inactivation (none on another layout).
    pub(super) fn inodegc_queued(&self) -> &[(Ino, Inode)] {
        self.xfs().map_or(&[], |x| &x.inodegc.queued)
    }

    /// Blocks another layout's state holds that `df` counts as free: XFS's inodes awaiting
    /// inactivation, ext4's locality-group preallocations' unused tails.
    pub(super) fn free_to_statfs(&self) -> u64 {
        match self {
            LayoutFs::Ext4(e) => e.lg_prealloc.reserved_blocks(),
            LayoutFs::Xfs(x) => x.inodegc.queued_blocks,
            LayoutFs::Btrfs(_) => 0,
        }
    }
}
