//! The replayed calls, by what they touch: descriptors (open, close, dup, fcntl, chdir), file
//! contents (write, read, lseek, the st_size of pre-existing files), and the rest (fsync,
//! truncate, fallocate, unlink, rmdir, mkdir, rename).

use super::{Replayer, Step};
use crate::strace::line::{has_flag, number, string};
use crate::strace::process::{under_root, Fd, Target};
use trimlab_device::BlockDevice;
use trimlab_fs::{FileSystem, Ino};

impl Replayer {
    /// open, creat, openat, openat2: the new descriptor `r` and, under the root, its file
    /// (created when O_CREAT says so, or as a pre-existing file when the model lacks it).
    pub(super) fn open<D: BlockDevice>(
        &mut self,
        fs: &mut FileSystem<D>,
        pid: u32,
        name: &str,
        argv: &[&str],
        r: i64,
    ) -> Step {
        let (dirfd, path, flags) = match name {
            "open" => (None, argv.first(), argv.get(1).copied().unwrap_or("")),
            "creat" => (None, argv.first(), "O_WRONLY|O_CREAT|O_TRUNC"),
            "openat" => (argv.first().copied(), argv.get(1), argv.get(2).copied().unwrap_or("")),
            _ => (argv.first().copied(), argv.get(1), openat2_flags(argv.get(2).copied().unwrap_or(""))),
        };
        let fd = |target| Fd {
            target,
            pos: 0,
            append: has_flag(flags, "O_APPEND"),
            cloexec: has_flag(flags, "O_CLOEXEC"),
        };
        let abs = path.and_then(|p| string(p)).and_then(|p| self.resolve(pid, dirfd, &p));
        let target = match abs {
            None => Target::Skipped,
            Some(abs) => match under_root(&self.options.root, &abs).map(str::to_string) {
                Some(rel) => self.open_in_root(fs, &rel, flags, abs)?,
                None if has_flag(flags, "O_DIRECTORY") => Target::Dir(abs),
                None => {
                    self.counts.outside_root += 1;
                    Target::Skipped
                }
            },
        };
        self.set_fd(pid, r, fd(target));
        Ok(())
    }

    fn open_in_root<D: BlockDevice>(
        &mut self,
        fs: &mut FileSystem<D>,
        rel: &str,
        flags: &str,
        abs: String,
    ) -> Result<Target, String> {
        if rel.is_empty() || fs.is_dir(rel) {
            return Ok(Target::Dir(abs));
        }
        if has_flag(flags, "O_DIRECTORY") {
            self.ensure_dir(fs, rel)?;
            return Ok(Target::Dir(abs));
        }
        if let Some(ino) = fs.lookup(rel) {
            if has_flag(flags, "O_TRUNC") && fs.file_size(ino).unwrap_or(0) > 0 {
                let done = fs.truncate(ino, 0);
                self.fs_done(done)?;
                self.preexisting.remove(&ino);
            }
            return Ok(Target::File(ino));
        }
        self.ensure_parents(fs, rel)?;
        let made = fs.create(rel);
        let Some(ino) = self.fs_done(made)? else { return Ok(Target::Skipped) };
        if !has_flag(flags, "O_CREAT") {
            self.counts.preexisting_files += 1;
            self.preexisting.insert(ino);
        }
        Ok(Target::File(ino))
    }

    /// close, close_range, dup, dup2, dup3, fcntl, chdir, fchdir.
    pub(super) fn fd_call(&mut self, pid: u32, name: &str, argv: &[&str], r: i64) -> Step {
        let arg = |i: usize| argv.get(i).copied();
        match name {
            "close" => {
                if let Some(n) = arg(0).and_then(number) {
                    self.procs.get(pid).fds.borrow_mut().remove(&n);
                }
            }
            "close_range" => self.close_range(pid, argv),
            "dup" | "dup2" | "dup3" => {
                let cloexec = name == "dup3" && arg(2).is_some_and(|f| has_flag(f, "O_CLOEXEC"));
                self.dup(pid, arg(0), r, cloexec);
            }
            "chdir" => {
                if let Some(abs) = arg(0).and_then(string).and_then(|p| self.resolve(pid, None, &p)) {
                    self.procs.get(pid).cwd = abs.into();
                }
            }
            "fchdir" => {
                if let Some(Target::Dir(p)) = self.fd(pid, arg(0)).map(|f| f.target) {
                    self.procs.get(pid).cwd = p.into();
                }
            }
            _ => self.fcntl(pid, argv, r),
        }
        Ok(())
    }

