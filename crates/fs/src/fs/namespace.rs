//! The directory tree: path names, directories with their own entry slots and blocks, and
//! the name operations (create, unlink, mkdir, rmdir, rename) with their metadata writes.
//!
//! Paths are relative to the mount point ("d0/f1"; a leading '/' means the mount point too,
//! "" is the root). Files live in `FileSystem::names`, directories other than the root in
//! `FileSystem::dirs`, both keyed by full path, so a subtree is one key range ("d0/").
//!
//! Each entry takes a slot in its parent; the slot's block is the metadata the entry dirties.
//! The root's blocks are static (`layout.dir_start`, as before). Other directories:
//! * ext4: `ext4_mkdir` -> `ext4_init_new_dir` allocates block 0 for "." and ".." at once;
//!   a full directory grows by a block (`ext4_append`). The blocks are metadata: journaled,
//!   written home at checkpoint, freed by rmdir (so they reach the TRIM policy), revoked from
//!   the journal when freed.
//! * XFS: a new directory is short-form, its entries inside the inode's literal area
//!   (`xfs_dir2_sf_*`), and gets a directory block only when they outgrow it
//!   (`xfs_dir2_sf_addname` -> `xfs_dir2_sf_to_block`). It does not go back to short form
//!   when entries are removed (the kernel does, `xfs_dir2_block_to_sf`, when what is left
//!   fits: not modelled); rmdir's blocks are freed by inodegc, as a file's.
//! * btrfs: directory items are in the metadata trees: no blocks of their own; an entry
//!   dirties one of the model's static directory blocks (its stand-in for tree leaves).

use super::inode_alloc::Flavor;
use super::*;
use std::borrow::Cow;

/// The inode's literal area of mkfs.xfs 6.1's 512-byte v5 inodes (512 - 176 bytes of
/// `xfs_dinode` core): a short-form directory must fit in it.
const XFS_INODE_LITERAL_BYTES: u64 = 336;
/// `xfs_dir2_sf_hdr` with 4-byte inode numbers: count, i8count, parent.
const XFS_SF_HEADER_BYTES: u64 = 6;
/// Longest name component (NAME_MAX).
const NAME_MAX: usize = 255;

/// The root directory's entry slots: freed ones, and the next never used.
#[derive(Clone, Debug, Default)]
pub(super) struct RootSlots {
    free: BTreeSet<u64>,
    next: u64,
}

/// A directory other than the root.
#[derive(Clone, Debug)]
pub(super) struct Dir {
    pub(super) ino: Ino,
    /// Its entry's slot in its parent.
    pub(super) slot: u64,
    /// Its directory blocks (logical block -> physical), kept as a file's extents.
    pub(super) blocks: ExtentMap,
    free_slots: BTreeSet<u64>,
    next_slot: u64,
    /// XFS's short-form size (header and entries, `xfs_dir2_sf_entsize`).
    sf_bytes: u64,
    /// Where the last inode created in it went (`i_last_alloc_group`).
    pub(super) last_alloc_group: Option<u64>,
}

impl Dir {
    fn new(ino: Ino, slot: u64, max_extent_blocks: u64) -> Dir {
        Dir {
            ino,
            slot,
            blocks: ExtentMap::new(max_extent_blocks),
            free_slots: BTreeSet::new(),
            next_slot: 0,
            sf_bytes: XFS_SF_HEADER_BYTES,
            last_alloc_group: None,
        }
    }
}

/// `xfs_dir2_sf_entsize` with file types and 4-byte inode numbers: namelen, offset, the
/// name, ftype, inumber.
fn xfs_sf_entry_bytes(name: &str) -> u64 {
    3 + name.len() as u64 + 1 + 4
}

