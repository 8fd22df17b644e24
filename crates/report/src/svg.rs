//! SVG plots drawn with `plotters` (SVG backend only, no font feature).
//!
//! Without a font feature plotters uses a crude built-in width estimate for layout, and the SVG
//! backend writes every string as a real `<text>` element that the viewer lays out with its own
//! fonts, so titles, tick labels and legends work without system fonts or an embedded font file.
//!
//! Both axes are always a linear f64 axis with tick positions we compute ourselves
//! (`with_key_points`). A log axis (y, or x on line plots) is drawn by plotting `log10(v)` and
//! labelling 1, 2 and 5 in each decade (decades only beyond three) with the values themselves,
//! never their logarithms: this keeps one code path for lines and bars and
//! avoids plotters' own log-axis tick search. The legend is drawn by hand in a panel right of
//! the chart, so it can never cover data.
//!
//! Reading rules a reader should not have to guess:
//! * a series labelled `paper` (or `paper ...`) is the source document's values: always black;
//! * `trimlab X` and `model X` (also `mean-field`, `analytic`) series share the colour of `X`,
//!   so a measurement and the model it is compared with read as a pair (style tells them apart);
//! * bars on a log axis have no natural base, so a log "bar" plot draws its values as points;
//! * category names wrap onto several lines instead of being cut.

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::num::{decimal_exponent, format_num, scientific};
use crate::{Plot, PlotKind, ReportError, SeriesStyle};

pub const SVG_WIDTH: u32 = 960;
pub const SVG_HEIGHT: u32 = 540;

/// Okabe–Ito colour-blind-safe palette (yellow dropped: unreadable on white).
const PALETTE: [RGBColor; 7] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
];

const FONT: &str = "sans-serif";
/// plotters writes `font-size = size / 1.24`; these give roughly 21, 14, 13 and 12 px text.
const TITLE_SIZE: f64 = 26.0;
const DESC_SIZE: f64 = 18.0;
const LABEL_SIZE: f64 = 16.0;
const NOTE_SIZE: f64 = 15.0;

type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<AxisCoord, AxisCoord>>;

/// A linear f64 coordinate whose tick positions are given, not searched for.
///
/// plotters' `WithKeyPoints<RangedCoordf64>` would do the same but loses the label-formatter
/// support of the inner range (its format option is `NoDefaultFormatting`), so `configure_mesh`
/// refuses it; our own `Ranged` with `DefaultFormatting` works and we always pass formatters.
#[derive(Clone)]
struct AxisCoord {
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
    minor: Vec<f64>,
}

impl Ranged for AxisCoord {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let t = (*v - self.lo) / (self.hi - self.lo);
        let px = f64::from(limit.0) + t * f64::from(limit.1 - limit.0);
        // Clamp far-out values so the `as` conversion cannot saturate into nonsense.
        px.round().clamp(-1e6, 1e6) as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.minor.clone()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

/// Shape checks that must hold before drawing (bars: one value per category).
pub(crate) fn validate_plot(p: &Plot) -> Result<(), String> {
    if p.log_x && !matches!(p.kind, PlotKind::Lines { .. }) {
        return Err("a bar, range or heatmap plot's x axis is categories; log_x is for line plots".into());
    }
    if p.log_y && matches!(p.kind, PlotKind::Heatmap { .. }) {
        return Err("a heatmap has no y scale; log_y is for line, bar and range plots".into());
    }
    validate_grid_kinds(&p.kind)?;
    if p.symlog_y && (p.log_y || !matches!(p.kind, PlotKind::Bars { .. })) {
        return Err("symlog_y is for bar plots without log_y".into());
    }
    if let PlotKind::Bars { categories, series } = &p.kind {
        for (label, values) in series {
            if values.len() != categories.len() {
                return Err(format!(
                    "bar series {label:?} has {} values but there are {} categories",
                    values.len(),
                    categories.len()
                ));
            }
        }
    }
    Ok(())
}

/// Shape checks of the range and heatmap kinds: one value per category, a full grid.
fn validate_grid_kinds(kind: &PlotKind) -> Result<(), String> {
    match kind {
        PlotKind::Ranges { categories, series } => {
            for s in series {
                if [&s.mean, &s.low, &s.high].iter().any(|v| v.len() != categories.len()) {
                    return Err(format!(
                        "range series {:?} has {}/{}/{} mean/low/high values but there are {} categories",
                        s.label,
                        s.mean.len(),
                        s.low.len(),
                        s.high.len(),
                        categories.len()
                    ));
                }
            }
        }
        PlotKind::Heatmap { columns, rows, values } => {
            if values.len() != rows.len() || values.iter().any(|r| r.len() != columns.len()) {
                return Err(format!(
                    "a heatmap of {} rows x {} columns needs as many values, row by row",
                    rows.len(),
                    columns.len()
                ));
            }
        }
        PlotKind::Lines { .. } | PlotKind::Bars { .. } => {}
    }
    Ok(())
}

/// Renders a plot to an SVG document of [`SVG_WIDTH`] x [`SVG_HEIGHT`] pixels.
///
/// Errors name `<plot name>.svg`; [`crate::write_experiment`] replaces that with the full path.
pub fn render_svg(plot: &Plot) -> Result<String, ReportError> {
    let err = |message: String| ReportError::Plot { path: format!("{}.svg", plot.name).into(), message };
    validate_plot(plot).map_err(err)?;
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (SVG_WIDTH, SVG_HEIGHT)).into_drawing_area();
        draw(plot, &root).map_err(err)?;
        root.present().map_err(|e| err(e.to_string()))?;
    }
    Ok(buf)
}

