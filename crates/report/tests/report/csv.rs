//! CSV fields quoted only when they must be, and tables with their header, rows and numbers.

use trimlab_report::{csv_field, table_to_csv, Cell, Table};

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