/// The canonical form of `path`: no leading, trailing or repeated '/'. "." and ".." are
/// refused (the model keeps no cwd; a script spells paths out), as are over-long names.
pub(super) fn normalize(path: &str) -> Result<Cow<'_, str>, FsError> {
    let simple = !path.starts_with('/') && !path.ends_with('/') && !path.contains("//");
    let bad = |c: &str| c == "." || c == ".." || c.len() > NAME_MAX;
    if simple && !path.split('/').any(bad) {
        return Ok(Cow::Borrowed(path));
    }
    let parts: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    if let Some(c) = parts.iter().find(|c| bad(c)) {
        return Err(FsError::Invalid(match c.len() > NAME_MAX {
            true => format!("path {path:?}: a name is longer than {NAME_MAX} bytes"),
            false => format!("path {path:?}: \".\" and \"..\" are not accepted; write the path out"),
        }));
    }
    Ok(Cow::Owned(parts.join("/")))
}

/// (parent, name) of a normalized path; the root's children have parent "".
pub(super) fn split_parent(path: &str) -> (&str, &str) {
    path.rsplit_once('/').unwrap_or(("", path))
}

/// Whether `path` is `dir` or below it.
fn is_within(path: &str, dir: &str) -> bool {
    path == dir || (path.starts_with(dir) && path.as_bytes().get(dir.len()) == Some(&b'/'))
}

/// The keys of `map` strictly below directory `dir` (all keys for the root).
fn below<'a, V>(map: &'a BTreeMap<String, V>, dir: &str) -> impl Iterator<Item = (&'a String, &'a V)> + 'a {
    let prefix = if dir.is_empty() { String::new() } else { format!("{dir}/") };
    map.range(prefix.clone()..).take_while(move |(k, _)| k.starts_with(&prefix))
}

/// The keys of `map` directly inside directory `dir`, in byte order: each subdirectory's
/// subtree is passed over with one range jump, so listing a directory costs its own entries,
/// not everything below it (a script's `d*/f0` lists the root once per word).
fn directly_below<'a, V>(map: &'a BTreeMap<String, V>, dir: &str) -> Vec<(&'a String, &'a V)> {
    let prefix = if dir.is_empty() { String::new() } else { format!("{dir}/") };
    let mut out = Vec::new();
    let mut from = prefix.clone();
    'scan: loop {
        for (k, v) in map.range(from.clone()..) {
            if !k.starts_with(&prefix) {
                break 'scan;
            }
            match k[prefix.len()..].find('/') {
                None => out.push((k, v)),
                Some(i) => {
                    // '0' follows '/' in byte order: the first key past every `sub/...`.
                    from = format!("{}0", &k[..prefix.len() + i]);
                    continue 'scan;
                }
            }
        }
        break;
    }
    out
}

impl<D: BlockDevice> FileSystem<D> {
    /// Ok if `dir` ("" = root) is an existing directory; else which of NotFound /
    /// NotADirectory names it.
    fn require_dir(&self, dir: &str) -> Result<(), FsError> {
        if dir.is_empty() || self.dirs.contains_key(dir) {
            Ok(())
        } else if self.names.contains_key(dir) {
            Err(FsError::NotADirectory(dir.to_string()))
        } else {
            Err(FsError::NotFound(dir.to_string()))
        }
    }

    /// For a new entry: the parent exists and the path does not.
    fn require_new(&self, path: &str, parent: &str) -> Result<(), FsError> {
        self.require_dir(parent)?;
        if path.is_empty() || self.names.contains_key(path) || self.dirs.contains_key(path) {
            return Err(FsError::Exists(if path.is_empty() { "/".to_string() } else { path.to_string() }));
        }
        Ok(())
    }

    fn has_children(&self, dir: &str) -> bool {
        below(&self.names, dir).next().is_some() || below(&self.dirs, dir).next().is_some()
    }

    /// Whether `path` exists and is a directory ("" is the root).
    pub fn is_dir(&self, path: &str) -> bool {
        normalize(path).is_ok_and(|p| p.is_empty() || self.dirs.contains_key(p.as_ref()))
    }