    /// Descriptor `new` becomes a copy of `old` (a descriptor the trace never opened leaves
    /// `new` skipped).
    fn dup(&mut self, pid: u32, old: Option<&str>, new: i64, cloexec: bool) {
        let copy = match self.fd(pid, old) {
            Some(fd) => Fd { cloexec, ..fd },
            None => Fd { target: Target::Skipped, pos: 0, append: false, cloexec },
        };
        self.set_fd(pid, new, copy);
    }

    fn close_range(&mut self, pid: u32, argv: &[&str]) {
        let first = argv.first().and_then(|a| number(a)).unwrap_or(0);
        let last = argv.get(1).and_then(|a| number(a)).unwrap_or(i64::MAX);
        let only_cloexec = argv.get(2).is_some_and(|f| has_flag(f, "CLOSE_RANGE_CLOEXEC"));
        let table = self.procs.get(pid).fds.clone();
        let mut table = table.borrow_mut();
        if first > last {
            return; // the kernel refuses it (EINVAL); a range with its ends swapped would panic here
        }
        table.change(|table| match only_cloexec {
            true => table.range_mut(first..=last).for_each(|(_, fd)| fd.cloexec = true),
            false => table.retain(|n, _| !(first..=last).contains(n)),
        });
    }

    /// fcntl: F_DUPFD/F_DUPFD_CLOEXEC duplicate, F_SETFD sets close-on-exec, F_SETFL O_APPEND;
    /// the other commands change nothing the model keeps.
    fn fcntl(&mut self, pid: u32, argv: &[&str], r: i64) {
        let cmd = argv.get(1).copied().unwrap_or("");
        let n = argv.first().and_then(|a| number(a));
        let third = argv.get(2).copied().unwrap_or("");
        match cmd {
            "F_DUPFD" | "F_DUPFD_CLOEXEC" => {
                self.dup(pid, argv.first().copied(), r, cmd == "F_DUPFD_CLOEXEC")
            }
            "F_SETFD" | "F_SETFL" => {
                let table = self.procs.get(pid).fds.clone();
                let mut table = table.borrow_mut();
                if let Some(fd) = n.and_then(|n| table.get_mut(&n)) {
                    match cmd {
                        "F_SETFD" => fd.cloexec = has_flag(third, "FD_CLOEXEC"),
                        _ => fd.append = has_flag(third, "O_APPEND"),
                    }
                }
            }
            _ => self.counts.calls_without_effect += 1,
        }
    }

    /// The file of descriptor `arg` (None, counted, for one outside the root or unknown).
    fn file_of(&mut self, pid: u32, arg: Option<&str>) -> Option<(i64, Fd, Ino)> {
        let n = arg.and_then(number)?;
        let fd = self.fd(pid, arg)?;
        match fd.target {
            Target::File(ino) => Some((n, fd, ino)),
            _ => {
                self.counts.outside_root += 1;
                None
            }
        }
    }

    fn set_pos(&mut self, pid: u32, n: i64, pos: u64) {
        if let Some(fd) = self.procs.get(pid).fds.borrow_mut().get_mut(&n) {
            fd.pos = pos;
        }
    }

