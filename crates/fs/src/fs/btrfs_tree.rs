//! btrfs' tree nodes in the metadata block group: every transaction copies the nodes it changes
//! to new places (copy-on-write) and frees the old ones when it commits; the new copies come
//! from the metadata allocation cluster, the freed ones go back to the free-space tree, where
//! FITRIM finds them as holes below the cluster (issue 22: the first fstrim's metadata TRIMs).
//!
//! The kernel (Linux 6.18, fs/btrfs/):
//! * ctree.c `btrfs_cow_block` / `should_cow_block`: a node is copied once per transaction (a
//!   node already written in this transaction is changed in place); `btrfs_force_cow_block`
//!   allocates the copy (`btrfs_alloc_tree_block`) and frees the old one
//!   (`btrfs_free_tree_block`: pinned, returned to the free space by `unpin_extent_range`
//!   when the transaction commits, extent-tree.c).
//! * Which trees a transaction changes: the fs tree (inode, inode ref, dir items, file extent
//!   items: inode.c), the csum tree (file-item.c `btrfs_csum_file_blocks`, one 4-byte crc32c
//!   per 4 KiB block, deleted with the extent), the extent tree (an item per data extent, per
//!   tree node (skinny metadata) and per block group), the free-space tree (per block group),
//!   the dev and chunk trees when a chunk is added (volumes.c), and the root tree, whose root
//!   items point at every other tree's root (transaction.c `commit_cowonly_roots`,
//!   `commit_fs_roots`). The dev tree also gets its dev-stats item at the first commit after
//!   mkfs (volumes.c `btrfs_device_init_dev_stats` finds none and marks the counters dirty;
//!   `btrfs_run_dev_stats` writes it). The uuid and data-reloc trees are not changed.
//! * The model builds each tree's items from the file system's state at each commit and
//!   compares them with the last commit's: a leaf whose items changed is copied, a leaf grown
//!   past BTRFS_LEAF_DATA_SIZE splits in two (ctree.c `split_leaf`), an emptied leaf is freed
//!   (`btrfs_del_leaf`), and a tree of more than one leaf has internal nodes, all copied when
//!   any leaf is (exact for up to 493 leaves: one level of 16 KiB nodes of 33-byte pointers).
//!   Not modelled: pushing items into neighbour leaves (`push_leaf_left/right`), merging
//!   leaves below a third full, free-space-tree bitmaps.
//! * free-space-cache.c `setup_cluster_no_bitmap`: the first metadata allocation after mount
//!   sets up fs_info->meta_alloc_cluster from the group's first free extent (the hint is the
//!   old node's address rounded down to 1 GiB: the group start here; for metadata every free
//!   extent of at least a sector joins), taking every free extent from there to the group's end
//!   out of the free-space tree; `btrfs_alloc_from_cluster` hands out nodes from the cluster's
//!   first extent that holds one, moving forward. Freed nodes return to the free-space tree,
//!   not to the cluster, so FITRIM (`btrfs_trim_block_group` walks the free-space tree only)
//!   trims them and not the cluster. An exhausted cluster is set up again the same way.

use super::btrfs_chunk::ChunkKind;
use super::*;

/// BTRFS_LEAF_DATA_SIZE for 16 KiB nodes: the node less its 101-byte header.
const LEAF_DATA_BYTES: u64 = 16384 - 101;
/// struct btrfs_item: the header every leaf item has besides its data.
const ITEM_HEADER_BYTES: u64 = 25;
/// Key pointers of 33 bytes in a 16 KiB internal node (BTRFS_NODEPTRS_PER_BLOCK).
const NODE_PTRS: usize = ((16384 - 101) / 33) as usize;
/// crc32c per 4 KiB data sector (btrfs_csum_size).
const CSUM_BYTES_PER_SECTOR: u64 = 4;
/// The fs-tree bytes of an inode and its entry, less three copies of its name: the inode
/// item (160), inode ref (10 + name), dir item and dir index (30 + name each), each with a
/// 25-byte item header (ctree.h; `btrfs_fs_items` below counts the same).
const INODE_ITEMS_BYTES: u64 = 160 + 10 + 2 * 30 + 4 * ITEM_HEADER_BYTES;
/// Name bytes assumed for the inodes already made (the model keeps no per-inode name length
/// for this check): an assumption, near Linux 6.18's own use measured here, 34.14 MiB of
/// metadata (`btrfs filesystem df`) for 10^5 directories `d1`..`d100000` on 256 MiB, 358
/// bytes each where this count gives 330 + 3 x 6.
const NAME_BYTES_ASSUMED: u64 = 8;