    /// Every file and directory, by full path in byte order: (path, ino, is_dir).
    pub fn entries(&self) -> impl Iterator<Item = (&str, Ino, bool)> {
        let mut files = self.names.iter().map(|(k, &i)| (k.as_str(), i, false)).peekable();
        let mut dirs = self.dirs.iter().map(|(k, d)| (k.as_str(), d.ino, true)).peekable();
        std::iter::from_fn(move || match (files.peek(), dirs.peek()) {
            (Some(f), Some(d)) if f.0 < d.0 => files.next(),
            (Some(_), Some(_)) | (None, Some(_)) => dirs.next(),
            (Some(_), None) => files.next(),
            (None, None) => None,
        })
    }

    /// The entries directly inside directory `dir` ("" = root), by name: (name, ino, is_dir).
    pub fn children(&self, dir: &str) -> Result<Vec<(String, Ino, bool)>, FsError> {
        let dir = normalize(dir)?;
        self.require_dir(&dir)?;
        let skip = if dir.is_empty() { 0 } else { dir.len() + 1 };
        let mut out: Vec<(String, Ino, bool)> = directly_below(&self.names, &dir)
            .into_iter()
            .map(|(k, &i)| (k[skip..].to_string(), i, false))
            .chain(
                directly_below(&self.dirs, &dir)
                    .into_iter()
                    .map(|(k, d)| (k[skip..].to_string(), d.ino, true)),
            )
            .collect();
        out.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }
}

impl<D: BlockDevice> FileSystem<D> {
    /// The entries directly inside `dir` in the order readdir(3) returns them, which is the
    /// order `rm -r` (coreutils' fts, below 10000 entries) unlinks them in: ext4 walks an
    /// indexed directory in name-hash order (ext4_dx_readdir; a one-block directory counts as
    /// indexed, is_dx_dir), with the per-mkfs hash seed (`set_hash_seed`); XFS (short-form and
    /// block directories: xfs_dir2_sf_getdents, xfs_dir2_block_getdents) and btrfs (the
    /// DIR_INDEX items, btrfs_real_readdir) return entries in the order they were added, here
    /// their slots in the directory.
    pub fn readdir(&self, dir: &str) -> Result<Vec<(String, Ino, bool)>, FsError> {
        let mut entries = self.children(dir)?;
        if self.btrfs.is_none() && self.config.inodegc.is_none() {
            let seed = self.inode_groups.hash_seed;
            entries.sort_by_cached_key(|e| super::inode_alloc::dir_name_hash(seed, &e.0));
        } else {
            let prefix = if dir.is_empty() { String::new() } else { format!("{}/", dir.trim_matches('/')) };
            let slot = |e: &(String, Ino, bool)| match e.2 {
                true => self.dirs.get(&format!("{prefix}{}", e.0)).map_or(u64::MAX, |d| d.slot),
                false => self.inodes.get(&e.1).map_or(u64::MAX, |i| i.dir_slot),
            };
            entries.sort_by_cached_key(slot);
        }
        Ok(entries)
    }
}

// ----- entry slots and directory blocks -----

impl<D: BlockDevice> FileSystem<D> {
    /// Adds entry `name` to directory `parent`: takes a slot, grows the directory if the
    /// slot's block is not there yet, dirties the block. Nothing changes on an error.
    fn add_entry(&mut self, parent: &str, name: &str) -> Result<u64, FsError> {
        let epb = self.config.dir_entries_per_block;
        let Some(dir) = self.dirs.get_mut(parent) else {
            let root = &mut self.root_slots;
            let slot = match root.free.pop_first() {
                Some(s) => s,
                None if root.next < self.layout.dir_blocks * epb => {
                    root.next += 1;
                    root.next - 1
                }
                None => return Err(FsError::NoInodes),
            };
            self.dirty_meta(self.layout.dir_start + slot / epb);
            return Ok(slot);
        };
        let slot = dir.free_slots.pop_first().unwrap_or_else(|| {
            dir.next_slot += 1;
            dir.next_slot - 1
        });
        dir.sf_bytes += xfs_sf_entry_bytes(name);
        match self.entry_block(parent, slot, true) {
            Ok(b) => {
                self.dirty_meta(b);
                Ok(slot)
            }
            Err(e) => {
                let dir = self.dirs.get_mut(parent).unwrap_or_else(|| unreachable!());
                dir.free_slots.insert(slot);
                dir.sf_bytes -= xfs_sf_entry_bytes(name);
                Err(e)
            }
        }
    }