    /// write, writev, pwrite64, pwritev(2), sendfile, copy_file_range: `r` bytes at the
    /// call's offset, or at the descriptor's position (the end with O_APPEND), which moves.
    pub(super) fn write<D: BlockDevice>(
        &mut self,
        fs: &mut FileSystem<D>,
        pid: u32,
        name: &str,
        argv: &[&str],
        r: u64,
    ) -> Step {
        let arg = |i: usize| argv.get(i).copied();
        let (out, offset) = match name {
            "pwrite64" | "pwritev" | "pwritev2" => (arg(0), arg(3).and_then(number)),
            "copy_file_range" => (arg(2), arg(3).and_then(bracketed)),
            _ => (arg(0), None),
        };
        // The source of a copy moves on as a read would.
        match name {
            "sendfile" | "sendfile64" if arg(2) == Some("NULL") => self.advance_pos(pid, arg(1), r),
            "copy_file_range" if arg(1) == Some("NULL") => self.advance_pos(pid, arg(0), r),
            _ => {}
        }
        let Some((n, fd, ino)) = self.file_of(pid, out) else { return Ok(()) };
        let at = match (offset, fd.append) {
            (Some(off), _) => off.max(0) as u64,
            (None, true) => fs.file_size(ino).unwrap_or(0),
            (None, false) => fd.pos,
        };
        self.preexisting.remove(&ino);
        if r > 0 {
            let done = crate::space::check_fits(fs, ino, at, r).and_then(|()| fs.write(ino, at, r));
            self.fs_done(done)?;
        }
        if offset.is_none() {
            self.set_pos(pid, n, at.saturating_add(r));
        }
        Ok(())
    }

    fn advance_pos(&mut self, pid: u32, arg: Option<&str>, r: u64) {
        if let (Some(n), Some(fd)) = (arg.and_then(number), self.fd(pid, arg)) {
            self.set_pos(pid, n, fd.pos + r);
        }
    }

    /// read, readv, pread64, preadv(2): the position moves; a pre-existing file is at least
    /// as long as what was read; with `reads` the model reads too.
    pub(super) fn read<D: BlockDevice>(
        &mut self,
        fs: &mut FileSystem<D>,
        pid: u32,
        name: &str,
        argv: &[&str],
        r: u64,
    ) -> Step {
        let offset = match name {
            "pread64" | "preadv" | "preadv2" => argv.get(3).and_then(|a| number(a)),
            _ => None,
        };
        let Some((n, fd, ino)) = self.file_of(pid, argv.first().copied()) else { return Ok(()) };
        let at = offset.map_or(fd.pos, |o| o.max(0) as u64);
        self.grow(fs, ino, at + r)?;
        if self.options.reads && r > 0 {
            let size = fs.file_size(ino).unwrap_or(0);
            if at < size {
                let done = fs.read(ino, at, r.min(size - at));
                self.fs_done(done)?;
            }
        }
        if offset.is_none() {
            self.set_pos(pid, n, at + r);
        }
        Ok(())
    }

    /// lseek: the position is the return value; SEEK_END on a pre-existing file shows its size.
    pub(super) fn lseek<D: BlockDevice>(
        &mut self,
        fs: &mut FileSystem<D>,
        pid: u32,
        argv: &[&str],
        r: u64,
    ) -> Step {
        let Some(n) = argv.first().and_then(|a| number(a)) else { return Ok(()) };
        let Some(fd) = self.fd(pid, argv.first().copied()) else { return Ok(()) };
        if let (Target::File(ino), Some("SEEK_END")) = (&fd.target, argv.get(2).copied()) {
            let off = argv.get(1).and_then(|a| number(a)).unwrap_or(0);
            if off >= 0 && r >= off as u64 {
                self.grow(fs, *ino, r - off as u64)?;
            }
        }
        self.set_pos(pid, n, r);
        Ok(())
    }