/// The trees whose nodes live in the metadata (or, for the chunk tree, system) block group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum TreeId {
    Extent,
    Fs,
    Csum,
    DataReloc,
    Uuid,
    Dev,
    FreeSpace,
    Root,
    Chunk,
}

/// mkfs.btrfs 6.2's tree nodes on the 1 GiB device, read with `btrfs inspect-internal
/// dump-tree -t extent` here: KiB from the metadata group's start (the chunk tree's from the
/// system group's).
pub(super) const MKFS_NODES: [(TreeId, u64); 9] = [
    (TreeId::Extent, 0),
    (TreeId::Fs, 16),
    (TreeId::Csum, 80),
    (TreeId::DataReloc, 112),
    (TreeId::Uuid, 128),
    (TreeId::Dev, 144),
    (TreeId::FreeSpace, 160),
    (TreeId::Root, 176),
    (TreeId::Chunk, 16),
];

/// One leaf: its items (key -> bytes with headers) and its node (copy 0's first block).
#[derive(Clone, Debug)]
struct Leaf {
    items: BTreeMap<u64, u64>,
    node: u64,
}

impl Leaf {
    fn bytes(&self) -> u64 {
        self.items.values().sum()
    }
}

/// A tree: leaves by first key, and internal nodes when there is more than one leaf.
#[derive(Clone, Debug)]
pub(super) struct Tree {
    id: TreeId,
    leaves: BTreeMap<u64, Leaf>,
    internal: Vec<u64>,
}

/// Items of one tree as the commit wants them: key -> bytes (headers included).
type Items = BTreeMap<u64, u64>;

impl Tree {
    fn new(id: TreeId, node: u64) -> Tree {
        let leaf = Leaf { items: BTreeMap::new(), node };
        Tree { id, leaves: BTreeMap::from([(0, leaf)]), internal: Vec::new() }
    }

