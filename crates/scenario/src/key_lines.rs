//! Where a key is written in a config file, so that an error found after the file was read
//! (a `[workload]` key no kind reads: the kinds own their keys, so serde's own "unknown field"
//! cannot catch it while parsing) still names the file's line.

use std::ops::Range;
use toml_edit::{ImDocument, Item, TableLike};

/// One step of a key's path: a key of a table, or an entry of an array of tables (`[[phase]]`).
#[derive(Clone, Copy, Debug)]
pub enum Step<'a> {
    Key(&'a str),
    Entry(usize),
}

/// The 1-based line of the last key of `path` in `text`, if it is written there (a key set
/// with `--set` is not).
pub fn line_of(text: &str, path: &[Step<'_>]) -> Option<usize> {
    let doc = ImDocument::parse(text).ok()?;
    let span = in_table(doc.as_table(), path)?;
    Some(line_at(text, span.start))
}

/// The span of the key `path` names, from `table`.
fn in_table(table: &dyn TableLike, path: &[Step<'_>]) -> Option<Range<usize>> {
    match path {
        [Step::Key(key)] => table.get_key_value(key)?.0.span(),
        [Step::Key(key), rest @ ..] => in_item(table.get(key)?, rest),
        _ => None,
    }
}

/// The span of the key `path` names, from `item` (a table, or an array of tables).
fn in_item(item: &Item, path: &[Step<'_>]) -> Option<Range<usize>> {
    match path {
        [Step::Entry(i), rest @ ..] => in_table(item.as_array_of_tables()?.get(*i)?, rest),
        _ => in_table(item.as_table_like()?, path),
    }
}

fn line_at(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())].iter().filter(|&&b| b == b'\n').count() + 1
}