    /// Removes entry `name` at `slot` from `parent`, dirtying the block that held it.
    fn remove_entry(&mut self, parent: &str, slot: u64, name: &str) {
        let epb = self.config.dir_entries_per_block;
        let Some(dir) = self.dirs.get_mut(parent) else {
            self.root_slots.free.insert(slot);
            self.dirty_meta(self.layout.dir_start + slot / epb);
            return;
        };
        dir.free_slots.insert(slot);
        dir.sf_bytes -= xfs_sf_entry_bytes(name);
        let block = self.entry_block(parent, slot, false).unwrap_or_else(|e| unreachable!("fs: {e}"));
        self.dirty_meta(block);
    }

    /// The metadata block holding entry `slot` of directory `path`; with `grow`, allocates the
    /// directory block it needs (never without: an entry's block exists, or it sits in the
    /// inode).
    fn entry_block(&mut self, path: &str, slot: u64, grow: bool) -> Result<u64, FsError> {
        let epb = self.config.dir_entries_per_block;
        let (bs, ib) = (self.config.block_bytes, self.config.inode_bytes);
        let dir = &self.dirs[path];
        let inode_block = self.layout.inode_block(dir.ino, bs, ib);
        match self.flavor() {
            Flavor::Btrfs => {
                return Ok(self.layout.dir_start + (dir.ino as u64 + slot / epb) % self.layout.dir_blocks)
            }
            Flavor::Xfs if dir.blocks.is_empty() && dir.sf_bytes <= XFS_INODE_LITERAL_BYTES => {
                return Ok(inode_block)
            }
            _ => {}
        }
        let logical = slot / epb;
        match dir.blocks.lookup(logical) {
            Some(p) => Ok(p),
            None if grow => self.grow_dir(path, logical),
            None => Ok(inode_block),
        }
    }

    /// Allocates directory block `logical` of `path` (`ext4_append`, `xfs_dir2_grow_inode`).
    /// Directory blocks are not data: no locality group, no stream goal (ext4_mb_group_or_file
    /// returns early without EXT4_MB_HINT_DATA), so the goal is the previous block's
    /// successor, else the inode's: ext4_inode_to_goal_block, the first block of the inode's
    /// group (of its flex group's first group with flex_bg >= 4, where directories are kept);
    /// XFS's xfs_bmap_btalloc, the inode's own block (XFS_INO_TO_FSB).
    fn grow_dir(&mut self, path: &str, logical: u64) -> Result<u64, FsError> {
        self.ensure_space(1)?;
        let dir = &self.dirs[path];
        let goal = match dir.blocks.before(logical) {
            Some(e) => e.physical + (logical - e.logical),
            None if self.flavor() == Flavor::Xfs => {
                self.layout.inode_block(dir.ino, self.config.block_bytes, self.config.inode_bytes)
            }
            None => {
                let flex = self.flex_groups();
                let mut g = self.layout.inode_group(dir.ino);
                if flex >= 4 {
                    g &= !(flex - 1);
                }
                g * self.layout.bpg
            }
        };
        let run = match self.policy.reuse(1) {
            Some(run) => {
                self.bitmap.take_held(run.start, run.len);
                let rel = self.policy.drain_releasable();
                self.release(self.now, rel);
                run
            }
            None => {
                let run = self.bitmap.allocate(goal, 1).ok_or(FsError::NoSpace)?;
                self.policy.on_allocate(run);
                run
            }
        };
        let g = self.bitmap.group_of(run.start);
        self.dirty_meta(self.layout.bitmap_block(g));
        self.dirty_meta(self.layout.gdt_block(g));
        let dir = self.dirs.get_mut(path).unwrap_or_else(|| unreachable!());
        dir.blocks.insert(logical, run.start, 1);
        Ok(run.start)
    }

