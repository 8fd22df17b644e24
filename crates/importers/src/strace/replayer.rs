//! Replays a trace's calls on the file-system model, line by line: the processes' descriptor
//! tables and working directories (process.rs) turn each call's descriptors and paths into
//! the model's files, a call's return value says how many bytes it moved (and whether it
//! happened at all), and the timestamps become simulated idle time.

use super::line::{self, args, number, ret_value, string, Body};
use super::process::{absolute, under_root, Fd, Processes, Target};
use super::{Counts, StraceOptions};
use std::collections::{BTreeMap, BTreeSet};
use trimlab_device::BlockDevice;
use trimlab_fs::{FileSystem, FsError, Ino};
use trimlab_sim::SimTime;

/// Calls of %file, %desc and %process that change nothing the model keeps (they are read,
/// then counted in `calls_without_effect`). A name in neither this list nor the replayed
/// ones is counted in `unknown_syscalls`.
const WITHOUT_EFFECT: &[&str] = &[
    "stat",
    "lstat",
    "stat64",
    "lstat64",
    "fstat64",
    "fstatat64",
    "statfs",
    "fstatfs",
    "statfs64",
    "fstatfs64",
    "access",
    "faccessat",
    "faccessat2",
    "readlink",
    "readlinkat",
    "getdents",
    "getdents64",
    "ioctl",
    "mmap",
    "mmap2",
    "munmap",
    "mprotect",
    "poll",
    "ppoll",
    "select",
    "pselect6",
    "_newselect",
    "epoll_create",
    "epoll_create1",
    "epoll_ctl",
    "epoll_wait",
    "epoll_pwait",
    "epoll_pwait2",
    "eventfd",
    "eventfd2",
    "pipe",
    "pipe2",
    "socket",
    "socketpair",
    "connect",
    "accept",
    "accept4",
    "bind",
    "listen",
    "sendto",
    "recvfrom",
    "sendmsg",
    "recvmsg",
    "sendmmsg",
    "recvmmsg",
    "getsockopt",
    "setsockopt",
    "getsockname",
    "getpeername",
    "shutdown",
    "flock",
    "chmod",
    "fchmod",
    "fchmodat",
    "fchmodat2",
    "chown",
    "fchown",
    "lchown",
    "fchownat",
    "chown32",
    "fchown32",
    "lchown32",
    "utime",
    "utimes",
    "utimensat",
    "futimesat",
    "getxattr",
    "lgetxattr",
    "fgetxattr",
    "setxattr",
    "lsetxattr",
    "fsetxattr",
    "listxattr",
    "llistxattr",
    "flistxattr",
    "removexattr",
    "lremovexattr",
    "fremovexattr",
    "inotify_init",
    "inotify_init1",
    "inotify_add_watch",
    "inotify_rm_watch",
    "fanotify_init",
    "fanotify_mark",
    "memfd_create",
    "chroot",
    "mknod",
    "mknodat",
    "mount",
    "umount",
    "umount2",
    "swapon",
    "swapoff",
    "pivot_root",
    "name_to_handle_at",
    "open_by_handle_at",
    "splice",
    "tee",
    "vmsplice",
    "readahead",
    "fadvise64",
    "fadvise64_64",
    "sync_file_range",
    "timerfd_create",
    "timerfd_settime",
    "timerfd_gettime",
    "signalfd",
    "signalfd4",
    "userfaultfd",
    "perf_event_open",
    "bpf",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "getcwd",
    "_llseek",
    "exit",
    "exit_group",
    "wait4",
    "waitid",
    "kill",
    "tkill",
    "tgkill",
    "rt_sigqueueinfo",
    "rt_tgsigqueueinfo",
    "pidfd_open",
    "pidfd_getfd",
    "pidfd_send_signal",
    "unshare",
    "setns",
    "quotactl",
    "quotactl_fd",
    "acct",
    "uselib",
    "statmount",
    "listmount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "move_mount",
    "open_tree",
    "mount_setattr",
    "landlock_create_ruleset",
    "landlock_add_rule",
    "mq_open",
    "mq_unlink",
    "mq_timedsend",
    "mq_timedreceive",
    "mq_notify",
    "mq_getsetattr",
    "fstat",
    "newfstatat",
    "statx",
    "process_madvise",
    "cachestat",
    "fgetxattrat",
];

