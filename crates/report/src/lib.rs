//! Turns trimlab experiment results into files: CSV + JSON tables, SVG plots, a plain-text
//! summary per experiment and one self-contained `index.html` over all experiments.
//!
//! Everything here is deterministic: the same [`ExperimentReport`] always yields byte-identical
//! files. Numbers are printed by one fixed routine ([`format_num`]), collections are plain
//! `Vec`s iterated in order (no hash maps), and nothing time- or host-dependent is written.
//! The only functions that touch the file system are [`write_experiment`] and [`write_index`];
//! the `render_*` / `*_to_*` functions are pure and return strings, so tests and callers can
//! inspect output without I/O.

mod csv;
mod html;
mod num;
mod serde_impl;
// svg and text are public only for their tests in tests/report/ (the lib has no test harness);
// no API beyond the re-exports below.
#[doc(hidden)]
pub mod svg;
#[doc(hidden)]
pub mod text;
mod units;

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use crate::csv::{csv_field, table_to_csv};
pub use crate::html::{
    escape_html, render_index_html, render_index_html_with_references, render_page, Page, PageKind,
};
pub use crate::num::{format_display, format_num};
pub use crate::svg::{render_svg, SVG_HEIGHT, SVG_WIDTH};
pub use crate::text::render_text;
pub use crate::units::readable_header;

/// One table cell.
///
/// In JSON a cell is a bare value: `Text` -> string, `Int` -> integer, `Num` -> number
/// (or `null` when not finite, since JSON has no NaN/inf), `Empty` -> `null`.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Text(String),
    Int(i64),
    /// Printed (CSV, text, HTML) by [`format_num`]: at most 4 decimals, 4 significant digits
    /// below 1, scientific outside `[1e-6, 1e15)`. JSON keeps the full value.
    Num(f64),
    Empty,
}

impl Cell {
    /// The cell as printed in CSV, text and HTML output.
    pub fn render(&self) -> String {
        match self {
            Cell::Text(s) => s.clone(),
            Cell::Int(i) => i.to_string(),
            Cell::Num(x) => format_num(*x),
            Cell::Empty => String::new(),
        }
    }

    /// The cell as the HTML page shows it: numbers rounded to six significant digits
    /// ([`format_display`]); the files keep [`Cell::render`]'s digits.
    pub fn display(&self) -> String {
        match self {
            Cell::Num(x) => format_display(*x),
            other => other.render(),
        }
    }

    /// Numbers are right-aligned in text and HTML tables.
    pub fn is_numeric(&self) -> bool {
        matches!(self, Cell::Int(_) | Cell::Num(_))
    }
}

impl From<&str> for Cell {
    fn from(s: &str) -> Self {
        Cell::Text(s.to_owned())
    }
}
impl From<String> for Cell {
    fn from(s: String) -> Self {
        Cell::Text(s)
    }
}
impl From<f64> for Cell {
    fn from(x: f64) -> Self {
        Cell::Num(x)
    }
}
impl From<f32> for Cell {
    fn from(x: f32) -> Self {
        Cell::Num(f64::from(x))
    }
}
impl From<i64> for Cell {
    fn from(i: i64) -> Self {
        Cell::Int(i)
    }
}
impl From<i32> for Cell {
    fn from(i: i32) -> Self {
        Cell::Int(i64::from(i))
    }
}
impl From<u32> for Cell {
    fn from(i: u32) -> Self {
        Cell::Int(i64::from(i))
    }
}
impl From<u64> for Cell {
    /// Counters beyond `i64::MAX` do not fit `Int`; they degrade to `Num` rather than wrap.
    fn from(i: u64) -> Self {
        i64::try_from(i).map_or(Cell::Num(i as f64), Cell::Int)
    }
}
impl From<usize> for Cell {
    fn from(i: usize) -> Self {
        Cell::from(i as u64)
    }
}
impl<T: Into<Cell>> From<Option<T>> for Cell {
    fn from(v: Option<T>) -> Self {
        v.map_or(Cell::Empty, Into::into)
    }
}

