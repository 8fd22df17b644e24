//! The traced processes as the kernel keeps them: each pid's file-descriptor table (shared
//! between the threads and `clone(CLONE_FILES)` children that share it, copied at fork) and
//! its working directory, and how a path argument resolves against them (`AT_FDCWD`, a
//! directory fd, `.` and `..`).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use trimlab_fs::Ino;

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

/// A descriptor table; processes that share one hold the same `Rc`.
pub type FdTable = Rc<RefCell<BTreeMap<i64, Fd>>>;

/// A process: its table and working directory (absolute).
#[derive(Clone, Debug)]
pub struct Process {
    pub fds: FdTable,
    pub cwd: String,
}

/// Every live process by pid.
pub struct Processes {
    by_pid: BTreeMap<u32, Process>,
    /// The working directory of a process the trace shows no parent of.
    first_cwd: String,
    /// The pid of the previous line: when a pid appears whose fork the trace does not show
    /// (`-e trace=` without `%process`), its table is a copy of this one's (the process that
    /// ran just before a new one is most often its parent, and a child's descriptors are
    /// its parent's at fork).
    last_pid: Option<u32>,
}

impl Processes {
    pub fn new(first_cwd: &str) -> Self {
        Processes { by_pid: BTreeMap::new(), first_cwd: first_cwd.to_string(), last_pid: None }
    }

    /// The process `pid`, created as said on [`Processes::last_pid`] if new.
    pub fn get(&mut self, pid: u32) -> &mut Process {
        if !self.by_pid.contains_key(&pid) {
            let born = match self.last_pid.and_then(|p| self.by_pid.get(&p)) {
                Some(parent) => forked(parent, false),
                None => Process { fds: FdTable::default(), cwd: self.first_cwd.clone() },
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
            Some(c) if share_files && !std::rc::Rc::ptr_eq(&c.fds, &p.fds) => {
                let own = std::mem::take(&mut *c.fds.borrow_mut());
                p.fds.borrow_mut().extend(own);
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
}

fn forked(parent: &Process, share_files: bool) -> Process {
    let fds = match share_files {
        true => parent.fds.clone(),
        false => Rc::new(RefCell::new(parent.fds.borrow().clone())),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_resolve_as_the_kernel_walks_them() {
        assert_eq!(absolute("/w", "a/./b/../c"), "/w/a/c");
        assert_eq!(absolute("/w", "/x//y/"), "/x/y");
        assert_eq!(absolute("/", ".."), "/");
        assert_eq!(under_root("/w", "/w/a/c"), Some("a/c"));
        assert_eq!(under_root("/w", "/w"), Some(""));
        assert_eq!(under_root("/w", "/wx/a"), None);
        assert_eq!(under_root("/", "/etc/x"), Some("etc/x"));
    }

    #[test]
    fn clone_files_shares_and_fork_copies() {
        let mut p = Processes::new("/w");
        let fd = Fd { target: Target::Skipped, pos: 0, append: false, cloexec: false };
        p.get(1).fds.borrow_mut().insert(3, fd.clone());
        p.fork(1, 2, true);
        p.fork(1, 3, false);
        p.get(2).fds.borrow_mut().insert(4, fd.clone());
        assert!(p.get(1).fds.borrow().contains_key(&4), "CLONE_FILES shares the table");
        assert!(!p.get(3).fds.borrow().contains_key(&4), "fork copied it before");
        p.get(1);
        assert!(p.get(9).fds.borrow().contains_key(&3), "an unseen pid copies the last pid's table");
        p.exit(9);
        assert_eq!(p.len(), 3);
        // The child's lines before the parent's `<... clone resumed>`: its descriptors stay.
        p.get(4).fds.borrow_mut().insert(8, fd.clone());
        p.fork(1, 4, true);
        assert!(p.get(1).fds.borrow().contains_key(&8), "joined to the parent's table");
    }
}