    /// Every node of the tree (copy 0's first block).
    pub(super) fn nodes(&self) -> impl Iterator<Item = u64> + '_ {
        self.leaves.values().map(|l| l.node).filter(|&n| n != u64::MAX).chain(self.internal.iter().copied())
    }

    /// Moves the items of the leaf at `first` into the leaf before it (the first leaf keeps
    /// its own: it always has a node).
    fn fold_into_previous(&mut self, first: u64) {
        let Some(prev) = self.leaves.range(..first).next_back().map(|(&k, _)| k) else { return };
        if let Some(leaf) = self.leaves.remove(&first) {
            if let Some(p) = self.leaves.get_mut(&prev) {
                p.items.extend(leaf.items);
            }
        }
    }

    /// Brings the leaves to `want`; returns the first keys of the leaves to copy (changed or
    /// new: node `u64::MAX` until allocated) and the nodes of deleted leaves.
    fn apply(&mut self, want: &Items) -> (Vec<u64>, Vec<u64>) {
        let mut dirty = BTreeSet::new();
        let mut have: Items = BTreeMap::new();
        for l in self.leaves.values() {
            have.extend(l.items.iter().map(|(&k, &b)| (k, b)));
        }
        let changed: BTreeSet<u64> = have
            .iter()
            .filter(|(k, b)| want.get(k) != Some(b))
            .map(|(&k, _)| k)
            .chain(want.iter().filter(|(k, b)| have.get(k) != Some(b)).map(|(&k, _)| k))
            .collect();
        for k in changed {
            let first = self.leaf_of(k);
            let leaf =
                self.leaves.get_mut(&first).unwrap_or_else(|| unreachable!("tree {:?}: no leaf", self.id));
            match want.get(&k) {
                Some(&b) => leaf.items.insert(k, b),
                None => leaf.items.remove(&k),
            };
            dirty.insert(first);
        }
        let mut freed = Vec::new();
        let firsts: Vec<u64> = dirty.iter().copied().collect();
        for first in firsts {
            dirty.extend(self.split(first));
            if self.leaves.len() > 1 && self.leaves[&first].items.is_empty() {
                let l = self.leaves.remove(&first).unwrap_or_else(|| unreachable!());
                dirty.remove(&first);
                if l.node != u64::MAX {
                    freed.push(l.node);
                }
            }
        }
        // Keep the leftmost leaf's first key at 0 so that every key has a leaf.
        if let Some((&first, _)) = self.leaves.iter().next() {
            if first != 0 {
                let l = self.leaves.remove(&first).unwrap_or_else(|| unreachable!());
                self.leaves.insert(0, l);
                if dirty.remove(&first) {
                    dirty.insert(0);
                }
            }
        }
        (dirty.into_iter().filter(|f| self.leaves.contains_key(f)).collect(), freed)
    }

    fn leaf_of(&self, key: u64) -> u64 {
        self.leaves.range(..=key).next_back().map_or(0, |(&f, _)| f)
    }

    /// split_leaf: a leaf over BTRFS_LEAF_DATA_SIZE gives its upper half (by bytes) to a new
    /// leaf, again while either half is over. Returns the new leaves' first keys.
    fn split(&mut self, first: u64) -> Vec<u64> {
        let mut new = Vec::new();
        let mut todo = vec![first];
        while let Some(f) = todo.pop() {
            let leaf = &self.leaves[&f];
            let total = leaf.bytes();
            if total <= LEAF_DATA_BYTES || leaf.items.len() < 2 {
                continue;
            }
            let mut acc = 0;
            let mid = leaf
                .items
                .iter()
                .skip(1)
                .find(|(_, &b)| {
                    acc += b;
                    acc * 2 >= total
                })
                .map(|(&k, _)| k);
            let Some(mid) = mid.or_else(|| leaf.items.keys().next_back().copied()) else { continue };
            let upper = self.leaves.get_mut(&f).map(|l| l.items.split_off(&mid)).unwrap_or_default();
            self.leaves.insert(mid, Leaf { items: upper, node: u64::MAX });
            new.push(mid);
            todo.extend([f, mid]);
        }
        new
    }

    /// Internal nodes a tree of this many leaves has.
    fn internal_wanted(&self) -> usize {
        let mut n = self.leaves.len();
        let mut total = 0;
        while n > 1 {
            n = n.div_ceil(NODE_PTRS);
            total += n;
        }
        total
    }
}

/// The trees and the metadata cluster.
#[derive(Clone, Debug)]
pub(super) struct Trees {
    pub(super) trees: Vec<Tree>,
    /// Free runs of the metadata group (copy 0) the cluster still holds, in order.
    pub(super) cluster: Vec<Run>,
    /// Old nodes freed by the committing transaction: used until it commits.
    pub(super) pinned: Vec<u64>,
    /// The dev-stats item exists (written at the first commit after mkfs).
    dev_stats: bool,
}

impl Trees {
    pub(super) fn mkfs(system_start: u64, meta_start: u64, bs: u64) -> Trees {
        let trees = MKFS_NODES
            .iter()
            .map(|&(id, kib)| {
                let base = if id == TreeId::Chunk { system_start } else { meta_start };
                Tree::new(id, base + kib * 1024 / bs)
            })
            .collect();
        Trees { trees, cluster: Vec::new(), pinned: Vec::new(), dev_stats: false }
    }

    /// Every live or pinned node, copy 0 (the caller adds the DUP copy).
    pub(super) fn all_nodes(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.trees.iter().flat_map(|t| t.nodes()).collect();
        v.extend(self.pinned.iter().copied());
        v
    }
}