/// A table; written as `<name>.csv` and `<name>.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Table {
    /// File stem: `[A-Za-z0-9._-]`, not starting with `.`.
    pub name: String,
    pub title: String,
    pub columns: Vec<String>,
    /// Every row must have exactly `columns.len()` cells.
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    pub fn new(name: impl Into<String>, title: impl Into<String>, columns: &[&str]) -> Self {
        Table {
            name: name.into(),
            title: title.into(),
            columns: columns.iter().map(|c| (*c).to_owned()).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row; shape is checked when the table is written, not here, so building
    /// a table never panics in the middle of a long run.
    pub fn push_row<I, C>(&mut self, cells: I)
    where
        I: IntoIterator<Item = C>,
        C: Into<Cell>,
    {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }
}

/// How one line-plot series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SeriesStyle {
    /// Solid line: simulated curves.
    Line,
    /// Dashed line: model / paper reference curves.
    Dashed,
    /// Unconnected markers: measured values.
    Points,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    pub label: String,
    /// Non-finite coordinates are skipped (a line is broken there); in JSON they are `null`.
    #[serde(with = "serde_impl::points")]
    pub points: Vec<(f64, f64)>,
    pub style: SeriesStyle,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum PlotKind {
    Lines {
        series: Vec<Series>,
    },
    /// grouped bars: one group per category, one bar per series in each group
    Bars {
        categories: Vec<String>,
        /// `(label, values)`; `values.len()` must equal `categories.len()`.
        #[serde(with = "serde_impl::bar_series")]
        series: Vec<(String, Vec<f64>)>,
    },
    /// Means with a bar from low to high at each (the spread over seeds, say): one line per
    /// series over `categories`, evenly spaced, as an interaction plot draws a sweep's values.
    Ranges {
        categories: Vec<String>,
        series: Vec<RangeSeries>,
    },
    /// A grid of values on one colour scale, each value written in its cell: `values[r][c]`
    /// is at row `rows[r]` (drawn bottom to top) and column `columns[c]`.
    Heatmap {
        columns: Vec<String>,
        rows: Vec<String>,
        #[serde(with = "serde_impl::float_rows")]
        values: Vec<Vec<f64>>,
    },
}

/// One line of a [`PlotKind::Ranges`] plot: per category a mean and the range around it;
/// NaN where there is no value (the line breaks there).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RangeSeries {
    pub label: String,
    #[serde(with = "serde_impl::floats")]
    pub mean: Vec<f64>,
    #[serde(with = "serde_impl::floats")]
    pub low: Vec<f64>,
    #[serde(with = "serde_impl::floats")]
    pub high: Vec<f64>,
}

/// A plot; written as `<name>.svg`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plot {
    /// File stem: `[A-Za-z0-9._-]`, not starting with `.`.
    pub name: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// Logarithmic y axis (decades); values <= 0 cannot be shown and are omitted with a note.
    pub log_y: bool,
    /// Logarithmic x axis (line plots only): for a quantity swept over decades, such as the
    /// cost of one TRIM. Left out of JSON when false, so plots without it read as before.
    #[serde(default, skip_serializing_if = "is_false")]
    pub log_x: bool,
    /// Symmetric log y axis (bar plots): linear within ±1, logarithmic beyond, both signs, for
    /// values spanning decades of either sign. Left out of JSON when false.
    #[serde(default, skip_serializing_if = "is_false")]
    pub symlog_y: bool,
    pub kind: PlotKind,
}

fn is_false(b: &bool) -> bool {
    !b
}

/// One acceptance check: does our measurement reproduce a claim of the paper?
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    pub claim: String,
    pub holds: bool,
    pub detail: String,
}

/// A source document, cited in full in the index's references block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reference {
    /// Short key the experiments use ("000"); `[A-Za-z0-9._-]`, an HTML id.
    pub key: String,
    /// Authors, title, venue, year (and pages or address when known).
    pub citation: String,
}

