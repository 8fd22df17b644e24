//! The directory tree: path names, directories with their own entry slots and blocks, and
//! the name operations (create, unlink, mkdir, rmdir, rename) with their metadata writes.
//!
//! Paths are relative to the mount point ("d0/f1"; a leading '/' means the mount point too,
//! "" is the root). The tree is a directory-entry table: each directory (the root, and
//! `FileSystem::dirs` by inode) holds its own entries by name, as the kernel's directories do,
//! so a path resolves one component at a time in small maps of short names, a directory's
//! listing is its own map, and a rename moves one entry whatever lies below it. (Keyed by full
//! path strings, as before, a quarter of a million files cost a third of a script's time in
//! comparing long common prefixes: docs/performance.md, "File-operation scripts".)
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

use super::layout::Flavor;
use super::*;
use std::borrow::Cow;
use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

/// The inode's literal area of mkfs.xfs 6.1's 512-byte v5 inodes (512 - 176 bytes of
/// `xfs_dinode` core): a short-form directory must fit in it.
const XFS_INODE_LITERAL_BYTES: u64 = 336;
/// `xfs_dir2_sf_hdr` with 4-byte inode numbers: count, i8count, parent.
const XFS_SF_HEADER_BYTES: u64 = 6;
/// Longest name component (NAME_MAX).
const NAME_MAX: usize = 255;

/// The root directory's key in the entry table. Directories are keyed by their inode; no
/// inode is numbered 0 (group 0's first is 2, inode_alloc.rs), so 0 stands for the root,
/// which has no inode of its own in the model.
pub(super) const ROOT: Ino = 0;

/// ext4's directory-name hash stands here as FNV-1a over the seed and the name, finished by
/// splitmix64: the kernel's half-MD4 with a random per-mkfs seed only has to spread names
/// over the groups, which any well-mixed seeded hash does.
pub(super) fn dir_name_hash(seed: u64, name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in seed.to_le_bytes().iter().chain(name.as_bytes()) {
        h = (h ^ *b as u64).wrapping_mul(0x100_0000_01b3);
    }
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// A directory entry: the inode it names, and whether that is a directory (in `dirs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Child {
    pub(super) ino: Ino,
    pub(super) is_dir: bool,
}

/// A directory's entries by name, in byte order (the order `children` lists them in).
#[derive(Clone, Debug, Default)]
pub(super) struct Entries(BTreeMap<Name, Child>);

impl Entries {
    pub(super) fn new() -> Self {
        Entries(BTreeMap::new())
    }
    /// A short name is looked up as a [`Name`], whose comparisons are two integer compares
    /// (`Name::inline_key`), a long one by its bytes (no allocation for the key).
    pub(super) fn get(&self, name: &str) -> Option<&Child> {
        match Name::inline(name) {
            Some(key) => self.0.get(&key),
            None => self.0.get(name.as_bytes()),
        }
    }
    fn contains_key(&self, name: &str) -> bool {
        self.get(name).is_some()
    }
    fn insert(&mut self, name: &str, child: Child) {
        self.0.insert(Name::new(name), child);
    }
    fn remove(&mut self, name: &str) -> Option<Child> {
        match Name::inline(name) {
            Some(key) => self.0.remove(&key),
            None => self.0.remove(name.as_bytes()),
        }
    }
    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub(super) fn iter(&self) -> impl Iterator<Item = (&str, &Child)> {
        self.0.iter().map(|(n, c)| (n.as_str(), c))
    }
}

/// Bytes of a name kept inside the entry table's nodes.
const NAME_INLINE_BYTES: usize = 22;

/// An entry's name: inline when short (most are), so that a lookup compares bytes in the
/// B-tree's own nodes instead of following a pointer to each key it passes (with boxed
/// names, lookups in 250 directories of 1000 files missed the cache at every comparison).
/// Ordered as its bytes, the order of the `str`.
#[derive(Clone, Debug)]
enum Name {
    Inline { len: u8, bytes: [u8; NAME_INLINE_BYTES] },
    Boxed(Box<str>),
}