impl<D: BlockDevice> FileSystem<D> {
    /// The commit's copy-on-write: every tree's items from the state now, the changed leaves
    /// and their internal nodes copied into the cluster, the old nodes pinned until the commit
    /// ends (`btrfs_unpin_tree_nodes`).
    pub(super) fn btrfs_cow_trees(&mut self) {
        if self.layout_fs.btrfs().is_none() {
            return;
        }
        // mkfs wrote no dev-stats item; the first commit after mount does.
        if let Some(b) = self.layout_fs.btrfs_mut() {
            b.trees.dev_stats = true;
        }
        let mut any = false;
        for id in [TreeId::Fs, TreeId::Csum, TreeId::Dev, TreeId::Chunk, TreeId::Extent, TreeId::FreeSpace] {
            let want = self.btrfs_items(id);
            any |= self.btrfs_cow_tree(id, &want, false);
        }
        if any {
            self.btrfs_cow_tree(TreeId::Root, &BTreeMap::new(), true);
        }
    }

    /// Applies `want` to tree `id` and copies what changed (everything when `force`: the root
    /// tree's root items change whenever another root moved). Returns whether anything was.
    fn btrfs_cow_tree(&mut self, id: TreeId, want: &Items, force: bool) -> bool {
        let Some(b) = self.layout_fs.btrfs_mut() else { return false };
        let Some(ti) = b.trees.trees.iter().position(|t| t.id == id) else { return false };
        let mut tree = b.trees.trees[ti].clone();
        let (mut dirty, freed) =
            if force { (tree.leaves.keys().copied().collect(), Vec::new()) } else { tree.apply(want) };
        dirty.retain(|f| force || tree.leaves.contains_key(f));
        if dirty.is_empty() && freed.is_empty() {
            return false;
        }
        let mut pinned = freed;
        for f in dirty {
            let old = tree.leaves[&f].node;
            let node = self.btrfs_alloc_node(id);
            if let Some(l) = tree.leaves.get_mut(&f) {
                l.node = node.unwrap_or(old);
            }
            if old != u64::MAX && node.is_some() {
                pinned.push(old);
            }
        }
        let want_internal = tree.internal_wanted();
        let old_internal = std::mem::take(&mut tree.internal);
        pinned.extend(old_internal);
        for _ in 0..want_internal {
            tree.internal.extend(self.btrfs_alloc_node(id));
        }
        let leaves_unplaced: Vec<u64> =
            tree.leaves.iter().filter(|(_, l)| l.node == u64::MAX).map(|(&f, _)| f).collect();
        for f in leaves_unplaced {
            match self.btrfs_alloc_node(id) {
                Some(node) => {
                    if let Some(l) = tree.leaves.get_mut(&f) {
                        l.node = node;
                    }
                }
                // The metadata group is full. btrfs would allocate another metadata chunk
                // (btrfs_chunk_alloc), which the model does not: the new leaf's items stay in
                // its left neighbour instead (an overfull leaf, no new node).
                None => tree.fold_into_previous(f),
            }
        }
        if let Some(b) = self.layout_fs.btrfs_mut() {
            b.trees.trees[ti] = tree;
            b.trees.pinned.extend(pinned);
        }
        true
    }

    /// The items tree `id` should hold now (key -> bytes, item headers included).
    fn btrfs_items(&self, id: TreeId) -> Items {
        let Some(b) = self.layout_fs.btrfs() else { return BTreeMap::new() };
        let bs = self.config.block_bytes;
        let mut items = BTreeMap::new();
        let mut add = |k: u64, bytes: u64| *items.entry(k).or_insert(0) += bytes + ITEM_HEADER_BYTES;
        let extents = || self.inodes.values().flat_map(|i| i.extents.iter());
        match id {
            TreeId::Fs => return self.btrfs_fs_items(),
            TreeId::Csum => {
                // One csum item per extent, split where a leaf would overflow.
                let per_item = (LEAF_DATA_BYTES - 2 * ITEM_HEADER_BYTES) / CSUM_BYTES_PER_SECTOR;
                let sectors_per_block = (bs / 4096).max(1);
                for e in extents() {
                    let sectors = e.len * sectors_per_block;
                    let mut at = 0;
                    while at < sectors {
                        let n = per_item.min(sectors - at);
                        add(e.physical + at / sectors_per_block, n * CSUM_BYTES_PER_SECTOR);
                        at += n;
                    }
                }
            }
            TreeId::Extent => {
                for e in extents() {
                    add(e.physical, 53);
                }
                for c in &b.chunks {
                    add(c.stripes[0], 24);
                }
                for n in b.trees.trees.iter().flat_map(|t| t.nodes()) {
                    add(n, 33);
                }
            }
            TreeId::FreeSpace => {
                // FREE_SPACE_INFO and one FREE_SPACE_EXTENT per free extent of each group.
                for c in b.chunks.iter().filter(|c| c.kind != ChunkKind::System) {
                    let r = Run::new(c.stripes[0], c.len);
                    add(c.stripes[0], 8);
                    for f in self.bitmap.avail_runs(r.start, r.end(), 1) {
                        add(f.start, 0);
                    }
                }
            }
            TreeId::Dev => {
                for c in b.chunks.iter() {
                    for &s in &c.stripes {
                        add(s, 48);
                    }
                }
                if b.trees.dev_stats {
                    add(u64::MAX, 40);
                }
            }
            TreeId::Chunk => {
                for c in &b.chunks {
                    add(c.stripes[0], 48 + 32 * c.stripes.len() as u64);
                }
            }
            TreeId::Root | TreeId::Uuid | TreeId::DataReloc => {}
        }
        items
    }