/// Everything one experiment produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentReport {
    /// e.g. "waf"; directory name, same character rules as table names.
    pub name: String,
    pub title: String,
    /// one paragraph: what was run, at what scale
    pub summary: String,
    /// what the paper reports (lines), shown beside ours
    pub paper: Vec<String>,
    /// acceptance checks: ours vs paper
    pub verdicts: Vec<Verdict>,
    pub notes: Vec<String>,
    pub tables: Vec<Table>,
    pub plots: Vec<Plot>,
    /// scale factors, seed, config hash ...; kept in the given order.
    pub params: Vec<(String, String)>,
}

impl ExperimentReport {
    /// Number of verdicts that hold, for summaries.
    pub fn holds_count(&self) -> usize {
        self.verdicts.iter().filter(|v| v.holds).count()
    }
}

/// Every failure names the path it concerns, so a failed `reproduce` run says which file.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("cannot write {}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("cannot serialize {}: {source}", path.display())]
    Json { path: PathBuf, source: serde_json::Error },
    #[error("cannot draw plot {}: {message}", path.display())]
    Plot { path: PathBuf, message: String },
    #[error("invalid report data for {}: {message}", path.display())]
    Invalid { path: PathBuf, message: String },
}

/// Names become directory names, file stems, URL paths and HTML ids, so they are limited to a
/// portable, escape-free alphabet; this also rules out path traversal (`..`, `/`).
fn check_name(name: &str, path: &Path) -> Result<(), ReportError> {
    let ok = !name.is_empty()
        && !name.starts_with('.')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(ReportError::Invalid {
            path: path.to_path_buf(),
            message: format!("name {name:?} must be non-empty [A-Za-z0-9._-] and not start with '.'"),
        })
    }
}

fn invalid(path: PathBuf, message: String) -> ReportError {
    ReportError::Invalid { path, message }
}

/// Checks everything that would otherwise produce a silently wrong or clobbered file.
fn validate_report(out_dir: &Path, report: &ExperimentReport) -> Result<(), ReportError> {
    let dir = out_dir.join(&report.name);
    check_name(&report.name, &dir)?;
    for (i, t) in report.tables.iter().enumerate() {
        let path = dir.join(format!("{}.csv", t.name));
        check_name(&t.name, &path)?;
        // report.json / summary.txt are ours; a table called "report" would overwrite it.
        if t.name == "report" {
            return Err(invalid(path, "table name \"report\" is reserved".into()));
        }
        if report.tables[..i].iter().any(|o| o.name == t.name) {
            return Err(invalid(path, format!("duplicate table name {:?}", t.name)));
        }
        for (r, row) in t.rows.iter().enumerate() {
            if row.len() != t.columns.len() {
                return Err(invalid(
                    path,
                    format!("row {r} has {} cells but there are {} columns", row.len(), t.columns.len()),
                ));
            }
        }
    }
    for (i, p) in report.plots.iter().enumerate() {
        let path = dir.join(format!("{}.svg", p.name));
        check_name(&p.name, &path)?;
        if report.plots[..i].iter().any(|o| o.name == p.name) {
            return Err(invalid(path, format!("duplicate plot name {:?}", p.name)));
        }
        svg::validate_plot(p).map_err(|m| invalid(path, m))?;
    }
    Ok(())
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    fs::write(path, bytes).map_err(|source| ReportError::Io { path: path.to_path_buf(), source })
}

fn to_json<T: Serialize>(value: &T, path: &Path) -> Result<String, ReportError> {
    let mut s = serde_json::to_string_pretty(value)
        .map_err(|source| ReportError::Json { path: path.to_path_buf(), source })?;
    s.push('\n');
    Ok(s)
}

