//! CSV output (RFC 4180 quoting, `\n` line endings).
//!
//! Written by hand rather than with the `csv` crate: the rules needed are a dozen lines and
//! owning them keeps the byte output fixed across dependency upgrades.

use crate::Table;

/// Quotes a field when it contains a comma, a double quote, CR or LF, or starts/ends with
/// whitespace (which some readers would otherwise trim); inner quotes are doubled.
pub fn csv_field(s: &str) -> String {
    let needs_quotes = s.contains([',', '"', '\n', '\r'])
        || s.starts_with(char::is_whitespace)
        || s.ends_with(char::is_whitespace);
    if needs_quotes {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

/// Header row of column names, then one line per row; cells printed by [`crate::Cell::render`]
/// (floats via [`crate::format_num`], `Empty` as an empty field). Every line ends in `\n`.
pub fn table_to_csv(table: &Table) -> String {
    let mut out = String::new();
    push_line(&mut out, table.columns.iter().map(|c| csv_field(c)));
    for row in &table.rows {
        push_line(&mut out, row.iter().map(|c| csv_field(&c.render())));
    }
    out
}

fn push_line(out: &mut String, fields: impl Iterator<Item = String>) {
    for (i, f) in fields.enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&f);
    }
    out.push('\n');
}