    /// The fs tree's items: keys sort as btrfs' (objectid, type).
    fn btrfs_fs_items(&self) -> Items {
        let mut items = BTreeMap::new();
        let mut add = |k: u64, bytes: u64| *items.entry(k).or_insert(0) += bytes + ITEM_HEADER_BYTES;
        // Keys sort as btrfs' (objectid, type): an inode's items together, a
        // directory's entries after its own items.
        let key = |ino: Ino, sub: u64| (u64::from(ino) << 32) | sub;
        // inode item 160, inode ref 10 + name, file extent items 53 each; the entry's
        // dir item and dir index (30 + name each) under its parent.
        // A directory's own items are the same; its entry in its parent is not counted.
        // (The root's key is 0, as its files' parent.)
        for (parent, entries) in self.all_entries() {
            for (name, c) in entries.iter() {
                let (ino, base) = (c.ino, name.len() as u64);
                add(key(ino, 0), 160);
                add(key(ino, 1), 10 + base);
                if c.is_dir {
                    continue;
                }
                add(key(parent, (1 << 31) | u64::from(ino)), 2 * (30 + base));
                let n = self.inodes.get(ino).map_or(0, |i| i.extents.len() as u64);
                if n > 0 {
                    add(key(ino, 2), 53 * n);
                }
            }
        }
        items
    }

    /// btrfs_alloc_tree_block: a node from the metadata cluster (for the chunk tree, the
    /// system group's largest free extent), taken on both copies.
    fn btrfs_alloc_node(&mut self, id: TreeId) -> Option<u64> {
        let node = 16 * 1024 / self.config.block_bytes;
        let kind = if id == TreeId::Chunk { ChunkKind::System } else { ChunkKind::Metadata };
        let b = self.layout_fs.btrfs()?;
        let c = b.chunks.iter().find(|c| c.kind == kind)?.clone();
        let both_free = |fs: &Self, s: u64| {
            c.stripes.iter().all(|&st| (0..node).all(|k| fs.bitmap.is_avail(st + s - c.stripes[0] + k)))
        };
        let at = if kind == ChunkKind::System {
            // No cluster for system chunks: btrfs_find_space_for_alloc from the group's start
            // uses the bytes index, the largest free extent (the lowest among equals), from
            // its start.
            let r = Run::new(c.stripes[0], c.len);
            let mut free = self.bitmap.avail_runs(r.start, r.end(), node);
            free.retain(|f| both_free(self, f.start));
            free.iter().max_by_key(|f| (f.len, std::cmp::Reverse(f.start))).map(|f| f.start)
        } else {
            self.btrfs_cluster_take(&c, node)
        }?;
        for &st in &c.stripes {
            self.bitmap.take(st + at - c.stripes[0], node);
        }
        Some(at)
    }

