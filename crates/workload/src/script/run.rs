//! Runs a script's lines on a mounted file system, as the shell commands they stand for would
//! (each `create` is open + buffered writes + close, `rm -r` walks the tree children first,
//! `umount` leaves the file system unmounted until `mount`).

use super::op::{Op, Paths, Pick, SizeSpec};
use super::pattern::{component_matches, is_glob, natural_cmp, natural_key};
use super::{Line, Script, ScriptError};
use crate::file::FileState;
use rand::seq::index::sample;
use rand::Rng;
use std::collections::BTreeMap;
use trimlab_device::BlockDevice;
use trimlab_fs::{FileSystem, FsError, Ino};
use trimlab_sim::{SimRng, SimTime};

/// The interpreter's state between lines: whether the file system is mounted (and which line
/// unmounted it), and the script's random stream (`create size=MIN..MAX`, `rm random=N`),
/// borrowed from the run's named streams so that a later phase continues it.
pub struct Interpreter<'r> {
    unmounted_at: Option<usize>,
    rng: &'r mut SimRng,
    /// File operations run (each open/write/fsync/unlink/... call into the file system).
    pub file_ops: u64,
    /// mkdirs that failed with ENOSPC (no inode or no space left): mkdir(1) reports each and
    /// goes on with its next argument, and a shell script with the next line, so the script
    /// does too (a real 256 MiB ext4 takes 65,525 of `mkdir d{1..100000}`).
    pub mkdir_enospc: u64,
}

/// The random stream a script draws from unless its `stream` key names another.
pub const DEFAULT_STREAM: &str = "script";

/// Runs `f` with an interpreter on stream `stream` (default [`DEFAULT_STREAM`]) of `state`,
/// then leaves the file system mounted ([`Interpreter::finish`]) whatever `f` returned.
pub fn with_interpreter<D: BlockDevice, R>(
    fs: &mut FileSystem<D>,
    state: &mut FileState,
    stream: Option<&str>,
    f: impl FnOnce(&mut Interpreter, &mut FileSystem<D>) -> R,
) -> R {
    state.with_stream(stream.unwrap_or(DEFAULT_STREAM), |rng, _| {
        let mut it = Interpreter { unmounted_at: None, rng, file_ops: 0, mkdir_enospc: 0 };
        let result = f(&mut it, fs);
        it.finish(fs);
        result
    })
}