    /// Every directory's blocks, for `check`: (inode, blocks, owner 6 = directory metadata).
    pub(super) fn dir_blocks(&self) -> impl Iterator<Item = (&Ino, &ExtentMap, u8)> {
        self.dirs.values().map(|d| (&d.ino, &d.blocks, 6))
    }

    /// A commit is on disk: its metadata awaits checkpoint, but for directory blocks freed
    /// since it started (revoked: never written home, the block may be a file's by then).
    pub(super) fn checkpoint_committed(&mut self, meta: &[u64]) {
        let revoked = std::mem::take(&mut self.revoked);
        self.checkpoint.extend(meta.iter().copied().filter(|b| !revoked.contains(b)));
    }

    /// Directory blocks being freed leave the journal: out of the running transaction and
    /// the checkpoint list, and the commit in flight will not checkpoint them (jbd2 revoke;
    /// ext4_free_blocks with EXT4_FREE_BLOCKS_FORGET).
    fn revoke(&mut self, runs: &[Run]) {
        for b in runs.iter().flat_map(|r| r.start..r.end()) {
            self.running.meta.remove(&b);
            self.checkpoint.remove(&b);
            if self.commit.as_ref().is_some_and(|c| c.meta.contains(&b)) {
                self.revoked.insert(b);
            }
        }
    }
}

// ----- name operations -----

impl<D: BlockDevice> FileSystem<D> {
    /// creat(2) of a new regular file at `path`: the parent must be a directory.
    pub fn create(&mut self, path: &str) -> Result<Ino, FsError> {
        self.syscall();
        let path = normalize(path)?;
        let (parent, name) = split_parent(&path);
        self.require_new(&path, parent)?;
        let ino = self.place_inode(parent, name, false)?;
        let slot = match self.add_entry(parent, name) {
            Ok(slot) => slot,
            Err(e) => {
                self.free_ino(ino);
                return Err(e);
            }
        };
        let extents = ExtentMap::new(self.config.max_extent_blocks);
        let data_home = self.data_home(parent, ino);
        let inode = Inode { size: 0, extents, dir_slot: slot, unwritten: BTreeMap::new(), data_home };
        self.inodes.insert(ino, inode);
        self.names.insert(path.into_owned(), ino);
        let ib = self.layout.inode_block(ino, self.config.block_bytes, self.config.inode_bytes);
        self.dirty_meta(ib);
        self.dirty_meta(self.layout.bitmap_block(self.layout.inode_group(ino)) + 1);
        Ok(ino)
    }

    /// unlink(2) of the regular file at `path`.
    pub fn unlink(&mut self, path: &str) -> Result<(), FsError> {
        self.syscall();
        let path = normalize(path)?;
        let (parent, name) = split_parent(&path);
        let Some(ino) = self.names.remove(path.as_ref()) else {
            if path.is_empty() {
                return Err(FsError::IsADirectory("/".into()));
            }
            if self.dirs.contains_key(path.as_ref()) {
                return Err(FsError::IsADirectory(path.into_owned()));
            }
            self.require_dir(parent)?;
            return Err(FsError::NotFound(path.into_owned()));
        };
        self.remove_entry(parent, self.inodes[&ino].dir_slot, name);
        self.release_file(ino)
    }

    /// Frees a file whose name is gone: at once, or through XFS's inodegc.
    fn release_file(&mut self, ino: Ino) -> Result<(), FsError> {
        if let Some(gc) = self.config.inodegc.clone() {
            return self.inodegc_unlink(ino, &gc);
        }
        self.drop_blocks_from(ino, 0)?;
        self.inodes.remove(&ino);
        let bs = self.config.block_bytes;
        self.dirty_meta(self.layout.inode_block(ino, bs, self.config.inode_bytes));
        self.dirty_meta(self.layout.bitmap_block(self.layout.inode_group(ino)) + 1);
        self.free_ino(ino);
        Ok(())
    }

