//! Tests of src/journal.rs (moved out of the lib so the crate compiles once).

use std::fs::OpenOptions;
use std::io::Write;
use trimlab_sweep::journal::*;
use trimlab_sweep::row::{Row, Status};

fn row(run: usize) -> Row {
    Row {
        run,
        values: vec![("a".into(), serde_json::json!(0.1))],
        seed: 1,
        config_hash: "h".into(),
        status: Status::Ok,
        error: None,
        metrics: vec![("report.waf".into(), serde_json::json!(1.0 / 3.0))],
    }
}

#[test]
fn rows_read_back_exactly_and_a_cut_last_line_is_dropped() {
    let dir = std::env::temp_dir().join(format!("trimlab-journal-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("rows.jsonl");
    let _ = std::fs::remove_file(&path);
    let (mut j, rows) = Journal::open(&path).unwrap();
    assert!(rows.is_empty());
    j.append(&row(0)).unwrap();
    j.append(&row(1)).unwrap();
    drop(j);
    // A kill in the middle of a write.
    let mut f = OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(b"{\"run\":2,\"val").unwrap();
    drop(f);
    let (mut j, rows) = Journal::open(&path).unwrap();
    assert_eq!(rows, [row(0), row(1)]);
    j.append(&row(2)).unwrap();
    let (_, rows) = Journal::open(&path).unwrap();
    assert_eq!(rows, [row(0), row(1), row(2)]);

    std::fs::write(&path, "{}\n").unwrap();
    let e = Journal::open(&path).err().expect("a bad line is refused").to_string();
    assert!(e.starts_with(&format!("{}:1: not a sweep row", path.display())), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
