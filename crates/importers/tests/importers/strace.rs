//! Replaying strace traces on a file system: descriptors, positions and names as the kernel keeps them, pre-existing files, cut gaps and unknown calls.

use crate::fs;
use trimlab_device::Ssd;
use trimlab_fs::FileSystem;
use trimlab_importers::strace::{replay, Counts, StraceOptions, OTHER_NAMES, UNKNOWN_NAMES_MAX};

fn run(fs: &mut FileSystem<Ssd>, trace: &str, gap_max_ns: Option<u64>) -> Counts {
    let options = StraceOptions { root: "/w".into(), gap_max_ns, reads: true };
    let counts = replay(trace.as_bytes(), "t.strace", fs, &options).expect("replay");
    fs.check().expect("the file system is consistent after the replay");
    counts
}

#[test]
fn descriptors_positions_and_names_follow_the_kernel() {
    let mut fs = fs();
    let c = run(
        &mut fs,
        "1 1.000000 openat(AT_FDCWD, \"/w/a\", O_WRONLY|O_CREAT|O_TRUNC, 0644) = 3\n\
         1 1.000001 write(3, \"x\"..., 4096) = 4096\n\
         1 1.000002 write(3, \"x\"..., 100 <unfinished ...>\n\
         2 1.000003 openat(AT_FDCWD, \"/usr/lib/libc.so.6\", O_RDONLY|O_CLOEXEC) = 3\n\
         1 1.000004 <... write resumed>) = 100\n\
         1 1.000005 pwrite64(3, \"y\"..., 10, 10000) = 10\n\
         1 1.000006 dup2(3, 1) = 1\n\
         1 1.000007 close(3) = 0\n\
         1 1.000008 write(1, \"z\", 4) = 4\n\
         1 1.000009 clone(child_stack=NULL, flags=CLONE_VM|CLONE_FILES|SIGCHLD) = 5\n\
         5 1.000010 chdir(\"/w\") = 0\n\
         5 1.000011 mkdir(\"d/e\", 0755) = 0\n\
         5 1.000012 openat(AT_FDCWD, \"d/e/../log\", O_WRONLY|O_CREAT|O_APPEND, 0644) = 7\n\
         1 1.000013 write(7, \"l\", 8) = 8\n\
         5 1.000014 write(7, \"l\", 8) = 8\n\
         5 1.000015 fsync(7) = 0\n\
         5 1.000016 rename(\"/w/a\", \"/w/d/b\") = 0\n\
         5 1.000017 unlink(\"/w/missing\") = -1 ENOENT (No such file or directory)\n\
         5 1.000018 newfstatat(AT_FDCWD, \"/etc/passwd\", {st_mode=S_IFREG|0644, st_size=1, ...}, 0) = 0\n\
         5 1.000019 getrandom(\"\\x01\", 1, 0) = 1\n\
         5 1.000020 write(7, \"l\", 8\n\
         5 +++ exited with 0 +++\n",
        None,
    );
    let b = fs.lookup("d/b").expect("renamed");
    assert_eq!(fs.file_size(b), Some(10010), "4096 + 100 + the pwrite at 10000; dup2's write at 4196");
    assert_eq!(fs.lookup("a"), None);
    let log = fs.lookup("d/log").expect("created through a relative path with ..");
    assert_eq!(fs.file_size(log), Some(16), "two appends by processes sharing the table");
    assert!(fs.is_dir("d/e"), "mkdir made d as a pre-existing directory");
    assert_eq!((c.preexisting_dirs, c.failed_calls, c.unknown_syscalls), (1, 1, 1), "{c:?}");
    assert_eq!((c.malformed_lines, c.first_malformed_line), (1, 21), "{c:?}");
    assert_eq!(c.outside_root, 1, "the libc open: {c:?}");
    assert_eq!(c.lines, 22);
}

#[test]
fn a_child_seen_before_its_clone_returns_copies_the_cloning_parent() {
    let mut fs = fs();
    let c = run(
        &mut fs,
        "1 1.0 chdir(\"/w/sub\") = 0\n\
         2 1.1 close(9) = 0\n\
         1 1.2 clone3({flags=CLONE_VM|CLONE_VFORK, exit_signal=SIGCHLD}, 88 <unfinished ...>\n\
         3 1.3 openat(AT_FDCWD, \"f.o\", O_RDWR|O_CREAT|O_TRUNC, 0666) = 3\n\
         1 1.4 <... clone3 resumed>) = 3\n",
        None,
    );
    assert!(fs.lookup("sub/f.o").is_some(), "the child works in its parent's directory: {c:?}");
    assert_eq!(c.preexisting_dirs, 1, "{c:?}");
}

#[test]
fn preexisting_files_grow_to_what_the_trace_shows_and_gaps_are_cut() {
    let mut fs = fs();
    let c = run(
        &mut fs,
        "9 5.000000 openat(AT_FDCWD, \"/w/old\", O_RDWR) = 3\n\
         9 5.000001 fstat(3, {st_mode=S_IFREG|0644, st_size=20000, ...}) = 0\n\
         9 65.000000 read(3, \"a\"..., 30000) = 20000\n\
         9 65.000001 lseek(3, 0, SEEK_SET) = 0\n\
         9 65.000002 write(3, \"b\", 5) = 5\n\
         9 65.000003 fstat(3, {st_mode=S_IFREG|0644, st_size=90000, ...}) = 0\n\
         9 65.000004 fallocate(3, FALLOC_FL_KEEP_SIZE|FALLOC_FL_PUNCH_HOLE, 0, 8192) = 0\n\
         9 65.000005 ftruncate(3, 4096) = 0\n",
        Some(1_000_000),
    );
    let old = fs.lookup("old").expect("created on first use");
    assert_eq!(fs.file_size(old), Some(4096), "grown to 20000, not to 90000 once written, then truncated");
    assert_eq!((c.preexisting_files, c.preexisting_bytes), (1, 20000), "{c:?}");
    assert_eq!(c.gaps_cut_ns, 59_999_999_000 - 1_000_000, "{c:?}");
    assert!(fs.now().ns() < 2_000_000_000, "the minute's pause was cut to 1 ms");
}

#[test]
fn unknown_calls_are_counted_by_name_up_to_a_bound() {
    let mut fs = fs();
    let c = run(
        &mut fs,
        "1 1.000000 getrandom(\"\\x01\", 1, 0) = 1\n\
         1 1.000001 frobnicate(3) = 0\n\
         1 1.000002 getrandom(\"\\x01\", 1, 0) = 1\n",
        None,
    );
    assert_eq!(c.unknown_syscalls, 3, "{c:?}");
    let named: Vec<_> = c.unknown_by_name.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(named, [("frobnicate", 1), ("getrandom", 2)]);
    let mut c = Counts::default();
    for i in 0..UNKNOWN_NAMES_MAX + 5 {
        c.unknown_call(&format!("call{i}"));
    }
    c.unknown_call("call0");
    assert_eq!(c.unknown_by_name.len(), UNKNOWN_NAMES_MAX + 1);
    assert_eq!((c.unknown_by_name[OTHER_NAMES], c.unknown_by_name["call0"]), (5, 2));
    assert_eq!(c.unknown_by_name.values().sum::<u64>(), c.unknown_syscalls);
}
