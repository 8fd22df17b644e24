//! A set of cached file pages and the data tag each holds (the page cache's dirty and
//! write-back sets), kept as runs: consecutive blocks of one file whose tags are consecutive
//! too, as one buffered write leaves them. A 1 MiB write is one entry, not 256 (a B-tree entry
//! per 4 KiB page was a fifth of an aged file system's run: docs/performance.md, "Aged 1 TiB
//! file system"). The set is the same map from (inode, block) to tag whichever way its runs
//! are cut; only the cost changes.

use super::Ino;
use std::collections::BTreeMap;

/// `len` pages of `ino` from block `first`, page `first + i` holding tag `tag + i`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageRun {
    pub ino: Ino,
    pub first: u64,
    pub len: u64,
    pub tag: u64,
}

impl PageRun {
    pub fn end(&self) -> u64 {
        self.first + self.len
    }

    /// The part of the run in `[from, to)` (which must overlap it).
    fn clip(&self, from: u64, to: u64) -> PageRun {
        let first = self.first.max(from);
        let end = self.end().min(to);
        PageRun { ino: self.ino, first, len: end - first, tag: self.tag.wrapping_add(first - self.first) }
    }

    /// Whether `next` continues this run in blocks and in tags (tags wrap, as the block
    /// layer's merging lets them: request_merge.rs).
    pub fn joins(&self, next: &PageRun) -> bool {
        self.ino == next.ino && self.end() == next.first && self.tag.wrapping_add(self.len) == next.tag
    }
}

/// Pages keyed by (inode, first block) -> (pages, first tag); runs never overlap, and the
/// page count is kept for the dirty limit.
#[derive(Clone, Debug, Default)]
pub struct PageRuns {
    runs: BTreeMap<(Ino, u64), (u64, u64)>,
    pages: u64,
}

impl PageRuns {
    pub fn new() -> Self {
        Self::default()
    }

    /// Pages held (not runs).
    pub fn len(&self) -> u64 {
        self.pages
    }

    pub fn is_empty(&self) -> bool {
        self.pages == 0
    }

    /// The run holding page `b` of `ino`.
    fn containing(&self, ino: Ino, b: u64) -> Option<PageRun> {
        let (&k, &v) = self.runs.range((ino, 0)..=(ino, b)).next_back()?;
        Some(run(k, v)).filter(|r| b < r.end())
    }

    /// The tag page `b` of `ino` holds, if the set has it.
    pub fn get(&self, ino: Ino, b: u64) -> Option<u64> {
        self.containing(ino, b).map(|r| r.tag.wrapping_add(b - r.first))
    }

    pub fn contains(&self, ino: Ino, b: u64) -> bool {
        self.containing(ino, b).is_some()
    }

    /// The runs (parts of runs) of `ino` in `[from, to)`, in block order.
    pub fn runs_in(&self, ino: Ino, from: u64, to: u64) -> impl Iterator<Item = PageRun> + '_ {
        let to = to.max(from);
        let head = self.containing(ino, from).filter(|r| r.first < from && from < to);
        let rest = self.runs.range((ino, from)..(ino, to)).map(|(&k, &v)| run(k, v));
        head.into_iter().chain(rest).map(move |r| r.clip(from, to))
    }

    /// Every run, in (inode, block) order.
    pub fn iter(&self) -> impl Iterator<Item = PageRun> + '_ {
        self.runs.iter().map(|(&k, &v)| run(k, v))
    }

    /// Puts `r` in, replacing what the set held for its pages; joins the runs it continues.
    pub fn insert(&mut self, r: PageRun) {
        if r.len == 0 {
            return;
        }
        self.remove(r.ino, r.first, r.end());
        // The joined neighbours' pages are counted already.
        self.pages += r.len;
        let mut r = r;
        if let Some(prev) = self.runs.range(..(r.ino, r.first)).next_back().map(|(&k, &v)| run(k, v)) {
            if prev.joins(&r) {
                self.runs.remove(&(prev.ino, prev.first));
                r = PageRun { len: prev.len + r.len, ..prev };
            }
        }
        if let Some(&(len, tag)) = self.runs.get(&(r.ino, r.end())) {
            let next = PageRun { ino: r.ino, first: r.end(), len, tag };
            if r.joins(&next) {
                self.runs.remove(&(next.ino, next.first));
                r.len += next.len;
            }
        }
        self.runs.insert((r.ino, r.first), (r.len, r.tag));
    }

    /// Removes the pages of `ino` in `[from, to)`; runs crossing an edge keep their outside
    /// parts.
    pub fn remove(&mut self, ino: Ino, from: u64, to: u64) {
        if from >= to {
            return;
        }
        if let Some(r) = self.containing(ino, from).filter(|r| r.first < from) {
            // A run crossing `from`: its head stays, and its tail past `to` if it has one.
            self.runs.insert((ino, r.first), (from - r.first, r.tag));
            if r.end() > to {
                let tail = r.clip(to, r.end());
                self.runs.insert((ino, tail.first), (tail.len, tail.tag));
            }
            self.pages -= r.end().min(to) - from;
        }
        let mut tail = None;
        for (k, v) in self.runs.extract_if((ino, from)..(ino, to), |_, _| true) {
            let r = run(k, v);
            self.pages -= r.end().min(to) - r.first;
            if r.end() > to {
                tail = Some(r.clip(to, r.end()));
            }
        }
        if let Some(t) = tail {
            self.runs.insert((ino, t.first), (t.len, t.tag));
        }
    }

    /// Takes every run of `ino` out, in block order.
    pub fn take_file(&mut self, ino: Ino) -> Vec<PageRun> {
        let out: Vec<PageRun> =
            self.runs.extract_if((ino, 0)..=(ino, u64::MAX), |_, _| true).map(|(k, v)| run(k, v)).collect();
        self.pages -= out.iter().map(|r| r.len).sum::<u64>();
        out
    }

    /// Takes every run out, in (inode, block) order.
    pub fn take_all(&mut self) -> Vec<PageRun> {
        self.pages = 0;
        std::mem::take(&mut self.runs).into_iter().map(|(k, v)| run(k, v)).collect()
    }

    /// Removes the pages of `r` that still hold `r`'s tags (a write-back ending: a page
    /// written again and taken by a later write-back meanwhile holds a newer tag and stays).
    pub fn remove_matching(&mut self, r: &PageRun) {
        // Tags rise with blocks in both runs, so an overlap's pages all match or none do.
        let offset = |x: &PageRun| x.tag.wrapping_sub(x.first);
        let same: Vec<PageRun> =
            self.runs_in(r.ino, r.first, r.end()).filter(|x| offset(x) == offset(r)).collect();
        for x in same {
            self.remove(x.ino, x.first, x.end());
        }
    }
}

fn run((ino, first): (Ino, u64), (len, tag): (u64, u64)) -> PageRun {
    PageRun { ino, first, len, tag }
}
