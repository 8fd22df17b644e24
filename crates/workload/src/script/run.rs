//! Runs a script's lines on a mounted file system, as the shell commands they stand for would
//! (each `create` is open + buffered writes + close, `rm -r` walks the tree children first,
//! `umount` leaves the file system unmounted until `mount`).

use super::op::{Op, Pick, SizeSpec};
use super::pattern::{component_matches, is_glob, natural_cmp};
use super::{Line, Script, ScriptError};
use crate::file::FileState;
use rand::seq::index::sample;
use rand::Rng;
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
        let mut it = Interpreter { unmounted_at: None, rng, file_ops: 0 };
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
            Op::Create { paths, size, bs, fsync } => {
                for p in paths {
                    if is_glob(p) {
                        return Err(format!("create names new files; \"{p}\" is a glob"));
                    }
                    let bytes = self.draw(*size);
                    let ino = self.op(fs.create(p)).map_err(|e| existing(e, p))?;
                    self.write_range(fs, ino, 0, bytes, *bs)?;
                    if *fsync {
                        self.op(fs.fsync(ino)).map_err(fs_err)?;
                    }
                }
            }
            Op::Touch(paths) => {
                for p in paths {
                    if fs.lookup(p).is_none() && !fs.is_dir(p) {
                        self.op(fs.create(p)).map_err(fs_err)?;
                    }
                }
            }
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
                Op::Fallocate { offset, bytes, .. } => fs.fallocate(ino, *offset, *bytes),
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
            Op::Mkdir { parents, paths } => {
                for p in paths {
                    self.mkdir(fs, p, *parents)?;
                }
                Ok(())
            }
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
                fs.sync();
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
            return self.op(fs.mkdir(path)).map(|_| ()).map_err(|e| existing(e, path));
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
        words: &[String],
        missing_ok: bool,
    ) -> Result<Vec<Entry>, String> {
        let mut out = Vec::new();
        for w in words {
            if !is_glob(w) {
                match fs.lookup(w) {
                    Some(ino) => out.push((w.clone(), Some(ino))),
                    None if fs.is_dir(w) => out.push((w.clone(), None)),
                    None if missing_ok => {}
                    None => return Err(format!("\"{w}\" does not exist")),
                }
                continue;
            }
            let mut found = glob(fs, w)?;
            if found.is_empty() && !missing_ok {
                return Err(format!("\"{w}\" matches nothing"));
            }
            found.sort_by(|a, b| natural_cmp(&a.0, &b.0));
            out.extend(found);
        }
        Ok(out)
    }

    /// The regular files the words name (a directory among them is an error).
    fn files<D: BlockDevice>(
        &self,
        fs: &FileSystem<D>,
        words: &[String],
    ) -> Result<Vec<(String, Ino)>, String> {
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
        words: &[String],
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
            if let Some(period) = p.period_ns {
                config.params.fstrim_period_ns = period;
            }
        }
        match remount && self.unmounted_at.is_none() {
            true => fs.remount_with(config.policy, config.params),
            false => fs.mount_with(config.policy, config.params),
        }
        self.unmounted_at = None;
        Ok(())
    }
}

/// The paths matching `pattern`, found as a shell does: component by component down the tree
/// (a literal component is one lookup, a glob component filters one directory's entries), so
/// a pattern costs what it visits, not the whole namespace.
fn glob<D: BlockDevice>(fs: &FileSystem<D>, pattern: &str) -> Result<Vec<Entry>, String> {
    let parts: Vec<&str> = pattern.split('/').collect();
    let mut level: Vec<Entry> = vec![(String::new(), None)];
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let join =
            |dir: &str, name: &str| if dir.is_empty() { name.to_string() } else { format!("{dir}/{name}") };
        let mut next = Vec::new();
        for (dir, _) in &level {
            if !is_glob(part) {
                let path = join(dir, part);
                if fs.is_dir(&path) {
                    next.push((path, None));
                } else if let Some(ino) = fs.lookup(&path).filter(|_| last) {
                    next.push((path, Some(ino)));
                }
                continue;
            }
            for (name, ino, is_dir) in fs.children(dir).map_err(|e| e.to_string())? {
                if (last || is_dir) && component_matches(part.as_bytes(), name.as_bytes()) {
                    next.push((join(dir, &name), (!is_dir).then_some(ino)));
                }
            }
        }
        level = next;
    }
    Ok(level)
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