impl Name {
    fn new(name: &str) -> Name {
        Name::inline(name).unwrap_or_else(|| Name::Boxed(name.into()))
    }
    /// `name` stored inline, if short enough; the bytes past it are zero.
    fn inline(name: &str) -> Option<Name> {
        let mut bytes = [0u8; NAME_INLINE_BYTES];
        bytes.get_mut(..name.len())?.copy_from_slice(name.as_bytes());
        Some(Name::Inline { len: name.len() as u8, bytes })
    }
    /// An inline name's order key: its zero-padded bytes as big-endian integers, then its
    /// length. It orders as the bytes do: up to the shorter length the bytes decide; past
    /// it the shorter name has zeroes, so it is less unless the longer one has only zero
    /// bytes there, and then the length puts it first, as a prefix goes first. (Comparing
    /// slices calls memcmp at every step of a B-tree search: a tenth of a small-file script.)
    fn inline_key(&self) -> Option<(u128, u64, u8)> {
        let Name::Inline { len, bytes } = self else { return None };
        let (hi, lo) = bytes.split_at(16);
        let mut low = [0u8; 8];
        low[..lo.len()].copy_from_slice(lo);
        let hi = u128::from_be_bytes(hi.try_into().unwrap_or_else(|_| unreachable!("16 bytes")));
        Some((hi, u64::from_be_bytes(low), *len))
    }
    fn as_bytes(&self) -> &[u8] {
        match self {
            Name::Inline { len, bytes } => &bytes[..*len as usize],
            Name::Boxed(s) => s.as_bytes(),
        }
    }
    fn as_str(&self) -> &str {
        match self {
            // Made from a str, cut at its end: always UTF-8.
            Name::Inline { .. } => {
                std::str::from_utf8(self.as_bytes()).unwrap_or_else(|e| unreachable!("fs: {e}"))
            }
            Name::Boxed(s) => s,
        }
    }
}

