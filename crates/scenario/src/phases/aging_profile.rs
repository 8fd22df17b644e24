//! `age` with `profile = "impressions"`: a file system aged to look as real ones do after
//! years of use. Files of Impressions' published size distribution (file_size_dist.rs) in a
//! directory tree of its generative model (tree_shape.rs) fill the file system to its
//! target fullness; then, with `churn`, files are created up to 5 points above it and random
//! ones deleted back, Geriatrix's turnover (Kadekodi et al., ATC 2018), until `churn`
//! capacities more were written or the free space's layout score fell to
//! `free_layout_score`, Impressions' fragmentation target applied to the free space. The
//! fragmentation is then measured (free_space.rs in trimlab-fs), never assumed, and
//! reported as metrics.json's `aging`.

use super::file_size_dist::{ks_distance, FileSizeDist};
use super::tree_shape::{TreeShape, FILES_PER_DIR};
use crate::stack::Fs;
use serde_json::{json, Value};
use trimlab_device::CommandKind;
use trimlab_fs::FsError;
use trimlab_sim::SimRng;
use trimlab_workload::file::{delete_down_to, delete_down_to_appended, write_file, FileShape};
use trimlab_workload::Progress;

/// `profile`'s one value.
pub const IMPRESSIONS: &str = "impressions";

/// The largest file, as a share of the data capacity, when `file_bytes_max` is not given
/// (assumption: the Pareto tail has no mean, and one file of a 32nd keeps several of the
/// largest files on any file system).
const FILE_CAP_SHARE: u64 = 32;
/// Capacities churned at most to reach `free_layout_score` when `churn` is not given
/// (assumption: the free space's score settles within a few capacities on the model).
const SCORE_CHURN_DEFAULT: f64 = 10.0;

/// What the aging asks for.
pub struct Target {
    pub utilization: f64,
    /// Above the utilization, where a churn cycle turns back.
    pub high: f64,
    pub churn: Option<f64>,
    pub free_layout_score: Option<f64>,
}

/// The profile's generator state over one `age` phase.
struct Aging<'a> {
    sizes: FileSizeDist,
    tree: TreeShape,
    shape: &'a FileShape,
    created: u64,
    /// How many live names lead in order: all that the last cycle's delete returned (the
    /// files made since come after them); None before the first.
    sorted: Option<usize>,
}

