//! The single static `index.html` over all experiments.
//!
//! Self-contained on purpose: inline CSS, plots inlined as SVG, no script and no external URL,
//! so the page can be opened from disk, attached to an issue or archived with a run. Relative
//! links point at the per-experiment CSV/JSON/SVG files for anyone who wants the raw data.

use std::fmt::Write as _;

use crate::{readable_header, render_svg, Cell, ExperimentReport, Plot, Reference, ReportError, Table};

/// Tables longer than this are collapsed (a click opens them); plots come first anyway.
const TABLE_ROWS_OPEN_MAX: usize = 12;

/// Escapes text for HTML element content and double- or single-quoted attribute values.
pub fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const CSS: &str = r#"
:root { --ok: #1a7f37; --bad: #cf222e; --line: #d0d7de; --soft: #f6f8fa; --muted: #57606a; }
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       color: #1f2328; line-height: 1.45; margin: 0; background: #fff; }
main { max-width: 1280px; margin: 0 auto; padding: 1.5rem; }
h1 { margin: 0 0 .3rem; font-size: 1.8rem; }
h2 { margin: 0 0 .6rem; font-size: 1.45rem; border-bottom: 2px solid var(--line); padding-bottom: .3rem; }
h2 .name { color: var(--muted); font-weight: normal; font-size: 1rem; font-family: ui-monospace, monospace; }
h3 { font-size: 1.05rem; margin: 1.2rem 0 .4rem; }
section.experiment { margin: 2.5rem 0; }
.muted { color: var(--muted); }
table { border-collapse: collapse; margin: .4rem 0 1rem; font-size: .92rem; }
th, td { border: 1px solid var(--line); padding: .25rem .6rem; text-align: left; vertical-align: top; }
th { background: var(--soft); font-weight: 600; font-size: .85rem; }
th.paper, td.paper { background: #fff8e6; }
tbody tr:nth-child(even) td.paper { background: #fff3d6; }
tbody tr:nth-child(even) td { background: #fbfcfd; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
caption { caption-side: top; text-align: left; font-weight: 600; padding: .2rem 0; }
caption a, figcaption a { font-weight: normal; font-size: .85rem; margin-left: .5rem; }
.tablewrap { overflow-x: auto; max-width: 100%; }
details { margin: .4rem 0 1rem; }
details > summary { cursor: pointer; font-weight: 600; }
details > summary .muted { font-weight: normal; }
ol.references li { margin: .3rem 0; }
.refkey { font-family: ui-monospace, monospace; color: var(--muted); }
table.params td:first-child { font-family: ui-monospace, monospace; }
.compare { display: grid; grid-template-columns: 1fr 1fr; gap: 1rem; }
.compare > div { background: var(--soft); border: 1px solid var(--line); border-radius: 6px; padding: .6rem 1rem; }
.compare h3 { margin-top: 0; }
.compare ul { margin: 0; padding-left: 1.1rem; }
ul.verdicts { list-style: none; padding-left: 0; }
ul.verdicts li { margin: .35rem 0; padding-left: 1.7rem; position: relative; }
.mark { position: absolute; left: 0; font-weight: bold; }
.pass .mark, .score.all { color: var(--ok); }
.fail .mark, .score.some { color: var(--bad); }
.detail { display: block; color: var(--muted); font-size: .9rem; }
figure { margin: 1rem 0; }
figure svg { width: 100%; height: auto; max-width: 960px; border: 1px solid var(--line); border-radius: 4px; }
figcaption { font-size: .9rem; color: var(--muted); }
nav table td:first-child { font-family: ui-monospace, monospace; }
.warning { background: #fff1f0; border: 1px solid var(--bad); border-radius: 6px; padding: .6rem 1rem; margin: 1rem 0; }
.recommendation { background: #eef8f0; border: 1px solid var(--ok); border-radius: 6px; padding: .8rem 1rem; margin: 1rem 0; }
.recommendation .what { font-size: 1.3rem; font-weight: 600; }
@media (max-width: 800px) { .compare { grid-template-columns: 1fr; } }
"#;

/// What a page is for. A reproduce page judges experiments against their papers; a run,
/// replay, advise or sweep page reports one job of the user's, so it has no acceptance checks,
/// leads with what that job is asked (advise: the recommendation and its reason) and puts any
/// warning about the result above everything else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageKind {
    Reproduce,
    Run,
    Replay,
    Advise,
    Sweep,
}

impl PageKind {
    fn heading(self) -> &'static str {
        match self {
            PageKind::Reproduce => "trimlab: reproduced results",
            PageKind::Run => "trimlab run",
            PageKind::Replay => "trimlab replay",
            PageKind::Advise => "trimlab advise",
            PageKind::Sweep => "trimlab sweep",
        }
    }
}

/// One page: its kind, its reports (one for every kind but reproduce), the references a
/// reproduce page cites, and warnings shown first (a saturated replay, failed sweep points).
pub struct Page<'a> {
    pub kind: PageKind,
    pub reports: &'a [ExperimentReport],
    pub references: &'a [Reference],
    pub warnings: &'a [String],
}

/// Renders the whole page. Errors only when a plot cannot be drawn (its path relative to the
/// output directory is named).
pub fn render_index_html(reports: &[ExperimentReport]) -> Result<String, ReportError> {
    render_index_html_with_references(reports, &[])
}

/// [`render_index_html`] with a references block (full citations of the source documents) at
/// the end, linked from the overview.
pub fn render_index_html_with_references(
    reports: &[ExperimentReport],
    references: &[Reference],
) -> Result<String, ReportError> {
    render_page(&Page { kind: PageKind::Reproduce, reports, references, warnings: &[] })
}

/// Renders a page of any kind; a reproduce page is [`render_index_html_with_references`]'s.
pub fn render_page(page: &Page<'_>) -> Result<String, ReportError> {
    if page.kind == PageKind::Reproduce {
        return render_reproduce(page.reports, page.references);
    }
    let mut h = String::new();
    let title = page.reports.first().map_or(page.kind.heading().to_owned(), |r| r.title.clone());
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    h.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    let _ = write!(h, "<title>{}</title>\n<style>", escape_html(&title));
    h.push_str(CSS);
    h.push_str("</style>\n</head>\n<body>\n<main>\n");
    let _ = writeln!(h, "<header>\n<h1>{}</h1>", escape_html(&title));
    h.push_str("</header>\n");
    for w in page.warnings {
        let _ = writeln!(h, "<div class=\"warning\"><strong>Warning:</strong> {}</div>", escape_html(w));
    }
    for r in page.reports {
        if page.kind == PageKind::Advise {
            render_recommendation(&mut h, r);
        }
        render_job_section(&mut h, page.kind, r)?;
    }
    h.push_str("</main>\n</body>\n</html>\n");
    Ok(h)
}

/// The advice first: the report's `recommendation` and `reason` parameters.
fn render_recommendation(h: &mut String, r: &ExperimentReport) {
    let param = |key: &str| r.params.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
    if let Some(what) = param("recommendation") {
        let _ = writeln!(
            h,
            "<div class=\"recommendation\"><div class=\"what\">Recommendation: {}</div><p>{}</p></div>",
            escape_html(what),
            escape_html(param("reason").unwrap_or(""))
        );
    }
}

/// A job's section: summary, then (advise) the scenarios' table before the plots, or (run,
/// replay, sweep) the plots before the tables; notes and parameters last.
fn render_job_section(h: &mut String, kind: PageKind, r: &ExperimentReport) -> Result<(), ReportError> {
    let _ = writeln!(h, "<section class=\"experiment\" id=\"exp-{}\">", escape_html(&r.name));
    if !r.summary.is_empty() {
        let _ = writeln!(h, "<p>{}</p>", escape_html(&r.summary));
    }
    let tables = |h: &mut String| {
        for t in &r.tables {
            render_table(h, &r.name, t);
        }
    };
    if kind == PageKind::Advise {
        tables(h);
    }
    for p in &r.plots {
        render_plot(h, &r.name, p)?;
    }
    if kind != PageKind::Advise {
        tables(h);
    }
    render_notes_and_params(h, r);
    h.push_str("</section>\n");
    Ok(())
}

fn render_reproduce(reports: &[ExperimentReport], references: &[Reference]) -> Result<String, ReportError> {
    let mut h = String::new();
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    h.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    h.push_str("<title>trimlab: reproduced results</title>\n<style>");
    h.push_str(CSS);
    h.push_str("</style>\n</head>\n<body>\n<main>\n");

    let checks: usize = reports.iter().map(|r| r.verdicts.len()).sum();
    let holds: usize = reports.iter().map(|r| r.holds_count()).sum();
    h.push_str("<header>\n<h1>trimlab: reproduced results</h1>\n");
    let _ = writeln!(
        h,
        "<p class=\"muted\">{} experiment(s); {holds} of {checks} acceptance checks hold.{}</p>",
        reports.len(),
        if references.is_empty() { "" } else { " Source documents: <a href=\"#references\">references</a>." }
    );
    h.push_str("</header>\n");

    if !reports.is_empty() {
        h.push_str("<nav>\n<table>\n<thead><tr><th>experiment</th><th>title</th><th>checks holding</th></tr></thead>\n<tbody>\n");
        for r in reports {
            let _ = writeln!(
                h,
                "<tr><td><a href=\"#exp-{n}\">{n}</a></td><td>{t}</td><td class=\"num\">{s}</td></tr>",
                n = escape_html(&r.name),
                t = escape_html(&r.title),
                s = score(r),
            );
        }
        h.push_str("</tbody>\n</table>\n</nav>\n");
    }

    for r in reports {
        render_section(&mut h, r)?;
    }
    if !references.is_empty() {
        h.push_str("<section id=\"references\">\n<h2>References</h2>\n<ol class=\"references\">\n");
        for rf in references {
            let _ = writeln!(
                h,
                "<li id=\"ref-{k}\"><span class=\"refkey\">[{k}]</span> {}</li>",
                escape_html(&rf.citation),
                k = escape_html(&rf.key)
            );
        }
        h.push_str("</ol>\n</section>\n");
    }
    h.push_str("</main>\n</body>\n</html>\n");
    Ok(h)
}

/// `3/4` coloured green when every check holds, red otherwise.
fn score(r: &ExperimentReport) -> String {
    let (ok, n) = (r.holds_count(), r.verdicts.len());
    if n == 0 {
        return "<span class=\"muted\">no checks</span>".to_owned();
    }
    let class = if ok == n { "all" } else { "some" };
    format!("<span class=\"score {class}\">{ok}/{n}</span>")
}

fn render_section(h: &mut String, r: &ExperimentReport) -> Result<(), ReportError> {
    let name = escape_html(&r.name);
    let _ = writeln!(h, "<section class=\"experiment\" id=\"exp-{name}\">");
    let _ = writeln!(h, "<h2>{} <span class=\"name\">{name}</span></h2>", escape_html(&r.title));
    if !r.summary.is_empty() {
        let _ = writeln!(h, "<p>{}</p>", escape_html(&r.summary));
    }

    // Paper claims and our verdicts side by side: the point of the whole page (left out for
    // reports with neither, such as `trimlab run --html`).
    if !(r.paper.is_empty() && r.verdicts.is_empty()) {
        render_compare(h, r);
    }

    // Plots first: they are what a reader looks at; long tables follow, collapsed.
    if !r.plots.is_empty() {
        h.push_str("<h3>Plots</h3>\n");
        for p in &r.plots {
            render_plot(h, &r.name, p)?;
        }
    }
    if !r.notes.is_empty() {
        render_notes(h, r);
    }
    if !r.tables.is_empty() {
        h.push_str("<h3>Tables</h3>\n");
        for t in &r.tables {
            render_table(h, &r.name, t);
        }
    }
    render_params(h, r);
    h.push_str("</section>\n");
    Ok(())
}

fn render_notes(h: &mut String, r: &ExperimentReport) {
    h.push_str("<h3>Notes</h3>\n<ul>\n");
    for n in &r.notes {
        let _ = writeln!(h, "<li>{}</li>", escape_html(n));
    }
    h.push_str("</ul>\n");
}

fn render_params(h: &mut String, r: &ExperimentReport) {
    if !r.params.is_empty() {
        h.push_str("<details>\n<summary>Parameters</summary>\n<table class=\"params\">\n<thead><tr><th>parameter</th><th>value</th></tr></thead>\n<tbody>\n");
        for (k, v) in &r.params {
            let _ = writeln!(h, "<tr><td>{}</td><td>{}</td></tr>", escape_html(k), escape_html(v));
        }
        h.push_str("</tbody>\n</table>\n</details>\n");
    }
}

fn render_notes_and_params(h: &mut String, r: &ExperimentReport) {
    if !r.notes.is_empty() {
        render_notes(h, r);
    }
    render_params(h, r);
}

/// Columns holding the paper's values, highlighted so ours and theirs are easy to pair.
fn is_paper_column(column: &str) -> bool {
    column.starts_with("paper") || column.contains("_paper")
}

fn render_compare(h: &mut String, r: &ExperimentReport) {
    h.push_str("<div class=\"compare\">\n<div>\n<h3>Paper says</h3>\n");
    if r.paper.is_empty() {
        h.push_str("<p class=\"muted\">nothing recorded</p>\n");
    } else {
        h.push_str("<ul>\n");
        for line in &r.paper {
            let _ = writeln!(h, "<li>{}</li>", escape_html(line));
        }
        h.push_str("</ul>\n");
    }
    let _ = writeln!(h, "</div>\n<div>\n<h3>trimlab measured {}</h3>", score(r));
    if r.verdicts.is_empty() {
        h.push_str("<p class=\"muted\">no acceptance checks</p>\n");
    } else {
        h.push_str("<ul class=\"verdicts\">\n");
        for v in &r.verdicts {
            let (class, mark, word) =
                if v.holds { ("pass", "&#10004;", "holds") } else { ("fail", "&#10008;", "fails") };
            let _ = write!(
                h,
                "<li class=\"{class}\"><span class=\"mark\" title=\"{word}\">{mark}</span>{}",
                escape_html(&v.claim)
            );
            if !v.detail.is_empty() {
                let _ = write!(h, "<span class=\"detail\">{}</span>", escape_html(&v.detail));
            }
            h.push_str("</li>\n");
        }
        h.push_str("</ul>\n");
    }
    h.push_str("</div>\n</div>\n");
}

fn render_table(h: &mut String, exp: &str, t: &Table) {
    let base = format!("{}/{}", escape_html(exp), escape_html(&t.name));
    let links = format!("<a href=\"{base}.csv\">csv</a><a href=\"{base}.json\">json</a>");
    let collapsed = t.rows.len() > TABLE_ROWS_OPEN_MAX;
    if collapsed {
        let _ = writeln!(
            h,
            "<details>\n<summary>{} <span class=\"muted\">({} rows)</span></summary>",
            escape_html(&t.title),
            t.rows.len()
        );
        let _ = writeln!(h, "<div class=\"tablewrap\"><table>\n<caption>{links}</caption>");
    } else {
        let _ = writeln!(
            h,
            "<div class=\"tablewrap\"><table>\n<caption>{} {links}</caption>",
            escape_html(&t.title)
        );
    }
    let paper: Vec<bool> = t.columns.iter().map(|c| is_paper_column(c)).collect();
    h.push_str("<thead><tr>");
    for (c, &p) in t.columns.iter().zip(&paper) {
        let class = if p { " class=\"paper\"" } else { "" };
        let _ =
            write!(h, "<th{class} title=\"{}\">{}</th>", escape_html(c), escape_html(&readable_header(c)));
    }
    h.push_str("</tr></thead>\n<tbody>\n");
    for row in &t.rows {
        h.push_str("<tr>");
        for (i, c) in row.iter().enumerate() {
            let mut classes = Vec::new();
            if c.is_numeric() {
                classes.push("num");
            }
            if paper.get(i).copied().unwrap_or(false) {
                classes.push("paper");
            }
            let class =
                if classes.is_empty() { String::new() } else { format!(" class=\"{}\"", classes.join(" ")) };
            let text = match c {
                Cell::Empty => String::new(),
                other => escape_html(&other.display()),
            };
            let _ = write!(h, "<td{class}>{text}</td>");
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody>\n</table></div>\n");
    if collapsed {
        h.push_str("</details>\n");
    }
}

fn render_plot(h: &mut String, exp: &str, p: &Plot) -> Result<(), ReportError> {
    let svg = render_svg(p).map_err(|e| match e {
        ReportError::Plot { message, .. } => {
            ReportError::Plot { path: format!("{exp}/{}.svg", p.name).into(), message }
        }
        other => other,
    })?;
    // An id per figure, so a plot can be linked (and screenshot) on its own: #fig-<exp>-<plot>.
    let _ = writeln!(h, "<figure id=\"fig-{}-{}\">", escape_html(exp), escape_html(&p.name));
    h.push_str(&inline_svg(&svg, &p.title));
    let _ = writeln!(
        h,
        "<figcaption>{} <a href=\"{}/{}.svg\">svg</a></figcaption>\n</figure>",
        escape_html(&p.title),
        escape_html(exp),
        escape_html(&p.name)
    );
    Ok(())
}

/// Replaces the standalone `<svg ...>` opening tag: inside HTML the namespace is implied (so
/// the page carries no URL at all), and a fixed width/height would stop it from scaling.
fn inline_svg(svg: &str, title: &str) -> String {
    let body = svg.strip_prefix("<svg").and_then(|rest| rest.split_once('>')).map_or(svg, |(_, body)| body);
    format!(
        "<svg viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"{}\">{body}",
        crate::SVG_WIDTH,
        crate::SVG_HEIGHT,
        escape_html(title)
    )
}
