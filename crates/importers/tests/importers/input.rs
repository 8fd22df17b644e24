//! Reading an input file under its caps: a long line or a big file is refused before it is held, and non-UTF-8 text named by line.

use trimlab_importers::input::{read_line, read_text_from, LineError, HELD_BYTES_ENV, HELD_BYTES_MAX};

#[test]
fn lines_and_files_past_their_caps_are_refused_early() {
    let zeros = std::io::repeat(0);
    let e = read_text_from(zeros, "/dev/zero", HELD_BYTES_MAX).unwrap_err();
    assert_eq!((e.line, e.origin.as_str()), (1, "/dev/zero"));
    assert!(e.message.contains("longer than 1048576 bytes"), "{e}");
    let lines = std::io::repeat(b'\n');
    let e = read_text_from(lines, "nl", 1000).unwrap_err();
    assert!(e.to_string().starts_with("nl: 1001 bytes, more than the 1000"), "{e}");
    assert!(e.to_string().contains(HELD_BYTES_ENV));
    assert_eq!(read_text_from(&b"a\nb"[..], "t", 3).unwrap(), "a\nb");
    let e = read_text_from(&b"a\n\xff"[..], "t", 100).unwrap_err();
    assert_eq!(e.to_string(), "t:2: is not UTF-8 text");
    let (mut r, mut buf) = (&b"abc\nde"[..], Vec::new());
    assert_eq!(read_line(&mut r, &mut buf, 4).unwrap(), 4);
    assert_eq!(read_line(&mut r, &mut buf, 4).unwrap(), 2);
    assert_eq!(read_line(&mut r, &mut buf, 4).unwrap(), 0);
    assert_eq!(buf, b"abc\nde");
    assert!(matches!(read_line(&mut &b"abcde"[..], &mut Vec::new(), 4), Err(LineError::TooLong)));
}
