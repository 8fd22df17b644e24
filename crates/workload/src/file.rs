//! File-level workloads of the source documents, driving a mounted `trimlab_fs::FileSystem`:
//! the Lazy TRIM micro-benchmark (000), file-system aging and Postmark (001), and parallel
//! large-file writes for a bulk `rm` (003), Table II's remove-on-a-full-fs, and file churn,
//! with the state they share across phases (`FileState`) and the figures they report.

use rand::seq::SliceRandom;
use rand::Rng;
use std::collections::BTreeMap;
use trimlab_device::BlockDevice;
use trimlab_fs::{FileSystem, FsError, Ino};
use trimlab_sim::{ByteSize, SeedTree, SimRng, SimTime};

/// One run of the 000 micro-benchmark.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MicroResult {
    pub extents: usize,
    /// Latency of the fsync after the unlink.
    pub fsync_ns: u64,
    /// From the start of that fsync until the last TRIM of the file completed.
    pub trim_issue_ns: u64,
    pub trim_commands: u64,
}

/// 000's micro-benchmark: create a file, append `append_bytes` then lseek past a hole of the
/// same size, alternately, until the file spans `file_bytes`; fsync it (so its blocks are on
/// the device), unlink it, fsync (the measured call), then let background TRIMs finish.
pub fn lazy_micro<D: BlockDevice>(
    fs: &mut FileSystem<D>,
    append_bytes: u64,
    file_bytes: u64,
) -> Result<MicroResult, FsError> {
    let marker = fs.create("marker")?;
    let ino = fs.create("bench")?;
    let mut off = 0;
    while off < file_bytes {
        fs.write(ino, off, append_bytes)?;
        off += 2 * append_bytes;
    }
    fs.fsync(ino)?;
    let extents = fs.extent_count(ino).unwrap_or(0);
    fs.quiesce();
    let trims_before = fs.stats().trim_commands;
    fs.unlink("bench")?;
    let t0 = fs.now();
    fs.fsync(marker)?;
    let fsync_ns = fs.now().since(t0);
    fs.quiesce();
    let last = SimTime(fs.stats().last_trim_done_ns);
    Ok(MicroResult {
        extents,
        fsync_ns,
        trim_issue_ns: last.since(t0),
        trim_commands: fs.stats().trim_commands - trims_before,
    })
}

/// Writes one file of `bytes` in `chunk` appends (each followed by a hole of `hole` bytes).
/// On ENOSPC the partial file stays (the file system is then full) and the error returns.
pub fn write_file<D: BlockDevice>(
    fs: &mut FileSystem<D>,
    name: &str,
    bytes: u64,
    chunk: u64,
    hole: u64,
) -> Result<Ino, FsError> {
    let ino = fs.create(name)?;
    let mut off = 0;
    let mut written = 0;
    while written < bytes {
        let n = chunk.min(bytes - written);
        fs.write(ino, off, n)?;
        written += n;
        off += n + hole;
    }
    Ok(ino)
}

/// Fills the file system with files of `min..=max` bytes (written in `chunk` appends with
/// `hole`-byte holes) until utilization reaches `until_utilization` or no space is left
/// (the file that hit ENOSPC stays, partly written); returns the names.
// The file shape (sizes, chunk, hole) and the stop condition are all part of one aging recipe.
#[allow(clippy::too_many_arguments)]
pub fn fill<D: BlockDevice>(
    fs: &mut FileSystem<D>,
    rng: &mut SimRng,
    prefix: &str,
    min: u64,
    max: u64,
    chunk: u64,
    hole: u64,
    until_utilization: f64,
) -> Result<Vec<String>, FsError> {
    let mut names = Vec::new();
    let mut i = 0;
    while fs.utilization() < until_utilization {
        let name = format!("{prefix}{i}");
        i += 1;
        let size = rng.gen_range(min..=max);
        match write_file(fs, &name, size, chunk, hole) {
            Ok(_) => names.push(name),
            Err(FsError::NoSpace) => {
                names.push(name);
                break;
            }
            Err(FsError::NoInodes) => break,
            Err(e) => return Err(e),
        }
    }
    fs.sync();
    Ok(names)
}

/// Deletes random files of `names` until utilization is at most `target`; returns the rest,
/// sorted.
pub fn delete_down_to<D: BlockDevice>(
    fs: &mut FileSystem<D>,
    rng: &mut SimRng,
    names: Vec<String>,
    target: f64,
) -> Result<Vec<String>, FsError> {
    let sorted = 1 + names.windows(2).take_while(|w| w[0] <= w[1]).count();
    delete_down_to_appended(fs, rng, names, sorted, target)
}

