//! The traced processes as the kernel keeps them: each pid's file-descriptor table (shared
//! between the threads and `clone(CLONE_FILES)` children that share it, copied at fork) and
//! its working directory, and how a path argument resolves against them (`AT_FDCWD`, a
//! directory fd, `.` and `..`).
//!
//! A fork's copy of a table shares its entries until one side changes them (copy on write),
//! and every entry alive or copied is counted against the replay's caps: a 1.2 MB trace of
//! forks under a parent holding many descriptors once took 4.2 GB copying them.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use trimlab_fs::Ino;

/// The most descriptors alive at once over every table: one process may hold at most
/// fs.nr_open (1,048,576 by default, fs/file.c `sysctl_nr_open`), a trace of many processes
/// holds far fewer each. About 100 MB of tables.
pub const DESCRIPTORS_MAX: usize = 1 << 20;

/// The most descriptor entries a replay may copy (forks that then change their table,
/// execs): the work of copying, bounded; a build of 10^5 processes with a few dozen
/// descriptors each copies a few million. Assumption.
pub const DESCRIPTORS_COPIED_MAX: u64 = 50_000_000;

/// The most processes alive at once: the kernel's PID_MAX_LIMIT (4,194,304 on 64-bit,
/// include/linux/threads.h), since no trace can show more.
pub const PROCESSES_MAX: usize = 4 << 20;

/// What an open file descriptor refers to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A regular file under the root, replayed.
    File(Ino),
    /// A directory, by its absolute path (a base for `openat`, `fchdir`).
    Dir(String),
    /// Anything not replayed: a file outside the root, a pipe, a socket, a device.
    Skipped,
}

/// One open file descriptor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fd {
    pub target: Target,
    /// The file position `write`/`read` use and advance (shared by `dup`ed descriptors in the
    /// kernel; here each keeps its own copy, which differs only when two interleave).
    pub pos: u64,
    pub append: bool,
    /// Closed by a successful `execve` (O_CLOEXEC).
    pub cloexec: bool,
}

/// What the tables of one replay hold and have copied.
#[derive(Debug, Default)]
pub struct Budget {
    pub live: Cell<usize>,
    pub copied: Cell<u64>,
}

impl Budget {
    /// Why the replay cannot go on (a cap passed), if it cannot.
    pub fn over(&self) -> Option<String> {
        if self.live.get() > DESCRIPTORS_MAX {
            return Some(format!(
                "more than {DESCRIPTORS_MAX} descriptors open over all processes (docs/limits.md)"
            ));
        }
        (self.copied.get() > DESCRIPTORS_COPIED_MAX).then(|| {
            format!(
                "the processes' forks copy more than {DESCRIPTORS_COPIED_MAX} descriptors (docs/limits.md)"
            )
        })
    }
}

/// The entries of one table, counted in the replay's [`Budget`] while they live.
#[derive(Debug)]
pub struct Entries {
    map: BTreeMap<i64, Fd>,
    budget: Rc<Budget>,
}

impl Entries {
    fn new(map: BTreeMap<i64, Fd>, budget: &Rc<Budget>) -> Entries {
        budget.live.set(budget.live.get() + map.len());
        Entries { map, budget: budget.clone() }
    }

    pub fn get(&self, n: &i64) -> Option<&Fd> {
        self.map.get(n)
    }

    pub fn contains_key(&self, n: &i64) -> bool {
        self.map.contains_key(n)
    }

    /// Changes the entries through `f`, keeping the count of live entries.
    pub fn change<T>(&mut self, f: impl FnOnce(&mut BTreeMap<i64, Fd>) -> T) -> T {
        let before = self.map.len();
        let out = f(&mut self.map);
        self.budget.live.set(self.budget.live.get() - before + self.map.len());
        out
    }

    pub fn insert(&mut self, n: i64, fd: Fd) {
        self.change(|m| m.insert(n, fd));
    }

    pub fn remove(&mut self, n: &i64) {
        self.change(|m| m.remove(n));
    }

    pub fn get_mut(&mut self, n: &i64) -> Option<&mut Fd> {
        self.map.get_mut(n)
    }

    /// The entries without those closed on exec (a new table).
    pub fn after_exec(&self) -> Entries {
        let kept: BTreeMap<i64, Fd> =
            self.map.iter().filter(|(_, fd)| !fd.cloexec).map(|(n, fd)| (*n, fd.clone())).collect();
        self.budget.copied.set(self.budget.copied.get() + kept.len() as u64);
        Entries::new(kept, &self.budget)
    }
}

impl Clone for Entries {
    fn clone(&self) -> Entries {
        self.budget.copied.set(self.budget.copied.get() + self.map.len() as u64);
        Entries::new(self.map.clone(), &self.budget)
    }
}

impl Drop for Entries {
    fn drop(&mut self) {
        self.budget.live.set(self.budget.live.get() - self.map.len());
    }
}

/// A descriptor table; processes that share one (threads, CLONE_FILES) hold the same outer
/// `Rc`; a fork's copy holds the same entries until either side writes.
#[derive(Clone, Debug)]
pub struct FdTable(Rc<RefCell<Rc<Entries>>>);

impl FdTable {
    fn new(entries: Entries) -> FdTable {
        FdTable(Rc::new(RefCell::new(Rc::new(entries))))
    }

