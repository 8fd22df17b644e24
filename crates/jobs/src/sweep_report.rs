//! The page `trimlab sweep --html` writes, and the table the terminal prints: per swept key
//! the measures averaged over the other keys and the seeds; for a pair of keys (the first two,
//! or `--interaction A,B`) an interaction plot (the measure against A, one line per value of
//! B) and a heatmap, since a mean over the other keys hides how they interact (with
//! `trim.engine = none`, `trim_fraction` has no effect, yet its marginal mean falls). Every
//! point carries a bar from the lowest to the highest per-seed mean, and times are in µs, ms
//! or s, never 9-digit nanoseconds.

use crate::sweep::Table;
use serde_json::Value;
use trimlab_report::{
    format_display, Cell, ExperimentReport, Plot, PlotKind, RangeSeries, Table as ReportTable,
};

/// The measures each key is tabled against (when results.csv has them); the first is plotted.
/// A `_ns` column is shown in the unit that suits its values.
const MEASURES: [(&str, &str); 3] = [
    ("report.waf", "WAF"),
    ("report.nand_blocks_erased", "NAND blocks erased"),
    ("report.latency.write.p99_ns", "write p99"),
];

/// The TRIM bytes a drive with `[ftl] mapping_unit` received, and the part that unmapped
/// nothing: a sweep where some run has a unit tables and plots their share.
const TRIM_WITH_UNIT: &str = "report.host.trim_bytes_with_unit";
const TRIM_INEFFECTIVE: &str = "report.trim.trim_bytes_ineffective";
const INEFFECTIVE_LABEL: &str = "TRIM bytes ineffective (%)";

/// How one measure is read from a row of results.csv.
#[derive(Clone, Copy)]
enum Measure {
    /// A column, divided by `scale` (a time in ns shown in µs, ms or s).
    Column { index: usize, scale: f64 },
    /// Ineffective TRIM bytes over the TRIM bytes received, in percent. A run without a unit
    /// leaves both columns empty: every TRIM byte it received could unmap, so 0 %.
    IneffectiveShare { ineffective: Option<usize>, received: usize },
}

impl Measure {
    fn value(self, row: &[Value]) -> Option<f64> {
        match self {
            Measure::Column { index, scale } => row[index].as_f64().map(|v| v / scale),
            Measure::IneffectiveShare { ineffective, received } => {
                let part = ineffective.and_then(|i| row[i].as_f64()).unwrap_or(0.0);
                match row[received].as_f64() {
                    Some(total) if total > 0.0 => Some(part * 100.0 / total),
                    _ => Some(0.0),
                }
            }
        }
    }
}

/// The unit of a time column: the largest that keeps its biggest value at 1 or more.
fn time_unit(table: &Table, index: usize) -> (f64, &'static str) {
    let most = table.data.iter().filter_map(|r| r[index].as_f64()).fold(0.0, f64::max);
    match most {
        m if m >= 1e9 => (1e9, "s"),
        m if m >= 1e6 => (1e6, "ms"),
        _ => (1e3, "µs"),
    }
}

fn measures(table: &Table) -> Vec<(Measure, String)> {
    let mut out: Vec<(Measure, String)> = MEASURES
        .iter()
        .filter_map(|(column, label)| {
            let index = table.column(column)?;
            Some(if column.ends_with("_ns") {
                let (scale, unit) = time_unit(table, index);
                (Measure::Column { index, scale }, format!("{label} ({unit})"))
            } else {
                (Measure::Column { index, scale: 1.0 }, (*label).to_string())
            })
        })
        .collect();
    if let Some(received) = table.column(TRIM_WITH_UNIT) {
        let ineffective = table.column(TRIM_INEFFECTIVE);
        out.push((Measure::IneffectiveShare { ineffective, received }, INEFFECTIVE_LABEL.to_string()));
    }
    out
}

/// What the page is built from: the ok rows, the measures and the seed column.
struct Sweep<'a> {
    table: &'a Table,
    ok: Vec<&'a Vec<Value>>,
    measures: Vec<(Measure, String)>,
    seed: Option<usize>,
    /// How many keys were swept.
    keys: usize,
}