impl Interpreter<'_> {
    /// Runs `lines` of `script` in order; the first failing line is the error (everything
    /// before it has run and stays).
    pub fn run<D: BlockDevice>(
        &mut self,
        fs: &mut FileSystem<D>,
        script: &Script,
        lines: &[Line],
    ) -> Result<(), ScriptError> {
        for line in lines {
            self.line(fs, line).map_err(|m| script.error(line, m))?;
        }
        Ok(())
    }

    /// Leaves the file system mounted at the end of a run (a script that ends unmounted is
    /// mounted again with the policy it had, so the run's umount and check can follow).
    fn finish<D: BlockDevice>(&mut self, fs: &mut FileSystem<D>) {
        if self.unmounted_at.take().is_some() {
            let c = fs.config().clone();
            fs.mount_with(c.policy, c.params);
        }
    }

    fn line<D: BlockDevice>(&mut self, fs: &mut FileSystem<D>, line: &Line) -> Result<(), String> {
        if let Some(at) = self.unmounted_at {
            if !matches!(line.op, Op::Mount { .. } | Op::Sleep(_) | Op::Phase(_)) {
                return Err(format!(
                    "the file system is not mounted (line {at} unmounted it; only mount and sleep may follow)"
                ));
            }
        }
        match &line.op {
            Op::Phase(_) => Ok(()),
            Op::Mkdir { .. } | Op::Rm { .. } | Op::Rmdir(_) | Op::Mv { .. } => self.tree_op(fs, &line.op),
            Op::Sync
            | Op::Sleep(_)
            | Op::Fstrim { .. }
            | Op::Umount
            | Op::Mount { .. }
            | Op::Remount { .. } => self.fs_op(fs, &line.op, line.number),
            _ => self.file_op(fs, &line.op),
        }
    }

    /// Operations on files' contents: create, touch, write, append, fsync, truncate,
    /// fallocate, punch-hole.
    fn file_op<D: BlockDevice>(&mut self, fs: &mut FileSystem<D>, op: &Op) -> Result<(), String> {
        let fs_err = |e: FsError| e.to_string();
        match op {
            Op::Create { paths, size, bs, fsync } => paths.each(&mut |p| {
                if is_glob(p) {
                    return Err(format!("create names new files; \"{p}\" is a glob"));
                }
                let bytes = self.draw(*size);
                let ino = self.op(fs.create(p)).map_err(|e| existing(e, p))?;
                self.write_range(fs, ino, 0, bytes, *bs)?;
                if *fsync {
                    self.op(fs.fsync(ino)).map_err(fs_err)?;
                }
                Ok(())
            })?,
            Op::Touch(paths) => paths.each::<String>(&mut |p| {
                if fs.entry(p).is_none() {
                    self.op(fs.create(p)).map_err(fs_err)?;
                }
                Ok(())
            })?,
            Op::Write { paths, offset, bytes, bs } => {
                for (_, ino) in self.files(fs, paths)? {
                    self.write_range(fs, ino, *offset, *bytes, *bs)?;
                }
            }
            Op::Append { paths, bytes, bs } => {
                for (_, ino) in self.files(fs, paths)? {
                    let end = fs.file_size(ino).unwrap_or(0);
                    self.write_range(fs, ino, end, *bytes, *bs)?;
                }
            }
            _ => return self.range_op(fs, op),
        }
        Ok(())
    }

    /// fsync, truncate, fallocate, punch-hole: one call per named file.
    fn range_op<D: BlockDevice>(&mut self, fs: &mut FileSystem<D>, op: &Op) -> Result<(), String> {
        let paths = match op {
            Op::Fsync { paths }
            | Op::Truncate { paths, .. }
            | Op::Fallocate { paths, .. }
            | Op::PunchHole { paths, .. } => paths,
            other => return Err(format!("not a file operation: {other:?}")),
        };
        for (_, ino) in self.files(fs, paths)? {
            let done = match op {
                Op::Fsync { .. } => fs.fsync(ino),
                Op::Truncate { size, .. } => fs.truncate(ino, *size),
                Op::Fallocate { offset, bytes, .. } => {
                    trimlab_importers::space::check_fits(fs, ino, *offset, *bytes)
                        .and_then(|()| fs.fallocate(ino, *offset, *bytes))
                }
                Op::PunchHole { offset, bytes, .. } => fs.punch_hole(ino, *offset, *bytes),
                _ => Ok(()),
            };
            self.op(done).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// The namespace: mkdir, rm, rmdir, mv.
    fn tree_op<D: BlockDevice>(&mut self, fs: &mut FileSystem<D>, op: &Op) -> Result<(), String> {
        match op {
            Op::Mkdir { parents, paths } => paths.each(&mut |p| self.mkdir(fs, p, *parents)),
            Op::Rm { recursive, force, paths, pick } => self.rm(fs, paths, *recursive, *force, pick),
            Op::Rmdir(paths) => {
                for (p, _) in self.matches(fs, paths, false)? {
                    self.op(fs.rmdir(&p)).map_err(|e| e.to_string())?;
                }
                Ok(())
            }
            Op::Mv { from, to } => self.op(fs.rename(from, to)).map_err(|e| e.to_string()),
            other => Err(format!("not a namespace operation: {other:?}")),
        }
    }

    /// The whole file system: sync, sleep, fstrim, umount, mount, remount.
    fn fs_op<D: BlockDevice>(&mut self, fs: &mut FileSystem<D>, op: &Op, line: usize) -> Result<(), String> {
        match op {
            Op::Sync => {
                // sync(1) is sync(2): the commit, then every block device's write-back
                // (fs/sync.c ksys_sync -> sync_bdevs), which writes the metadata that commit
                // made dirty home, as the strace replay's sync does.
                fs.sync();
                fs.write_back_checkpoint();
                self.file_ops += 1;
            }
            Op::Sleep(ns) => fs.idle_until(SimTime(fs.now().ns().saturating_add(*ns))),
            Op::Fstrim { minlen, offset, length } => {
                fs.fstrim(*offset, *length, *minlen);
                self.file_ops += 1;
            }
            Op::Umount => {
                fs.umount();
                self.unmounted_at = Some(line);
            }
            Op::Mount { discard } => self.mount(fs, discard.as_deref(), false)?,
            Op::Remount { discard } => self.mount(fs, discard.as_deref(), true)?,
            other => return Err(format!("not a file-system operation: {other:?}")),
        }
        Ok(())
    }

    /// Counts one file-system call.
    fn op<T>(&mut self, r: Result<T, FsError>) -> Result<T, FsError> {
        self.file_ops += 1;
        r
    }

    fn draw(&mut self, size: SizeSpec) -> u64 {
        match size {
            SizeSpec::Fixed(b) => b,
            SizeSpec::Uniform(lo, hi) => {
                let steps = (hi - lo) / 4096;
                lo + 4096 * self.rng.gen_range(0..=steps)
            }
        }
    }

    /// Buffered writes of `[offset, offset + bytes)` in `bs` pieces (one write by default).
    fn write_range<D: BlockDevice>(
        &mut self,
        fs: &mut FileSystem<D>,
        ino: Ino,
        offset: u64,
        bytes: u64,
        bs: Option<u64>,
    ) -> Result<(), String> {
        let end = offset.checked_add(bytes).ok_or("offset + bytes passes 2^64")?;
        // A range larger than the file system fails as the model would, before it walks it.
        trimlab_importers::space::check_fits(fs, ino, offset, bytes).map_err(|e| e.to_string())?;
        let step = bs.unwrap_or(bytes).max(1);
        let mut at = offset;
        while at < end {
            let n = step.min(end - at);
            self.op(fs.write(ino, at, n)).map_err(|e| e.to_string())?;
            at += n;
        }
        Ok(())
    }

    fn mkdir<D: BlockDevice>(
        &mut self,
        fs: &mut FileSystem<D>,
        path: &str,
        parents: bool,
    ) -> Result<(), String> {
        if !parents {
            return match self.op(fs.mkdir(path)) {
                Err(FsError::NoSpace | FsError::NoInodes) => {
                    self.mkdir_enospc += 1;
                    Ok(())
                }
                r => r.map(|_| ()).map_err(|e| existing(e, path)),
            };
        }
        let mut prefix = String::new();
        for part in path.split('/') {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(part);
            if fs.is_dir(&prefix) {
                continue;
            }
            if fs.lookup(&prefix).is_some() {
                return Err(format!("\"{prefix}\" is a file, not a directory"));
            }
            self.op(fs.mkdir(&prefix)).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// The paths the words name: a literal path as it is (it must exist unless `missing_ok`),
    /// a glob as its matches in natural order (none is an error, as bash's failglob).
    fn matches<D: BlockDevice>(
        &self,
        fs: &FileSystem<D>,
        words: &Paths,
        missing_ok: bool,
    ) -> Result<Vec<Entry>, String> {
        let (mut out, mut listings) = (Vec::new(), Listings::new());
        words.each(&mut |w| {
            if !is_glob(w) {
                match fs.entry(w) {
                    Some((ino, false)) => out.push((w.to_string(), Some(ino))),
                    Some((_, true)) => out.push((w.to_string(), None)),
                    None if missing_ok => {}
                    None => return Err(format!("\"{w}\" does not exist")),
                }
                return Ok(());
            }
            let found = glob(fs, w, &mut listings)?;
            if found.is_empty() && !missing_ok {
                return Err(format!("\"{w}\" matches nothing"));
            }
            out.extend(found);
            Ok(())
        })?;
        Ok(out)
    }

    /// The regular files the words name (a directory among them is an error).
    fn files<D: BlockDevice>(&self, fs: &FileSystem<D>, words: &Paths) -> Result<Vec<(String, Ino)>, String> {
        self.matches(fs, words, false)?
            .into_iter()
            .map(|(p, ino)| match ino {
                Some(ino) => Ok((p, ino)),
                None => Err(format!("\"{p}\" is a directory, not a file")),
            })
            .collect()
    }

    fn rm<D: BlockDevice>(
        &mut self,
        fs: &mut FileSystem<D>,
        words: &Paths,
        recursive: bool,
        force: bool,
        pick: &Pick,
    ) -> Result<(), String> {
        let all = self.matches(fs, words, force)?;
        let chosen: Vec<Entry> = match pick {
            Pick::All => all,
            Pick::Every { every, start } => all.into_iter().skip(*start).step_by(*every).collect(),
            Pick::Random(n) if *n > all.len() => {
                return Err(format!("random={n}: the pattern matches only {} paths", all.len()));
            }
            Pick::Random(n) => {
                let mut idx = sample(&mut *self.rng, all.len(), *n).into_vec();
                idx.sort_unstable();
                idx.into_iter().map(|i| all[i].clone()).collect()
            }
        };
        for (p, ino) in chosen {
            match (ino.is_none(), recursive) {
                (true, false) => return Err(format!("\"{p}\" is a directory (rm -r removes trees)")),
                (true, true) => self.remove_tree(fs, &p)?,
                (false, _) => self.op(fs.unlink(&p)).map_err(|e| e.to_string())?,
            }
        }
        Ok(())
    }

    /// `rm -r`: children before their directory, each directory's entries in readdir order
    /// (ext4: name-hash order), as coreutils' rm walks a tree.
    fn remove_tree<D: BlockDevice>(&mut self, fs: &mut FileSystem<D>, dir: &str) -> Result<(), String> {
        let children = fs.readdir(dir).map_err(|e| e.to_string())?;
        for (name, _, is_dir) in children {
            let path = format!("{dir}/{name}");
            match is_dir {
                true => self.remove_tree(fs, &path)?,
                false => self.op(fs.unlink(&path)).map_err(|e| e.to_string())?,
            }
        }
        self.op(fs.rmdir(dir)).map_err(|e| e.to_string())
    }

    fn mount<D: BlockDevice>(
        &mut self,
        fs: &mut FileSystem<D>,
        discard: Option<&str>,
        remount: bool,
    ) -> Result<(), String> {
        if !remount && self.unmounted_at.is_none() {
            return Err("the file system is already mounted (umount it first, or use remount)".to_string());
        }
        let mut config = fs.config().clone();
        if let Some(text) = discard {
            let p = trimlab_fs::policy::parse(text).map_err(|e| format!("discard={text}: {e}"))?;
            config.policy = p.kind;
            config.params.overlay(&p.params);
        }
        match remount && self.unmounted_at.is_none() {
            true => fs.remount_with(config.policy, config.params),
            false => fs.mount_with(config.policy, config.params),
        }
        self.unmounted_at = None;
        Ok(())
    }
}

/// The paths matching `pattern` in natural order, found as a shell does: component by
/// component down the tree (a literal component is one lookup, a glob component filters one
/// directory's entries), so a pattern costs what it visits, not the whole namespace.
///
/// Each directory's matches are put in natural order by name as they are listed, which for
/// paths of one directory is their order as whole paths (the same text before the name); only
/// where one directory's matches meet the next's are the whole paths compared, and should a
/// pair there be out of order (`a/x` after `a-b/y`: '-' sorts before '/'), the whole list is
/// sorted as before.
fn glob<'f, D: BlockDevice>(
    fs: &'f FileSystem<D>,
    pattern: &str,
    cache: &mut Listings<'f>,
) -> Result<Vec<Entry>, String> {
    let parts: Vec<&str> = pattern.split('/').collect();
    // Each hit: its path, inode, whether a directory, and which hit of the level before
    // holds it; the root is the directory None.
    let mut level: Vec<Hit> = vec![Hit { path: String::new(), ino: 0, is_dir: true, parent: 0 }];
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let mut next = Vec::new();
        for (d, hit) in level.iter().enumerate() {
            let dir = (i > 0).then_some(hit.ino);
            if !is_glob(part) {
                match fs.entry_in(dir, part) {
                    Some((ino, is_dir)) if is_dir || last => {
                        next.push(Hit { path: join(&hit.path, part), ino, is_dir, parent: d })
                    }
                    _ => {}
                }
                continue;
            }
            let names = cache.entry((dir, part.to_string())).or_insert_with(|| {
                let listed = fs.dir_entries_in(dir).into_iter().flatten();
                let mut names: Vec<(&str, Ino, bool)> = listed
                    .filter(|&(name, _, _)| component_matches(part.as_bytes(), name.as_bytes()))
                    .collect();
                sort_natural(&mut names);
                names
            });
            let hits = names.iter().filter(|e| last || e.2);
            next.extend(hits.map(|(name, ino, is_dir)| Hit {
                path: join(&hit.path, name),
                ino: *ino,
                is_dir: *is_dir,
                parent: d,
            }));
        }
        level = next;
    }
    let in_order =
        level.windows(2).all(|w| w[0].parent == w[1].parent || natural_cmp(&w[0].path, &w[1].path).is_le());
    let mut found: Vec<Entry> = level.into_iter().map(|h| (h.path, (!h.is_dir).then_some(h.ino))).collect();
    if !in_order {
        found.sort_by(|a, b| natural_cmp(&a.0, &b.0));
    }
    Ok(found)
}

/// One level of a glob's walk: a path found, and which directory of the level before holds
/// it (paths of one directory are in order among themselves).
struct Hit {
    path: String,
    ino: Ino,
    is_dir: bool,
    parent: usize,
}

/// A line's directory listings by (directory, glob component), the names matching it in
/// natural order (files too: a word's last component takes them, the others not): the words
/// of one line (`d*/f{0..999..2}` is 500 of them) list the same directories, and nothing
/// changes the tree while a line's words are matched. The names are borrowed from the file
/// system's entries (a `String` per listed name cost more than the listing).
type Listings<'f> = BTreeMap<(Option<Ino>, String), Vec<(&'f str, Ino, bool)>>;