    /// mkdir(2): the parent must exist and be a directory; FsError::Exists if the path exists.
    pub fn mkdir(&mut self, path: &str) -> Result<Ino, FsError> {
        self.syscall();
        let path = normalize(path)?.into_owned();
        let (parent, name) = split_parent(&path);
        self.require_new(&path, parent)?;
        let ino = self.place_inode(parent, name, true)?;
        let undo_inode = |fs: &mut Self| {
            fs.forget_dir_inode(ino);
            fs.free_ino(ino);
        };
        let slot = match self.add_entry(parent, name) {
            Ok(slot) => slot,
            Err(e) => {
                undo_inode(self);
                return Err(e);
            }
        };
        self.dirs.insert(path.clone(), Dir::new(ino, slot, self.config.max_extent_blocks));
        if self.flavor() == Flavor::Ext4 {
            // ext4_init_new_dir: block 0 with "." and "..".
            match self.grow_dir(&path, 0) {
                Ok(b) => self.dirty_meta(b),
                Err(e) => {
                    self.dirs.remove(&path);
                    self.remove_entry(parent, slot, name);
                    undo_inode(self);
                    return Err(e);
                }
            }
        }
        let (bs, ib) = (self.config.block_bytes, self.config.inode_bytes);
        self.dirty_meta(self.layout.inode_block(ino, bs, ib));
        self.dirty_meta(self.layout.bitmap_block(self.layout.inode_group(ino)) + 1);
        self.dirty_parent_inode(parent);
        Ok(ino)
    }

    /// Where a new file's data starts. XFS seeks a file's first extent near its inode
    /// (fs/xfs/libxfs/xfs_bmap.c, `xfs_bmap_btalloc_best_length`: `ap->blkno =
    /// XFS_INO_TO_FSB(mp, ap->ip->i_ino)`), so files of directories in different AGs have
    /// their data in those AGs (the XFS tree-rm recording trims each subdirectory's files in
    /// its directory's AG). Files in the root keep the stream goal the model's XFS was
    /// measured with (the root inode is in AG 0, where the stream starts); ext4's and btrfs'
    /// data placement does not depend on the directory (docs/host-fs.md).
    fn data_home(&self, parent: &str, ino: Ino) -> Option<u64> {
        let xfs_subdir = self.flavor() == Flavor::Xfs && !parent.is_empty();
        xfs_subdir.then(|| self.layout.inode_block(ino, self.config.block_bytes, self.config.inode_bytes))
    }

    /// A subdirectory added or removed changes the parent's link count: its inode is
    /// dirtied (the root's, at a fixed place, is not modelled, as for files before).
    fn dirty_parent_inode(&mut self, parent: &str) {
        if let Some(p) = self.dirs.get(parent) {
            let b = self.layout.inode_block(p.ino, self.config.block_bytes, self.config.inode_bytes);
            self.dirty_meta(b);
        }
    }

    /// rmdir(2): FsError::NotEmpty(path) unless empty; FsError::NotADirectory for a file.
    pub fn rmdir(&mut self, path: &str) -> Result<(), FsError> {
        self.syscall();
        let path = normalize(path)?.into_owned();
        if path.is_empty() {
            return Err(FsError::Invalid("rmdir: the root directory cannot be removed".into()));
        }
        let (parent, name) = split_parent(&path);
        if self.names.contains_key(&path) {
            return Err(FsError::NotADirectory(path));
        }
        if !self.dirs.contains_key(&path) {
            self.require_dir(parent)?;
            return Err(FsError::NotFound(path));
        }
        if self.has_children(&path) {
            return Err(FsError::NotEmpty(path));
        }
        let dir = self.dirs.remove(&path).unwrap_or_else(|| unreachable!());
        self.remove_entry(parent, dir.slot, name);
        self.dirty_parent_inode(parent);
        self.release_dir(dir);
        Ok(())
    }