impl<'a> Sweep<'a> {
    fn new(table: &'a Table, keys: usize) -> Sweep<'a> {
        let status = table.column("status");
        let ok = table.data.iter().filter(|row| status.is_none_or(|i| row[i] == "ok")).collect();
        Sweep { table, ok, measures: measures(table), seed: table.column("seed"), keys }
    }

    /// The mean of `m` over `rows`, and the lowest and highest of its per-seed means.
    fn spread(&self, rows: &[&Vec<Value>], m: Measure) -> (f64, f64, f64) {
        let overall = mean(rows, m).unwrap_or(f64::NAN);
        let per_seed: Vec<f64> = match self.seed {
            Some(s) => group_by(rows, s).iter().filter_map(|(_, members)| mean(members, m)).collect(),
            None => vec![overall],
        };
        let low = per_seed.iter().copied().fold(f64::NAN, f64::min);
        let high = per_seed.iter().copied().fold(f64::NAN, f64::max);
        (overall, low, high)
    }
}

/// Which two keys the interaction plot and the heatmap are drawn for: `pair` when given (both
/// must be swept), else the grid's first two.
pub fn interaction_pair(
    keys: &[String],
    pair: Option<(&str, &str)>,
) -> Result<Option<(String, String)>, String> {
    match pair {
        Some((a, b)) => {
            for k in [a, b] {
                if !keys.iter().any(|key| key == k) {
                    return Err(format!(
                        "--interaction {a},{b}: `{k}` is not a swept key (swept: {})",
                        keys.join(", ")
                    ));
                }
            }
            if a == b {
                return Err(format!("--interaction {a},{b}: give two different keys"));
            }
            Ok(Some((a.to_string(), b.to_string())))
        }
        None => Ok(match keys {
            [a, b, ..] => Some((a.clone(), b.clone())),
            _ => None,
        }),
    }
}

/// The summary of a sweep's table over the swept `keys` (with the interaction plot and the
/// heatmap of `pair`), and a warning when points failed.
pub fn sweep_report(
    title: &str,
    table: &Table,
    keys: &[String],
    pair: Option<(String, String)>,
) -> (ExperimentReport, Option<String>) {
    let sweep = Sweep::new(table, keys.len());
    let failed = table.data.len() - sweep.ok.len();
    let mut plots = Vec::new();
    let mut tables = Vec::new();
    for key in keys {
        let Some(k) = table.column(key) else { continue };
        tables.push(key_table(key, &group_by(&sweep.ok, k), &sweep.measures));
        // With exactly two keys, the other one splits each plot into series.
        let other = match keys {
            [a, b] => Some(if a == key { b } else { a }),
            _ => None,
        };
        for (n, (m, label)) in plotted(&sweep.measures).into_iter().enumerate() {
            let name = if n == 0 {
                format!("by-{}", stem(key))
            } else {
                format!("by-{}-trim-ineffective", stem(key))
            };
            plots.push(key_plot(&sweep, &name, key, other.map(String::as_str), m, label));
        }
    }
    if let (Some((a, b)), Some((m, label))) = (&pair, sweep.measures.first()) {
        // Two keys: the per-key plots are already the interaction plots.
        if keys.len() > 2 {
            let name = format!("interaction-{}-x-{}", stem(a), stem(b));
            plots.push(key_plot(&sweep, &name, a, Some(b), *m, label));
        }
        plots.push(heatmap(&sweep, a, b, *m, label, keys.len() > 2));
    }
    tables.push(point_table(&sweep, keys));
    let warning = failure_warning(table, failed);
    let pair_text = pair.as_ref().map_or(String::new(), |(a, b)| {
        format!(" The interaction plot and the heatmap show {a} against {b} (pick another pair with --interaction A,B).")
    });
    let report = ExperimentReport {
        name: "sweep".into(),
        title: title.into(),
        summary: format!(
            "{} runs over {} swept key(s), {} ok; each per-key table and plot averages a measure over the other keys and the seeds at each value of one key, and each point's bar spans the lowest to the highest mean of one seed.{pair_text} results.csv has every run and every metric.",
            table.data.len(),
            keys.len(),
            sweep.ok.len()
        ),
        paper: Vec::new(),
        verdicts: Vec::new(),
        notes: Vec::new(),
        tables,
        plots,
        params: Vec::new(),
    };
    (report, warning)
}

/// The first measure (WAF) is plotted against every key; the ineffective share too.
fn plotted(measures: &[(Measure, String)]) -> Vec<(Measure, &str)> {
    measures
        .iter()
        .enumerate()
        .filter(|(i, (_, label))| *i == 0 || label == INEFFECTIVE_LABEL)
        .map(|(_, (m, label))| (*m, label.as_str()))
        .collect()
}

fn failure_warning(table: &Table, failed: usize) -> Option<String> {
    (failed > 0).then(|| {
        let first = table
            .column("error")
            .and_then(|e| table.data.iter().find_map(|row| row[e].as_str().map(str::to_owned)))
            .unwrap_or_default();
        format!(
            "{failed} of {} runs failed (results.csv has each message in `error`); first: {first}",
            table.data.len()
        )
    })
}

/// The rows of `rows` per distinct value of column `k`, in first-seen order (the grid's order).
fn group_by<'a>(rows: &[&'a Vec<Value>], k: usize) -> Vec<(Value, Vec<&'a Vec<Value>>)> {
    let mut groups: Vec<(Value, Vec<&Vec<Value>>)> = Vec::new();
    for row in rows {
        match groups.iter_mut().find(|(v, _)| *v == row[k]) {
            Some((_, members)) => members.push(row),
            None => groups.push((row[k].clone(), vec![row])),
        }
    }
    groups
}

