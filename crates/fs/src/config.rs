//! File-system geometry, host-side costs and the TRIM policy a mount uses. Every time constant
//! here is a host-software assumption of trimlab (stated in docs/host-fs.md), not a measured
//! value from the source documents.

use serde::{Deserialize, Serialize};

/// `[host] kernel`: which kernel's behaviours the model follows (docs/host-fs.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Kernel {
    /// The setup of the paper experiments (the default).
    #[default]
    #[serde(rename = "paper")]
    Paper,
    /// What the discard-pattern recordings of Linux 6.18 showed: lazy inode-table init,
    /// locality-group chunks, data from group 1, btrfs' free-space merging and tick-rounded
    /// async delay.
    #[serde(rename = "linux-6.18")]
    Linux6_18,
}

/// `[host] layout`: the on-disk layout (docs/host-fs.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    /// Block groups of `blocks_per_group` (the default).
    #[default]
    Ext4,
    /// mkfs.btrfs 6.2's block groups, size classes and per-block-group FITRIM, with btrfs' 30 s
    /// commit and its async discard as Linux 6.18 does it (`FsConfig::btrfs_defaults`).
    Btrfs,
    /// 256 MiB allocation groups, XFS's 30 s log worker and deferred inode inactivation
    /// (`FsConfig::xfs_defaults`).
    Xfs,
}

/// Host CPU time charged to the simulated threads.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HostCosts {
    /// Entering and leaving the kernel for one system call.
    pub syscall_ns: u64,
    /// Copying application data into the page cache.
    pub copy_ps_per_byte: u64,
    /// Building and dispatching one block request (bio, request, driver) before it reaches
    /// the device.
    pub submit_ns: u64,
    /// Completion interrupt and waking the thread that waits for the request.
    pub complete_ns: u64,
    /// Waking a sleeping kernel thread (journal thread, discard worker).
    pub wakeup_ns: u64,
    /// Per-block work of freeing blocks at unlink/truncate (extent walk, bitmap and group
    /// updates). Default 60 ns: 003's `rm` without discard freed 1018 GB (~267 M blocks) in
    /// 16.4 s.
    pub free_block_ns: u64,
    /// CPU time per name removed (unlink(2), rmdir(2)) beyond `syscall_ns` and
    /// `free_block_ns`: the kernel's unlink path (VFS lookup and locks, the directory entry,
    /// the orphan list, `evict` with its journal handle) and the program's walk to it (`rm
    /// -r`: fts' openat, getdents64 and close per directory), charged before the call. 0 by
    /// default (the paper experiments' model); [`UNLINK_NS_LINUX`] with the Linux 6.18
    /// defaults of every layout. Not serialized: it follows from `kernel` and `layout`, which
    /// the config hash covers.
    #[serde(skip_serializing)]
    pub unlink_ns: u64,
}

/// [`HostCosts::unlink_ns`] on Linux 6.18, an assumption fitted to the one recording made on an
/// unloaded machine that times `rm -r` (tests/data/discard-patterns/ext4-discard-tree-rm,
/// ext4 -o discard): `rm -r` of 77 entries then `sync` sends its first TRIM 6.4 ms after the
/// phase starts (runs 6.4 / 6.4 / 18.3 ms), of 232 entries 13.0 / 19.6 / 24.5 ms; less the
/// rig's 2 ms (tests/discard_workloads.rs) and the commit, 44-85 us an entry. The recordings
/// made under load take 0.4-0.7 ms an entry (ext4-discard-mkdir-10k, -cp-tar): machine load,
/// not modelled.
pub const UNLINK_NS_LINUX: u64 = 60_000;

impl Default for HostCosts {
    fn default() -> Self {
        HostCosts {
            syscall_ns: 2_000,
            copy_ps_per_byte: 250,
            submit_ns: 10_000,
            complete_ns: 15_000,
            wakeup_ns: 20_000,
            free_block_ns: 60,
            unlink_ns: 0,
        }
    }
}

/// The host TRIM policies (see docs/host-fs.md): a handle each policy's file defines its values
/// of (crates/discard/src/), re-exported here beside the config that holds it.
pub use crate::policy::{PolicyKind, PolicyParams};

