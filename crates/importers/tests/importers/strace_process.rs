//! strace replay's processes: paths resolved as the kernel walks them, descriptor tables shared by CLONE_FILES and copied by fork.

use trimlab_importers::strace::process::{absolute, under_root, Fd, Processes, Target};

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
    assert_eq!(p.budget.live.get(), 3, "1's table (shared with 2) and 3's copy; 9's went with it");
    assert_eq!(p.budget.copied.get(), 1, "one copy, made when 2 wrote to the entries 3 still shared");
    // The child's lines before the parent's `<... clone resumed>`: its descriptors stay.
    p.get(4).fds.borrow_mut().insert(8, fd.clone());
    p.fork(1, 4, true);
    assert!(p.get(1).fds.borrow().contains_key(&8), "joined to the parent's table");
}