fn mean(rows: &[&Vec<Value>], m: Measure) -> Option<f64> {
    let values: Vec<f64> = rows.iter().filter_map(|r| m.value(r)).collect();
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

fn label(value: &Value) -> String {
    value.as_str().map_or_else(|| value.to_string(), str::to_owned)
}

/// A file-stem-safe name for a key's table and plot.
fn stem(key: &str) -> String {
    key.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '-' }).collect()
}

fn key_table(key: &str, groups: &[(Value, Vec<&Vec<Value>>)], measures: &[(Measure, String)]) -> ReportTable {
    let mut columns = vec![key.to_owned(), "runs".to_owned()];
    columns.extend(measures.iter().map(|(_, l)| format!("mean {l}")));
    let columns: Vec<&str> = columns.iter().map(String::as_str).collect();
    let mut t =
        ReportTable::new(format!("by-{}", stem(key)), format!("Mean of each measure by {key}"), &columns);
    for (value, rows) in groups {
        let mut cells = vec![Cell::Text(label(value)), Cell::from(rows.len())];
        cells.extend(measures.iter().map(|&(m, _)| Cell::from(mean(rows, m))));
        t.push_row(cells);
    }
    t
}

/// The measure against `key`'s values: one line (the mean over the other keys and the seeds),
/// or with `other`, one line per value of it (each the mean over the seeds and any further
/// keys); each point with its bar over the seeds.
fn key_plot(
    sweep: &Sweep<'_>,
    name: &str,
    key: &str,
    other: Option<&str>,
    m: Measure,
    measure: &str,
) -> Plot {
    let k = sweep.table.column(key).expect("the caller found the key's column");
    let groups = group_by(&sweep.ok, k);
    let other = other.and_then(|o| Some((sweep.table.column(o)?, o)));
    let split: Vec<(String, Option<Value>)> = match other {
        Some((o, other_key)) => group_by(&sweep.ok, o)
            .into_iter()
            .map(|(v, _)| (format!("{other_key} = {}", label(&v)), Some(v)))
            .collect(),
        None => vec![(format!("mean {measure}"), None)],
    };
    let series = split
        .iter()
        .map(|(series_label, want)| {
            let mut s = RangeSeries {
                label: series_label.clone(),
                mean: Vec::new(),
                low: Vec::new(),
                high: Vec::new(),
            };
            for (_, rows) in &groups {
                let chosen: Vec<&Vec<Value>> = match (want, other) {
                    (Some(v), Some((o, _))) => rows.iter().copied().filter(|r| r[o] == *v).collect(),
                    _ => rows.clone(),
                };
                let (mean, low, high) = sweep.spread(&chosen, m);
                s.mean.push(mean);
                s.low.push(low);
                s.high.push(high);
            }
            s
        })
        .collect();
    let over = match other {
        Some((_, o)) if sweep.keys > 2 => format!("one line per {o}, mean over the other keys"),
        Some((_, o)) => format!("one line per {o}"),
        None => "mean over the other keys".to_string(),
    };
    Plot {
        name: name.into(),
        title: format!("{measure} by {key}, {over} (bars: min–max over seeds)"),
        x_label: key.into(),
        y_label: measure.into(),
        log_y: false,
        log_x: false,
        symlog_y: false,
        kind: PlotKind::Ranges { categories: groups.iter().map(|(v, _)| label(v)).collect(), series },
    }
}