/// XFS's deferred inode inactivation (Linux 5.14+, fs/xfs/xfs_icache.c). An unlinked inode
/// whose last reference goes is not freed by the unlink: `xfs_inode_mark_reclaimable` puts it
/// on the CPU's inodegc queue (`xfs_inodegc_queue`), and the `xfs_inodegc_worker` later
/// truncates and frees it (`xfs_inactive`), so its extents join whatever log checkpoint is
/// open when the worker runs; `sync` (`xfs_fs_sync_fs`) forces the log but does not flush
/// the queue. The model keeps one queue (the unlinking task's CPU).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct InodeGc {
    /// The worker is queued at once (`queue_delay = 0`) when the queue already holds more than
    /// this many inodes (`xfs_inodegc_want_queue_work`: `items > inodes_per_cluster`; 32 for
    /// mkfs.xfs 6.1's 512-byte inodes in 16 KiB clusters, xfs_ialloc_setup_geometry), or when
    /// free space is below 5 % of the data blocks (`m_low_space[XFS_LOWSP_5_PCNT]`).
    pub kick_inodes: u64,
    /// The scheduler tick (CONFIG_HZ = 250 on the recording's kernel: 4 ms). Otherwise the
    /// worker is a delayed work of one jiffy, re-armed by every queued inode
    /// (`mod_delayed_work_on(..., 1)`); the timer wheel puts a one-jiffy timer in the bucket
    /// of the current jiffy + 2 (kernel/time/timer.c `calc_index` rounds level-0 expiries
    /// up; `timer_start ... [timeout=1] bucket_expiry=jiffies+2` in the traces), so the
    /// worker runs on the second tick boundary after the last queued inode: 4-8 ms later.
    pub tick_ns: u64,
    /// Time per cached page that the unlink spends dropping the file's page cache before the
    /// inode is queued (`evict` -> `xfs_fs_evict_inode` -> `truncate_inode_pages_final`, then
    /// `destroy_inode` -> `xfs_inode_mark_reclaimable`, fs/xfs/xfs_super.c). The delayed
    /// work armed by the previous unlink fires during it: an `rm` of several large cached
    /// files inactivates each file while the next one is being evicted. Traced on Linux 6.18
    /// (unlinkat to xfs_destroy_inode of a 128 MiB cached file): 18-40 ms, about 0.8 us a page.
    pub evict_page_ns: u64,
}