    /// Frees a removed directory's inode and blocks: at once, or through XFS's inodegc.
    fn release_dir(&mut self, dir: Dir) {
        self.forget_dir_inode(dir.ino);
        let runs: Vec<Run> = dir.blocks.iter().map(|e| Run::new(e.physical, e.len)).collect();
        self.revoke(&runs);
        let unwritten = BTreeMap::new();
        let inode = Inode { size: 0, extents: dir.blocks, dir_slot: dir.slot, unwritten, data_home: None };
        if let Some(gc) = self.config.inodegc.clone() {
            return self.inodegc_queue(dir.ino, inode, &gc);
        }
        let blocks: u64 = runs.iter().map(|r| r.len).sum();
        // The evicted inode's truncate (ext4_ext_remove_space) frees from its last block back.
        for r in runs.into_iter().rev() {
            self.free_run(r);
        }
        self.now = self.now.after(blocks * self.config.host.free_block_ns);
        let bs = self.config.block_bytes;
        self.dirty_meta(self.layout.inode_block(dir.ino, bs, self.config.inode_bytes));
        self.dirty_meta(self.layout.bitmap_block(self.layout.inode_group(dir.ino)) + 1);
        self.free_ino(dir.ino);
    }
}

// ----- rename -----

impl<D: BlockDevice> FileSystem<D> {
    /// rename(2) of a file or directory: a file over an existing file replaces (unlinks) it,
    /// a directory over an empty directory replaces it; a directory moved into itself or
    /// below itself is FsError::Invalid (a cycle); the parent of `to` must exist.
    pub fn rename(&mut self, from: &str, to: &str) -> Result<(), FsError> {
        self.syscall();
        let (from, to) = (normalize(from)?.into_owned(), normalize(to)?.into_owned());
        if from.is_empty() || to.is_empty() {
            return Err(FsError::Invalid("rename: the root directory cannot be renamed or replaced".into()));
        }
        let from_dir = self.dirs.contains_key(&from);
        if !from_dir && !self.names.contains_key(&from) {
            self.require_dir(split_parent(&from).0)?;
            return Err(FsError::NotFound(from));
        }
        let (to_parent, _) = split_parent(&to);
        self.require_dir(to_parent)?;
        if from == to {
            return Ok(());
        }
        if from_dir && is_within(&to, &from) {
            return Err(FsError::Invalid(format!(
                "rename: cannot move directory {from:?} into itself ({to:?}): a cycle"
            )));
        }
        // The target, if any, is replaced in place: its entry slot is reused (ext4_setent).
        let reuse_slot = if let Some(target) = self.dirs.get(&to) {
            if !from_dir {
                return Err(FsError::IsADirectory(to));
            }
            if self.has_children(&to) {
                return Err(FsError::NotEmpty(to));
            }
            let slot = target.slot;
            let dir = self.dirs.remove(&to).unwrap_or_else(|| unreachable!());
            self.release_dir(dir);
            Some(slot)
        } else if let Some(&ino) = self.names.get(&to) {
            if from_dir {
                return Err(FsError::NotADirectory(to));
            }
            self.names.remove(&to);
            let slot = self.inodes[&ino].dir_slot;
            self.release_file(ino)?;
            Some(slot)
        } else {
            None
        };
        self.move_entry(&from, &to, from_dir, reuse_slot)
    }