/// The measure at every (a, b) pair, averaged over the seeds (and any other keys).
fn heatmap(sweep: &Sweep<'_>, a: &str, b: &str, m: Measure, measure: &str, others: bool) -> Plot {
    let (ka, kb) = (sweep.table.column(a), sweep.table.column(b));
    let (columns, rows, values) = match (ka, kb) {
        (Some(ka), Some(kb)) => {
            let columns = group_by(&sweep.ok, ka);
            let rows = group_by(&sweep.ok, kb);
            let values = rows
                .iter()
                .map(|(_, in_row)| {
                    columns
                        .iter()
                        .map(|(va, _)| {
                            let cell: Vec<&Vec<Value>> =
                                in_row.iter().copied().filter(|r| r[ka] == *va).collect();
                            mean(&cell, m).unwrap_or(f64::NAN)
                        })
                        .collect()
                })
                .collect();
            let names = |g: &[(Value, Vec<&Vec<Value>>)]| g.iter().map(|(v, _)| label(v)).collect();
            (names(&columns), names(&rows), values)
        }
        _ => (Vec::new(), Vec::new(), Vec::new()),
    };
    let over = if others { "mean over the seeds and the other keys" } else { "mean over the seeds" };
    Plot {
        name: format!("heatmap-{}-x-{}", stem(a), stem(b)),
        title: format!("{measure} by {a} and {b} ({over})"),
        x_label: a.into(),
        y_label: b.into(),
        log_y: false,
        log_x: false,
        symlog_y: false,
        kind: PlotKind::Heatmap { columns, rows, values },
    }
}

/// One row per point of the grid (every swept key's value), with the headline measure's mean
/// and its range over the seeds and the other measures' means: the table the terminal prints.
fn point_table(sweep: &Sweep<'_>, keys: &[String]) -> ReportTable {
    let cols: Vec<Option<usize>> = keys.iter().map(|k| sweep.table.column(k)).collect();
    let mut columns: Vec<String> = keys.to_vec();
    columns.push("runs".into());
    if let Some((_, l)) = sweep.measures.first() {
        columns.extend([format!("mean {l}"), format!("{l} min–max over seeds")]);
    }
    columns.extend(sweep.measures.iter().skip(1).map(|(_, l)| format!("mean {l}")));
    let names: Vec<&str> = columns.iter().map(String::as_str).collect();
    let mut t = ReportTable::new("by-point", "Each point of the grid (mean over its seeds)", &names);
    let mut points: Vec<(Vec<&Value>, Vec<&Vec<Value>>)> = Vec::new();
    for row in &sweep.ok {
        let at: Vec<&Value> = cols.iter().map(|c| c.map_or(&Value::Null, |c| &row[c])).collect();
        match points.iter_mut().find(|(p, _)| *p == at) {
            Some((_, members)) => members.push(row),
            None => points.push((at, vec![row])),
        }
    }
    for (at, rows) in &points {
        let mut cells: Vec<Cell> = at.iter().map(|v| Cell::Text(label(v))).collect();
        cells.push(Cell::from(rows.len()));
        if let Some(&(m, _)) = sweep.measures.first() {
            let (mean, low, high) = sweep.spread(rows, m);
            cells.push(Cell::from(mean));
            cells.push(Cell::Text(format!("{}–{}", format_display(low), format_display(high))));
        }
        cells.extend(sweep.measures.iter().skip(1).map(|&(m, _)| Cell::from(mean(rows, m))));
        t.push_row(cells);
    }
    t
}