/// [`delete_down_to`] for names whose first `sorted` are in order (what the last call
/// returned, then the names made since appended), which it does not check again: the
/// aging's cycles pass millions of live names, whose reading is the cost.
pub fn delete_down_to_appended<D: BlockDevice>(
    fs: &mut FileSystem<D>,
    rng: &mut SimRng,
    mut names: Vec<String>,
    sorted: usize,
    target: f64,
) -> Result<Vec<String>, FsError> {
    // The victims are the last of a shuffle of the names; shuffling their indices draws the
    // same permutation (the shuffle's draws depend on the length only) and leaves the names
    // where they were: the rest keeps the sorted part in order.
    let mut order: Vec<usize> = (0..names.len()).collect();
    order.shuffle(rng);
    let mut gone = vec![false; names.len()];
    while fs.utilization() > target {
        let Some(i) = order.pop() else { break };
        fs.unlink(&names[i])?;
        gone[i] = true;
    }
    drop(order);
    let sorted = sorted.min(names.len());
    let sorted_left = sorted - gone[..sorted].iter().filter(|g| **g).count();
    let mut i = 0;
    names.retain(|_| {
        i += 1;
        !gone[i - 1]
    });
    sort_appended(&mut names, sorted_left);
    fs.sync();
    Ok(names)
}

/// Sorts `names`, whose first `sorted` are in order, as `sort_unstable` would (equal names
/// are equal strings: any order of them is the same). The rest is sorted alone and merged in
/// from the back, each of its names placed by a galloping search among the sorted ones, so a
/// few names appended to many are placed reading a few of the many each (each read of a
/// name is a cache miss when there are millions).
pub fn sort_appended(names: &mut Vec<String>, sorted: usize) {
    if sorted >= names.len() {
        return;
    }
    let mut tail = names.split_off(sorted);
    tail.sort_unstable();
    names.resize(sorted + tail.len(), String::new());
    // names[..head] and tail[..rest] are still to place; names[head..head + rest] are
    // empty placeholders; what lies past them is in its place.
    let mut head = sorted;
    for rest in (1..=tail.len()).rev() {
        let t = std::mem::take(&mut tail[rest - 1]);
        let at = gallop_back(&names[..head], &t);
        for k in (at..head).rev() {
            names.swap(k + rest, k);
        }
        head = at;
        names[head + rest - 1] = t;
    }
}

/// Where `t` goes in the sorted `names`: the first index whose name is greater than `t`,
/// searched from the end in steps of 1, 2, 4, ... and then by halving.
fn gallop_back(names: &[String], t: &str) -> usize {
    // names[hi..] are greater than t; find lo with names[lo - 1] <= t (or lo = 0).
    let (mut hi, mut step) = (names.len(), 1);
    let lo = loop {
        match hi.checked_sub(step) {
            Some(probe) if names[probe].as_str() > t => {
                hi = probe;
                step *= 2;
            }
            Some(probe) => break probe + 1,
            None => break 0,
        }
    };
    lo + names[lo..hi].partition_point(|n| n.as_str() <= t)
}

/// Postmark (Katcher 1997) as 001 runs it, scaled: `files` initial files of `min..=max` bytes,
/// `transactions` transactions of (create or delete) + (read or append), then every file is
/// deleted. Returns the elapsed simulated time.
#[derive(Clone, Debug, PartialEq)]
pub struct Postmark {
    pub files: usize,
    pub min_bytes: u64,
    pub max_bytes: u64,
    pub transactions: usize,
    /// Size of each write call (Postmark's write block size).
    pub block_bytes: u64,
}

