//! The in-core inode table: live files' inodes by number, in pages of consecutive numbers
//! allocated when first used, as the kernel's inode tables are laid out by number.
//!
//! Inode numbers are dense (the allocators hand out the lowest free one of a group,
//! inode_alloc.rs), so a number indexes its slot directly: one lookup is two loads, where a
//! B-tree of 96-byte inodes took a search of several nodes per lookup, and a small-file write
//! looks its inode up about five times (docs/performance.md, "File-operation scripts").
//! Pages keep memory to the groups in use: an 8 GiB ext4 has half a million inode numbers,
//! a 1 TiB one 64 million, most never used.

use super::{Ino, Inode};

/// Inodes per page: 4 KiB of page pointers per 2 M inode numbers; a page of a few hundred
/// inodes is what one directory's files fill (they are numbered near each other).
const PAGE_INODES: usize = 256;

type Page = Box<[Option<Inode>]>;

/// Live inodes by number; iterates in number order (as the B-tree it replaces did).
#[derive(Default)]
pub(super) struct InodeTable {
    pages: Vec<Option<Page>>,
    len: usize,
}

impl InodeTable {
    fn slot(ino: Ino) -> (usize, usize) {
        let i = ino as usize;
        (i / PAGE_INODES, i % PAGE_INODES)
    }

    pub(super) fn get(&self, ino: Ino) -> Option<&Inode> {
        let (p, i) = Self::slot(ino);
        self.pages.get(p)?.as_ref()?[i].as_ref()
    }

    pub(super) fn get_mut(&mut self, ino: Ino) -> Option<&mut Inode> {
        let (p, i) = Self::slot(ino);
        self.pages.get_mut(p)?.as_mut()?[i].as_mut()
    }

    pub(super) fn contains_key(&self, ino: Ino) -> bool {
        self.get(ino).is_some()
    }

    /// Puts `inode` at `ino`; returns the inode that was there.
    pub(super) fn insert(&mut self, ino: Ino, inode: Inode) -> Option<Inode> {
        let (p, i) = Self::slot(ino);
        if self.pages.len() <= p {
            self.pages.resize_with(p + 1, || None);
        }
        let page = self.pages[p].get_or_insert_with(|| (0..PAGE_INODES).map(|_| None).collect());
        let old = page[i].replace(inode);
        self.len += usize::from(old.is_none());
        old
    }

    pub(super) fn remove(&mut self, ino: Ino) -> Option<Inode> {
        let (p, i) = Self::slot(ino);
        let old = self.pages.get_mut(p)?.as_mut()?[i].take();
        self.len -= usize::from(old.is_some());
        old
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// (number, inode) in number order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (Ino, &Inode)> {
        self.pages.iter().enumerate().filter_map(|(p, page)| Some((p, page.as_ref()?))).flat_map(
            |(p, page)| {
                page.iter()
                    .enumerate()
                    .filter_map(move |(i, n)| Some(((p * PAGE_INODES + i) as Ino, n.as_ref()?)))
            },
        )
    }

    pub(super) fn values(&self) -> impl Iterator<Item = &Inode> {
        self.iter().map(|(_, n)| n)
    }
}

impl std::ops::Index<Ino> for InodeTable {
    type Output = Inode;

    /// The live inode `ino` (a caller that has checked it exists).
    fn index(&self, ino: Ino) -> &Inode {
        self.get(ino).unwrap_or_else(|| panic!("fs: no inode {ino}"))
    }
}