#[derive(Clone, Copy)]
enum Glyph {
    Line,
    Dashed,
    Points,
    /// The paper's values as points.
    Diamond,
    Bar,
    /// A point with its range bar, on a line.
    Range,
}

struct LegendEntry {
    label: String,
    glyph: Glyph,
    color: RGBColor,
}

/// A filled diamond of half-diagonal `r` pixels around its anchor: the paper's points.
fn diamond(r: i32, c: RGBColor) -> Polygon<(i32, i32)> {
    Polygon::new(vec![(0, -r), (r, 0), (0, r), (-r, 0)], c.filled())
}

/// The paper's values: black, whatever else is on the plot.
pub const PAPER: RGBColor = RGBColor(0, 0, 0);

/// First words that name where a series comes from rather than what it is.
const SOURCE_WORDS: [&str; 6] = ["trimlab", "model", "mean-field", "analytic", "measured", "simulated"];

pub fn is_paper(label: &str) -> bool {
    label.strip_prefix("paper").is_some_and(|rest| rest.chars().next().is_none_or(|c| !c.is_alphanumeric()))
}

/// Several paper series on one plot (e.g. two regimes): black, then greys.
const PAPER_SHADES: [RGBColor; 3] = [PAPER, RGBColor(105, 105, 105), RGBColor(165, 165, 165)];

/// One colour per series: paper series black, `<source> X` series coloured by `X`, the rest
/// in order. Black is left out of the palette cycle so "paper" stays unambiguous.
pub fn series_colors<'a>(labels: impl Iterator<Item = &'a str>) -> Vec<RGBColor> {
    let mut keys: Vec<String> = Vec::new();
    let mut papers = 0;
    labels
        .map(|label| {
            if is_paper(label) {
                papers += 1;
                return PAPER_SHADES[(papers - 1) % PAPER_SHADES.len()];
            }
            let key = match label.split_once(' ') {
                Some((first, rest)) if SOURCE_WORDS.contains(&first.trim_end_matches(',')) => rest.to_owned(),
                _ => label.to_owned(),
            };
            let i = keys.iter().position(|k| *k == key).unwrap_or_else(|| {
                keys.push(key);
                keys.len() - 1
            });
            PALETTE[i % (PALETTE.len() - 1)]
        })
        .collect()
}

/// Maps data to axis units: identity, or `log10` for a log axis. `None` = not drawable.
fn to_axis(v: f64, log: bool) -> Option<f64> {
    if !v.is_finite() {
        None
    } else if log {
        (v > 0.0).then(|| v.log10())
    } else {
        Some(v)
    }
}

/// An axis in axis units (log10 units for a log axis) with its tick positions.
pub struct Axis {
    pub lo: f64,
    pub hi: f64,
    pub ticks: Vec<f64>,
    minor: Vec<f64>,
    log: bool,
    /// Ticks are in [`symlog`] units; labels show the values.
    symlog: bool,
}

impl Axis {
    pub fn label(&self, v: f64) -> String {
        if self.symlog {
            format_num(symlog_inverse(v))
        } else if self.log {
            let value = 10f64.powf(v);
            // Decades far from 1 read better as 1e-5 than as 0.00001.
            if !(1e-3..1e6).contains(&value) {
                scientific(value)
            } else {
                format_num(value)
            }
        } else {
            format_num(v)
        }
    }

    fn spec(&self) -> AxisCoord {
        AxisCoord { lo: self.lo, hi: self.hi, ticks: self.ticks.clone(), minor: self.minor.clone() }
    }
}

/// `10^e` built by parsing, which is exact, rather than by `powi`, which may not be.
fn pow10(e: i32) -> f64 {
    format!("1e{e}").parse().expect("valid float literal")
}

/// A 1-2-5 step giving about `target` intervals over `span`.
pub fn nice_step(span: f64, target: f64) -> f64 {
    let raw = span / target;
    if !(raw.is_finite() && raw > 0.0) {
        return f64::NAN;
    }
    let e = decimal_exponent(raw);
    let f = raw / pow10(e);
    // Round to the nearest of 1, 2, 5, 10 (geometric-ish cut points), so the interval count
    // stays within about 0.7x..1.5x of the target.
    let m = if f < 1.5 {
        1.0
    } else if f < 3.0 {
        2.0
    } else if f < 7.0 {
        5.0
    } else {
        10.0
    };
    m * pow10(e)
}

/// Linear axis over `[min, max]` plus a margin so edge markers are not cut off; `lo_fixed`
/// pins the lower end (bars start at zero).
fn linear_axis(min: f64, max: f64, margin: f64, lo_fixed: Option<f64>) -> Axis {
    let (mut min, mut max) = (min, max);
    if max <= min {
        let d = if min == 0.0 { 1.0 } else { min.abs() * 0.1 };
        min -= d;
        max += d;
    }
    let pad = (max - min) * margin;
    let lo = lo_fixed.unwrap_or(min - pad);
    let hi = max + pad;
    let step = nice_step(hi - lo, 6.0);
    let first = (lo / step).ceil();
    let last = (hi / step).floor();
    // Only degenerate input (a span near f64::MAX, overflowing to inf) gets here without a
    // handful of ticks; label the ends rather than loop over a saturated range.
    let ticks = if step.is_finite() && step > 0.0 && last - first <= 100.0 {
        (first as i64..=last as i64).map(|k| k as f64 * step).collect()
    } else {
        vec![lo, hi]
    };
    Axis { lo, hi, ticks, minor: Vec::new(), log: false, symlog: false }
}