/// A file system's shape and mount options.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FsConfig {
    pub block_bytes: u64,
    pub blocks_per_group: u64,
    /// One inode per this many bytes (mke2fs inode_ratio); 0 = mke2fs's for the file
    /// system's size type (`ext4_defaults`: 4 KiB below 512 MiB, 16 KiB below 4 TiB, ...,
    /// fs/layout.rs `inode_ratio_bytes`).
    pub inode_ratio_bytes: u64,
    pub inode_bytes: u64,
    /// Journal size in blocks; 0 = the default for the size (`mke2fs_layout`).
    pub journal_blocks: u64,
    /// ext4 lazy inode-table init (mke2fs `lazy_itable_init=1`, the default where the kernel
    /// supports it): mkfs leaves the inode tables unzeroed and the `ext4lazyinit` thread
    /// zeroes each group's unused part after mount, which a loop/NBD or thin device sees as a
    /// TRIM per group. Off by default in trimlab so that the paper experiments, which start
    /// measuring right after mkfs on drives of up to 1 TB, do not get hours of background
    /// zeroing their sources did not have; the discard-pattern test turns it on.
    pub lazy_itable_init: bool,
    /// mballoc's locality-group preallocation (`s_mb_group_prealloc`, 512 blocks): files
    /// smaller than `s_mb_stream_request` (16 blocks) are packed into a per-CPU chunk of this
    /// many blocks, apart from large files. 0 = off (every file at the stream goal), the
    /// default, which keeps the paper experiments' layout; ext4 uses 512.
    pub small_file_chunk_blocks: u64,
    /// The group where regular files' data starts. ext4 with flex_bg >= 4 groups
    /// (`ext4_inode_to_goal_block`, EXT4_FLEX_SIZE_DIR_ALLOC_SCHEME) starts regular files in
    /// the second group of the flex group and keeps the first for directories: 1. Default 0
    /// (the paper experiments' layout).
    pub first_data_group: u64,
    /// mkfs with discard first discards one block as a probe (mke2fs_discard_device); mkfs.xfs
    /// does not (one discard of the whole device in the XFS recording). Off by default (the
    /// paper experiments' setup), on in `ext4_defaults`.
    pub mkfs_discard_probe: bool,
    /// mke2fs's journal (`ext2fs_default_journal_size`, at the start of the middle group) and
    /// its zeroing of the device's last 16 blocks and of the used inode-table block. Off by
    /// default: the paper experiments keep trimlab's earlier layout (total/64 blocks within
    /// 1024..16384, right after group 0's inode table), which their bands were set on; on in
    /// `ext4_defaults`.
    pub mke2fs_layout: bool,
    /// btrfs' chunk layout instead of ext4's groups (`btrfs_defaults`, fs/btrfs.rs): data only
    /// in data block groups (mkfs.btrfs 6.2's 8 MiB one, then kernel chunks of 10 % of the
    /// device), size classes, FITRIM per block group (DUP metadata and system on both copies)
    /// and over the unallocated device space. The model's own inode, directory and journal
    /// blocks (its stand-in for btrfs' trees) sit in the first MiB, which btrfs never
    /// allocates or trims. Off by default.
    pub btrfs_layout: bool,
    /// XFS's deferred inode inactivation (`xfs_defaults`): unlinked files' extents are freed
    /// by a background worker, after the unlink's transaction. None (the default): unlink
    /// frees at once, as ext4 does.
    pub inodegc: Option<InodeGc>,
    /// Delayed allocation (fs/delalloc.rs): buffered writes reserve space and blocks are
    /// allocated at write-back for the whole dirty extent, so a file's placement does not
    /// depend on its write() sizes. Off by default (the paper experiments' allocation at
    /// write(), which ext4's `-o nodelalloc` also gives); on in `ext4_defaults`, and always on
    /// XFS and btrfs, which have no other mode. Not serialized: a config hash covers it only
    /// where `[host] delalloc` is set (scenario's `HostPlan`), so configs that do not set it
    /// keep their hashes.
    #[serde(skip_serializing)]
    pub delalloc: bool,
    /// Directory entries per directory block.
    pub dir_entries_per_block: u64,
    /// Largest extent (ext4: 32768 blocks).
    pub max_extent_blocks: u64,
    /// jbd2 commit interval (`commit=`, 5 s).
    pub commit_interval_ns: u64,
    /// Dirty page-cache bytes above which a writer writes back synchronously.
    pub dirty_limit_bytes: u64,
    pub host: HostCosts,
    pub policy: PolicyKind,
    /// The policies' keys that are set (each policy's file declares its own and their
    /// defaults); every policy's may be set, whichever is selected, and each reads its own.
    pub params: PolicyParams,
}

impl Default for FsConfig {
    fn default() -> Self {
        FsConfig {
            block_bytes: 4096,
            blocks_per_group: 32768,
            inode_ratio_bytes: 16384,
            inode_bytes: 256,
            journal_blocks: 0,
            lazy_itable_init: false,
            small_file_chunk_blocks: 0,
            first_data_group: 0,
            mkfs_discard_probe: false,
            mke2fs_layout: false,
            btrfs_layout: false,
            inodegc: None,
            delalloc: false,
            dir_entries_per_block: 128,
            max_extent_blocks: 32768,
            commit_interval_ns: 5_000_000_000,
            dirty_limit_bytes: 64 << 20,
            host: HostCosts::default(),
            policy: PolicyKind::NoDiscard,
            params: PolicyParams::default(),
        }
    }
}

