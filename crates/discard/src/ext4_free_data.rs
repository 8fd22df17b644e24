//! ext4's extents freed by a transaction as mballoc keeps them until the commit (Linux 6.17+):
//! one `struct ext4_free_data` per entry in its group's red-black tree (`bb_free_root`), and
//! the list (`s_freed_data_list`) that `ext4_process_freed_data` hands to the discard worker.
//!
//! Why the entries are not simply the freed runs coalesced: `ext4_mb_free_metadata`
//! (fs/ext4/mballoc.c, since "ext4: merge freed extent with existing extents before insertion",
//! Linux 6.17) walks down the tree to where the new extent would be linked and tries to merge
//! it only with the node it stops at (its would-be parent), then that node with its own
//! neighbour (`ext4_try_merge_freed_extent_prev` / `_next`). An extent adjacent to a freed
//! neighbour that is not its would-be parent (an ancestor higher up) is linked as an entry of
//! its own. So `rm -rf` of a directory of small contiguous files, which unlinks in readdir's
//! hash order, leaves 9-15 entries where a full merge would leave one or two, and the discard
//! worker trims each entry to the end of its free run: overlapping TRIMs. The tree shape
//! decides which merges happen, so this is a red-black tree with lib/rbtree.c's insert and
//! erase (CLRS's algorithms: the successor replaces an erased node with two children), and
//! merges keep the existing node (its place in the list; a merged-away node leaves the list).
//!
//! Simplification: the kernel's tree also holds the previous transaction's entries while that
//! one commits, which can change the shape; here each commit's tree starts empty.

use crate::run::{FreedRun, Run};
use std::collections::BTreeMap;

/// A transaction's freed runs, in the order they were freed, as the entries ext4 keeps for it,
/// in the order of its freed-data list (each where its surviving node was linked).
pub fn ext4_freed_entries(freed: &[FreedRun], blocks_per_group: u64) -> Vec<FreedRun> {
    let mut trees: BTreeMap<u64, GroupTree> = BTreeMap::new();
    let mut list: Vec<(u64, usize)> = Vec::new();
    for f in freed {
        // ext4_mb_clear_bb frees a run that crosses a group boundary group by group.
        let mut start = f.run.start;
        while start < f.run.end() {
            let group = start / blocks_per_group;
            let end = f.run.end().min((group + 1) * blocks_per_group);
            let piece = FreedRun { run: Run::new(start, end - start), freed_at: f.freed_at };
            if let Some(node) = trees.entry(group).or_default().insert(piece) {
                list.push((group, node));
            }
            start = end;
        }
    }
    list.iter()
        .filter_map(|&(g, n)| {
            let node = &trees[&g].nodes[n];
            node.alive.then_some(node.entry)
        })
        .collect()
}

#[derive(Clone, Copy)]
struct Node {
    entry: FreedRun,
    left: Option<usize>,
    right: Option<usize>,
    parent: Option<usize>,
    red: bool,
    alive: bool,
}

/// One group's `bb_free_root`: nodes in an arena, linked as lib/rbtree.c links them.
#[derive(Default)]
struct GroupTree {
    nodes: Vec<Node>,
    root: Option<usize>,
}