/// Log axis (in log10 units) over positive data `[min, max]` (already log10), padded by a
/// small margin. Up to about three decades it labels 1, 2 and 5 of each decade (a reader of
/// "10" and "100" alone cannot place 40); wider spans label decades, thinned beyond ten.
pub fn log_axis(min: f64, max: f64) -> Axis {
    let (mut min, mut max) = (min, max);
    if max <= min {
        min -= 0.5;
        max += 0.5;
    }
    let pad = (max - min) * 0.04;
    let (mut lo, hi) = (min - pad, max + pad);
    // The axis reaches down to a labelled value at or below the smallest point (a decade on
    // wide axes, 1, 2 or 5 on narrow ones), so the lowest points are never below every label.
    lo = lo.min(if hi - lo > 3.2 {
        min.floor()
    } else {
        let k = min.floor();
        [5f64.log10(), 2f64.log10(), 0.0].iter().map(|m| k + m).find(|&v| v <= min).unwrap_or(k)
    });
    let first = lo.ceil() as i32;
    let last = hi.floor() as i32;
    let decades: Vec<i32> = (first..=last).collect();
    let mut ticks = Vec::new();
    let mut minor = Vec::new();
    if decades.len() >= 2 && hi - lo > 3.2 {
        // At most ~10 labelled decades; the skipped ones become grid lines.
        let every = decades.len().div_ceil(10).max(1);
        for &k in &decades {
            if ((k - first) as usize).is_multiple_of(every) {
                ticks.push(f64::from(k));
            } else {
                minor.push(f64::from(k));
            }
        }
        if decades.len() <= 7 {
            for k in (first - 1)..=last {
                for m in 2..=9 {
                    let v = (f64::from(m) * pow10(k)).log10();
                    if v > lo && v < hi {
                        minor.push(v);
                    }
                }
            }
        }
    } else {
        // Up to about three decades: label 1, 2, 5 (or every digit) within each decade; the
        // other digits are grid lines.
        for k in (first - 1)..=last {
            for m in [3, 4, 6, 7, 8, 9] {
                let v = (f64::from(m) * pow10(k)).log10();
                if v > lo && v < hi {
                    minor.push(v);
                }
            }
        }
        for mantissas in [&[1, 2, 5][..], &[1, 2, 3, 4, 5, 6, 7, 8, 9][..]] {
            ticks.clear();
            for k in (first - 1)..=last {
                for &m in mantissas {
                    let v = (f64::from(m) * pow10(k)).log10();
                    if v >= lo && v <= hi {
                        ticks.push(v);
                    }
                }
            }
            if ticks.len() >= 3 {
                break;
            }
        }
    }
    Axis { lo, hi, ticks, minor, log: true, symlog: false }
}

/// A symmetric log scale, `sign(v) * log10(1 + |v|)`: linear near zero, logarithmic beyond
/// ±1 in both directions, so a +1645 % bar and a −4.7 % one are both readable on one axis
/// (a linear axis shrinks the small one to nothing; a log axis cannot show either sign).
fn symlog(v: f64) -> f64 {
    v.signum() * v.abs().ln_1p() / std::f64::consts::LN_10
}

fn symlog_inverse(t: f64) -> f64 {
    let v = t.signum() * (10f64.powf(t.abs()) - 1.0);
    // Tick values are integers; drop the float noise of the round trip.
    if v.abs() >= 1.0 {
        v.round()
    } else {
        v
    }
}

/// A symlog axis (in [`symlog`] units) over `[min, max]`, zero included: ticks at 0 and at
/// ±1, ±10, ±100, ... inside the range, with 2 and 5 of each decade as grid lines.
fn symlog_axis(min: f64, max: f64) -> Axis {
    let pad = ((max - min) * 0.05).max(0.05);
    let (lo, hi) = (min - if min < 0.0 { pad } else { 0.0 }, max + pad);
    let mut ticks = vec![0.0];
    let mut minor = Vec::new();
    for k in 0..16 {
        for sign in [-1.0, 1.0] {
            let t = symlog(sign * pow10(k));
            if t >= lo && t <= hi {
                ticks.push(t);
            }
            for m in [2.0, 5.0] {
                let t = symlog(sign * m * pow10(k));
                if t > lo && t < hi {
                    minor.push(t);
                }
            }
        }
    }
    ticks.sort_by(f64::total_cmp);
    Axis { lo, hi, ticks, minor, log: false, symlog: true }
}

fn min_max(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    values.fold(None, |acc, v| match acc {
        None => Some((v, v)),
        Some((a, b)) => Some((a.min(v), b.max(v))),
    })
}

/// The legend's rows of a plot and how many of its values cannot be drawn.
fn legend_entries(plot: &Plot) -> (Vec<LegendEntry>, usize) {
    match &plot.kind {
        PlotKind::Lines { series } => {
            let colors = series_colors(series.iter().map(|s| s.label.as_str()));
            let entries = series
                .iter()
                .zip(colors)
                .map(|(s, color)| LegendEntry {
                    label: s.label.clone(),
                    glyph: match s.style {
                        SeriesStyle::Line => Glyph::Line,
                        SeriesStyle::Dashed => Glyph::Dashed,
                        SeriesStyle::Points if is_paper(&s.label) => Glyph::Diamond,
                        SeriesStyle::Points => Glyph::Points,
                    },
                    color,
                })
                .collect::<Vec<_>>();
            (entries, count_omitted_lines(plot))
        }
        PlotKind::Bars { series, .. } => {
            let colors = series_colors(series.iter().map(|(l, _)| l.as_str()));
            let entries = series
                .iter()
                .zip(colors)
                .map(|((label, _), color)| LegendEntry {
                    label: label.clone(),
                    glyph: match (plot.log_y, is_paper(label)) {
                        (false, _) => Glyph::Bar,
                        (true, true) => Glyph::Diamond,
                        (true, false) => Glyph::Points,
                    },
                    color,
                })
                .collect::<Vec<_>>();
            (entries, count_omitted_bars(plot))
        }
        PlotKind::Ranges { series, .. } => {
            let colors = series_colors(series.iter().map(|s| s.label.as_str()));
            let entries = series
                .iter()
                .zip(colors)
                .map(|(s, color)| LegendEntry { label: s.label.clone(), glyph: Glyph::Range, color })
                .collect::<Vec<_>>();
            (entries, count_omitted_ranges(plot))
        }
        PlotKind::Heatmap { .. } => (Vec::new(), 0),
    }
}