    /// The entries, to read.
    pub fn borrow(&self) -> std::cell::Ref<'_, Entries> {
        std::cell::Ref::map(self.0.borrow(), |rc| &**rc)
    }

    /// The entries, to change (copied first if another table still holds them).
    pub fn borrow_mut(&self) -> std::cell::RefMut<'_, Entries> {
        std::cell::RefMut::map(self.0.borrow_mut(), Rc::make_mut)
    }

    /// A fork's copy: the same entries, not yet copied.
    fn fork(&self) -> FdTable {
        FdTable(Rc::new(RefCell::new(self.0.borrow().clone())))
    }

    /// The table an exec leaves (no longer shared).
    pub fn after_exec(&self) -> FdTable {
        FdTable::new(self.borrow().after_exec())
    }

    fn same(&self, other: &FdTable) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}

/// A process: its table and working directory (absolute; shared by the processes that
/// inherited it, not copied per process).
#[derive(Clone, Debug)]
pub struct Process {
    pub fds: FdTable,
    pub cwd: Rc<str>,
}

/// Every live process by pid.
pub struct Processes {
    by_pid: BTreeMap<u32, Process>,
    /// The working directory of a process the trace shows no parent of.
    first_cwd: Rc<str>,
    pub budget: Rc<Budget>,
    /// The pid of the previous line: when a pid appears whose fork the trace does not show
    /// (`-e trace=` without `%process`), its table is a copy of this one's (the process that
    /// ran just before a new one is most often its parent, and a child's descriptors are
    /// its parent's at fork).
    last_pid: Option<u32>,
}

impl Processes {
    pub fn new(first_cwd: &str) -> Self {
        let budget = Rc::new(Budget::default());
        Processes { by_pid: BTreeMap::new(), first_cwd: first_cwd.into(), budget, last_pid: None }
    }

    /// Why the replay cannot go on (a cap passed), if it cannot.
    pub fn over(&self) -> Option<String> {
        if self.by_pid.len() > PROCESSES_MAX {
            return Some(format!("more than {PROCESSES_MAX} processes alive at once (docs/limits.md)"));
        }
        self.budget.over()
    }

    /// The process `pid`, created as said on [`Processes::last_pid`] if new.
    pub fn get(&mut self, pid: u32) -> &mut Process {
        if !self.by_pid.contains_key(&pid) {
            let born = match self.last_pid.and_then(|p| self.by_pid.get(&p)) {
                Some(parent) => forked(parent, false),
                None => Process {
                    fds: FdTable::new(Entries::new(BTreeMap::new(), &self.budget)),
                    cwd: self.first_cwd.clone(),
                },
            };
            self.by_pid.insert(pid, born);
        }
        self.last_pid = Some(pid);
        self.by_pid.get_mut(&pid).expect("inserted above")
    }

    /// A `clone`/`fork`/`vfork` of `parent` returned `child`: the child shares the table with
    /// CLONE_FILES, else gets a copy.
    /// With -f the child's first lines often come before the parent's `<... clone resumed>`:
    /// the child then already has a table (a copy, see [`Processes::get`]), which is kept, and
    /// with CLONE_FILES joined to the parent's, its own descriptors carried over.
    pub fn fork(&mut self, parent: u32, child: u32, share_files: bool) {
        let p = self.get(parent).clone();
        match self.by_pid.get_mut(&child) {
            Some(c) if share_files && !c.fds.same(&p.fds) => {
                let own = c.fds.borrow_mut().change(std::mem::take);
                p.fds.borrow_mut().change(|m| m.extend(own));
                c.fds = p.fds.clone();
            }
            Some(_) => {}
            None => {
                self.by_pid.insert(child, forked(&p, share_files));
            }
        }
    }

    /// The process is gone (its descriptors close with the table's last holder).
    pub fn exit(&mut self, pid: u32) {
        self.by_pid.remove(&pid);
    }

    /// How many processes are live (bounded by the trace's own concurrency).
    pub fn len(&self) -> usize {
        self.by_pid.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_pid.is_empty()
    }
}

fn forked(parent: &Process, share_files: bool) -> Process {
    let fds = match share_files {
        true => parent.fds.clone(),
        false => parent.fds.fork(),
    };
    Process { fds, cwd: parent.cwd.clone() }
}

/// `path` made absolute against `base` (the cwd or a directory fd's path), with `.`, `..` and
/// repeated slashes resolved as the kernel walks them (symbolic links are not followed: the
/// trace does not show them).
pub fn absolute(base: &str, path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    let start = if path.starts_with('/') { "" } else { base };
    for c in start.split('/').chain(path.split('/')) {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    let mut out = String::with_capacity(path.len() + base.len() + 1);
    for c in parts {
        out.push('/');
        out.push_str(c);
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

/// The path of absolute `abs` inside `root` as the file system names it ("" for the root
/// itself), or None when it is outside.
pub fn under_root<'a>(root: &str, abs: &'a str) -> Option<&'a str> {
    if root == "/" {
        return Some(abs.trim_start_matches('/'));
    }
    let rest = abs.strip_prefix(root)?;
    match rest.as_bytes().first() {
        None => Some(""),
        Some(b'/') => Some(&rest[1..]),
        Some(_) => None,
    }
}