impl GroupTree {
    /// `ext4_mb_free_metadata`: merges `f` into the node the descent stops at (and that node
    /// with its neighbour), or links it as a new node, whose index it returns.
    fn insert(&mut self, f: FreedRun) -> Option<usize> {
        let (mut parent, mut left) = (None, false);
        let mut cur = self.root;
        while let Some(c) = cur {
            parent = Some(c);
            let e = self.nodes[c].entry.run;
            if f.run.start < e.start {
                (cur, left) = (self.nodes[c].left, true);
            } else if f.run.start >= e.end() {
                (cur, left) = (self.nodes[c].right, false);
            } else {
                unreachable!("ext4 free data: block {} freed twice in one transaction", f.run.start)
            }
        }
        if let Some(p) = parent {
            let e = self.nodes[p].entry;
            if f.run.end() == e.run.start {
                self.absorb(p, f, f.run.start);
                if let Some(prev) = self.prev(p).filter(|&q| self.nodes[q].entry.run.end() == f.run.start) {
                    let merged = self.nodes[p].entry;
                    self.absorb(prev, merged, self.nodes[prev].entry.run.start);
                    self.erase(p);
                }
                return None;
            }
            if e.run.end() == f.run.start {
                self.absorb(p, f, e.run.start);
                if let Some(next) = self.next(p).filter(|&q| self.nodes[q].entry.run.start == f.run.end()) {
                    let merged = self.nodes[next].entry;
                    self.absorb(p, merged, e.run.start);
                    self.erase(next);
                }
                return None;
            }
        }
        let n = self.nodes.len();
        self.nodes.push(Node { entry: f, left: None, right: None, parent, red: true, alive: true });
        match parent {
            None => self.root = Some(n),
            Some(p) if left => self.nodes[p].left = Some(n),
            Some(p) => self.nodes[p].right = Some(n),
        }
        self.insert_fixup(n);
        Some(n)
    }

    /// Node `n` takes the blocks of `other` (adjacent to it) and now starts at `start`.
    fn absorb(&mut self, n: usize, other: FreedRun, start: u64) {
        let e = &mut self.nodes[n].entry;
        e.run = Run::new(start, e.run.len + other.run.len);
        e.freed_at = e.freed_at.min(other.freed_at);
    }

    fn is_red(&self, n: Option<usize>) -> bool {
        n.is_some_and(|n| self.nodes[n].red)
    }

    fn set_child(&mut self, parent: Option<usize>, old: usize, new: Option<usize>) {
        match parent {
            None => self.root = new,
            Some(p) if self.nodes[p].left == Some(old) => self.nodes[p].left = new,
            Some(p) => self.nodes[p].right = new,
        }
        if let Some(c) = new {
            self.nodes[c].parent = parent;
        }
    }

    /// Rotates `x` down to the left (`left`) or the right, its child taking its place.
    fn rotate(&mut self, x: usize, left: bool) {
        let y = if left { self.nodes[x].right } else { self.nodes[x].left };
        let y = y.unwrap_or_else(|| unreachable!("rotation without a child"));
        let inner = if left { self.nodes[y].left } else { self.nodes[y].right };
        if left {
            self.nodes[x].right = inner;
        } else {
            self.nodes[x].left = inner;
        }
        if let Some(i) = inner {
            self.nodes[i].parent = Some(x);
        }
        let xp = self.nodes[x].parent;
        self.set_child(xp, x, Some(y));
        if left {
            self.nodes[y].left = Some(x);
        } else {
            self.nodes[y].right = Some(x);
        }
        self.nodes[x].parent = Some(y);
    }

    fn insert_fixup(&mut self, mut z: usize) {
        while let Some(p) = self.nodes[z].parent.filter(|&p| self.nodes[p].red) {
            let g = self.nodes[p].parent.unwrap_or_else(|| unreachable!("a red root"));
            let parent_is_left = self.nodes[g].left == Some(p);
            let uncle = if parent_is_left { self.nodes[g].right } else { self.nodes[g].left };
            if let Some(u) = uncle.filter(|&u| self.nodes[u].red) {
                self.nodes[p].red = false;
                self.nodes[u].red = false;
                self.nodes[g].red = true;
                z = g;
                continue;
            }
            let inner = if parent_is_left { self.nodes[p].right } else { self.nodes[p].left };
            let mut p = p;
            if inner == Some(z) {
                self.rotate(p, parent_is_left);
                (z, p) = (p, z);
            }
            let _ = z;
            self.nodes[p].red = false;
            self.nodes[g].red = true;
            self.rotate(g, !parent_is_left);
            break;
        }
        if let Some(r) = self.root {
            self.nodes[r].red = false;
        }
    }