/// Draws the whole figure: title, chart (left) and legend panel (right).
fn draw(plot: &Plot, root: &DrawingArea<SVGBackend<'_>, Shift>) -> Result<(), String> {
    let e = |e: DrawingAreaErrorKind<std::io::Error>| e.to_string();
    root.fill(&WHITE).map_err(e)?;
    let body = root.titled(&plot.title, (FONT, TITLE_SIZE).into_font().color(&BLACK)).map_err(e)?;

    let (entries, omitted) = legend_entries(plot);

    // Legend width from the longest label (~8 px per character at 13 px text).
    let longest = entries.iter().map(|en| en.label.chars().count()).max().unwrap_or(0);
    let heatmap = matches!(plot.kind, PlotKind::Heatmap { .. });
    let legend_w = if heatmap {
        HEAT_LEGEND_PX
    } else if entries.is_empty() && omitted == 0 {
        0
    } else {
        (56 + 8 * longest as u32).clamp(150, 380)
    };
    let (chart_area, legend_area) = body.split_horizontally(SVG_WIDTH - legend_w);

    match &plot.kind {
        PlotKind::Lines { .. } => draw_lines(plot, &chart_area)?,
        PlotKind::Bars { .. } => draw_bars(plot, &chart_area)?,
        PlotKind::Ranges { .. } => draw_ranges(plot, &chart_area)?,
        PlotKind::Heatmap { values, .. } => {
            let scale = heat_scale(values);
            draw_heatmap(plot, &chart_area, scale)?;
            draw_heat_legend(&legend_area, scale).map_err(e)?;
        }
    }
    if legend_w > 0 && !heatmap {
        draw_legend(&legend_area, &entries, omitted, plot.log_y || plot.log_x).map_err(e)?;
    }
    Ok(())
}

/// Points that exist but cannot be drawn (non-positive on a log axis); NaN/inf are not
/// counted, they mean "no value" and the tables show them.
fn count_omitted_lines(plot: &Plot) -> usize {
    let PlotKind::Lines { series } = &plot.kind else {
        return 0;
    };
    if !plot.log_y && !plot.log_x {
        return 0;
    }
    let off_axis = |v: f64, log: bool| log && v <= 0.0;
    series
        .iter()
        .flat_map(|s| &s.points)
        .filter(|(x, y)| {
            x.is_finite() && y.is_finite() && (off_axis(*x, plot.log_x) || off_axis(*y, plot.log_y))
        })
        .count()
}

fn count_omitted_bars(plot: &Plot) -> usize {
    let PlotKind::Bars { series, .. } = &plot.kind else {
        return 0;
    };
    if !plot.log_y {
        return 0;
    }
    series.iter().flat_map(|(_, v)| v).filter(|v| v.is_finite() && **v <= 0.0).count()
}

/// Pixel sizes of the chart frame; shared by `build_chart` and the crowding estimate.
const X_LABEL_AREA: u32 = 56;
const Y_LABEL_AREA: u32 = 96;
const MARGIN_LR: u32 = 8 + 16;
/// Rough average glyph width of tick-label text (about 13 px sans-serif).
const CHAR_PX: f64 = 7.0;
/// Longest category label drawn vertically; the table has the full name.
const MAX_ROTATED_CHARS: usize = 40;

fn build_chart<'a, 'b>(
    area: &'a DrawingArea<SVGBackend<'b>, Shift>,
    x: &Axis,
    y: &Axis,
    x_label_area: u32,
) -> Result<Chart<'a, 'b>, String> {
    ChartBuilder::on(area)
        .margin_top(8)
        .margin_right(16)
        .margin_left(8)
        .margin_bottom(8)
        .x_label_area_size(x_label_area)
        .y_label_area_size(Y_LABEL_AREA)
        .build_cartesian_2d(x.spec(), y.spec())
        .map_err(|e| e.to_string())
}

fn configure_mesh(
    chart: &mut Chart<'_, '_>,
    plot: &Plot,
    x_fmt: &dyn Fn(&f64) -> String,
    y_fmt: &dyn Fn(&f64) -> String,
    x_grid: bool,
) -> Result<(), String> {
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(plot.x_label.as_str())
        .y_desc(plot.y_label.as_str())
        .x_label_formatter(x_fmt)
        .y_label_formatter(y_fmt)
        .label_style((FONT, LABEL_SIZE))
        .axis_desc_style((FONT, DESC_SIZE))
        .bold_line_style(RGBColor(215, 215, 215))
        .light_line_style(RGBColor(240, 240, 240))
        .axis_style(BLACK);
    if !x_grid {
        mesh.disable_x_mesh();
    }
    mesh.draw().map_err(|e| e.to_string())
}

fn draw_no_data(chart: &Chart<'_, '_>, x: &Axis, y: &Axis) -> Result<(), String> {
    let style = TextStyle::from((FONT, DESC_SIZE).into_font())
        .color(&RGBColor(120, 120, 120))
        .pos(Pos::new(HPos::Center, VPos::Center));
    chart
        .plotting_area()
        .draw(&Text::new("no data", ((x.lo + x.hi) / 2.0, (y.lo + y.hi) / 2.0), style))
        .map_err(|e| e.to_string())
}