    /// A pre-existing file the trace has not changed grows to `size` if it is shorter: the
    /// bytes were there before the trace started (written now, counted).
    fn grow<D: BlockDevice>(&mut self, fs: &mut FileSystem<D>, ino: Ino, size: u64) -> Step {
        if !self.preexisting.contains(&ino) {
            return Ok(());
        }
        let now = fs.file_size(ino).unwrap_or(size);
        if size > now {
            self.counts.preexisting_bytes += size - now;
            let done = crate::space::check_fits(fs, ino, now, size - now)
                .and_then(|()| fs.write(ino, now, size - now));
            self.fs_done(done)?;
        }
        Ok(())
    }

    /// A call that changes nothing the model keeps, except that a stat of a pre-existing file
    /// shows its size (fstat, stat, lstat, newfstatat, statx).
    pub(super) fn stat<D: BlockDevice>(
        &mut self,
        fs: &mut FileSystem<D>,
        pid: u32,
        name: &str,
        a: &str,
    ) -> Step {
        self.counts.calls_without_effect += 1;
        if self.preexisting.is_empty() {
            return Ok(());
        }
        let Some(size) = st_size(a) else { return Ok(()) };
        let argv: Vec<&str> = crate::strace::line::args(a).collect();
        let (dirfd, path) = match name {
            "fstat" | "fstat64" => (argv.first().copied(), None),
            "stat" | "lstat" | "stat64" | "lstat64" => (None, argv.first().copied()),
            "newfstatat" | "fstatat64" | "statx" => (argv.first().copied(), argv.get(1).copied()),
            _ => return Ok(()),
        };
        let ino = match path.and_then(string).filter(|p| !p.is_empty()) {
            Some(p) => self
                .resolve(pid, dirfd, &p)
                .and_then(|abs| under_root(&self.options.root, &abs).and_then(|rel| fs.lookup(rel))),
            None => {
                match dirfd.and_then(number).and_then(|n| self.procs.get(pid).fds.borrow().get(&n).cloned()) {
                    Some(Fd { target: Target::File(ino), .. }) => Some(ino),
                    _ => None,
                }
            }
        };
        match ino {
            Some(ino) => self.grow(fs, ino, size),
            None => Ok(()),
        }
    }

    /// fsync, fdatasync, sync, syncfs, ftruncate, truncate, fallocate, unlink, unlinkat, rmdir,
    /// mkdir, mkdirat, rename, renameat, renameat2, link, symlink.
    pub(super) fn change<D: BlockDevice>(
        &mut self,
        fs: &mut FileSystem<D>,
        pid: u32,
        name: &str,
        argv: &[&str],
    ) -> Step {
        let arg = |i: usize| argv.get(i).copied();
        match name {
            "fsync" | "fdatasync" => {
                let Some((_, _, ino)) = self.file_of(pid, arg(0)) else { return Ok(()) };
                let done = fs.fsync(ino);
                self.fs_done(done).map(drop)
            }
            "sync" | "syncfs" => {
                // As the kernel's: commit, then the block device's write-back of the
                // metadata that commit made dirty (FileSystem::write_back_checkpoint).
                fs.sync();
                fs.write_back_checkpoint();
                self.counts.file_ops += 1;
                Ok(())
            }
            "ftruncate" | "ftruncate64" => {
                let Some((_, _, ino)) = self.file_of(pid, arg(0)) else { return Ok(()) };
                self.truncate(fs, ino, arg(1))
            }
            "truncate" | "truncate64" => match self.model_path(pid, None, arg(0)).and_then(|p| fs.lookup(&p))
            {
                Some(ino) => self.truncate(fs, ino, arg(1)),
                None => Ok(()),
            },
            "fallocate" => self.fallocate(fs, pid, argv),
            "link" | "linkat" | "symlink" | "symlinkat" => {
                self.counts.unsupported += 1;
                Ok(())
            }
            _ => self.name_call(fs, pid, name, argv),
        }
    }

    fn truncate<D: BlockDevice>(&mut self, fs: &mut FileSystem<D>, ino: Ino, len: Option<&str>) -> Step {
        let size = len.and_then(number).unwrap_or(0).max(0) as u64;
        self.preexisting.remove(&ino);
        let done = fs.truncate(ino, size);
        self.fs_done(done).map(drop)
    }

