//! ext4's journal under a metadata storm: jbd2's transaction cap and checkpoints.
//!
//! Strategy: thousands of mkdirs (each journals its new directory block) on a small ext4 whose
//! journal is far smaller than their metadata, then rmdir of all; the device notes every
//! command. Invariants: `FileSystem::check` after every commit (`set_verify`): the log never
//! holds more than its blocks; no commit logs more than a quarter of the journal; every
//! move of the log's tail (a one-block write of the journal superblock) follows a FLUSH and
//! the checkpoint's home writes, and is itself followed by a FLUSH (REQ_FUA).

use crate::common;

use common::{small_ssd, Noting};
use std::cell::RefCell;
use std::rc::Rc;
use trimlab_device::Command;
use trimlab_fs::{FileSystem, FsConfig};
use trimlab_sim::SimTime;

const BS: u64 = 4096;

/// What the device saw, in order: (kind, first block, blocks).
type Log = Rc<RefCell<Vec<(char, u64, u64)>>>;

fn ext4(inode_ratio_bytes: u64) -> (FileSystem<Noting>, Log) {
    let log: Log = Rc::default();
    let noted = log.clone();
    let dev = Noting::new(small_ssd(), move |_, c| {
        let note = match c {
            Command::Write { offset, bytes, .. } => ('W', offset / BS, bytes / BS),
            Command::Flush => ('F', 0, 0),
            Command::Read { offset, bytes } => ('R', offset / BS, bytes / BS),
            Command::Trim { .. } => ('T', 0, 0),
        };
        noted.borrow_mut().push(note);
    });
    let config = FsConfig { inode_ratio_bytes, ..FsConfig::default() };
    let mut fs = FileSystem::mkfs(dev, config, SimTime(0), false).expect("mkfs");
    fs.set_verify(true);
    (fs, log)
}

#[test]
fn a_mkdir_storm_commits_at_a_quarter_of_the_journal_and_checkpoints_to_make_room() {
    let (mut fs, log) = ext4(8192);
    let (jstart, jlen) = fs.journal_area();
    // 48 MiB: mke2fs's table gives 1024 blocks (4 MiB), a transaction at most 256.
    assert_eq!(jlen, 1024);
    let first = log.borrow().len();
    for i in 0..2000 {
        fs.mkdir(&format!("d{i}")).unwrap_or_else(|e| panic!("mkdir d{i}: {e}"));
    }
    for i in 0..2000 {
        fs.rmdir(&format!("d{i}")).unwrap_or_else(|e| panic!("rmdir d{i}: {e}"));
    }
    fs.sync();
    fs.check().unwrap();
    let s = fs.stats().clone();
    assert!(s.commits_capped >= 2000 / 256, "{s:?}");
    assert!(s.checkpoints >= 1 && s.journal_tail_updates >= s.checkpoints, "{s:?}");
    assert!(s.metadata_blocks_checkpointed >= 1000, "{s:?}");
    // Each commit's log writes (between two FLUSHes, inside the journal's log blocks) stay
    // under the cap, and the journal superblock is written only as a tail move.
    let notes = log.borrow()[first..].to_vec();
    let in_log = |b: u64, n: u64| b > jstart && b + n <= jstart + jlen;
    let mut since_flush = 0;
    for (k, &(kind, b, n)) in notes.iter().enumerate() {
        match kind {
            'F' => since_flush = 0,
            'W' if in_log(b, n) => {
                since_flush += n;
                assert!(since_flush <= jlen / 4 + 1, "a commit logged {since_flush} blocks at command {k}");
            }
            'W' if b == jstart => {
                assert_eq!(n, 1);
                assert_eq!(notes.get(k + 1).map(|c| c.0), Some('F'), "the superblock's FUA at {k}");
            }
            _ => {}
        }
    }
    // A checkpoint: home writes of metadata (outside the journal), a FLUSH, then the superblock.
    let sb = notes.iter().position(|&(kind, b, _)| kind == 'W' && b == jstart).expect("a tail move");
    assert_eq!(notes[sb - 1].0, 'F', "{:?}", &notes[sb.saturating_sub(4)..sb + 2]);
    assert!(notes[..sb - 1].iter().rev().take(3).any(|&(kind, b, n)| kind == 'W' && !in_log(b, n)));
}

#[test]
fn a_short_burst_of_metadata_needs_no_cap_and_no_checkpoint() {
    let (mut fs, _log) = ext4(16384);
    for i in 0..100 {
        fs.mkdir(&format!("d{i}")).unwrap();
    }
    fs.sync();
    let s = fs.stats();
    assert_eq!((s.commits_capped, s.checkpoints, s.journal_tail_updates), (0, 0, 0), "{s:?}");
    assert_eq!(s.commits, 1);
}