/// The longest path the kernel accepts, with its NUL (include/uapi/linux/limits.h): it also
/// bounds how deep a path's directories go (2,048), and so the work of creating them.
const PATH_MAX: usize = 4096;

/// The most arguments a replayed call has (renameat2, copy_file_range: 6; pwritev2: 5).
const ARGS_MAX: usize = 6;

/// The replay's state between lines.
pub struct Replayer {
    options: StraceOptions,
    procs: Processes,
    /// A call's first half per pid, waiting for its `<... resumed>` line.
    unfinished: BTreeMap<u32, (String, String)>,
    /// Pre-existing files the trace has not changed yet: they may still grow to the size a
    /// later `st_size`, read or SEEK_END shows.
    preexisting: BTreeSet<Ino>,
    counts: Counts,
    clock: Clock,
    /// [`WITHOUT_EFFECT`] sorted, for a binary search per line.
    without_effect: Vec<&'static str>,
}

/// Trace time to simulated time.
#[derive(Default)]
struct Clock {
    /// (first timestamp, simulated time then), set by the first timestamped line.
    origin: Option<(u64, SimTime)>,
    last_us: u64,
    cut_ns: u64,
}

type Step = Result<(), String>;

impl Replayer {
    pub fn new(options: StraceOptions) -> Self {
        let procs = Processes::new(&options.root);
        Replayer {
            options,
            procs,
            unfinished: BTreeMap::new(),
            preexisting: BTreeSet::new(),
            counts: Counts::default(),
            clock: Clock::default(),
            without_effect: {
                let mut v = WITHOUT_EFFECT.to_vec();
                v.sort_unstable();
                v
            },
        }
    }

    /// The counts, once every line has been replayed.
    pub fn finish(self) -> Counts {
        self.counts
    }

    /// Replays one line (`number` counts it for `first_malformed_line`); Err only when the
    /// model cannot go on.
    pub fn line<D: BlockDevice>(&mut self, fs: &mut FileSystem<D>, text: &str, number: u64) -> Step {
        self.replay_line(fs, text, number)?;
        // The processes' caps, checked once a line (a line adds at most one process and
        // copies at most one table).
        match self.procs.over() {
            Some(why) => Err(why),
            None => Ok(()),
        }
    }

    fn replay_line<D: BlockDevice>(&mut self, fs: &mut FileSystem<D>, text: &str, number: u64) -> Step {
        self.counts.lines += 1;
        let parsed = match line::parse(text) {
            Ok(l) => l,
            Err(_) if text.trim().is_empty() => return Ok(()),
            Err(_) => return self.malformed(number),
        };
        if let Some(t) = parsed.time_us {
            self.advance(fs, t);
        } else if matches!(parsed.body, Body::Call { .. } | Body::Unfinished { .. }) {
            self.counts.untimed_calls += 1;
        }
        let pid = parsed.pid;
        if matches!(parsed.body, Body::Call { .. } | Body::Unfinished { .. } | Body::Resumed { .. }) {
            // Every call line counts as the process's turn, so that a process first seen
            // after a parent's `clone(... <unfinished ...>` line copies that parent.
            self.procs.get(pid);
        }
        match parsed.body {
            Body::Call { name, args, ret } => self.call(fs, pid, name, args, ret),
            Body::Unfinished { name, args } => {
                self.unfinished.insert(pid, (name.to_string(), args.to_string()));
                Ok(())
            }
            Body::Resumed { name, args, ret } => match self.unfinished.remove(&pid) {
                Some((first, head)) if first == name => {
                    let whole = format!("{head}{args}");
                    self.call(fs, pid, name, &whole, ret)
                }
                _ => self.malformed(number),
            },
            Body::Exit => {
                self.procs.exit(pid);
                self.unfinished.remove(&pid);
                Ok(())
            }
            Body::Note => Ok(()),
        }
    }

    fn malformed(&mut self, number: u64) -> Step {
        self.counts.malformed_lines += 1;
        if self.counts.first_malformed_line == 0 {
            self.counts.first_malformed_line = number;
        }
        Ok(())
    }