    /// fallocate: mode 0 allocates, PUNCH_HOLE frees, KEEP_SIZE alone allocates below the
    /// size only, ZERO_RANGE frees then allocates; COLLAPSE and INSERT_RANGE are unsupported.
    fn fallocate<D: BlockDevice>(&mut self, fs: &mut FileSystem<D>, pid: u32, argv: &[&str]) -> Step {
        let Some((_, _, ino)) = self.file_of(pid, argv.first().copied()) else { return Ok(()) };
        let mode = fallocate_mode(argv.get(1).copied().unwrap_or("0"));
        let offset = argv.get(2).and_then(|a| number(a)).unwrap_or(0).max(0) as u64;
        let mut len = argv.get(3).and_then(|a| number(a)).unwrap_or(0).max(0) as u64;
        self.preexisting.remove(&ino);
        if mode & PUNCH_HOLE != 0 {
            let done = fs.punch_hole(ino, offset, len);
            return self.fs_done(done).map(drop);
        }
        if mode & COLLAPSE_RANGE != 0 || mode & INSERT_RANGE != 0 {
            self.counts.unsupported += 1;
            return Ok(());
        }
        if mode & ZERO_RANGE != 0 {
            let done = fs.punch_hole(ino, offset, len);
            self.fs_done(done)?;
        }
        if mode & KEEP_SIZE != 0 {
            len = len.min(fs.file_size(ino).unwrap_or(0).saturating_sub(offset));
        }
        if len > 0 {
            let done =
                crate::space::check_fits(fs, ino, offset, len).and_then(|()| fs.fallocate(ino, offset, len));
            self.fs_done(done)?;
        }
        Ok(())
    }

    /// unlink, unlinkat, rmdir, mkdir, mkdirat, rename, renameat, renameat2.
    fn name_call<D: BlockDevice>(
        &mut self,
        fs: &mut FileSystem<D>,
        pid: u32,
        name: &str,
        argv: &[&str],
    ) -> Step {
        let arg = |i: usize| argv.get(i).copied();
        let (dirfd, path) = match name {
            "unlinkat" | "mkdirat" => (arg(0), arg(1)),
            _ => (None, arg(0)),
        };
        match name {
            "rename" | "renameat" | "renameat2" => return self.rename(fs, pid, name, argv),
            "mkdir" | "mkdirat" => {
                let Some(rel) = self.model_path(pid, dirfd, path) else { return Ok(()) };
                self.ensure_parents(fs, &rel)?;
                if !fs.is_dir(&rel) {
                    let done = fs.mkdir(&rel);
                    self.fs_done(done)?;
                }
                return Ok(());
            }
            _ => {}
        }
        let Some(rel) = self.model_path(pid, dirfd, path) else { return Ok(()) };
        let is_rmdir = name == "rmdir" || arg(2).is_some_and(|f| has_flag(f, "AT_REMOVEDIR"));
        let done = match (is_rmdir, fs.is_dir(&rel), fs.lookup(&rel)) {
            (true, true, _) => fs.rmdir(&rel),
            (false, _, Some(ino)) => {
                self.preexisting.remove(&ino);
                fs.unlink(&rel)
            }
            _ => {
                // A file or directory that existed before the trace and was never used in it.
                self.counts.refused_by_model += 1;
                return Ok(());
            }
        };
        self.fs_done(done).map(drop)
    }

