//! What happens to a file workload's files between its rounds (`between`), so that a program
//! recorded once (a script, an strace, a Filebench model) can stand for it run every day:
//! `own` leaves them to the workload's own deletes (an untar-build-`rm -rf` cleans up after
//! itself), `remove` deletes what a round left at the top of the file system (as `rm -r`: each
//! directory's entries in readdir order, then the directory), and `rename` keeps it, moved
//! into a directory of its own per round (`round-1/`, `round-2/`, ...), so the next round
//! creates its files afresh beside the old ones and the file system fills round by round.

use crate::stack::Fs;
use std::collections::BTreeSet;
use trimlab_workload::file::FileState;

/// `between`'s values.
pub const BETWEEN: &[(&str, &str)] = &[
    ("own", "nothing: the workload's own deletes (the default)"),
    ("remove", "what the round left at the top level is removed, as rm -r"),
    ("rename", "what the round left at the top level is moved into round-N/ and kept"),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Between {
    Own,
    Remove,
    Rename,
}

impl Between {
    pub fn parse(text: &str) -> Result<Between, String> {
        match text {
            "own" => Ok(Between::Own),
            "remove" => Ok(Between::Remove),
            "rename" => Ok(Between::Rename),
            _ => Err(format!(
                "accepted: {}",
                BETWEEN.iter().map(|(k, what)| format!("\"{k}\" ({what})")).collect::<Vec<_>>().join(", ")
            )),
        }
    }
}

/// The top level of the file system as the phase found it, and the rounds' directories.
pub struct RoundFiles {
    how: Between,
    kept: BTreeSet<String>,
}

impl RoundFiles {
    pub fn start(how: Between, fs: &Fs) -> RoundFiles {
        RoundFiles { how, kept: top_level(fs) }
    }

    /// Before round `round` (> 0): deals with what round `round - 1` left.
    pub fn before_round(&mut self, round: u32, fs: &mut Fs, state: &mut FileState) -> Result<(), String> {
        let left: Vec<String> = top_level(fs).into_iter().filter(|n| !self.kept.contains(n)).collect();
        match self.how {
            Between::Own => Ok(()),
            Between::Remove => {
                for name in &left {
                    remove_tree(fs, name)?;
                }
                let left = TopNames::new(&left);
                state.live.retain(|p| !left.holds(p));
                Ok(())
            }
            Between::Rename => {
                let dir = (round..)
                    .map(|r| format!("round-{r}"))
                    .find(|d| !self.kept.contains(d) && !left.contains(d));
                let dir = dir.unwrap_or_else(|| unreachable!("the rounds' names are unbounded"));
                fs.mkdir(&dir).map_err(|e| format!("between = \"rename\": mkdir {dir}: {e}"))?;
                for name in &left {
                    let to = format!("{dir}/{name}");
                    fs.rename(name, &to).map_err(|e| format!("between = \"rename\": mv {name} {to}: {e}"))?;
                }
                let left = TopNames::new(&left);
                for p in state.live.iter_mut() {
                    if left.holds(p) {
                        *p = format!("{dir}/{p}");
                    }
                }
                self.kept.insert(dir);
                Ok(())
            }
        }
    }
}

/// Top-level names (what a round left), asked which live paths are or lie under one of them.
struct TopNames<'a> {
    names: BTreeSet<&'a str>,
    /// The names' first bytes.
    firsts: [bool; 256],
}

impl<'a> TopNames<'a> {
    fn new(names: &'a [String]) -> TopNames<'a> {
        let mut firsts = [false; 256];
        for n in names {
            if let Some(&b) = n.as_bytes().first() {
                firsts[b as usize] = true;
            }
        }
        TopNames { names: names.iter().map(String::as_str).collect(), firsts }
    }

    /// Whether `path` is one of the names or lies under one: exactly when its top-level
    /// component is one (one set lookup per live file, not a scan of what a round left:
    /// millions of files times thousands of names on a 1 TiB file system). A path whose first
    /// byte begins no name is not under one, and most are not (an aged tree's, beside a
    /// workload's own names): the rest of it is never read, so the checks of consecutive
    /// paths overlap their cache misses instead of waiting for each in turn (a quarter of the
    /// rounds' time at 16 GiB before, docs/performance.md).
    fn holds(&self, path: &str) -> bool {
        path.as_bytes().first().is_some_and(|&b| self.firsts[b as usize]) && self.names.contains(top(path))
    }
}

/// The top-level entry `path` is or lies under.
fn top(path: &str) -> &str {
    path.split_once('/').map_or(path, |(first, _)| first)
}

fn top_level(fs: &Fs) -> BTreeSet<String> {
    fs.children("").map(|c| c.into_iter().map(|(n, _, _)| n).collect()).unwrap_or_default()
}

/// `rm -r path`: every entry of a directory in readdir order (directories depth first), then
/// the directory, without recursion.
fn remove_tree(fs: &mut Fs, path: &str) -> Result<(), String> {
    let err = |p: &str, e: trimlab_fs::FsError| format!("between = \"remove\": rm -r {p}: {e}");
    if !fs.is_dir(path) {
        return fs.unlink(path).map_err(|e| err(path, e));
    }
    // (directory, its entries still to remove in readdir order, reversed to pop).
    let mut stack: Vec<(String, Vec<(String, bool)>)> = vec![(path.to_string(), listing(fs, path)?)];
    while let Some((dir, entries)) = stack.last_mut() {
        match entries.pop() {
            Some((name, true)) => {
                let sub = format!("{dir}/{name}");
                let inner = listing(fs, &sub)?;
                stack.push((sub, inner));
            }
            Some((name, false)) => {
                let p = format!("{dir}/{name}");
                fs.unlink(&p).map_err(|e| err(&p, e))?;
            }
            None => {
                let dir = dir.clone();
                fs.rmdir(&dir).map_err(|e| err(&dir, e))?;
                stack.pop();
            }
        }
    }
    Ok(())
}

fn listing(fs: &Fs, dir: &str) -> Result<Vec<(String, bool)>, String> {
    let mut entries: Vec<(String, bool)> = fs
        .readdir(dir)
        .map_err(|e| format!("between = \"remove\": readdir {dir}: {e}"))?
        .into_iter()
        .map(|(n, _, is_dir)| (n, is_dir))
        .collect();
    entries.reverse();
    Ok(entries)
}
