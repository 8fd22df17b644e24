//! The journal `rows.jsonl`: every finished row appended as one JSON line and flushed at once,
//! so a sweep killed at any moment loses at most the runs in flight; a re-run reads it back and
//! skips what is there. results.csv and results.json are rebuilt from it at the end.
//!
//! Journals concatenate: `cat shard-*/rows.jsonl > all/rows.jsonl`, then `trimlab sweep` on
//! `all` runs nothing and writes the whole table.

use crate::row::Row;
use crate::SweepError;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

pub struct Journal {
    path: PathBuf,
    file: File,
}

impl Journal {
    /// Opens (creating) the journal and returns the rows already in it. A last line cut short by
    /// a kill is dropped (and cut from the file, so appends start on a fresh line); a bad line
    /// anywhere else is an error naming it.
    pub fn open(path: &Path) -> Result<(Journal, Vec<Row>), SweepError> {
        let io = |error| SweepError::Io { path: path.display().to_string(), error };
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(io(e)),
        };
        let complete = text.rfind('\n').map_or(0, |i| i + 1);
        let mut rows = Vec::new();
        for (i, line) in text[..complete].lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let row: Row = serde_json::from_str(line).map_err(|e| {
                SweepError::Journal(format!(
                    "{}:{}: not a sweep row ({e}); remove the line or the file to run those points again",
                    path.display(),
                    i + 1
                ))
            })?;
            rows.push(row);
        }
        let file = OpenOptions::new().create(true).append(true).open(path).map_err(io)?;
        if complete < text.len() {
            file.set_len(complete as u64).map_err(io)?;
        }
        Ok((Journal { path: path.to_path_buf(), file }, rows))
    }

    pub fn append(&mut self, row: &Row) -> Result<(), SweepError> {
        let mut line = serde_json::to_string(row).expect("a row serializes");
        line.push('\n');
        self.file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.flush())
            .map_err(|error| SweepError::Io { path: self.path.display().to_string(), error })
    }
}