    /// The entry moves: a new entry in `to`'s parent (or the replaced target's slot), the old
    /// one removed; a directory's whole subtree is re-keyed and its ".." rewritten.
    fn move_entry(
        &mut self,
        from: &str,
        to: &str,
        is_dir: bool,
        reuse_slot: Option<u64>,
    ) -> Result<(), FsError> {
        let (from_parent, from_name) = split_parent(from);
        let (to_parent, to_name) = split_parent(to);
        let slot = match reuse_slot {
            Some(slot) => {
                let block = self.entry_slot_block(to_parent, slot);
                self.dirty_meta(block);
                slot
            }
            None => self.add_entry(to_parent, to_name)?,
        };
        let (bs, ib) = (self.config.block_bytes, self.config.inode_bytes);
        if !is_dir {
            let ino = self.names.remove(from).unwrap_or_else(|| unreachable!());
            let old = std::mem::replace(&mut self.inode_mut(ino)?.dir_slot, slot);
            self.remove_entry(from_parent, old, from_name);
            self.names.insert(to.to_string(), ino);
            self.dirty_meta(self.layout.inode_block(ino, bs, ib));
            return Ok(());
        }
        let old =
            std::mem::replace(&mut self.dirs.get_mut(from).unwrap_or_else(|| unreachable!()).slot, slot);
        self.remove_entry(from_parent, old, from_name);
        let files: Vec<String> = below(&self.names, from).map(|(k, _)| k.clone()).collect();
        for k in files {
            let ino = self.names.remove(&k).unwrap_or_else(|| unreachable!());
            self.names.insert(format!("{to}{}", &k[from.len()..]), ino);
        }
        let mut dirs: Vec<String> = below(&self.dirs, from).map(|(k, _)| k.clone()).collect();
        dirs.push(from.to_string());
        for k in dirs {
            let d = self.dirs.remove(&k).unwrap_or_else(|| unreachable!());
            self.dirs.insert(format!("{to}{}", &k[from.len()..]), d);
        }
        let ino = self.dirs[to].ino;
        self.dirty_meta(self.layout.inode_block(ino, bs, ib));
        if from_parent != to_parent {
            // ext4_rename_dir_finish: ".." now names the new parent (block 0, or the inode
            // for a short-form or btrfs directory); both parents' link counts change.
            let dotdot = match self.dirs[to].blocks.lookup(0) {
                Some(b) if self.flavor() != Flavor::Btrfs => b,
                _ => self.layout.inode_block(ino, bs, ib),
            };
            self.dirty_meta(dotdot);
            self.dirty_parent_inode(from_parent);
            self.dirty_parent_inode(to_parent);
        }
        Ok(())
    }

    /// The block of an existing entry slot of `dir` ("" = root).
    fn entry_slot_block(&mut self, dir: &str, slot: u64) -> u64 {
        match dir.is_empty() {
            true => self.layout.dir_start + slot / self.config.dir_entries_per_block,
            false => self.entry_block(dir, slot, false).unwrap_or_else(|e| unreachable!("fs: {e}")),
        }
    }

    /// `check`'s part: every entry's parent is a directory, directory inodes are unique and
    /// neither files' nor free, slots are unique per directory, and the per-group inode
    /// counts match.
    pub(super) fn namespace_check(&self) -> Result<(), String> {
        if self.names.len() != self.inodes.len() {
            return Err(format!("fs: {} names for {} inodes", self.names.len(), self.inodes.len()));
        }
        let mut slots: BTreeSet<(Ino, u64)> = BTreeSet::new();
        let mut dir_inos: BTreeSet<Ino> = BTreeSet::new();
        for (path, ino, is_dir) in self.entries() {
            let parent = split_parent(path).0;
            let parent_ino = match parent.is_empty() {
                true => 0,
                false => self
                    .dirs
                    .get(parent)
                    .map(|d| d.ino)
                    .ok_or(format!("fs: {path:?} has no parent directory"))?,
            };
            let slot = match is_dir {
                true => self.dirs[path].slot,
                false => self
                    .inodes
                    .get(&ino)
                    .map(|i| i.dir_slot)
                    .ok_or(format!("fs: {path:?} has no inode {ino}"))?,
            };
            if !slots.insert((parent_ino, slot)) {
                return Err(format!("fs: {path:?} shares slot {slot} of its directory"));
            }
            if is_dir
                && (!dir_inos.insert(ino)
                    || self.inodes.contains_key(&ino)
                    || self.inode_groups.freed.contains(&ino))
            {
                return Err(format!(
                    "fs: directory {path:?} inode {ino} is also a file's, another's or free"
                ));
            }
        }
        self.inode_groups_check(dir_inos.len() as u64)
    }
}