impl Postmark {
    /// Files are named `{prefix}{n}`.
    pub fn run<D: BlockDevice>(
        &self,
        fs: &mut FileSystem<D>,
        rng: &mut SimRng,
        prefix: &str,
    ) -> Result<u64, FsError> {
        let t0 = fs.now();
        let mut live: Vec<String> = Vec::new();
        let mut n = 0;
        let mut create =
            |fs: &mut FileSystem<D>, rng: &mut SimRng, live: &mut Vec<String>| -> Result<(), FsError> {
                let name = format!("{prefix}{n}");
                n += 1;
                let size = rng.gen_range(self.min_bytes..=self.max_bytes);
                match write_file(fs, &name, size, self.block_bytes, 0) {
                    Ok(_) | Err(FsError::NoSpace) => live.push(name),
                    Err(FsError::NoInodes) => {}
                    Err(e) => return Err(e),
                }
                Ok(())
            };
        for _ in 0..self.files {
            create(fs, rng, &mut live)?;
        }
        for _ in 0..self.transactions {
            if rng.gen_bool(0.5) || live.is_empty() {
                create(fs, rng, &mut live)?;
            } else {
                let i = rng.gen_range(0..live.len());
                let name = live.swap_remove(i);
                fs.unlink(&name)?;
            }
            if live.is_empty() {
                continue;
            }
            let name = &live[rng.gen_range(0..live.len())];
            let Some(ino) = fs.lookup(name) else { continue };
            let size = fs.file_size(ino).unwrap_or(0);
            if rng.gen_bool(0.5) {
                let mut off = 0;
                while off < size {
                    fs.read(ino, off, self.block_bytes)?;
                    off += self.block_bytes;
                }
            } else {
                let bytes = rng.gen_range(1..=self.block_bytes);
                match fs.write(ino, size, bytes) {
                    Ok(_) | Err(FsError::NoSpace) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        for name in live {
            fs.unlink(&name)?;
        }
        fs.sync();
        Ok(fs.now().since(t0))
    }
}

/// 003's copy: `files` files of `bytes` each written "in parallel" with O_DIRECT writes of
/// `chunk` bytes, round-robin across the files. Returns the names.
pub fn parallel_direct_writes<D: BlockDevice>(
    fs: &mut FileSystem<D>,
    files: usize,
    bytes: u64,
    chunk: u64,
) -> Result<Vec<String>, FsError> {
    let names: Vec<String> = (0..files).map(|i| format!("file{i}")).collect();
    let inos: Vec<Ino> = names.iter().map(|n| fs.create(n)).collect::<Result<_, _>>()?;
    let mut off = 0;
    while off < bytes {
        let n = chunk.min(bytes - off);
        for &ino in &inos {
            fs.write_direct(ino, off, n)?;
        }
        off += n;
    }
    fs.sync();
    Ok(names)
}

/// Named figures a file workload reports (nanoseconds, counts), in a fixed order.
pub type Figures = Vec<(&'static str, u64)>;

/// What file-level workloads and phases share over a run: the live files (in the order the
/// workloads keep them: deletions pick from it at random) and the named random streams.
pub struct FileState {
    pub live: Vec<String>,
    /// The calls of the last strace replay that no reader knows, by name (metrics.json's
    /// `phases[i].unknown_calls`; the phase takes them).
    pub strace_unknown_calls: BTreeMap<String, u64>,
    seeds: SeedTree,
    streams: BTreeMap<String, SimRng>,
}

impl FileState {
    pub fn new(seeds: SeedTree) -> FileState {
        FileState { live: Vec::new(), strace_unknown_calls: BTreeMap::new(), seeds, streams: BTreeMap::new() }
    }

    /// Runs `f` with the stream `name` (forked from the run's seed on first use; later users
    /// continue where the last one stopped) and the live file list.
    pub fn with_stream<R>(&mut self, name: &str, f: impl FnOnce(&mut SimRng, &mut Vec<String>) -> R) -> R {
        let mut rng = self.streams.remove(name).unwrap_or_else(|| self.seeds.fork(name));
        let r = f(&mut rng, &mut self.live);
        self.streams.insert(name.to_string(), rng);
        r
    }
}

/// The shape of the files an aging step writes.
#[derive(Clone, Debug, PartialEq)]
pub struct FileShape {
    pub prefix: String,
    pub min_bytes: u64,
    pub max_bytes: u64,
    /// Each write call's size, and the hole left after it.
    pub chunk_bytes: u64,
    pub hole_bytes: u64,
}

impl FileShape {
    /// 001's aging files: 1-8 MiB written in 256 KiB appends, no holes; the keys given
    /// (`prefix`, `file_bytes_min`, `file_bytes_max`, `append_bytes`, `hole_bytes`) replace those.
    pub fn aging(
        prefix: Option<&str>,
        min: Option<ByteSize>,
        max: Option<ByteSize>,
        append: Option<ByteSize>,
        hole: Option<ByteSize>,
    ) -> FileShape {
        FileShape {
            prefix: prefix.unwrap_or("age").to_string(),
            min_bytes: min.map_or(1 << 20, |b| b.0),
            max_bytes: max.map_or(8 << 20, |b| b.0),
            chunk_bytes: append.map_or(256 << 10, |b| b.0),
            hole_bytes: hole.map_or(0, |b| b.0),
        }
    }
}

/// Brings utilization to `target`: creates files while below it (appended to `live`), else
/// deletes random live files down to it (001's schedule step).
pub fn set_utilization<D: BlockDevice>(
    fs: &mut FileSystem<D>,
    rng: &mut SimRng,
    live: &mut Vec<String>,
    shape: &FileShape,
    target: f64,
) -> Result<(), FsError> {
    if fs.utilization() < target {
        let s = shape;
        live.extend(fill(fs, rng, &s.prefix, s.min_bytes, s.max_bytes, s.chunk_bytes, s.hole_bytes, target)?);
    } else {
        *live = delete_down_to(fs, rng, std::mem::take(live), target)?;
    }
    Ok(())
}

/// 001's aging: fill to 100 %, then delete random files down to `utilization`.
pub fn age<D: BlockDevice>(
    fs: &mut FileSystem<D>,
    rng: &mut SimRng,
    live: &mut Vec<String>,
    shape: &FileShape,
    utilization: f64,
) -> Result<(), FsError> {
    let s = shape;
    live.extend(fill(fs, rng, &s.prefix, s.min_bytes, s.max_bytes, s.chunk_bytes, s.hole_bytes, 1.0)?);
    *live = delete_down_to(fs, rng, std::mem::take(live), utilization)?;
    Ok(())
}

/// 003's bulk copy and `rm`: `files` files of `bytes` written in parallel with O_DIRECT writes
/// of `chunk` bytes, then every one unlinked and the file system synced.
pub fn bulk_rm<D: BlockDevice>(
    fs: &mut FileSystem<D>,
    files: usize,
    bytes: u64,
    chunk: u64,
) -> Result<Figures, FsError> {
    let t0 = fs.now();
    let names = parallel_direct_writes(fs, files, bytes, chunk)?;
    let write_ns = fs.now().since(t0);
    let trims0 = fs.stats().trim_commands;
    let t1 = fs.now();
    for n in &names {
        fs.unlink(n)?;
    }
    fs.sync();
    Ok(vec![
        ("write_ns", write_ns),
        ("rm_ns", fs.now().since(t1)),
        ("rm_trim_commands", fs.stats().trim_commands - trims0),
    ])
}

/// File churn: each step deletes a random live file if utilization is above `utilization`,
/// then creates a file of a random size in `min..=max` written in `chunk` appends, until
/// `bytes` have been created.
pub fn file_churn<D: BlockDevice>(
    fs: &mut FileSystem<D>,
    rng: &mut SimRng,
    live: &mut Vec<String>,
    shape: &FileShape,
    utilization: f64,
    bytes: u64,
) -> Result<Figures, FsError> {
    let (mut written, mut i, mut deleted, mut number) = (0, 0, 0, 0u64);
    while written < bytes {
        if fs.utilization() > utilization && !live.is_empty() {
            let k = rng.gen_range(0..live.len());
            let n = live.swap_remove(k);
            fs.unlink(&n)?;
            deleted += 1;
        }
        let size = rng.gen_range(shape.min_bytes..=shape.max_bytes);
        // A later round of the workload (`between = "own"`) finds the earlier rounds' files
        // still there: its names skip those.
        let mut name = format!("{}{number}", shape.prefix);
        while fs.lookup(&name).is_some() {
            number += 1;
            name = format!("{}{number}", shape.prefix);
        }
        number += 1;
        i += 1;
        write_file(fs, &name, size, shape.chunk_bytes, shape.hole_bytes)?;
        live.push(name);
        written += size;
    }
    Ok(vec![("files_created", i), ("files_deleted", deleted), ("bytes_created", written)])
}

/// 000's Table II: fill the file system to 100 % with fragmented files (stream `fill`), write
/// its last blocks one at a time, remove a random file (stream `victim`) and fsync, then time
/// the next write that needs a new block.
pub fn remove_when_full<D: BlockDevice>(
    fs: &mut FileSystem<D>,
    state: &mut FileState,
    shape: &FileShape,
) -> Result<Figures, FsError> {
    let s = shape;
    let names = state.with_stream("fill", |rng, _| {
        fill(fs, rng, &s.prefix, s.min_bytes, s.max_bytes, s.chunk_bytes, s.hole_bytes, 1.0)
    })?;
    match write_file(fs, "filler", u64::MAX / 2, 4096, 0) {
        Err(FsError::NoSpace) => {}
        Err(e) => return Err(e),
        Ok(_) => return Err(FsError::Layout("the filler file of u64::MAX / 2 bytes fitted".into())),
    }
    fs.sync();
    fs.quiesce();
    let victim = state.with_stream("victim", |rng, _| names[rng.gen_range(0..names.len())].clone());
    let ino = fs.lookup(&victim).ok_or_else(|| FsError::NotFound(victim.clone()))?;
    let removed_extents = fs.extent_count(ino).unwrap_or(0) as u64;
    let marker = fs.create("marker")?;
    fs.unlink(&victim)?;
    let t0 = fs.now();
    fs.fsync(marker)?;
    let fsync_ns = fs.now().since(t0);
    let new = fs.create("new")?;
    let t1 = fs.now();
    fs.write(new, 0, 4096)?;
    Ok(vec![("write_ns", fs.now().since(t1)), ("fsync_ns", fsync_ns), ("removed_extents", removed_extents)])
}