/// One directory's entries in natural order by name: by a packed sort key where every name's
/// fits in 128 bits (`natural_key`), else by comparing the names.
fn sort_natural(names: &mut [(&str, Ino, bool)]) {
    let keys: Option<Vec<(u128, usize)>> =
        names.iter().enumerate().map(|(i, e)| natural_key(e.0).map(|k| (k, i))).collect();
    match keys {
        Some(mut keys) => {
            keys.sort_unstable();
            let sorted: Vec<(&str, Ino, bool)> = keys.iter().map(|&(_, i)| names[i]).collect();
            names.copy_from_slice(&sorted);
        }
        None => names.sort_by(|a, b| natural_cmp(a.0, b.0)),
    }
}

/// `dir/name` ("" is the root).
fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        return name.to_string();
    }
    let mut path = String::with_capacity(dir.len() + 1 + name.len());
    path.push_str(dir);
    path.push('/');
    path.push_str(name);
    path
}

/// A path and, for a file, its inode (None: a directory).
type Entry = (String, Option<Ino>);

/// `create`/`mkdir` of an existing path says which line's path it was.
fn existing(e: FsError, path: &str) -> String {
    match e {
        FsError::Exists(_) => format!("\"{path}\" already exists"),
        other => other.to_string(),
    }
}