impl std::borrow::Borrow<[u8]> for Name {
    fn borrow(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl PartialEq for Name {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Name {}

impl PartialOrd for Name {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Name {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        match (self.inline_key(), other.inline_key()) {
            (Some(a), Some(b)) => a.cmp(&b),
            _ => self.as_bytes().cmp(other.as_bytes()),
        }
    }
}

/// Directories' full paths -> their inodes, noted when a create, unlink, mkdir or rmdir found
/// the directory by walking its path, so that the next name operation in it skips the walk:
/// an aged tree's files lie seven directories deep on average (tree_shape.rs), and walking
/// from the root for every file made and removed took a tenth of the aging (docs/performance.md,
/// "Aged 1 TiB file system"). It holds only directories that exist at the path noted: rmdir
/// forgets its path (an empty directory has nothing noted below it) and a rename of a
/// directory forgets them all (what lay below it moved). Looked up by path, never iterated.
#[derive(Debug, Default)]
pub(super) struct DirPaths(HashMap<Box<str>, Ino, BuildHasherDefault<DefaultHasher>>);

impl DirPaths {
    fn get(&self, path: &str) -> Option<Ino> {
        self.0.get(path).copied()
    }
    fn note(&mut self, path: &str, ino: Ino) {
        if !path.is_empty() && !self.0.contains_key(path) {
            self.0.insert(path.into(), ino);
        }
    }
    fn forget(&mut self, path: &str) {
        self.0.remove(path);
    }
    fn forget_all(&mut self) {
        self.0.clear();
    }
    fn len(&self) -> usize {
        self.0.len()
    }
}

/// The root directory: its entries, and its entry slots (freed ones, and the next never
/// used).
#[derive(Clone, Debug, Default)]
pub(super) struct RootSlots {
    free: BTreeSet<u64>,
    next: u64,
    entries: Entries,
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
    /// What it holds, by name.
    pub(super) entries: Entries,
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
            entries: Entries::new(),
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

/// `dir/name` ("" is the root).
fn join(dir: &str, name: &str) -> String {
    match dir.is_empty() {
        true => name.to_string(),
        false => format!("{dir}/{name}"),
    }
}

// ----- the entry table -----

impl<D: BlockDevice> FileSystem<D> {
    /// The entries of directory `dir` (an inode in `dirs`, or ROOT).
    fn entries_of(&self, dir: Ino) -> &Entries {
        match dir {
            ROOT => &self.root_slots.entries,
            d => &self.dirs[&d].entries,
        }
    }

    /// Every directory's entries: the root's, then the others' by inode.
    pub(super) fn all_entries(&self) -> impl Iterator<Item = (Ino, &Entries)> {
        std::iter::once((ROOT, &self.root_slots.entries))
            .chain(self.dirs.iter().map(|(&i, d)| (i, &d.entries)))
    }

    /// Adds `name` -> `child` to directory `dir` (the caller has checked it is new).
    fn link(&mut self, dir: Ino, name: &str, child: Child) {
        self.listing.take();
        let entries = match dir {
            ROOT => &mut self.root_slots.entries,
            d => &mut self.dirs.get_mut(&d).unwrap_or_else(|| unreachable!("fs: no directory {d}")).entries,
        };
        entries.insert(name, child);
    }

    /// Takes `name` out of directory `dir` (the caller has checked it is there).
    fn unlink_name(&mut self, dir: Ino, name: &str) -> Child {
        self.listing.take();
        let entries = match dir {
            ROOT => &mut self.root_slots.entries,
            d => &mut self.dirs.get_mut(&d).unwrap_or_else(|| unreachable!("fs: no directory {d}")).entries,
        };
        entries.remove(name).unwrap_or_else(|| unreachable!("fs: no entry {name:?} in directory {dir}"))
    }

    /// The entry a normalized, non-empty `path` names, if every directory on the way exists:
    /// one lookup in its directory if that directory's path is noted (`dir_paths`), else one
    /// lookup per component, each in its directory's own entries.
    pub(super) fn resolve(&self, path: &str) -> Option<Child> {
        let (parent, name) = split_parent(path);
        if let Some(dir) = self.dir_paths.get(parent) {
            return self.dirs.get(&dir)?.entries.get(name).copied();
        }
        let mut parts = path.split('/');
        let mut child = *self.root_slots.entries.get(parts.next()?)?;
        for part in parts {
            if !child.is_dir {
                return None;
            }
            child = *self.dirs.get(&child.ino)?.entries.get(part)?;
        }
        Some(child)
    }

    /// The directory `dir` ("" = root) names; else which of NotFound / NotADirectory names
    /// it.
    fn require_dir(&self, dir: &str) -> Result<Ino, FsError> {
        if dir.is_empty() {
            return Ok(ROOT);
        }
        if let Some(ino) = self.dir_paths.get(dir) {
            return Ok(ino);
        }
        match self.resolve(dir) {
            Some(Child { ino, is_dir: true }) => Ok(ino),
            Some(_) => Err(FsError::NotADirectory(dir.to_string())),
            None => Err(FsError::NotFound(dir.to_string())),
        }
    }

    /// `require_dir`, noting the directory's path for the next name operation in it.
    fn require_dir_noted(&mut self, dir: &str) -> Result<Ino, FsError> {
        let ino = self.require_dir(dir)?;
        self.dir_paths.note(dir, ino);
        Ok(ino)
    }

    /// For a new entry `name` of `parent` (together, `path`): the parent exists and the path
    /// does not. Returns the parent's key.
    fn require_new(&mut self, path: &str, parent: &str, name: &str) -> Result<Ino, FsError> {
        let dir = self.require_dir_noted(parent)?;
        if path.is_empty() || self.entries_of(dir).contains_key(name) {
            return Err(FsError::Exists(if path.is_empty() { "/".to_string() } else { path.to_string() }));
        }
        Ok(dir)
    }

    /// Whether `path` exists and is a directory ("" is the root).
    pub fn is_dir(&self, path: &str) -> bool {
        normalize(path).is_ok_and(|p| p.is_empty() || self.resolve(&p).is_some_and(|c| c.is_dir))
    }

    /// The regular file at `path` (None for a directory or a missing path).
    pub fn lookup(&self, path: &str) -> Option<Ino> {
        let path = normalize(path).ok()?;
        self.resolve(&path).filter(|c| !c.is_dir).map(|c| c.ino)
    }

    /// What `path` names: (inode, is_dir), None if it does not exist. One walk of the tree
    /// where `lookup` and `is_dir` together take two.
    pub fn entry(&self, path: &str) -> Option<(Ino, bool)> {
        let path = normalize(path).ok()?;
        self.resolve(&path).map(|c| (c.ino, c.is_dir))
    }

    /// Every file and directory, by full path in byte order: (path, ino, is_dir). The full
    /// paths are built on the first call after a change of the tree.
    pub fn entries(&self) -> impl Iterator<Item = (&str, Ino, bool)> {
        self.listing().iter().map(|(p, i, d)| (p.as_str(), *i, *d))
    }

    /// Every regular file by full path, in byte order (directories are not listed: see
    /// [`FileSystem::entries`]).
    pub fn names(&self) -> impl Iterator<Item = (&String, &Ino)> {
        self.listing().iter().filter(|e| !e.2).map(|(p, i, _)| (p, i))
    }

    fn listing(&self) -> &[(String, Ino, bool)] {
        self.listing.get_or_init(|| {
            let mut out = Vec::new();
            let mut stack = vec![(String::new(), ROOT)];
            while let Some((prefix, dir)) = stack.pop() {
                for (name, c) in self.entries_of(dir).iter() {
                    let path = join(&prefix, name);
                    if c.is_dir {
                        stack.push((path.clone(), c.ino));
                    }
                    out.push((path, c.ino, c.is_dir));
                }
            }
            out.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            out
        })
    }

    /// The entries directly inside directory `dir` ("" = root), by name in byte order,
    /// borrowed: what [`FileSystem::children`] returns, without a `String` per entry (a
    /// script's globs list many directories).
    pub fn dir_entries(&self, dir: &str) -> Result<impl Iterator<Item = (&str, Ino, bool)>, FsError> {
        let d = self.require_dir(&normalize(dir)?)?;
        Ok(self.entries_of(d).iter().map(|(n, c)| (n, c.ino, c.is_dir)))
    }

    /// What `name` names inside directory `dir` (None: the root; else a directory's inode,
    /// as `dir_entries` reports it): (inode, is_dir). One lookup, for callers that walk the
    /// tree themselves (a script's globs) rather than resolve every path from the root.
    pub fn entry_in(&self, dir: Option<Ino>, name: &str) -> Option<(Ino, bool)> {
        let entries = match dir {
            None => &self.root_slots.entries,
            Some(ino) => &self.dirs.get(&ino)?.entries,
        };
        entries.get(name).map(|c| (c.ino, c.is_dir))
    }

    /// The entries of directory `dir` (as for `entry_in`) by name in byte order, borrowed;
    /// None if `dir` is not a directory's inode.
    pub fn dir_entries_in(&self, dir: Option<Ino>) -> Option<impl Iterator<Item = (&str, Ino, bool)>> {
        let entries = match dir {
            None => &self.root_slots.entries,
            Some(ino) => &self.dirs.get(&ino)?.entries,
        };
        Some(entries.iter().map(|(n, c)| (n, c.ino, c.is_dir)))
    }

    /// The entries directly inside directory `dir` ("" = root), by name: (name, ino, is_dir).
    pub fn children(&self, dir: &str) -> Result<Vec<(String, Ino, bool)>, FsError> {
        Ok(self.dir_entries(dir)?.map(|(n, i, d)| (n.to_string(), i, d)).collect())
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
        if self.layout_fs.btrfs().is_none() && self.config.inodegc.is_none() {
            let seed = self.inode_groups.hash_seed;
            entries.sort_by_cached_key(|e| dir_name_hash(seed, &e.0));
        } else {
            let slot = |e: &(String, Ino, bool)| match e.2 {
                true => self.dirs.get(&e.1).map_or(u64::MAX, |d| d.slot),
                false => self.inodes.get(e.1).map_or(u64::MAX, |i| i.dir_slot),
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
    fn add_entry(&mut self, parent: Ino, name: &str) -> Result<u64, FsError> {
        let epb = self.config.dir_entries_per_block;
        let Some(dir) = self.dirs.get_mut(&parent) else {
            // btrfs' entries are fs-tree items without a slot limit (their stand-in blocks
            // wrap); ext4's root has room for every inode up to 2^17 (layout.rs).
            let unbounded = self.layout_fs.btrfs().is_some();
            let root = &mut self.root_slots;
            let slot = match root.free.pop_first() {
                Some(s) => s,
                None if unbounded || root.next < self.layout.dir_blocks * epb => {
                    root.next += 1;
                    root.next - 1
                }
                None => return Err(FsError::NoInodes),
            };
            self.dirty_meta(self.root_slot_block(slot));
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
                let dir = self.dirs.get_mut(&parent).unwrap_or_else(|| unreachable!());
                dir.free_slots.insert(slot);
                dir.sf_bytes -= xfs_sf_entry_bytes(name);
                Err(e)
            }
        }
    }

    /// The root directory's block of entry `slot` (its static blocks; btrfs' stand-in wraps).
    fn root_slot_block(&self, slot: u64) -> u64 {
        self.layout.dir_start + (slot / self.config.dir_entries_per_block) % self.layout.dir_blocks
    }

    /// Removes entry `name` at `slot` from `parent`, dirtying the block that held it.
    fn remove_entry(&mut self, parent: Ino, slot: u64, name: &str) {
        let Some(dir) = self.dirs.get_mut(&parent) else {
            self.root_slots.free.insert(slot);
            self.dirty_meta(self.root_slot_block(slot));
            return;
        };
        dir.free_slots.insert(slot);
        dir.sf_bytes -= xfs_sf_entry_bytes(name);
        let block = self.entry_block(parent, slot, false).unwrap_or_else(|e| unreachable!("fs: {e}"));
        self.dirty_meta(block);
    }

    /// The metadata block holding entry `slot` of directory `dir`; with `grow`, allocates the
    /// directory block it needs (never without: an entry's block exists, or it sits in the
    /// inode).
    fn entry_block(&mut self, dir_ino: Ino, slot: u64, grow: bool) -> Result<u64, FsError> {
        let epb = self.config.dir_entries_per_block;
        let (bs, ib) = (self.config.block_bytes, self.config.inode_bytes);
        let dir = &self.dirs[&dir_ino];
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
            None if grow => self.grow_dir(dir_ino, logical),
            None => Ok(inode_block),
        }
    }

    /// Allocates directory block `logical` of directory `dir_ino` (`ext4_append`, `xfs_dir2_grow_inode`).
    /// Directory blocks are not data: no locality group, no stream goal (ext4_mb_group_or_file
    /// returns early without EXT4_MB_HINT_DATA), so the goal is the previous block's
    /// successor, else the inode's: ext4_inode_to_goal_block, the first block of the inode's
    /// group (of its flex group's first group with flex_bg >= 4, where directories are kept);
    /// XFS's xfs_bmap_btalloc, the inode's own block (XFS_INO_TO_FSB).
    fn grow_dir(&mut self, dir_ino: Ino, logical: u64) -> Result<u64, FsError> {
        self.ensure_space(1)?;
        let dir = &self.dirs[&dir_ino];
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
        let dir = self.dirs.get_mut(&dir_ino).unwrap_or_else(|| unreachable!());
        dir.blocks.insert(logical, run.start, 1);
        Ok(run.start)
    }

    /// Every directory's blocks, for `check`: (inode, blocks, owner 6 = directory metadata).
    pub(super) fn dir_blocks(&self) -> impl Iterator<Item = (Ino, &ExtentMap, u8)> {
        self.dirs.values().map(|d| (d.ino, &d.blocks, 6))
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
        let dir = self.require_new(&path, parent, name)?;
        let ino = self.place_inode(dir, name, false)?;
        let slot = match self.add_entry(dir, name) {
            Ok(slot) => slot,
            Err(e) => {
                self.free_ino(ino);
                return Err(e);
            }
        };
        let extents = ExtentMap::new(self.config.max_extent_blocks);
        let data_home = self.data_home(dir, ino);
        let inode = Inode { size: 0, extents, dir_slot: slot, unwritten: BTreeMap::new(), data_home };
        self.inodes.insert(ino, inode);
        self.link(dir, name, Child { ino, is_dir: false });
        let ib = self.layout.inode_block(ino, self.config.block_bytes, self.config.inode_bytes);
        self.dirty_meta(ib);
        self.dirty_meta(self.layout.bitmap_block(self.layout.inode_group(ino)) + 1);
        Ok(ino)
    }

    /// unlink(2) of the regular file at `path`.
    pub fn unlink(&mut self, path: &str) -> Result<(), FsError> {
        self.unlink_cpu();
        self.syscall();
        let path = normalize(path)?;
        if path.is_empty() {
            return Err(FsError::IsADirectory("/".into()));
        }
        let (parent, name) = split_parent(&path);
        let dir = self.require_dir_noted(parent)?;
        match self.entries_of(dir).get(name) {
            None => return Err(FsError::NotFound(path.into_owned())),
            Some(c) if c.is_dir => return Err(FsError::IsADirectory(path.into_owned())),
            Some(_) => {}
        }
        let ino = self.unlink_name(dir, name).ino;
        self.remove_entry(dir, self.inodes[ino].dir_slot, name);
        self.release_file(ino)
    }

    /// Frees a file whose name is gone: at once, or through XFS's inodegc.
    fn release_file(&mut self, ino: Ino) -> Result<(), FsError> {
        if let Some(gc) = self.config.inodegc.clone() {
            return self.inodegc_unlink(ino, &gc);
        }
        self.drop_blocks_from(ino, 0)?;
        self.inodes.remove(ino);
        let bs = self.config.block_bytes;
        self.dirty_meta(self.layout.inode_block(ino, bs, self.config.inode_bytes));
        self.dirty_meta(self.layout.bitmap_block(self.layout.inode_group(ino)) + 1);
        self.free_ino(ino);
        Ok(())
    }

    /// mkdir(2): the parent must exist and be a directory; FsError::Exists if the path exists.
    pub fn mkdir(&mut self, path: &str) -> Result<Ino, FsError> {
        self.syscall();
        let path = normalize(path)?;
        let (parent, name) = split_parent(&path);
        let dir = self.require_new(&path, parent, name)?;
        let ino = self.place_inode(dir, name, true)?;
        let undo_inode = |fs: &mut Self| {
            fs.forget_dir_inode(ino);
            fs.free_ino(ino);
        };
        let slot = match self.add_entry(dir, name) {
            Ok(slot) => slot,
            Err(e) => {
                undo_inode(self);
                return Err(e);
            }
        };
        self.dirs.insert(ino, Dir::new(ino, slot, self.config.max_extent_blocks));
        self.link(dir, name, Child { ino, is_dir: true });
        if self.flavor() == Flavor::Ext4 {
            // ext4_init_new_dir: block 0 with "." and "..".
            match self.grow_dir(ino, 0) {
                Ok(b) => self.dirty_meta(b),
                Err(e) => {
                    self.unlink_name(dir, name);
                    self.dirs.remove(&ino);
                    self.remove_entry(dir, slot, name);
                    undo_inode(self);
                    return Err(e);
                }
            }
        }
        let (bs, ib) = (self.config.block_bytes, self.config.inode_bytes);
        self.dirty_meta(self.layout.inode_block(ino, bs, ib));
        self.dirty_meta(self.layout.bitmap_block(self.layout.inode_group(ino)) + 1);
        self.dirty_parent_inode(dir);
        Ok(ino)
    }

    /// Where a new file's data starts. XFS seeks a file's first extent near its inode
    /// (fs/xfs/libxfs/xfs_bmap.c, `xfs_bmap_btalloc_best_length`: `ap->blkno =
    /// XFS_INO_TO_FSB(mp, ap->ip->i_ino)`), so files of directories in different AGs have
    /// their data in those AGs (the XFS tree-rm recording trims each subdirectory's files in
    /// its directory's AG). Files in the root keep the stream goal the model's XFS was
    /// measured with (the root inode is in AG 0, where the stream starts); ext4's and btrfs'
    /// data placement does not depend on the directory (docs/host-fs.md).
    fn data_home(&self, parent: Ino, ino: Ino) -> Option<u64> {
        let xfs_subdir = self.flavor() == Flavor::Xfs && parent != ROOT;
        xfs_subdir.then(|| self.layout.inode_block(ino, self.config.block_bytes, self.config.inode_bytes))
    }

    /// A subdirectory added or removed changes the parent's link count: its inode is
    /// dirtied (the root's, at a fixed place, is not modelled, as for files before).
    fn dirty_parent_inode(&mut self, parent: Ino) {
        if let Some(p) = self.dirs.get(&parent) {
            let b = self.layout.inode_block(p.ino, self.config.block_bytes, self.config.inode_bytes);
            self.dirty_meta(b);
        }
    }

    /// rmdir(2): FsError::NotEmpty(path) unless empty; FsError::NotADirectory for a file.
    pub fn rmdir(&mut self, path: &str) -> Result<(), FsError> {
        self.unlink_cpu();
        self.syscall();
        let path = normalize(path)?.into_owned();
        if path.is_empty() {
            return Err(FsError::Invalid("rmdir: the root directory cannot be removed".into()));
        }
        let (parent, name) = split_parent(&path);
        let dir = self.require_dir_noted(parent)?;
        let ino = match self.entries_of(dir).get(name) {
            None => return Err(FsError::NotFound(path)),
            Some(c) if !c.is_dir => return Err(FsError::NotADirectory(path)),
            Some(c) => c.ino,
        };
        if !self.dirs[&ino].entries.is_empty() {
            return Err(FsError::NotEmpty(path));
        }
        self.unlink_name(dir, name);
        self.dir_paths.forget(&path);
        let removed = self.dirs.remove(&ino).unwrap_or_else(|| unreachable!());
        self.remove_entry(dir, removed.slot, name);
        self.dirty_parent_inode(dir);
        self.release_dir(removed);
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

/// One side of a rename: the directory holding the entry, and its name there.
struct Place<'a> {
    dir: Ino,
    name: &'a str,
}

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
        let (from_parent, from_name) = split_parent(&from);
        let Some(moved) = self.resolve(&from) else {
            self.require_dir(from_parent)?;
            return Err(FsError::NotFound(from));
        };
        let (to_parent, to_name) = split_parent(&to);
        let to_dir = self.require_dir(to_parent)?;
        if from == to {
            return Ok(());
        }
        if moved.is_dir && is_within(&to, &from) {
            return Err(FsError::Invalid(format!(
                "rename: cannot move directory {from:?} into itself ({to:?}): a cycle"
            )));
        }
        if moved.is_dir {
            // What lay below `from` moves, and a directory `to` may be replaced.
            self.dir_paths.forget_all();
        }
        let target = Place { dir: to_dir, name: to_name };
        if let Some(old) = self.entries_of(target.dir).get(target.name).copied() {
            self.flush_on_replace(moved, old);
        }
        let reuse_slot = self.replace_target(&to, &target, moved.is_dir)?;
        let source = Place { dir: self.require_dir(from_parent)?, name: from_name };
        self.move_entry(&source, &target, moved, reuse_slot)
    }

    /// The entry a rename replaces, if any, is removed and its slot given back for reuse (in
    /// place: ext4_setent): a file by a file, an empty directory by a directory.
    fn replace_target(&mut self, to: &str, target: &Place, moving_dir: bool) -> Result<Option<u64>, FsError> {
        let Some(old) = self.entries_of(target.dir).get(target.name).copied() else {
            return Ok(None);
        };
        if old.is_dir {
            if !moving_dir {
                return Err(FsError::IsADirectory(to.to_string()));
            }
            if !self.dirs[&old.ino].entries.is_empty() {
                return Err(FsError::NotEmpty(to.to_string()));
            }
            self.unlink_name(target.dir, target.name);
            let dir = self.dirs.remove(&old.ino).unwrap_or_else(|| unreachable!());
            let slot = dir.slot;
            self.release_dir(dir);
            return Ok(Some(slot));
        }
        if moving_dir {
            return Err(FsError::NotADirectory(to.to_string()));
        }
        self.unlink_name(target.dir, target.name);
        let slot = self.inodes[old.ino].dir_slot;
        self.release_file(old.ino)?;
        Ok(Some(slot))
    }

    /// The entry moves: a new entry in the target's directory (or the replaced target's
    /// slot), the old one removed; a directory's ".." is rewritten (what lies below it moves
    /// with its entry).
    fn move_entry(
        &mut self,
        from: &Place,
        to: &Place,
        moved: Child,
        reuse_slot: Option<u64>,
    ) -> Result<(), FsError> {
        let slot = match reuse_slot {
            Some(slot) => {
                let block = self.entry_slot_block(to.dir, slot);
                self.dirty_meta(block);
                slot
            }
            None => self.add_entry(to.dir, to.name)?,
        };
        let (bs, ib) = (self.config.block_bytes, self.config.inode_bytes);
        let ino = moved.ino;
        self.unlink_name(from.dir, from.name);
        let old = match moved.is_dir {
            false => std::mem::replace(&mut self.inode_mut(ino)?.dir_slot, slot),
            true => {
                std::mem::replace(&mut self.dirs.get_mut(&ino).unwrap_or_else(|| unreachable!()).slot, slot)
            }
        };
        self.remove_entry(from.dir, old, from.name);
        self.link(to.dir, to.name, moved);
        self.dirty_meta(self.layout.inode_block(ino, bs, ib));
        if moved.is_dir && from.dir != to.dir {
            // ext4_rename_dir_finish: ".." now names the new parent (block 0, or the inode
            // for a short-form or btrfs directory); both parents' link counts change.
            let dotdot = match self.dirs[&ino].blocks.lookup(0) {
                Some(b) if self.flavor() != Flavor::Btrfs => b,
                _ => self.layout.inode_block(ino, bs, ib),
            };
            self.dirty_meta(dotdot);
            self.dirty_parent_inode(from.dir);
            self.dirty_parent_inode(to.dir);
        }
        Ok(())
    }

    /// The block of an existing entry slot of directory `dir`.
    fn entry_slot_block(&mut self, dir: Ino, slot: u64) -> u64 {
        match dir {
            ROOT => self.root_slot_block(slot),
            d => self.entry_block(d, slot, false).unwrap_or_else(|e| unreachable!("fs: {e}")),
        }
    }

    /// `check`'s part: every directory is reached once from the root, every file entry has
    /// its inode, directory inodes are unique and neither files' nor free, slots are unique
    /// per directory, every noted directory path names its directory, and the per-group inode
    /// counts match. (File paths are spelled out only for the error: the check runs at the
    /// end of every run, over every entry.)
    pub(super) fn namespace_check(&self) -> Result<(), String> {
        let mut dir_inos: BTreeSet<Ino> = BTreeSet::new();
        let mut noted = 0;
        let mut files = 0;
        let mut slots: Vec<(u64, &str)> = Vec::new();
        let mut stack = vec![(String::new(), ROOT)];
        while let Some((prefix, dir)) = stack.pop() {
            slots.clear();
            for (name, c) in self.entries_of(dir).iter() {
                let slot = match c.is_dir {
                    true => {
                        let path = join(&prefix, name);
                        let d = self.dirs.get(&c.ino).filter(|d| d.ino == c.ino);
                        let d =
                            d.ok_or(format!("fs: directory {path:?} (inode {}) is not in the table", c.ino))?;
                        if !dir_inos.insert(c.ino)
                            || self.inodes.contains_key(c.ino)
                            || self.inode_groups.freed.contains(&c.ino)
                        {
                            return Err(format!(
                                "fs: directory {path:?} inode {} is also a file's, another's or free",
                                c.ino
                            ));
                        }
                        match self.dir_paths.get(&path) {
                            Some(i) if i != c.ino => {
                                return Err(format!("fs: {path:?} is noted as directory {i}, not {}", c.ino))
                            }
                            Some(_) => noted += 1,
                            None => {}
                        }
                        stack.push((path, c.ino));
                        d.slot
                    }
                    false => {
                        files += 1;
                        let no_inode = || format!("fs: {:?} has no inode {}", join(&prefix, name), c.ino);
                        self.inodes.get(c.ino).map(|i| i.dir_slot).ok_or_else(no_inode)?
                    }
                };
                slots.push((slot, name));
            }
            slots.sort_unstable();
            if let Some(w) = slots.windows(2).find(|w| w[0].0 == w[1].0) {
                return Err(format!(
                    "fs: {:?} shares slot {} of its directory",
                    join(&prefix, w[1].1),
                    w[1].0
                ));
            }
        }
        if noted != self.dir_paths.len() {
            return Err(format!(
                "fs: {} directory paths noted, {noted} of them name a directory",
                self.dir_paths.len()
            ));
        }
        if files != self.inodes.len() || dir_inos.len() != self.dirs.len() {
            return Err(format!(
                "fs: {files} names for {} inodes, {} directories reached of {}",
                self.inodes.len(),
                dir_inos.len(),
                self.dirs.len()
            ));
        }
        self.inode_groups_check(dir_inos.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::Name;

    /// Names order as their bytes do, inline or boxed, whatever their lengths: prefixes,
    /// zero bytes, the 22-byte inline limit and past it, bytes above 0x7f.
    #[test]
    fn names_order_as_their_bytes() {
        let long = "x".repeat(21);
        let names = [
            "",
            "a",
            "a\0",
            "a\0\0",
            "ab",
            "a\u{1}",
            "b",
            "f9",
            "f10",
            "f999",
            "é",
            "zz",
            &long,
            &format!("{long}a"),
            &format!("{long}a\0"),
            &format!("{long}ab"),
            &format!("{long}b"),
            &format!("{long}\0"),
            &format!("{long}\0\0"),
        ];
        for a in names {
            for b in names {
                let (na, nb) = (Name::new(a), Name::new(b));
                assert_eq!(na.cmp(&nb), a.as_bytes().cmp(b.as_bytes()), "{a:?} vs {b:?}");
                assert_eq!(na == nb, a == b);
            }
        }
    }
}