    /// rename: both paths under the root, a rename; moved out of the root, an unlink; moved in,
    /// a pre-existing file appears; RENAME_EXCHANGE is unsupported.
    fn rename<D: BlockDevice>(
        &mut self,
        fs: &mut FileSystem<D>,
        pid: u32,
        name: &str,
        argv: &[&str],
    ) -> Step {
        let arg = |i: usize| argv.get(i).copied();
        let (from, to) = match name {
            "rename" => ((None, arg(0)), (None, arg(1))),
            _ => ((arg(0), arg(1)), (arg(2), arg(3))),
        };
        if arg(4).is_some_and(|f| has_flag(f, "RENAME_EXCHANGE")) {
            self.counts.unsupported += 1;
            return Ok(());
        }
        let place = |me: &mut Self, (dirfd, path): (Option<&str>, Option<&str>)| {
            let abs = path.and_then(string).and_then(|p| me.resolve(pid, dirfd, &p))?;
            under_root(&me.options.root, &abs).map(str::to_string)
        };
        let (src, dst) = (place(self, from), place(self, to));
        let done = match (src, dst) {
            (None, None) => {
                self.counts.outside_root += 1;
                return Ok(());
            }
            (Some(src), None) if fs.lookup(&src).is_some() => fs.unlink(&src),
            (None, Some(dst)) => {
                self.ensure_parents(fs, &dst)?;
                self.counts.preexisting_files += 1;
                fs.create(&dst).map(drop)
            }
            (Some(src), Some(dst)) if fs.lookup(&src).is_some() || fs.is_dir(&src) => {
                self.ensure_parents(fs, &dst)?;
                fs.rename(&src, &dst)
            }
            _ => {
                self.counts.refused_by_model += 1;
                return Ok(());
            }
        };
        self.fs_done(done).map(drop)
    }
}

/// openat2's flags, from its `{flags=O_RDONLY|O_CLOEXEC, mode=0, resolve=0}` argument.
fn openat2_flags(how: &str) -> &str {
    let Some(at) = how.find("flags=") else { return "" };
    let rest = &how[at + 6..];
    &rest[..rest.find([',', '}']).unwrap_or(rest.len())]
}

/// copy_file_range's `[4096]` offset (None for NULL).
fn bracketed(arg: &str) -> Option<i64> {
    number(arg.strip_prefix('[')?.trim_end_matches(']'))
}

/// The size a stat call shows (`st_size=N` or statx's `stx_size=N`).
fn st_size(args: &str) -> Option<u64> {
    let at = args.find("st_size=").map(|i| i + 8).or_else(|| args.find("stx_size=").map(|i| i + 9))?;
    let digits = &args[at..];
    let end = digits.find(|c: char| !c.is_ascii_digit()).unwrap_or(digits.len());
    digits[..end].parse().ok()
}

// linux/falloc.h
pub const KEEP_SIZE: u32 = 0x01;
pub const PUNCH_HOLE: u32 = 0x02;
const COLLAPSE_RANGE: u32 = 0x08;
pub const ZERO_RANGE: u32 = 0x10;
const INSERT_RANGE: u32 = 0x20;

/// fallocate's mode as strace writes it: named flags (`FALLOC_FL_KEEP_SIZE|FALLOC_FL_PUNCH_HOLE`),
/// a number (`3`, `0x3`: `strace -X raw`, or bits strace has no name for), or both.
pub fn fallocate_mode(arg: &str) -> u32 {
    let names = [
        ("FALLOC_FL_KEEP_SIZE", KEEP_SIZE),
        ("FALLOC_FL_PUNCH_HOLE", PUNCH_HOLE),
        ("FALLOC_FL_NO_HIDE_STALE", 0x04),
        ("FALLOC_FL_COLLAPSE_RANGE", COLLAPSE_RANGE),
        ("FALLOC_FL_ZERO_RANGE", ZERO_RANGE),
        ("FALLOC_FL_INSERT_RANGE", INSERT_RANGE),
        ("FALLOC_FL_UNSHARE_RANGE", 0x40),
    ];
    arg.split('|')
        .map(str::trim)
        .map(|part| match names.iter().find(|(n, _)| *n == part) {
            Some(&(_, bit)) => bit,
            None => match part.strip_prefix("0x") {
                Some(hex) => u32::from_str_radix(hex, 16).unwrap_or(0),
                None => part.parse().unwrap_or(0),
            },
        })
        .fold(0, |m, bit| m | bit)
}