    /// btrfs_alloc_from_cluster, with setup_cluster_no_bitmap when the cluster is empty or
    /// holds no node.
    fn btrfs_cluster_take(&mut self, c: &btrfs_chunk::Chunk, node: u64) -> Option<u64> {
        for attempt in 0..2 {
            let b = self.layout_fs.btrfs_mut()?;
            if attempt == 1 || !b.meta_cluster {
                b.meta_cluster = true;
                let r = Run::new(c.stripes[0], c.len);
                let dup = c.stripes.get(1).map_or(0, |&s| s - c.stripes[0]);
                let bm = &self.bitmap;
                b.trees.cluster = bm
                    .avail_runs(r.start, r.end(), 1)
                    .into_iter()
                    .flat_map(|f| bm.avail_runs(f.start + dup, f.end() + dup, 1))
                    .map(|f| Run::new(f.start - dup, f.len))
                    .collect();
            }
            let b = self.layout_fs.btrfs_mut()?;
            while let Some(first) = b.trees.cluster.first().copied() {
                if first.len >= node {
                    b.trees.cluster[0] = Run::new(first.start + node, first.len - node);
                    if b.trees.cluster[0].len == 0 {
                        b.trees.cluster.remove(0);
                    }
                    return Some(first.start);
                }
                b.trees.cluster.remove(0);
            }
        }
        None
    }

    /// After mkfs: the mount time (the cleaner's clock) and mkfs.btrfs' items, each tree's one
    /// leaf as the first commit will find it.
    pub(super) fn btrfs_mounted(&mut self) {
        let now = self.now;
        if let Some(b) = self.layout_fs.btrfs_mut() {
            b.mounted_at = now;
        }
        for id in [TreeId::Fs, TreeId::Csum, TreeId::Dev, TreeId::Chunk, TreeId::Extent, TreeId::FreeSpace] {
            let want = self.btrfs_items(id);
            let Some(b) = self.layout_fs.btrfs_mut() else { return };
            if let Some(t) = b.trees.trees.iter_mut().find(|t| t.id == id) {
                if let Some(l) = t.leaves.get_mut(&0) {
                    l.items = want;
                }
            }
        }
    }

    /// Whether the fs tree has room for one more inode named `name`: btrfs has no inode table,
    /// its inodes and directory entries are fs-tree items, and a new one fails with ENOSPC
    /// only when the metadata space cannot take its items (btrfs_reserve_metadata_bytes ->
    /// btrfs_chunk_alloc when the metadata block group is full, extent-tree.c / space-info.c).
    /// The room: the metadata block group, plus the unallocated device space a new DUP
    /// metadata chunk could take (half of it: two copies). Not modelled: the global block
    /// reserve and the other trees' share; and nodes are placed in the first metadata chunk
    /// only (`btrfs_cow_tree`: past it, leaves stay overfull rather than a chunk being added).
    pub(super) fn btrfs_room_for_inode(&self, name: &str) -> Result<(), FsError> {
        let Some(b) = self.layout_fs.btrfs() else { return Ok(()) };
        let bs = self.config.block_bytes;
        let meta: u64 = b.chunks.iter().filter(|c| c.kind == ChunkKind::Metadata).map(|c| c.len).sum();
        let unallocated: u64 = b.unallocated().iter().map(|r| r.len).sum();
        let room_bytes = (meta + unallocated / 2) * bs;
        let per_inode = INODE_ITEMS_BYTES + 3 * NAME_BYTES_ASSUMED;
        let need = self.inode_groups.live() * per_inode + INODE_ITEMS_BYTES + 3 * name.len() as u64;
        match need <= room_bytes {
            true => Ok(()),
            false => Err(FsError::NoSpace),
        }
    }

    /// unpin_extent_range at the end of the commit: the old nodes are free and, in the
    /// metadata group, back in the free-space tree (never queued for async discard:
    /// btrfs_discard_queue_work takes data-only block groups).
    pub(super) fn btrfs_unpin_tree_nodes(&mut self) {
        let node = 16 * 1024 / self.config.block_bytes;
        let Some(b) = self.layout_fs.btrfs_mut() else { return };
        let pinned = std::mem::take(&mut b.trees.pinned);
        let copies: Vec<u64> = pinned
            .iter()
            .flat_map(|&n| match b.chunk_of(n) {
                Some((ci, _)) => {
                    b.chunks[ci].stripes.iter().map(|&s| s + n - b.chunks[ci].stripes[0]).collect()
                }
                None => vec![n],
            })
            .collect();
        for s in copies {
            self.bitmap.free(s, node);
            self.bitmap.release(s, node);
        }
    }
}
