//! The directory tree of an aged file system, as Impressions (Agrawal et al., FAST 2009,
//! Table 2) builds it from the FAST 2007 five-year metadata study: directories by the
//! study's generative model (a new directory's parent is an existing directory chosen with
//! probability proportional to its subdirectory count + 2), and each file placed at a depth
//! drawn from a Poisson distribution of mean 6.49 ("file count with depth"), in a directory
//! of that depth chosen uniformly (the deepest existing depth when the tree is not that
//! deep yet). The study's distribution of files per directory (inverse polynomial, degree 2,
//! offset 2.36) is not fitted: the uniform choice gives it only roughly.

use rand::Rng;
use trimlab_sim::SimRng;

/// Impressions' "file count with depth": Poisson with λ = 6.49.
pub const FILE_DEPTH_MEAN: f64 = 6.49;
/// The generative model's offset: a directory's weight is its subdirectories + 2.
const PARENT_OFFSET: u64 = 2;
/// Files per directory: one directory is made per this many live files (assumption: the
/// five-year study's desktops hold a few files per directory on average, most directories
/// few; Impressions' example images hold about 5 files per directory).
pub const FILES_PER_DIR: u64 = 5;

/// The tree built so far: each directory's path, depth and parent.
#[derive(Clone, Debug, Default)]
pub struct TreeShape {
    prefix: String,
    /// Index 0 is the root ("").
    pub paths: Vec<String>,
    depths: Vec<u32>,
    /// The parent of every directory but the root, one entry per parent-child edge: a
    /// uniform pick of an edge picks a parent in proportion to its subdirectory count.
    pub parents: Vec<usize>,
    /// Directories by depth.
    by_depth: Vec<Vec<usize>>,
}

impl TreeShape {
    /// A tree of the root alone; directories are named `{prefix}d{n}`.
    pub fn new(prefix: &str) -> TreeShape {
        TreeShape {
            prefix: prefix.to_string(),
            paths: vec![String::new()],
            depths: vec![0],
            parents: Vec::new(),
            by_depth: vec![vec![0]],
        }
    }

    pub fn directories(&self) -> usize {
        self.paths.len() - 1
    }

    pub fn max_depth(&self) -> usize {
        self.by_depth.len() - 1
    }

    /// Directories at each depth (the root at 0).
    pub fn per_depth(&self) -> Vec<usize> {
        self.by_depth.iter().map(Vec::len).collect()
    }

    /// Adds one directory under a parent chosen by the generative model; returns its path
    /// (the caller makes it).
    pub fn grow(&mut self, rng: &mut SimRng) -> String {
        let n = self.paths.len() as u64;
        let edges = self.parents.len() as u64;
        // Weight of directory d is c(d) + 2: the sum is edges + 2n; pick by the offset part
        // (uniform) or by the count part (a uniform edge's parent).
        let pick = rng.gen_range(0..edges + PARENT_OFFSET * n);
        let parent = if pick < edges {
            self.parents[pick as usize]
        } else {
            ((pick - edges) / PARENT_OFFSET) as usize
        };
        let depth = self.depths[parent] + 1;
        let name = format!("{}d{}", self.prefix, self.paths.len() - 1);
        let path = if parent == 0 { name } else { format!("{}/{name}", self.paths[parent]) };
        let index = self.paths.len();
        self.paths.push(path.clone());
        self.depths.push(depth);
        self.parents.push(parent);
        if self.by_depth.len() <= depth as usize {
            self.by_depth.push(Vec::new());
        }
        self.by_depth[depth as usize].push(index);
        path
    }

    /// The directory a new file goes in ("" for the root).
    pub fn place(&self, rng: &mut SimRng) -> &str {
        let depth = poisson(rng, FILE_DEPTH_MEAN).min(self.max_depth());
        let dirs = &self.by_depth[depth];
        &self.paths[dirs[rng.gen_range(0..dirs.len())]]
    }
}

/// A Poisson draw (Knuth's product of uniforms; fine for a small mean).
pub fn poisson(rng: &mut SimRng, mean: f64) -> usize {
    let limit = (-mean).exp();
    let mut k = 0;
    let mut p: f64 = rng.gen();
    while p > limit {
        k += 1;
        p *= rng.gen::<f64>();
    }
    k
}