impl Aging<'_> {
    /// Creates one file (and first one directory, while there are fewer than one per
    /// [`FILES_PER_DIR`] live files: directories are never removed, so churn does not pile
    /// them up). False once the file system is out of space or inodes.
    fn create_one(&mut self, fs: &mut Fs, rng: &mut SimRng, live: &mut Vec<String>) -> Result<bool, FsError> {
        if (self.tree.directories() as u64) * FILES_PER_DIR <= live.len() as u64 {
            let dir = self.tree.grow(rng);
            match fs.mkdir(&dir) {
                Ok(_) => {}
                Err(FsError::NoSpace | FsError::NoInodes) => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        let dir = self.tree.place(rng);
        let name = match dir {
            "" => format!("{}f{}", self.shape.prefix, self.created),
            d => format!("{d}/{}f{}", self.shape.prefix, self.created),
        };
        self.created += 1;
        let bytes = self.sizes.sample(rng);
        match write_file(fs, &name, bytes, self.shape.chunk_bytes, self.shape.hole_bytes) {
            Ok(_) => live.push(name),
            Err(FsError::NoSpace) => {
                live.push(name);
                return Ok(false);
            }
            Err(FsError::NoInodes) => return Ok(false),
            Err(e) => return Err(e),
        }
        Ok(true)
    }

    /// Creates files until the utilization reaches `target` or space runs out.
    fn fill_to(
        &mut self,
        fs: &mut Fs,
        rng: &mut SimRng,
        live: &mut Vec<String>,
        target: f64,
    ) -> Result<(), FsError> {
        while fs.utilization() < target {
            if !self.create_one(fs, rng, live)? {
                break;
            }
        }
        fs.sync();
        Ok(())
    }

    /// Deletes random live files down to `target`; the rest are left sorted.
    fn delete_to(
        &mut self,
        fs: &mut Fs,
        rng: &mut SimRng,
        live: &mut Vec<String>,
        target: f64,
    ) -> Result<(), FsError> {
        let names = std::mem::take(live);
        *live = match self.sorted {
            Some(n) => delete_down_to_appended(fs, rng, names, n, target)?,
            None => delete_down_to(fs, rng, names, target)?,
        };
        self.sorted = Some(live.len());
        Ok(())
    }
}

fn written(fs: &Fs) -> u64 {
    fs.device().traffic.bytes_of(CommandKind::Write)
}

/// Ages the file system; returns metrics.json's `aging`.
pub fn age(
    fs: &mut Fs,
    rng: &mut SimRng,
    live: &mut Vec<String>,
    shape: &FileShape,
    target: &Target,
    max_bytes: Option<u64>,
    progress: &mut dyn Progress,
) -> Result<Value, FsError> {
    let data_bytes = fs.data_blocks() * fs.config().block_bytes;
    let cap = max_bytes.unwrap_or(data_bytes / FILE_CAP_SHARE);
    let mut a = Aging {
        sizes: FileSizeDist::impressions(cap),
        tree: TreeShape::new(&shape.prefix),
        shape,
        created: 0,
        sorted: None,
    };
    a.fill_to(fs, rng, live, target.utilization)?;
    progress.note(&format!("aging: filled to {:.3} with {} files", fs.utilization(), live.len()));
    let start = written(fs);
    let budget =
        target.churn.unwrap_or(if target.free_layout_score.is_some() { SCORE_CHURN_DEFAULT } else { 0.0 });
    let until = start.saturating_add((budget * data_bytes as f64) as u64);
    let (mut cycles, mut reached) = (0u64, None);
    loop {
        if let Some(goal) = target.free_layout_score {
            let score = fs.free_space().0.layout_score;
            reached = Some(score <= goal);
            if score <= goal {
                break;
            }
        }
        let before = written(fs);
        if before >= until {
            break;
        }
        a.fill_to(fs, rng, live, target.high)?;
        a.delete_to(fs, rng, live, target.utilization)?;
        cycles += 1;
        progress.note(&format!(
            "aging: churn cycle {cycles}, {:.2} of {budget} capacities written",
            (written(fs) - start) as f64 / data_bytes as f64
        ));
        if written(fs) == before {
            break;
        }
    }
    let churned = written(fs) - start;
    let mut report = measure(fs, live, &a.sizes);
    let o = report.as_object_mut().expect("measure returns an object");
    o.insert("profile".into(), json!(IMPRESSIONS));
    o.insert("directories".into(), json!(a.tree.directories()));
    o.insert("directories_per_depth".into(), json!(a.tree.per_depth()));
    o.insert("files_created".into(), json!(a.created));
    o.insert("file_bytes_max".into(), json!(cap));
    o.insert("churn_cycles".into(), json!(cycles));
    o.insert("churn_capacities".into(), json!(churned as f64 / data_bytes as f64));
    o.insert("target_utilization".into(), json!(target.utilization));
    o.insert("target_free_layout_score".into(), json!(target.free_layout_score));
    o.insert("target_reached".into(), json!(reached));
    Ok(report)
}

/// The aged file system as measured: its fullness, free space, layout score and live files'
/// size histogram beside the distribution's.
fn measure(fs: &Fs, live: &[String], dist: &FileSizeDist) -> Value {
    let (free, layout) = fs.free_space();
    let mut sizes: Vec<u64> =
        live.iter().filter_map(|n| fs.lookup(n).and_then(|ino| fs.file_size(ino))).collect();
    let ks = ks_distance(dist, &mut sizes);
    json!({
        "utilization": fs.utilization(),
        "files": sizes.len(),
        "file_sizes": size_histogram(&sizes, dist),
        "file_sizes_ks_distance": ks,
        "free_space": free,
        "layout": layout,
    })
}

/// Live files per power-of-two size bucket (`[2^i, 2^(i+1))` bytes), each with its share and
/// the share the distribution gives the bucket. `sizes` is sorted.
fn size_histogram(sizes: &[u64], dist: &FileSizeDist) -> Vec<Value> {
    let n = sizes.len().max(1) as f64;
    let mut out = Vec::new();
    let mut i = 0;
    while i < sizes.len() {
        let low = 1u64 << (63 - sizes[i].max(1).leading_zeros());
        let high = low.saturating_mul(2);
        let j = i + sizes[i..].partition_point(|&s| s < high);
        // The bucket's probability, sizes rounded: P(low - 0.5 < X < high - 0.5).
        let expected = dist.cdf(high as f64 - 0.5) - dist.cdf(low as f64 - 0.5);
        out.push(json!({
            "min_bytes": low,
            "files": j - i,
            "share": (j - i) as f64 / n,
            "expected_share": expected,
        }));
        i = j;
    }
    out
}