impl FsConfig {
    /// What a current ext4 does (mke2fs 1.47 defaults, Linux 6.x): mke2fs's journal, inode
    /// ratio, reserved inodes and zeroing, the discard probe, lazy inode-table init, locality-group preallocation of 512
    /// blocks, regular files from the second group.
    pub fn ext4_defaults(mut self) -> Self {
        self.mke2fs_layout = true;
        self.inode_ratio_bytes = 0;
        self.mkfs_discard_probe = true;
        self.lazy_itable_init = true;
        self.small_file_chunk_blocks = 512;
        self.first_data_group = 1;
        self.delalloc = true;
        self.host.unlink_ns = UNLINK_NS_LINUX;
        self
    }

    /// What btrfs-progs 6.2 and Linux 6.18 do (the btrfs discard-pattern recording): btrfs'
    /// chunk layout, no discard probe at mkfs, a 30 s commit interval (BTRFS_DEFAULT_COMMIT_INTERVAL),
    /// and for `async` the free-space merging and 4 ms scheduler ticks (CONFIG_HZ = 250 on
    /// the recording's kernel).
    pub fn btrfs_defaults(mut self) -> Self {
        self.btrfs_layout = true;
        // The stand-in inode table's entry (layout.rs): small enough for 8192 inodes in the
        // reserved first MiB. btrfs' real inode items live in its fs tree (btrfs_tree.rs).
        self.inode_bytes = 32;
        self.mkfs_discard_probe = false;
        self.commit_interval_ns = 30_000_000_000;
        crate::policy::btrfs_async::as_in_linux_6_18(&mut self.params);
        self.delalloc = true;
        self.host.unlink_ns = UNLINK_NS_LINUX;
        self
    }

    /// What xfsprogs 6.1 and Linux 6.18 do (the XFS discard-pattern recording), on the
    /// ext4-like layout: groups of 65536 blocks for mkfs.xfs's four 256 MiB allocation groups
    /// on 1 GiB, no discard probe at mkfs (one discard of the whole device), a 30 s interval
    /// between log forces that no application asked for (`xfs_log_worker`, re-queued every
    /// `xfs_syncd_centisecs` = 3000; XFS has no 5 s commit timer), and deferred inode
    /// inactivation with 32-inode clusters and 4 ms ticks.
    pub fn xfs_defaults(mut self) -> Self {
        self.blocks_per_group = 65536;
        self.mkfs_discard_probe = false;
        self.commit_interval_ns = 30_000_000_000;
        self.inodegc = Some(InodeGc { kick_inodes: 32, tick_ns: 4_000_000, evict_page_ns: 800 });
        self.delalloc = true;
        self.host.unlink_ns = UNLINK_NS_LINUX;
        self
    }

    /// The defaults of a kernel and a layout. btrfs and XFS are modelled as Linux 6.18 runs
    /// them whatever `kernel` says: the ext4 behaviours `kernel` selects (mke2fs' journal, lazy
    /// inode tables) have no place in their layouts.
    pub fn defaults_for(kernel: Kernel, layout: Layout) -> FsConfig {
        match (layout, kernel) {
            (Layout::Ext4, Kernel::Paper) => FsConfig::default(),
            (Layout::Ext4, Kernel::Linux6_18) => {
                let mut fs = FsConfig::default().ext4_defaults();
                crate::policy::btrfs_async::as_in_linux_6_18(&mut fs.params);
                fs
            }
            (Layout::Btrfs, _) => FsConfig::default().btrfs_defaults(),
            (Layout::Xfs, _) => FsConfig::default().xfs_defaults(),
        }
    }

    pub fn with_policy(mut self, policy: PolicyKind) -> Self {
        self.policy = policy;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_names_parse_and_bad_ones_list_the_choices() {
        for spec in crate::policy::POLICIES {
            assert!(PolicyKind::parse(spec.name).is_ok(), "{}", spec.name);
        }
        assert_eq!(PolicyKind::parse("selective:10:70"), Ok(PolicyKind::selective(10, 70)));
        let e = PolicyKind::parse("trimmy").unwrap_err();
        assert!(e.contains("lazy-reuse") && e.contains("\"trimmy\""), "{e}");
        for p in PolicyKind::all_for_tests() {
            assert_eq!(PolicyKind::parse(&p.config_name()), Ok(p));
        }
        let e = PolicyKind::parse("selective:90:40").unwrap_err();
        assert!(e.contains("LOW <= HIGH"), "{e}");
    }
}
