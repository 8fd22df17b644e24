//! A fileset at run time, as Filebench's fileset.c keeps it: entries with a fixed path and
//! size drawn when the set is populated, a directory tree of gamma-distributed widths and
//! depths, the existing and not-existing entries as ordered sets picked by rotors, and the
//! open counts that keep `deletefile` off a file another thread has open.

use super::model::FilesetDef;
use rand::Rng;
use rand_distr::{Distribution, Gamma};
use std::collections::BTreeSet;
use trimlab_sim::SimRng;

/// One file of the set.
#[derive(Clone, Debug)]
pub struct Entry {
    /// Relative to the mount point: `NAME/00000001/00000003`.
    pub path: String,
    /// Drawn from `size` when the set was populated (`fse_size`); writewholefile writes it.
    pub size: u64,
    /// Descriptors of all threads open on it (`fse_open_cnt`).
    pub open_count: u32,
}

/// A populated fileset.
#[derive(Clone, Debug)]
pub struct Fileset {
    pub entries: Vec<Entry>,
    /// Directories to create before any file, parents first.
    pub dirs: Vec<String>,
    exists: BTreeSet<u32>,
    noexist: BTreeSet<u32>,
    /// Filebench's `fs_file_exrotor[0]` and `fs_file_nerotor`: the next index to try.
    ex_rotor: u32,
    ne_rotor: u32,
    pub readonly: bool,
}

/// Builds the tree as `fileset_populate_subdir` does.
struct Populate<'a> {
    def: &'a FilesetDef,
    rng: &'a mut SimRng,
    mean_depth: f64,
    mean_width: f64,
    set: Fileset,
}

impl Fileset {
    /// Populates `def`: the tree and each entry's size (nothing on the file system yet); Err
    /// when the tree's paths pass PATH_MAX.
    pub fn populate(def: &FilesetDef, rng: &mut SimRng) -> Result<Fileset, String> {
        let mut set = Fileset {
            entries: Vec::new(),
            dirs: Vec::new(),
            exists: BTreeSet::new(),
            noexist: BTreeSet::new(),
            ex_rotor: 0,
            ne_rotor: 0,
            readonly: def.readonly,
        };
        if def.single_file {
            set.entries.push(Entry { path: def.name.clone(), size: def.size.draw(rng), open_count: 0 });
        } else {
            set.dirs.push(def.name.clone());
            let mean_width = def.dirwidth.mean();
            // fs_meandepth = log(entries) / log(meandirwidth); a width of 1 gives a chain as
            // deep as the entries (the log is 0), which Filebench does not guard either.
            let mean_depth = if mean_width > 1.0 {
                (def.entries as f64).ln() / mean_width.ln()
            } else {
                def.entries as f64
            };
            let mut p = Populate { def, rng, mean_depth, mean_width, set };
            p.populate_tree(def.name.clone())?;
            set = p.set;
        }
        set.noexist = (0..set.entries.len() as u32).collect();
        Ok(set)
    }

    /// Marks an entry created or deleted.
    pub fn set_exists(&mut self, index: u32, on: bool) {
        if on {
            self.noexist.remove(&index);
            self.exists.insert(index);
        } else {
            self.exists.remove(&index);
            self.noexist.insert(index);
        }
    }

    /// `fileset_pick` in rotation: the first entry at or after the rotor in the existing (or
    /// not-existing) set, wrapping; the rotor moves past it. Filebench's busy flag only
    /// covers the instant between a pick and the open, which one simulated thread at a time
    /// never sees, so nothing is skipped for it. None: the set is empty (FILEBENCH_NORSC).
    pub fn pick(&mut self, existing: bool) -> Option<u32> {
        let (set, rotor) = match existing {
            true => (&self.exists, &mut self.ex_rotor),
            false => (&self.noexist, &mut self.ne_rotor),
        };
        let found = set.range(*rotor..).next().or_else(|| set.iter().next()).copied()?;
        *rotor = found + 1;
        Some(found)
    }

