//! Reading one strace line: the forms strace writes, return values, strings and truncated lines.

use trimlab_importers::strace::line::{args, parse, ret_value, string, Body, Line};

#[test]
fn the_forms_strace_writes() {
    let l = parse("4242 1700000000.123456 openat(AT_FDCWD, \"a, b)\", O_WRONLY|O_CREAT, 0644) = 3").unwrap();
    assert_eq!((l.pid, l.time_us), (4242, Some(1_700_000_000_123_456)));
    let Body::Call { name, args: a, ret } = l.body else { panic!("{:?}", l.body) };
    assert_eq!((name, ret), ("openat", "3"));
    let v: Vec<&str> = args(a).collect();
    assert_eq!(v, ["AT_FDCWD", "\"a, b)\"", "O_WRONLY|O_CREAT", "0644"]);
    assert_eq!(string(v[1]).as_deref(), Some("a, b)"));
    let l = parse("[pid  77] 1.5 write(1, \"x\"..., 10 <unfinished ...>").unwrap();
    assert_eq!((l.pid, l.time_us), (77, Some(1_500_000)));
    assert_eq!(l.body, Body::Unfinished { name: "write", args: "1, \"x\"..., 10" });
    let l = parse("77 2.000001 <... write resumed>) = 10").unwrap();
    assert_eq!(l.body, Body::Resumed { name: "write", args: "", ret: "10" });
    assert_eq!(parse("77 2.0 +++ exited with 0 +++").unwrap().body, Body::Exit);
    assert_eq!(parse("77 +++ exited with 0 +++").unwrap(), Line { pid: 77, time_us: None, body: Body::Exit });
    assert_eq!(parse("77 2.0 --- SIGCHLD {si_signo=SIGCHLD} ---").unwrap().body, Body::Note);
    assert_eq!(parse("strace: Process 78 attached").unwrap().body, Body::Note);
    let l = parse("close(3)        = 0").unwrap();
    assert_eq!(l.body, Body::Call { name: "close", args: "3", ret: "0" });
    assert_eq!((l.pid, l.time_us), (0, None));
}

#[test]
fn returns_strings_and_bad_lines() {
    assert_eq!(ret_value("-1 ENOENT (No such file or directory)"), Some(-1));
    assert_eq!(ret_value("3</tmp/x>"), Some(3));
    assert_eq!(ret_value("0x7f00"), Some(0x7f00));
    assert_eq!(ret_value("?"), None);
    assert_eq!(string(r#""a\"b\\c\n\x41\101""#).as_deref(), Some("a\"b\\c\nAA"));
    assert_eq!(string("NULL"), None);
    assert!(parse("77 2.0 write(1, \"abc\", 3").unwrap_err().contains("truncated"));
    assert!(parse("77 2.x write(1) = 0").unwrap_err().contains("timestamp"));
    assert!(parse("77 2.0 <... write resu").unwrap_err().contains("resumed"));
    assert!(parse("[pid 77 2.0 close(3) = 0").unwrap_err().contains("]"));
}