    /// Lets simulated time follow the trace's clock, pauses above `gap_max_ns` cut to it.
    fn advance<D: BlockDevice>(&mut self, fs: &mut FileSystem<D>, t_us: u64) {
        let c = &mut self.clock;
        let (t0, start) = *c.origin.get_or_insert((t_us, fs.now()));
        // Processes' lines interleave slightly out of order; time never goes back.
        if t_us > c.last_us.max(t0) {
            let gap_ns = (t_us - c.last_us.max(t0)) * 1000;
            if let Some(max) = self.options.gap_max_ns.filter(|&m| gap_ns > m) {
                c.cut_ns += gap_ns - max;
                self.counts.gaps_cut_ns += gap_ns - max;
            }
            c.last_us = t_us;
        }
        let at = SimTime(start.ns() + (c.last_us.max(t0) - t0) * 1000 - c.cut_ns);
        if at > fs.now() {
            fs.idle_until(at);
        }
    }

    /// One whole call.
    fn call<D: BlockDevice>(
        &mut self,
        fs: &mut FileSystem<D>,
        pid: u32,
        name: &str,
        a: &str,
        ret: &str,
    ) -> Step {
        let r = ret_value(ret);
        self.counts.processes_max = self.counts.processes_max.max(self.procs.len() as u64 + 1);
        if !is_replayed(name) {
            return match self.without_effect.binary_search(&name).is_ok() {
                true if r.is_some_and(|r| r >= 0) => self.stat(fs, pid, name, a),
                true => count(&mut self.counts.calls_without_effect),
                false => {
                    self.counts.unknown_call(name);
                    Ok(())
                }
            };
        }
        let Some(r) = r.filter(|&r| r >= 0) else {
            self.counts.failed_calls += 1;
            return Ok(());
        };
        // The arguments without an allocation (no replayed call has more than ARGS_MAX).
        let mut slots = [""; ARGS_MAX];
        let count = args(a).zip(slots.iter_mut()).map(|(arg, slot)| *slot = arg).count();
        let argv = &slots[..count];
        match name {
            "clone" | "clone3" | "fork" | "vfork" => {
                let share = name.starts_with("clone") && a.contains("CLONE_FILES");
                self.procs.fork(pid, r as u32, share);
                Ok(())
            }
            "execve" | "execveat" => self.exec(pid),
            "open" | "creat" | "openat" | "openat2" => self.open(fs, pid, name, argv, r),
            "close" | "close_range" | "dup" | "dup2" | "dup3" | "chdir" | "fchdir" | "fcntl" | "fcntl64" => {
                self.fd_call(pid, name, argv, r)
            }
            "write" | "writev" | "pwrite64" | "pwritev" | "pwritev2" | "sendfile" | "sendfile64"
            | "copy_file_range" => self.write(fs, pid, name, argv, r as u64),
            "read" | "readv" | "pread64" | "preadv" | "preadv2" => self.read(fs, pid, name, argv, r as u64),
            "lseek" => self.lseek(fs, pid, argv, r as u64),
            _ => self.change(fs, pid, name, argv),
        }
    }

    /// The process's descriptor `fd` (a copy), counting a descriptor the trace never opened.
    fn fd(&mut self, pid: u32, fd: Option<&str>) -> Option<Fd> {
        let n = fd.and_then(number)?;
        let found = self.procs.get(pid).fds.borrow().get(&n).cloned();
        if found.is_none() {
            self.counts.unknown_fd += 1;
        }
        found
    }

    fn set_fd(&mut self, pid: u32, n: i64, fd: Fd) {
        self.procs.get(pid).fds.borrow_mut().insert(n, fd);
    }

    /// The absolute path `dirfd` + `path` names (None: `dirfd` is not a known directory).
    /// A path longer than the kernel's PATH_MAX, given or resolved, is None too: the kernel
    /// refuses it (ENAMETOOLONG), so a trace showing it succeed is not a real one.
    fn resolve(&mut self, pid: u32, dirfd: Option<&str>, path: &str) -> Option<String> {
        if path.len() >= PATH_MAX {
            return None;
        }
        if path.starts_with('/') {
            return Some(absolute("/", path));
        }
        let base = match dirfd {
            None | Some("AT_FDCWD") => self.procs.get(pid).cwd.to_string(),
            Some(d) => match self.fd(pid, Some(d))?.target {
                Target::Dir(p) => p,
                _ => return None,
            },
        };
        Some(absolute(&base, path)).filter(|abs| abs.len() < PATH_MAX)
    }