    /// The entries to create before the run (`fileset_create`): free entries taken in a
    /// uniformly random order (`FILESET_PICKUNIQUE`: a random index, then the next free one),
    /// each allocated with probability `prealloc` percent.
    pub fn prealloc_order(&self, percent: u64, rng: &mut SimRng) -> Vec<u32> {
        let mut free: BTreeSet<u32> = (0..self.entries.len() as u32).collect();
        let mut out = Vec::new();
        while !free.is_empty() {
            let at = rng.gen_range(0..self.entries.len() as u32);
            let index = free.range(at..).next().or_else(|| free.iter().next()).copied().unwrap_or(0);
            free.remove(&index);
            if rng.gen_range(0..100) < percent {
                out.push(index);
            }
        }
        out
    }
}

impl Populate<'_> {
    /// A gamma draw of shape `dirgamma` with mean `mean`, or `mean` itself when dirgamma is 0
    /// (`gamma_dist_knuth(gamma, mean / gamma)`).
    fn gamma(&mut self, mean: f64) -> f64 {
        let g = self.def.dirgamma;
        match Gamma::new(g, mean / g) {
            Ok(d) if g > 0.0 && mean > 0.0 => d.sample(self.rng),
            _ => mean,
        }
    }

    /// `fileset_populate_subdir`: a directory of random width holding files if it is deep
    /// enough (a leaf) or more directories; the root continues until every entry exists.
    /// Filebench recurses; this walks the same tree in the same order (the same draws) with
    /// a stack of open directories, so a chain as deep as the entries (`dirwidth=1`) cannot
    /// overflow the stack; a path past PATH_MAX is refused, as the kernel would refuse it.
    fn populate_tree(&mut self, root: String) -> Result<(), String> {
        let mut open = vec![self.enter(root, 0.0)];
        while let Some(dir) = open.last_mut() {
            let more = (dir.root || (dir.next as f64) < dir.width + 1.0)
                && (self.set.entries.len() as u64) < self.def.entries;
            if !more {
                open.pop();
                continue;
            }
            let (serial, depth) = (dir.next, dir.depth);
            dir.next += 1;
            let path = format!("{}/{serial:08}", dir.path);
            if path.len() >= PATH_MAX {
                return Err(format!(
                    "fileset \"{}\": its tree goes {} directories deep (dirwidth {} over {} entries), \
                     past the kernel's PATH_MAX of {PATH_MAX} bytes",
                    self.def.name,
                    open.len(),
                    self.mean_width,
                    self.def.entries
                ));
            }
            if dir.leaf && !dir.root {
                let size = self.def.size.draw(self.rng);
                self.set.entries.push(Entry { path, size, open_count: 0 });
            } else {
                self.set.dirs.push(path.clone());
                let child = self.enter(path, depth);
                open.push(Dir { root: false, ..child });
            }
        }
        Ok(())
    }

    /// A directory entered: its depth, and its own draws of depth and width (in Filebench's
    /// order).
    fn enter(&mut self, path: String, depth: f64) -> Dir {
        let depth = depth + 1.0;
        let mut rand_depth = self.gamma(self.mean_depth).trunc();
        let mut width = match &self.def.dirwidth {
            super::value::Amount::Random(_) => self.def.dirwidth.draw(self.rng) as f64,
            super::value::Amount::Fixed(_) => self.gamma(self.mean_width),
        };
        if rand_depth == 0.0 {
            rand_depth = 1.0;
        }
        if width == 0.0 {
            width = 1.0;
        }
        Dir { path, depth, width, leaf: depth >= rand_depth, next: 1, root: true }
    }
}

/// A directory being filled.
struct Dir {
    path: String,
    depth: f64,
    width: f64,
    leaf: bool,
    /// The serial of its next entry (from 1).
    next: u64,
    /// The fileset's own directory: it continues until every entry exists.
    root: bool,
}

/// The longest path the kernel takes, with its NUL (include/uapi/linux/limits.h).
const PATH_MAX: usize = 4096;