/// The grid's points as the terminal shows them after a sweep: aligned columns, at most
/// `rows_max` rows (the page and results.csv have the rest).
pub fn terminal_table(table: &Table, keys: &[String], rows_max: usize) -> String {
    let sweep = Sweep::new(table, keys.len());
    let t = point_table(&sweep, keys);
    let cells: Vec<Vec<String>> = std::iter::once(t.columns.clone())
        .chain(t.rows.iter().take(rows_max).map(|r| r.iter().map(Cell::display).collect()))
        .collect();
    let widths: Vec<usize> =
        (0..t.columns.len()).map(|c| cells.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for row in &cells {
        let line: Vec<String> = row.iter().zip(&widths).map(|(c, w)| format!("{c:>w$}")).collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    if t.rows.len() > rows_max {
        out.push_str(&format!(
            "... {} more points (all in the page's by-point table and results.csv)\n",
            t.rows.len() - rows_max
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn table(columns: &[&str], data: Vec<Vec<Value>>) -> Table {
        Table { columns: columns.iter().map(|c| c.to_string()).collect(), data }
    }

    fn ranges(plot: &Plot) -> (&[String], &[RangeSeries]) {
        let PlotKind::Ranges { categories, series } = &plot.kind else { panic!("{plot:?}") };
        (categories, series)
    }

    #[test]
    fn each_key_gets_a_table_and_a_plot_of_its_means_and_failures_warn() {
        let row = |run: i64, spare: f64, engine: &str, status: &str, waf: Value| {
            let error = if status == "ok" { Value::Null } else { json!("bad") };
            vec![json!(run), json!(spare), json!(engine), json!(1), json!(status), error, waf]
        };
        let table = table(
            &["run", "device.spare_factor", "trim.engine", "seed", "status", "error", "report.waf"],
            vec![
                row(0, 0.1, "immediate", "ok", json!(2.0)),
                row(1, 0.1, "none", "ok", json!(3.0)),
                row(2, 0.2, "immediate", "ok", json!(1.5)),
                row(3, 0.2, "none", "failed", Value::Null),
            ],
        );
        let keys = ["device.spare_factor", "trim.engine"].map(String::from);
        let pair = interaction_pair(&keys, None).unwrap();
        let (report, warning) = sweep_report("t", &table, &keys, pair);
        assert_eq!(report.tables.len(), 3, "two keys and the points");
        // spare factor 0.1: mean of 2.0 and 3.0; 0.2: only the ok run.
        assert_eq!(report.tables[0].rows[0][2], Cell::Num(2.5));
        assert_eq!(report.tables[0].rows[1][2], Cell::Num(1.5));
        assert!(warning.unwrap().starts_with("1 of 4 runs failed"));
        // Two keys: each per-key plot has one line per value of the other key, then the heatmap.
        let names: Vec<&str> = report.plots.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            names,
            ["by-device-spare_factor", "by-trim-engine", "heatmap-device-spare_factor-x-trim-engine"]
        );
        let (categories, series) = ranges(&report.plots[1]);
        assert_eq!(categories, ["immediate", "none"]);
        let labels: Vec<&str> = series.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["device.spare_factor = 0.1", "device.spare_factor = 0.2"]);
        assert_eq!(series[0].mean, [2.0, 3.0]);
        assert!(
            series[1].mean[0] == 1.5 && series[1].mean[1].is_nan(),
            "the failed run has no value: {series:?}"
        );
        let PlotKind::Heatmap { columns, rows, values } = &report.plots[2].kind else { panic!() };
        assert_eq!((columns.len(), rows.len()), (2, 2));
        assert_eq!(values[0], [2.0, 1.5], "immediate's row over the spare factors");
        assert!(values[1][0] == 3.0 && values[1][1].is_nan());
    }

    /// The case: with `trim.engine = none`, `trim_fraction` changes nothing, while
    /// with immediate TRIM the WAF falls; three keys, two seeds.
    fn three_key_sweep() -> Table {
        let mut data = Vec::new();
        let mut run = 0;
        for fraction in [0.0, 0.1, 0.2] {
            for engine in ["immediate", "none"] {
                for spare in [0.1, 0.2] {
                    for seed in [1, 2] {
                        let noise = if seed == 1 { -0.1 } else { 0.1 };
                        let waf = if engine == "none" { 12.0 } else { 8.0 - 20.0 * fraction } + noise - spare;
                        let p99_ns = 3_180_000.0 + 1000.0 * f64::from(seed);
                        data.push(vec![
                            json!(run),
                            json!(fraction),
                            json!(engine),
                            json!(spare),
                            json!(seed),
                            json!("ok"),
                            json!(waf),
                            json!(p99_ns),
                        ]);
                        run += 1;
                    }
                }
            }
        }
        let columns = [
            "run",
            "workload.trim_fraction",
            "trim.engine",
            "device.spare_factor",
            "seed",
            "status",
            "report.waf",
            "report.latency.write.p99_ns",
        ];
        table(&columns, data)
    }

    #[test]
    fn an_interaction_plot_shows_what_the_marginal_mean_hides_with_bars_over_seeds() {
        let table = three_key_sweep();
        let keys = ["workload.trim_fraction", "trim.engine", "device.spare_factor"].map(String::from);
        let pair = interaction_pair(&keys, None).unwrap();
        let (report, _) = sweep_report("t", &table, &keys, pair);
        let by_fraction = &report.plots[0];
        let (_, marginal) = ranges(by_fraction);
        assert!(marginal[0].mean[2] < marginal[0].mean[0] - 1.0, "the marginal mean falls: {marginal:?}");
        let interaction = report.plots.iter().find(|p| p.name.starts_with("interaction-")).unwrap();
        assert_eq!(interaction.name, "interaction-workload-trim_fraction-x-trim-engine");
        let (categories, lines) = ranges(interaction);
        assert_eq!(categories, ["0.0", "0.1", "0.2"]);
        let none = lines.iter().find(|s| s.label == "trim.engine = none").unwrap();
        let spread = none.mean.iter().fold(f64::MIN, |a, &b| a.max(b))
            - none.mean.iter().fold(f64::MAX, |a, &b| a.min(b));
        assert!(spread < 1e-9, "with no TRIM engine the line is flat: {none:?}");
        // Each point's bar: the per-seed means 0.2 apart (seed 1 is 0.1 low, seed 2 0.1 high).
        for i in 0..3 {
            assert!((none.high[i] - none.low[i] - 0.2).abs() < 1e-9, "{none:?}");
            assert!(none.low[i] < none.mean[i] && none.mean[i] < none.high[i]);
        }
        assert!(report.plots.iter().any(|p| matches!(p.kind, PlotKind::Heatmap { .. })));
        // Times in ms with their unit, not 9-digit nanoseconds.
        let points = report.tables.iter().find(|t| t.name == "by-point").unwrap();
        assert_eq!(points.columns.last().unwrap(), "mean write p99 (ms)");
        let Cell::Num(p99_ms) = points.rows[0].last().unwrap() else { panic!() };
        assert!((p99_ms - 3.1815).abs() < 1e-9, "(3.181 + 3.182) / 2 ms: {p99_ms}");
        assert_eq!(points.rows.len(), 12, "3 x 2 x 2 points, the seeds averaged");
    }

    #[test]
    fn the_pair_is_chosen_among_the_swept_keys_and_the_terminal_gets_a_short_table() {
        let keys = ["a", "b", "c"].map(String::from);
        assert_eq!(interaction_pair(&keys, Some(("c", "a"))).unwrap(), Some(("c".into(), "a".into())));
        let e = interaction_pair(&keys, Some(("a", "d"))).unwrap_err();
        assert!(e.contains("`d` is not a swept key") && e.contains("a, b, c"), "{e}");
        assert!(interaction_pair(&keys, Some(("a", "a"))).is_err());
        assert_eq!(interaction_pair(&keys[..1], None).unwrap(), None);
        let table = three_key_sweep();
        let keys = ["workload.trim_fraction", "trim.engine", "device.spare_factor"].map(String::from);
        let text = terminal_table(&table, &keys, 5);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 7, "header, 5 points, and the rest counted:\n{text}");
        assert!(
            lines[0].contains("mean WAF")
                && lines[0].contains("WAF min–max over seeds")
                && lines[0].contains("write p99 (ms)")
        );
        assert!(
            lines[1].contains("immediate") && lines[1].contains("7.8–8") && lines[1].contains("3.1815"),
            "{text}"
        );
        assert!(lines[6].starts_with("... 7 more points"), "{text}");
    }

    #[test]
    fn a_sweep_over_mapping_units_tables_and_plots_the_ineffective_trim_share() {
        let columns =
            ["run", "ftl.mapping_unit", "seed", "status", TRIM_WITH_UNIT, TRIM_INEFFECTIVE, "report.waf"];
        let row = |unit: &str, received: Value, ineffective: Value, waf: f64| {
            vec![json!(0), json!(unit), json!(1), json!("ok"), received, ineffective, json!(waf)]
        };
        let table = table(
            &columns,
            vec![
                // No unit: the counters are absent, every TRIM byte could unmap.
                row("4KiB", Value::Null, Value::Null, 1.5),
                row("16KiB", json!(4096), json!(1024), 4.0),
                row("16KiB", json!(4096), json!(3072), 6.0),
            ],
        );
        let (report, _) = sweep_report("t", &table, &["ftl.mapping_unit".to_string()], None);
        let t = &report.tables[0];
        assert_eq!(t.columns.last().unwrap(), "mean TRIM bytes ineffective (%)");
        assert_eq!(t.rows[0].last().unwrap(), &Cell::Num(0.0));
        assert_eq!(t.rows[1].last().unwrap(), &Cell::Num(50.0), "(25 % + 75 %) / 2");
        assert_eq!(report.plots.len(), 2, "WAF and the ineffective share");
        assert_eq!(report.plots[1].name, "by-ftl-mapping_unit-trim-ineffective");
        let (categories, series) = ranges(&report.plots[1]);
        assert_eq!(
            (categories, series[0].mean.as_slice()),
            (&["4KiB".to_string(), "16KiB".to_string()][..], &[0.0, 50.0][..])
        );
    }
}