/// Lines (a lone point between gaps, which would draw nothing as a line, is a dot), dashes
/// and markers.
fn draw_lines(plot: &Plot, area: &DrawingArea<SVGBackend<'_>, Shift>) -> Result<(), String> {
    let PlotKind::Lines { series } = &plot.kind else {
        unreachable!("draw_lines called on a non-line plot");
    };
    let (log, log_x) = (plot.log_y, plot.log_x);
    // Per series: runs of consecutive drawable points; an undrawable point breaks the line.
    let segments: Vec<Vec<Vec<(f64, f64)>>> = series
        .iter()
        .map(|s| {
            let mut runs = vec![Vec::new()];
            for &(px, py) in &s.points {
                match (to_axis(px, log_x), to_axis(py, log)) {
                    (Some(x), Some(y)) => runs.last_mut().expect("non-empty").push((x, y)),
                    _ => runs.push(Vec::new()),
                }
            }
            runs.retain(|r| !r.is_empty());
            runs
        })
        .collect();
    let all = || segments.iter().flatten().flatten();
    let xr = min_max(all().map(|p| p.0));
    let yr = min_max(all().map(|p| p.1));
    let (x_axis, y_axis) = (line_axis(xr, log_x, 0.02), line_axis(yr, log, 0.05));

    let mut chart = build_chart(area, &x_axis, &y_axis, X_LABEL_AREA)?;
    let x_fmt = |v: &f64| x_axis.label(*v);
    let y_fmt = |v: &f64| y_axis.label(*v);
    configure_mesh(&mut chart, plot, &x_fmt, &y_fmt, true)?;
    if xr.is_none() {
        draw_no_data(&chart, &x_axis, &y_axis)?;
    }

    let e = |e: DrawingAreaErrorKind<std::io::Error>| e.to_string();
    let colors = series_colors(series.iter().map(|s| s.label.as_str()));
    // Lines first, markers second, so measured points sit on top of model curves.
    for (i, (s, runs)) in series.iter().zip(&segments).enumerate() {
        let c = colors[i];
        for run in runs {
            match s.style {
                SeriesStyle::Line => {
                    let dot = (run.len() == 1).then(|| Circle::new(run[0], 3, c.filled()));
                    chart.draw_series(dot).map_err(e)?;
                    chart.draw_series(LineSeries::new(run.iter().copied(), c.stroke_width(2))).map_err(e)?;
                }
                SeriesStyle::Dashed => {
                    chart
                        .draw_series(DashedLineSeries::new(run.iter().copied(), 9, 6, c.stroke_width(2)))
                        .map_err(e)?;
                }
                SeriesStyle::Points => {}
            }
        }
    }
    for (i, (s, runs)) in series.iter().zip(&segments).enumerate() {
        if s.style == SeriesStyle::Points {
            let c = colors[i];
            if is_paper(&s.label) {
                chart
                    .draw_series(runs.iter().flatten().map(|&p| EmptyElement::at(p) + diamond(6, c)))
                    .map_err(e)?;
            } else {
                chart
                    .draw_series(runs.iter().flatten().map(|&p| Circle::new(p, 4, c.filled())))
                    .map_err(e)?;
            }
        }
    }
    Ok(())
}

