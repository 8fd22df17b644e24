//! File-level workloads of the source documents, driving a mounted `trimlab_fs::FileSystem`:
//! the Lazy TRIM micro-benchmark (000), file-system aging and Postmark (001), and parallel
//! large-file writes for a bulk `rm` (003).

use rand::seq::SliceRandom;
use rand::Rng;
use trimlab_device::BlockDevice;
use trimlab_fs::{FileSystem, FsError, Ino};
use trimlab_sim::{SimRng, SimTime};

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

/// Deletes random files of `names` until utilization is at most `target`; returns the rest.
pub fn delete_down_to<D: BlockDevice>(
    fs: &mut FileSystem<D>,
    rng: &mut SimRng,
    mut names: Vec<String>,
    target: f64,
) -> Result<Vec<String>, FsError> {
    names.shuffle(rng);
    while fs.utilization() > target {
        let Some(name) = names.pop() else { break };
        fs.unlink(&name)?;
    }
    names.sort();
    fs.sync();
    Ok(names)
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
    pub fn run<D: BlockDevice>(
        &self,
        fs: &mut FileSystem<D>,
        rng: &mut SimRng,
        tag: &str,
    ) -> Result<u64, FsError> {
        let t0 = fs.now();
        let mut live: Vec<String> = Vec::new();
        let mut n = 0;
        let mut create =
            |fs: &mut FileSystem<D>, rng: &mut SimRng, live: &mut Vec<String>| -> Result<(), FsError> {
                let name = format!("pm{tag}_{n}");
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