/// Writes `out_dir/<name>/`: `<table>.csv`, `<table>.json` per table, `<plot>.svg` per plot,
/// `report.json` (the whole report) and `summary.txt` (= [`render_text`]).
///
/// Returns the written paths in a fixed order (tables, plots, report.json, summary.txt).
/// Everything is validated and rendered before the first file is written, so bad input
/// leaves no half-written directory behind. Existing other files in the directory are left
/// alone (never delete what we did not make).
pub fn write_experiment(out_dir: &Path, report: &ExperimentReport) -> Result<Vec<PathBuf>, ReportError> {
    validate_report(out_dir, report)?;
    let dir = out_dir.join(&report.name);

    let mut files: Vec<(PathBuf, String)> = Vec::new();
    for t in &report.tables {
        let csv_path = dir.join(format!("{}.csv", t.name));
        files.push((csv_path, table_to_csv(t)));
        let json_path = dir.join(format!("{}.json", t.name));
        let json = to_json(t, &json_path)?;
        files.push((json_path, json));
    }
    for p in &report.plots {
        let path = dir.join(format!("{}.svg", p.name));
        let svg = render_svg(p).map_err(|e| match e {
            // render_svg only knows the plot name; report the real target path.
            ReportError::Plot { message, .. } => ReportError::Plot { path: path.clone(), message },
            other => other,
        })?;
        files.push((path, svg));
    }
    let report_path = dir.join("report.json");
    let json = to_json(report, &report_path)?;
    files.push((report_path, json));
    files.push((dir.join("summary.txt"), render_text(report)));

    fs::create_dir_all(&dir).map_err(|source| ReportError::Io { path: dir.clone(), source })?;
    let mut written = Vec::with_capacity(files.len());
    for (path, content) in files {
        write_file(&path, content.as_bytes())?;
        written.push(path);
    }
    Ok(written)
}

/// Writes `out_dir/index.html` (see [`render_index_html`]): one self-contained page with every
/// experiment; plots are inlined as SVG, tables as HTML tables, with relative links to the
/// per-experiment files written by [`write_experiment`].
pub fn write_index(out_dir: &Path, reports: &[ExperimentReport]) -> Result<PathBuf, ReportError> {
    write_index_with_references(out_dir, reports, &[])
}

/// [`write_index`] with a references block citing the source documents in full.
pub fn write_index_with_references(
    out_dir: &Path,
    reports: &[ExperimentReport],
    references: &[Reference],
) -> Result<PathBuf, ReportError> {
    let path = out_dir.join("index.html");
    for rf in references {
        check_name(&rf.key, &path)?;
    }
    for (i, r) in reports.iter().enumerate() {
        validate_report(out_dir, r)?;
        // Experiment names are HTML ids and directory names: duplicates would collide.
        if reports[..i].iter().any(|o| o.name == r.name) {
            return Err(invalid(path, format!("duplicate experiment name {:?}", r.name)));
        }
    }
    let html = render_index_html_with_references(reports, references).map_err(|e| match e {
        ReportError::Plot { path: p, message } => ReportError::Plot { path: out_dir.join(p), message },
        other => other,
    })?;
    fs::create_dir_all(out_dir).map_err(|source| ReportError::Io { path: out_dir.to_path_buf(), source })?;
    write_file(&path, html.as_bytes())?;
    Ok(path)
}

/// Writes `out_dir/index.html` as a page of `page.kind` (see [`render_page`]): a run, replay,
/// advise or sweep page of one job, or a reproduce page.
pub fn write_page(out_dir: &Path, page: &Page<'_>) -> Result<PathBuf, ReportError> {
    if page.kind == PageKind::Reproduce {
        return write_index_with_references(out_dir, page.reports, page.references);
    }
    let path = out_dir.join("index.html");
    for r in page.reports {
        validate_report(out_dir, r)?;
    }
    let html = render_page(page).map_err(|e| match e {
        ReportError::Plot { path: p, message } => ReportError::Plot { path: out_dir.join(p), message },
        other => other,
    })?;
    fs::create_dir_all(out_dir).map_err(|source| ReportError::Io { path: out_dir.to_path_buf(), source })?;
    write_file(&path, html.as_bytes())?;
    Ok(path)
}
