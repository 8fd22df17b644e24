//! Plain-text rendering for the terminal (and `summary.txt`).
//!
//! Columns are aligned by character count (not bytes) so non-ASCII labels line up; numbers
//! are right-aligned so their digits line up, text is left-aligned.

use std::fmt::Write as _;

use crate::{Cell, ExperimentReport, Table};

/// Line width for wrapped prose; tables are never wrapped (they would become unreadable).
pub const WIDTH: usize = 100;

/// Renders one experiment: header, summary, params, paper lines, verdicts (`[PASS]`/`[FAIL]`),
/// notes, every table aligned, and the list of plots. Ends with a newline.
pub fn render_text(report: &ExperimentReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "=== {} [{}] ===", one_line(&report.title), report.name);
    if !report.summary.is_empty() {
        wrap_into(&mut out, &report.summary, "", "");
    }

    if !report.params.is_empty() {
        out.push_str("\nParameters:\n");
        let w = report.params.iter().map(|(k, _)| width(k)).max().unwrap_or(0);
        for (k, v) in &report.params {
            let _ = writeln!(out, "  {}  {}", pad_right(&one_line(k), w), one_line(v));
        }
    }

    if !report.paper.is_empty() {
        out.push_str("\nPaper reports:\n");
        for line in &report.paper {
            wrap_into(&mut out, line, "  - ", "    ");
        }
    }

    if !report.verdicts.is_empty() {
        let _ = writeln!(
            out,
            "\ntrimlab measured: {}/{} checks hold",
            report.holds_count(),
            report.verdicts.len()
        );
        for v in &report.verdicts {
            let mark = if v.holds { "[PASS] " } else { "[FAIL] " };
            wrap_into(&mut out, &v.claim, &format!("  {mark}"), "         ");
            if !v.detail.is_empty() {
                wrap_into(&mut out, &v.detail, "         ", "         ");
            }
        }
    }

    if !report.notes.is_empty() {
        out.push_str("\nNotes:\n");
        for n in &report.notes {
            wrap_into(&mut out, n, "  - ", "    ");
        }
    }

    for t in &report.tables {
        let _ = writeln!(out, "\n--- {} ({}.csv) ---", one_line(&t.title), t.name);
        out.push_str(&render_table(t));
    }

    if !report.plots.is_empty() {
        out.push_str("\nPlots:\n");
        let w = report.plots.iter().map(|p| width(&p.name) + 4).max().unwrap_or(0);
        for p in &report.plots {
            let file = format!("{}.svg", p.name);
            let _ = writeln!(out, "  {}  {}", pad_right(&file, w), one_line(&p.title));
        }
    }
    out
}

/// Aligned table: header, a dashed rule, rows. A column is right-aligned when every
/// non-empty cell in it is a number.
pub fn render_table(t: &Table) -> String {
    let ncols = t.columns.len();
    let header: Vec<String> = t.columns.iter().map(|c| one_line(c)).collect();
    let body: Vec<Vec<String>> =
        t.rows.iter().map(|r| r.iter().map(|c| one_line(&c.render())).collect()).collect();
    let numeric: Vec<bool> = (0..ncols)
        .map(|i| t.rows.iter().filter_map(|r| r.get(i)).all(|c| c.is_numeric() || matches!(c, Cell::Empty)))
        .collect();
    let widths: Vec<usize> = (0..ncols)
        .map(|i| {
            body.iter()
                .filter_map(|r| r.get(i))
                .chain(std::iter::once(&header[i]))
                .map(|s| width(s))
                .max()
                .unwrap_or(0)
        })
        .collect();

    let mut out = String::new();
    let line = |cells: &[String], out: &mut String| {
        let parts: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let w = widths.get(i).copied().unwrap_or(0);
                if numeric.get(i).copied().unwrap_or(false) {
                    pad_left(s, w)
                } else {
                    pad_right(s, w)
                }
            })
            .collect();
        out.push_str(parts.join("  ").trim_end());
        out.push('\n');
    };
    line(&header, &mut out);
    let rule: Vec<String> = widths.iter().map(|&w| "-".repeat(w)).collect();
    line(&rule, &mut out);
    for row in &body {
        line(row, &mut out);
    }
    out
}

pub fn width(s: &str) -> usize {
    s.chars().count()
}

fn pad_right(s: &str, w: usize) -> String {
    format!("{s}{}", " ".repeat(w.saturating_sub(width(s))))
}

fn pad_left(s: &str, w: usize) -> String {
    format!("{}{s}", " ".repeat(w.saturating_sub(width(s))))
}

/// Control characters would break alignment; table cells and labels become one line.
fn one_line(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect()
}

/// Greedy word wrap to [`WIDTH`]; words longer than a line are kept whole.
pub fn wrap_into(out: &mut String, text: &str, first: &str, rest: &str) {
    let mut line = first.to_owned();
    let mut line_has_word = false;
    for word in text.split_whitespace() {
        if line_has_word && width(&line) + 1 + width(word) > WIDTH {
            out.push_str(&line);
            out.push('\n');
            line = rest.to_owned();
            line_has_word = false;
        }
        if line_has_word {
            line.push(' ');
        }
        line.push_str(word);
        line_has_word = true;
    }
    out.push_str(line.trim_end());
    out.push('\n');
}