    /// A path argument resolved and placed: Some(path in the model) under the root; None
    /// (counted) outside it or when its base is unknown.
    fn model_path(&mut self, pid: u32, dirfd: Option<&str>, arg: Option<&str>) -> Option<String> {
        let path = string(arg?)?;
        let Some(abs) = self.resolve(pid, dirfd, &path) else {
            self.counts.outside_root += 1;
            return None;
        };
        match under_root(&self.options.root, &abs) {
            Some(rel) => Some(rel.to_string()),
            None => {
                self.counts.outside_root += 1;
                None
            }
        }
    }

    /// A model result: counted as a file operation; refusals counted and skipped, the end of
    /// space (or a broken layout) stops the replay.
    fn fs_done<T>(&mut self, r: Result<T, FsError>) -> Result<Option<T>, String> {
        self.counts.file_ops += 1;
        match r {
            Ok(v) => Ok(Some(v)),
            Err(e @ (FsError::NoSpace | FsError::NoInodes | FsError::Layout(_))) => {
                Err(format!("the file-system model cannot go on: {e} (a larger device, or a smaller trace)"))
            }
            Err(_) => {
                self.counts.refused_by_model += 1;
                Ok(None)
            }
        }
    }

    /// The directories above `path` that the model lacks: they existed before the trace.
    fn ensure_parents<D: BlockDevice>(&mut self, fs: &mut FileSystem<D>, path: &str) -> Step {
        let Some((parent, _)) = path.rsplit_once('/') else { return Ok(()) };
        self.ensure_dir(fs, parent)
    }

    /// Creates the directories of `dir` the model lacks, shallowest first (a loop, not a
    /// recursion per level); a file where the trace has a directory is left, and the mkdir
    /// below it is refused.
    fn ensure_dir<D: BlockDevice>(&mut self, fs: &mut FileSystem<D>, dir: &str) -> Step {
        if dir.is_empty() || fs.is_dir(dir) {
            return Ok(());
        }
        for end in dir.match_indices('/').map(|(i, _)| i).chain([dir.len()]) {
            let d = &dir[..end];
            if d.is_empty() || fs.is_dir(d) || fs.lookup(d).is_some() {
                continue;
            }
            let made = fs.mkdir(d);
            if self.fs_done(made)?.is_some() {
                self.counts.preexisting_dirs += 1;
            }
        }
        Ok(())
    }

    /// A successful execve: the descriptors marked close-on-exec close, and the process no
    /// longer shares its table (the kernel unshares it).
    fn exec(&mut self, pid: u32) -> Step {
        let p = self.procs.get(pid);
        p.fds = p.fds.after_exec();
        Ok(())
    }
}

/// Counts one more of a skip.
fn count(counter: &mut u64) -> Step {
    *counter += 1;
    Ok(())
}

/// Whether the replayer does something with a call of this name.
fn is_replayed(name: &str) -> bool {
    matches!(
        name,
        "clone"
            | "clone3"
            | "fork"
            | "vfork"
            | "execve"
            | "execveat"
            | "open"
            | "creat"
            | "openat"
            | "openat2"
            | "close"
            | "close_range"
            | "dup"
            | "dup2"
            | "dup3"
            | "chdir"
            | "fchdir"
            | "write"
            | "writev"
            | "pwrite64"
            | "pwritev"
            | "pwritev2"
            | "sendfile"
            | "sendfile64"
            | "copy_file_range"
            | "read"
            | "readv"
            | "pread64"
            | "preadv"
            | "preadv2"
            | "lseek"
            | "fsync"
            | "fdatasync"
            | "sync"
            | "syncfs"
            | "ftruncate"
            | "ftruncate64"
            | "truncate"
            | "truncate64"
            | "fallocate"
            | "unlink"
            | "unlinkat"
            | "rmdir"
            | "mkdir"
            | "mkdirat"
            | "rename"
            | "renameat"
            | "renameat2"
            | "link"
            | "linkat"
            | "symlink"
            | "symlinkat"
            | "fcntl"
            | "fcntl64"
    )
}

#[doc(hidden)]
pub mod calls;