    /// rb_erase: a node with two children is replaced by its successor.
    fn erase(&mut self, z: usize) {
        self.nodes[z].alive = false;
        let (zl, zr, zp) = (self.nodes[z].left, self.nodes[z].right, self.nodes[z].parent);
        let (x, xp, removed_red) = match (zl, zr) {
            (None, _) => {
                self.set_child(zp, z, zr);
                (zr, zp, self.nodes[z].red)
            }
            (_, None) => {
                self.set_child(zp, z, zl);
                (zl, zp, self.nodes[z].red)
            }
            (Some(l), Some(r)) => {
                let mut y = r;
                while let Some(yl) = self.nodes[y].left {
                    y = yl;
                }
                let (y_red, x) = (self.nodes[y].red, self.nodes[y].right);
                let xp = if y == r {
                    y
                } else {
                    let yp = self.nodes[y].parent;
                    self.set_child(yp, y, x);
                    self.nodes[y].right = Some(r);
                    self.nodes[r].parent = Some(y);
                    yp.unwrap_or_else(|| unreachable!("a successor below its node has a parent"))
                };
                self.set_child(zp, z, Some(y));
                self.nodes[y].left = Some(l);
                self.nodes[l].parent = Some(y);
                self.nodes[y].red = self.nodes[z].red;
                (x, Some(xp), y_red)
            }
        };
        if !removed_red {
            self.erase_fixup(x, xp);
        }
    }

    fn erase_fixup(&mut self, mut x: Option<usize>, mut xp: Option<usize>) {
        while x != self.root && !self.is_red(x) {
            let p = xp.unwrap_or_else(|| unreachable!("a non-root node without a parent"));
            let x_is_left = self.nodes[p].left == x;
            let sibling = |t: &Self| if x_is_left { t.nodes[p].right } else { t.nodes[p].left };
            let mut w = sibling(self).unwrap_or_else(|| unreachable!("a black node without a sibling"));
            if self.nodes[w].red {
                self.nodes[w].red = false;
                self.nodes[p].red = true;
                self.rotate(p, x_is_left);
                w = sibling(self).unwrap_or_else(|| unreachable!("no sibling after rotation"));
            }
            let (near, far) = if x_is_left {
                (self.nodes[w].left, self.nodes[w].right)
            } else {
                (self.nodes[w].right, self.nodes[w].left)
            };
            if !self.is_red(near) && !self.is_red(far) {
                self.nodes[w].red = true;
                x = Some(p);
                xp = self.nodes[p].parent;
                continue;
            }
            if !self.is_red(far) {
                if let Some(n) = near {
                    self.nodes[n].red = false;
                }
                self.nodes[w].red = true;
                self.rotate(w, !x_is_left);
                w = sibling(self).unwrap_or_else(|| unreachable!("no sibling after rotation"));
            }
            self.nodes[w].red = self.nodes[p].red;
            self.nodes[p].red = false;
            let far = if x_is_left { self.nodes[w].right } else { self.nodes[w].left };
            if let Some(f) = far {
                self.nodes[f].red = false;
            }
            self.rotate(p, x_is_left);
            x = self.root;
            xp = None;
        }
        if let Some(x) = x {
            self.nodes[x].red = false;
        }
    }

    /// rb_prev (`forward` false) or rb_next.
    fn step(&self, mut x: usize, forward: bool) -> Option<usize> {
        let down = |n: &Node| if forward { n.right } else { n.left };
        let up_side = |n: &Node| if forward { n.left } else { n.right };
        if let Some(mut c) = down(&self.nodes[x]) {
            while let Some(d) = up_side(&self.nodes[c]) {
                c = d;
            }
            return Some(c);
        }
        while let Some(p) = self.nodes[x].parent {
            if up_side(&self.nodes[p]) == Some(x) {
                return Some(p);
            }
            x = p;
        }
        None
    }

    fn prev(&self, x: usize) -> Option<usize> {
        self.step(x, false)
    }

    fn next(&self, x: usize) -> Option<usize> {
        self.step(x, true)
    }
}
