//! The plain-text summary: tables aligned by column, prose wrapped to its width and indent.

use trimlab_report::text::{render_table, width, wrap_into, WIDTH};
use trimlab_report::{Cell, Table};

#[test]
fn table_alignment() {
    let mut t = Table::new("t", "T", &["policy", "waf", "n"]);
    t.push_row([Cell::from("greedy"), Cell::Num(1.5), Cell::Int(10)]);
    t.push_row([Cell::from("cost-benefit"), Cell::Num(12.25), Cell::Empty]);
    assert_eq!(
        render_table(&t),
        "policy          waf   n\n\
         ------------  -----  --\n\
         greedy          1.5  10\n\
         cost-benefit  12.25\n"
    );
}

#[test]
fn wrapping_respects_width_and_indent() {
    let mut out = String::new();
    let text = "word ".repeat(60);
    wrap_into(&mut out, &text, "  - ", "    ");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines.len() > 2);
    assert!(lines.iter().all(|l| width(l) <= WIDTH));
    assert!(lines[0].starts_with("  - word"));
    assert!(lines[1].starts_with("    word"));
}