/// Greedy word wrap to `width` characters, breaking at spaces and after `-`, `_` or `/`.
/// `None` when a piece between break points is longer than a line (never cut mid-word).
pub fn wrap_words(text: &str, width: usize) -> Option<Vec<String>> {
    let mut pieces: Vec<(String, bool)> = Vec::new(); // (piece, space before it)
    for word in text.split_whitespace() {
        let mut first = true;
        let mut piece = String::new();
        for ch in word.chars() {
            piece.push(ch);
            if matches!(ch, '-' | '_' | '/') {
                pieces.push((std::mem::take(&mut piece), first));
                first = false;
            }
        }
        if !piece.is_empty() {
            pieces.push((piece, first));
        }
    }
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for (piece, spaced) in pieces {
        let len = piece.chars().count();
        if len > width {
            return None;
        }
        let sep = usize::from(spaced && !line.is_empty());
        if line.is_empty() || line.chars().count() + sep + len <= width {
            if sep == 1 {
                line.push(' ');
            }
            line.push_str(&piece);
        } else {
            lines.push(std::mem::replace(&mut line, piece));
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    Some(lines)
}

/// How category names are laid out under the bars.
enum CategoryLabels {
    /// Each name in lines that fit its slot.
    Wrapped(Vec<Vec<String>>),
    /// Too many categories for wrapping: vertical names (very long ones cut; the table has them).
    Vertical(Vec<String>),
}

/// Most lines a wrapped category name may take before names go vertical.
const MAX_WRAPPED_LINES: usize = 4;
const LABEL_LINE_PX: i32 = 16;

fn layout_categories(categories: &[String], slot_px: f64) -> CategoryLabels {
    let width = (0.95 * slot_px / CHAR_PX).floor() as usize;
    let wrapped: Option<Vec<Vec<String>>> = categories.iter().map(|c| wrap_words(c, width)).collect();
    if let Some(wrapped) = wrapped.filter(|w| w.iter().all(|l| l.len() <= MAX_WRAPPED_LINES)) {
        return CategoryLabels::Wrapped(wrapped);
    }
    CategoryLabels::Vertical(
        categories
            .iter()
            .map(|c| {
                if c.chars().count() > MAX_ROTATED_CHARS {
                    let cut: String = c.chars().take(MAX_ROTATED_CHARS - 1).collect();
                    format!("{cut}…")
                } else {
                    c.clone()
                }
            })
            .collect(),
    )
}

/// A line plot's axis over `range` (`None`: no data), log or linear with `margin`.
fn line_axis(range: Option<(f64, f64)>, log: bool, margin: f64) -> Axis {
    match (range, log) {
        (Some((a, b)), true) => log_axis(a, b),
        (Some((a, b)), false) => linear_axis(a, b, margin, None),
        (None, true) => log_axis(0.0, 1.0),
        (None, false) => linear_axis(0.0, 1.0, 0.0, None),
    }
}

/// A bar plot's value axis over `range` (in axis units; `None`: no data).
fn bar_axis(range: Option<(f64, f64)>, log: bool, symlog: bool) -> Axis {
    match (range, log) {
        (Some((a, b)), _) if symlog => symlog_axis(a.min(0.0), b.max(0.0)),
        // A log axis has no zero to grow bars from: values are points, the axis fits them.
        (Some((a, b)), true) => log_axis(a, b),
        // Bars are read against zero, so zero is always on a linear axis.
        (Some((a, b)), false) => {
            let (a, b) = (a.min(0.0), b.max(0.0));
            linear_axis(a, b, 0.05, (a == 0.0).then_some(0.0))
        }
        (None, true) => log_axis(0.0, 1.0),
        (None, false) => linear_axis(0.0, 1.0, 0.0, Some(0.0)),
    }
}

fn draw_bars(plot: &Plot, area: &DrawingArea<SVGBackend<'_>, Shift>) -> Result<(), String> {
    let PlotKind::Bars { categories, series } = &plot.kind else {
        unreachable!("draw_bars called on a non-bar plot");
    };
    let log = plot.log_y;
    let x_axis = category_axis(categories.len());
    let symlog_y = plot.symlog_y;
    let y_value = |v: f64| if symlog_y { v.is_finite().then(|| symlog(v)) } else { to_axis(v, log) };
    let values = || series.iter().flat_map(|(_, v)| v).filter_map(|&v| y_value(v));
    let yr = min_max(values());
    let y_axis = bar_axis(yr, log, symlog_y);

    let mut chart = category_chart(area, plot, categories, &x_axis, &y_axis, yr.is_some())?;

    let k = series.len().max(1) as f64;
    let group = 0.8;
    let bar = group / k;
    let e = |e: DrawingAreaErrorKind<std::io::Error>| e.to_string();
    let colors = series_colors(series.iter().map(|(l, _)| l.as_str()));
    for (j, (label, vals)) in series.iter().enumerate() {
        let c = colors[j];
        let slot = |i: usize| i as f64 + (1.0 - group) / 2.0 + j as f64 * bar;
        let drawn = vals.iter().enumerate().filter_map(|(i, &v)| Some((i, y_value(v)?)));
        if log {
            // Points at the centre of each bar's slot: a light stem ties them to the category.
            let stems: Vec<_> = drawn
                .clone()
                .map(|(i, y)| {
                    let x = slot(i) + bar * 0.45;
                    PathElement::new(vec![(x, y_axis.lo), (x, y)], c.mix(0.25).stroke_width(1))
                })
                .collect();
            chart.draw_series(stems).map_err(e)?;
            if is_paper(label) {
                chart
                    .draw_series(
                        drawn.map(|(i, y)| EmptyElement::at((slot(i) + bar * 0.45, y)) + diamond(6, c)),
                    )
                    .map_err(e)?;
            } else {
                chart
                    .draw_series(drawn.map(|(i, y)| Circle::new((slot(i) + bar * 0.45, y), 5, c.filled())))
                    .map_err(e)?;
            }
        } else {
            // A small gap between neighbouring bars of one group keeps them distinguishable.
            let rects =
                drawn.map(|(i, y)| Rectangle::new([(slot(i), 0.0), (slot(i) + bar * 0.9, y)], c.filled()));
            chart.draw_series(rects).map_err(e)?;
        }
    }
    Ok(())
}

/// A chart over categories: the mesh with its y labels, the category names (drawn by us below
/// the axis, wrapped or rotated; plotters only draws ticks), and "no data" when there is none.
fn category_chart<'a, 'b>(
    area: &'a DrawingArea<SVGBackend<'b>, Shift>,
    plot: &Plot,
    categories: &[String],
    x_axis: &Axis,
    y_axis: &Axis,
    has_data: bool,
) -> Result<Chart<'a, 'b>, String> {
    let (labels, x_label_area) = category_labels(area, categories);
    let mut chart = build_chart(area, x_axis, y_axis, x_label_area)?;
    let x_fmt = |_: &f64| String::new();
    let y_fmt = |v: &f64| y_axis.label(*v);
    configure_mesh(&mut chart, plot, &x_fmt, &y_fmt, false)?;
    draw_category_labels(area, &chart, &labels, y_axis.lo)?;
    if !has_data {
        draw_no_data(&chart, x_axis, y_axis)?;
    }
    Ok(chart)
}

/// The category names' layout under a chart of `categories` and the height it needs.
fn category_labels(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    categories: &[String],
) -> (CategoryLabels, u32) {
    let n = categories.len().max(1);
    let plot_px = f64::from(area.dim_in_pixel().0.saturating_sub(Y_LABEL_AREA + MARGIN_LR));
    let labels = layout_categories(categories, plot_px / n as f64);
    let x_label_area = match &labels {
        CategoryLabels::Wrapped(lines) => {
            let most = lines.iter().map(Vec::len).max().unwrap_or(1) as u32;
            // the lines + tick gap + room for the axis description below
            (most * LABEL_LINE_PX as u32 + 40).max(X_LABEL_AREA)
        }
        CategoryLabels::Vertical(names) => {
            let chars = names.iter().map(|c| c.chars().count()).max().unwrap_or(0) as f64;
            ((chars * CHAR_PX) as u32 + 44).max(X_LABEL_AREA)
        }
    };
    (labels, x_label_area)
}

/// Writes the category names under the slots `i + 0.5` of the chart's x axis.
fn draw_category_labels(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    chart: &Chart<'_, '_>,
    labels: &CategoryLabels,
    y_lo: f64,
) -> Result<(), String> {
    let (bx, by) = area.get_base_pixel();
    match labels {
        CategoryLabels::Wrapped(lines) => {
            let style =
                TextStyle::from((FONT, LABEL_SIZE).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
            for (i, name) in lines.iter().enumerate() {
                let (px, py) = chart.backend_coord(&(i as f64 + 0.5, y_lo));
                for (k, line) in name.iter().enumerate() {
                    let at = (px - bx, py - by + 8 + LABEL_LINE_PX * k as i32);
                    area.draw(&Text::new(line.clone(), at, style.clone())).map_err(|e| e.to_string())?;
                }
            }
        }
        CategoryLabels::Vertical(names) => {
            let style = TextStyle::from((FONT, LABEL_SIZE).into_font())
                .transform(FontTransform::Rotate270)
                .pos(Pos::new(HPos::Right, VPos::Center));
            for (i, label) in names.iter().enumerate() {
                let (px, py) = chart.backend_coord(&(i as f64 + 0.5, y_lo));
                area.draw(&Text::new(label.clone(), (px - bx, py - by + 8), style.clone()))
                    .map_err(|e| e.to_string())?;
            }
        }
    }
    Ok(())
}

/// An x axis of `n` category slots, ticks at their centres.
fn category_axis(n: usize) -> Axis {
    Axis {
        lo: 0.0,
        hi: n.max(1) as f64,
        ticks: (0..n).map(|i| i as f64 + 0.5).collect(),
        minor: Vec::new(),
        log: false,
        symlog: false,
    }
}

fn count_omitted_ranges(plot: &Plot) -> usize {
    let PlotKind::Ranges { series, .. } = &plot.kind else {
        return 0;
    };
    if !plot.log_y {
        return 0;
    }
    series.iter().flat_map(|s| &s.mean).filter(|v| v.is_finite() && **v <= 0.0).count()
}

/// Means joined by a line per series, each with its low..high bar; series side by side in a
/// category's slot so their bars do not hide one another.
fn draw_ranges(plot: &Plot, area: &DrawingArea<SVGBackend<'_>, Shift>) -> Result<(), String> {
    let PlotKind::Ranges { categories, series } = &plot.kind else {
        unreachable!("draw_ranges called on a non-range plot");
    };
    let log = plot.log_y;
    let x_axis = category_axis(categories.len());
    let all = series.iter().flat_map(|s| s.mean.iter().chain(&s.low).chain(&s.high));
    let yr = min_max(all.filter_map(|&v| to_axis(v, log)));
    let y_axis = line_axis(yr, log, 0.05);
    let mut chart = category_chart(area, plot, categories, &x_axis, &y_axis, yr.is_some())?;
    let e = |e: DrawingAreaErrorKind<std::io::Error>| e.to_string();
    let colors = series_colors(series.iter().map(|s| s.label.as_str()));
    let k = series.len().max(1) as f64;
    let dodge = (0.5 / k).min(0.08);
    for (j, s) in series.iter().enumerate() {
        let c = colors[j];
        let x = |i: usize| i as f64 + 0.5 + (j as f64 - (k - 1.0) / 2.0) * dodge;
        let mut run: Vec<(f64, f64)> = Vec::new();
        for (i, &m) in s.mean.iter().enumerate() {
            match to_axis(m, log) {
                Some(y) => run.push((x(i), y)),
                None if run.is_empty() => {}
                None => {
                    chart.draw_series(LineSeries::new(run.drain(..), c.stroke_width(2))).map_err(e)?;
                }
            }
        }
        chart.draw_series(LineSeries::new(run, c.stroke_width(2))).map_err(e)?;
        let cap = 0.12 * dodge.max(0.1);
        for i in 0..categories.len() {
            let (Some(lo), Some(hi)) = (to_axis(s.low[i], log), to_axis(s.high[i], log)) else { continue };
            let bar = [
                vec![(x(i), lo), (x(i), hi)],
                vec![(x(i) - cap, lo), (x(i) + cap, lo)],
                vec![(x(i) - cap, hi), (x(i) + cap, hi)],
            ];
            chart.draw_series(bar.into_iter().map(|p| PathElement::new(p, c.stroke_width(2)))).map_err(e)?;
        }
        let points = s.mean.iter().enumerate().filter_map(|(i, &m)| Some((x(i), to_axis(m, log)?)));
        chart.draw_series(points.map(|p| Circle::new(p, 4, c.filled()))).map_err(e)?;
    }
    Ok(())
}

/// Width of a heatmap's legend panel: the colour bar and its labels.
const HEAT_LEGEND_PX: u32 = 150;

/// Viridis at five stops (perceptually uniform, colour-blind safe, readable in grey).
const VIRIDIS: [(f64, f64, f64); 5] =
    [(68.0, 1.0, 84.0), (59.0, 82.0, 139.0), (33.0, 145.0, 140.0), (94.0, 201.0, 98.0), (253.0, 231.0, 37.0)];

/// The colour of `t` in 0..=1 on [`VIRIDIS`].
fn viridis(t: f64) -> RGBColor {
    let t = t.clamp(0.0, 1.0) * (VIRIDIS.len() - 1) as f64;
    let i = (t.floor() as usize).min(VIRIDIS.len() - 2);
    let f = t - i as f64;
    let (a, b) = (VIRIDIS[i], VIRIDIS[i + 1]);
    let mix = |x: f64, y: f64| (x + (y - x) * f).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// The finite values' range, or `None` when there is none.
fn heat_scale(values: &[Vec<f64>]) -> Option<(f64, f64)> {
    min_max(values.iter().flatten().copied().filter(|v| v.is_finite()))
}

fn heat_position(v: f64, scale: (f64, f64)) -> f64 {
    if scale.1 > scale.0 {
        (v - scale.0) / (scale.1 - scale.0)
    } else {
        0.5
    }
}

/// One coloured cell per value with the value written in it (white on the dark half of the
/// scale); a cell without a value is grey with a dash.
fn draw_heatmap(
    plot: &Plot,
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    scale: Option<(f64, f64)>,
) -> Result<(), String> {
    let PlotKind::Heatmap { columns, rows, values } = &plot.kind else {
        unreachable!("draw_heatmap called on a non-heatmap plot");
    };
    let x_axis = category_axis(columns.len());
    let y_axis = category_axis(rows.len());
    let (labels, x_label_area) = category_labels(area, columns);
    let mut chart = build_chart(area, &x_axis, &y_axis, x_label_area)?;
    let x_fmt = |_: &f64| String::new();
    let y_fmt = |v: &f64| {
        let name = rows.get((*v - 0.5).round().max(0.0) as usize).cloned().unwrap_or_default();
        if name.chars().count() > 12 {
            format!("{}…", name.chars().take(11).collect::<String>())
        } else {
            name
        }
    };
    configure_mesh(&mut chart, plot, &x_fmt, &y_fmt, false)?;
    draw_category_labels(area, &chart, &labels, y_axis.lo)?;
    let e = |e: DrawingAreaErrorKind<std::io::Error>| e.to_string();
    let centred = TextStyle::from((FONT, LABEL_SIZE).into_font()).pos(Pos::new(HPos::Center, VPos::Center));
    for (r, row) in values.iter().enumerate() {
        for (c, &v) in row.iter().enumerate() {
            let (x, y) = (c as f64, r as f64);
            let (fill, ink, text) = match scale.filter(|_| v.is_finite()) {
                Some(scale) => {
                    let t = heat_position(v, scale);
                    (viridis(t), if t < 0.6 { WHITE } else { BLACK }, crate::num::format_display(v))
                }
                None => (RGBColor(225, 225, 225), BLACK, "–".to_string()),
            };
            chart.draw_series([Rectangle::new([(x, y), (x + 1.0, y + 1.0)], fill.filled())]).map_err(e)?;
            let style = centred.clone().color(&ink);
            chart.draw_series([Text::new(text, (x + 0.5, y + 0.5), style)]).map_err(e)?;
        }
    }
    Ok(())
}

/// The colour bar: high at the top, low at the bottom, both labelled.
fn draw_heat_legend(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    scale: Option<(f64, f64)>,
) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
    let Some((lo, hi)) = scale else { return Ok(()) };
    let text = TextStyle::from((FONT, LABEL_SIZE).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    let (top, steps, step_px) = (40, 20, 12);
    for k in 0..steps {
        let t = 1.0 - f64::from(k) / f64::from(steps - 1);
        let y = top + k * step_px;
        area.draw(&Rectangle::new([(12, y), (36, y + step_px)], viridis(t).filled()))?;
    }
    area.draw(&Text::new(crate::num::format_display(hi), (44, top + step_px / 2), text.clone()))?;
    area.draw(&Text::new(crate::num::format_display(lo), (44, top + steps * step_px - step_px / 2), text))?;
    Ok(())
}

fn draw_legend(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    entries: &[LegendEntry],
    omitted: usize,
    log: bool,
) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
    let text = TextStyle::from((FONT, LABEL_SIZE).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    let row_h = 26;
    let top = 40;
    for (i, en) in entries.iter().enumerate() {
        let y = top + row_h * i as i32;
        let c = en.color;
        match en.glyph {
            Glyph::Line => area.draw(&PathElement::new(vec![(8, y), (40, y)], c.stroke_width(2)))?,
            Glyph::Dashed => {
                for x in [8, 20, 32] {
                    area.draw(&PathElement::new(vec![(x, y), (x + 8, y)], c.stroke_width(2)))?;
                }
            }
            Glyph::Points => area.draw(&Circle::new((24, y), 4, c.filled()))?,
            Glyph::Diamond => area.draw(&(EmptyElement::at((24, y)) + diamond(6, c)))?,
            Glyph::Bar => area.draw(&Rectangle::new([(12, y - 7), (36, y + 7)], c.filled()))?,
            Glyph::Range => {
                area.draw(&PathElement::new(vec![(8, y), (40, y)], c.stroke_width(2)))?;
                area.draw(&PathElement::new(vec![(24, y - 8), (24, y + 8)], c.stroke_width(2)))?;
                area.draw(&Circle::new((24, y), 4, c.filled()))?;
            }
        }
        area.draw(&Text::new(en.label.clone(), (48, y), text.clone()))?;
    }
    if omitted > 0 {
        // Say so rather than silently dropping values that a log axis cannot show.
        let note = TextStyle::from((FONT, NOTE_SIZE).into_font())
            .color(&RGBColor(110, 110, 110))
            .pos(Pos::new(HPos::Left, VPos::Center));
        let y = top + row_h * entries.len() as i32 + 12;
        let what = if log { "not shown (log axis)" } else { "not shown" };
        area.draw(&Text::new(format!("{omitted} value(s) <= 0"), (8, y), note.clone()))?;
        area.draw(&Text::new(what.to_owned(), (8, y + 18), note))?;
    }
    Ok(())
}
