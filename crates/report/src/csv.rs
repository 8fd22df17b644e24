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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Cell;

    #[test]
    fn plain_fields_are_not_quoted() {
        assert_eq!(csv_field("waf"), "waf");
        assert_eq!(csv_field(""), "");
        assert_eq!(csv_field("a b"), "a b");
    }

    #[test]
    fn special_fields_are_quoted() {
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("\""), "\"\"\"\"");
        assert_eq!(csv_field("two\nlines"), "\"two\nlines\"");
        assert_eq!(csv_field("cr\r"), "\"cr\r\"");
        assert_eq!(csv_field(" padded"), "\" padded\"");
    }

    #[test]
    fn table_renders_header_rows_and_numbers() {
        let mut t = Table::new("t", "T", &["name, full", "n", "x", "note"]);
        t.push_row([Cell::from("greedy \"gc\""), Cell::Int(-3), Cell::Num(0.1 + 0.2), Cell::Empty]);
        t.push_row([Cell::from("nan"), Cell::Int(0), Cell::Num(f64::NAN), Cell::from("a,b")]);
        assert_eq!(
            table_to_csv(&t),
            "\"name, full\",n,x,note\n\"greedy \"\"gc\"\"\",-3,0.3,\nnan,0,NaN,\"a,b\"\n"
        );
    }
}
