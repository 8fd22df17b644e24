//! The page `trimlab sweep --html` writes: a summary of results.csv with, per swept key, the
//! measures averaged over the other keys and the seeds, and plots of them. In a grid of two
//! keys each plot draws one series per value of the other key (iu-sweep.toml: WAF against the
//! mapping unit, one series per TRIM size), since a mean over the other key hides the story.

use crate::sweep::Table;
use serde_json::Value;
use trimlab_report::{Cell, ExperimentReport, Plot, PlotKind, Series, SeriesStyle, Table as ReportTable};

/// The measures each key is tabled against (when results.csv has them); the first is plotted.
const MEASURES: [(&str, &str); 3] = [
    ("report.waf", "WAF"),
    ("report.nand_blocks_erased", "NAND blocks erased"),
    ("report.latency.write.p99_ns", "write p99 (ns)"),
];

/// The TRIM bytes a drive with `[ftl] mapping_unit` received, and the part that unmapped
/// nothing: a sweep where some run has a unit tables and plots their share.
const TRIM_WITH_UNIT: &str = "report.host.trim_bytes_with_unit";
const TRIM_INEFFECTIVE: &str = "report.trim.trim_bytes_ineffective";
const INEFFECTIVE_LABEL: &str = "TRIM bytes ineffective (%)";

/// How one measure is read from a row of results.csv.
#[derive(Clone, Copy)]
enum Measure {
    Column(usize),
    /// Ineffective TRIM bytes over the TRIM bytes received, in percent. A run without a unit
    /// leaves both columns empty: every TRIM byte it received could unmap, so 0 %.
    IneffectiveShare {
        ineffective: Option<usize>,
        received: usize,
    },
}

impl Measure {
    fn value(self, row: &[Value]) -> Option<f64> {
        match self {
            Measure::Column(m) => row[m].as_f64(),
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

fn measures(table: &Table) -> Vec<(Measure, &'static str)> {
    let mut out: Vec<(Measure, &str)> = MEASURES
        .iter()
        .filter_map(|(column, label)| Some((Measure::Column(table.column(column)?), *label)))
        .collect();
    if let Some(received) = table.column(TRIM_WITH_UNIT) {
        let ineffective = table.column(TRIM_INEFFECTIVE);
        out.push((Measure::IneffectiveShare { ineffective, received }, INEFFECTIVE_LABEL));
    }
    out
}

/// The summary of a sweep's table over the swept `keys`, and a warning when points failed.
pub fn sweep_report(title: &str, table: &Table, keys: &[String]) -> (ExperimentReport, Option<String>) {
    let status = table.column("status");
    let ok: Vec<&Vec<Value>> =
        table.data.iter().filter(|row| status.is_none_or(|i| row[i] == "ok")).collect();
    let failed = table.data.len() - ok.len();
    let measures = measures(table);
    // The first measure (WAF) is plotted against every key; the ineffective share too.
    let plotted: Vec<(Measure, &str)> = measures
        .iter()
        .enumerate()
        .filter(|(i, (_, label))| *i == 0 || *label == INEFFECTIVE_LABEL)
        .map(|(_, m)| *m)
        .collect();
    let mut plots = Vec::new();
    let mut tables = Vec::new();
    for key in keys {
        let Some(k) = table.column(key) else { continue };
        let groups = group_by(&ok, k);
        tables.push(key_table(key, &groups, &measures));
        // With exactly two keys, the other one splits each plot into series.
        let other = match keys {
            [a, b] => table.column(if a == key { b } else { a }),
            _ => None,
        };
        for (n, &(m, label)) in plotted.iter().enumerate() {
            let name = if n == 0 {
                format!("by-{}", stem(key))
            } else {
                format!("by-{}-trim-ineffective", stem(key))
            };
            let other_key = other.map(|o| (o, keys.iter().find(|k2| *k2 != key).map_or("", String::as_str)));
            plots.push(key_plot(&name, key, &groups, other_key, m, label));
        }
    }
    let warning = (failed > 0).then(|| {
        let first = table
            .column("error")
            .and_then(|e| table.data.iter().find_map(|row| row[e].as_str().map(str::to_owned)))
            .unwrap_or_default();
        format!(
            "{failed} of {} runs failed (results.csv has each message in `error`); first: {first}",
            table.data.len()
        )
    });
    let report = ExperimentReport {
        name: "sweep".into(),
        title: title.into(),
        summary: format!(
            "{} runs over {} swept key(s), {} ok; each table and plot averages a measure over the other keys and the seeds at each value of one key. results.csv has every run and every metric.",
            table.data.len(),
            keys.len(),
            ok.len()
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

fn key_table(key: &str, groups: &[(Value, Vec<&Vec<Value>>)], measures: &[(Measure, &str)]) -> ReportTable {
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

/// Numeric values as lines over the key; other values as bars, one group per value. One
/// series: the mean over the other keys and the seeds; with `other` (its column and name),
/// one series per value of it, each the mean over the seeds.
fn key_plot(
    name: &str,
    key: &str,
    groups: &[(Value, Vec<&Vec<Value>>)],
    other: Option<(usize, &str)>,
    m: Measure,
    measure: &str,
) -> Plot {
    let split: Vec<(String, Option<Value>)> = match other {
        Some((o, other_key)) => {
            let all: Vec<&Vec<Value>> = groups.iter().flat_map(|(_, rows)| rows.iter().copied()).collect();
            group_by(&all, o)
                .into_iter()
                .map(|(v, _)| (format!("{other_key} = {}", label(&v)), Some(v)))
                .collect()
        }
        None => vec![(format!("mean {measure}"), None)],
    };
    let mean_at = |rows: &[&Vec<Value>], want: &Option<Value>| -> f64 {
        let chosen: Vec<&Vec<Value>> = match (want, other) {
            (Some(v), Some((o, _))) => rows.iter().copied().filter(|r| r[o] == *v).collect(),
            _ => rows.to_vec(),
        };
        mean(&chosen, m).unwrap_or(f64::NAN)
    };
    let numeric = groups.iter().all(|(v, _)| v.as_f64().is_some());
    let kind = if numeric {
        let series = split
            .iter()
            .map(|(series_label, want)| {
                let mut points: Vec<(f64, f64)> = groups
                    .iter()
                    .map(|(v, rows)| (v.as_f64().unwrap_or(f64::NAN), mean_at(rows, want)))
                    .collect();
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
                Series { label: series_label.clone(), points, style: SeriesStyle::Line }
            })
            .collect();
        PlotKind::Lines { series }
    } else {
        PlotKind::Bars {
            categories: groups.iter().map(|(v, _)| label(v)).collect(),
            series: split
                .iter()
                .map(|(series_label, want)| {
                    (series_label.clone(), groups.iter().map(|(_, rows)| mean_at(rows, want)).collect())
                })
                .collect(),
        }
    };
    let over = if other.is_some() { "mean over the seeds" } else { "mean over the other keys and the seeds" };
    Plot {
        name: name.into(),
        title: format!("{measure} by {key} ({over})"),
        x_label: key.into(),
        y_label: measure.into(),
        log_y: false,
        log_x: false,
        symlog_y: false,
        kind,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_key_gets_a_table_and_a_plot_of_its_means_and_failures_warn() {
        let table = Table {
            columns: ["run", "device.spare_factor", "trim.engine", "seed", "status", "error", "report.waf"]
                .map(String::from)
                .to_vec(),
            data: vec![
                vec![
                    json!(0),
                    json!(0.1),
                    json!("immediate"),
                    json!(1),
                    json!("ok"),
                    Value::Null,
                    json!(2.0),
                ],
                vec![json!(1), json!(0.1), json!("none"), json!(1), json!("ok"), Value::Null, json!(3.0)],
                vec![
                    json!(2),
                    json!(0.2),
                    json!("immediate"),
                    json!(1),
                    json!("ok"),
                    Value::Null,
                    json!(1.5),
                ],
                vec![
                    json!(3),
                    json!(0.2),
                    json!("none"),
                    json!(1),
                    json!("failed"),
                    json!("bad"),
                    Value::Null,
                ],
            ],
        };
        let keys = ["device.spare_factor", "trim.engine"].map(String::from);
        let (report, warning) = sweep_report("t", &table, &keys);
        assert_eq!(report.tables.len(), 2);
        assert_eq!(report.plots.len(), 2);
        // spare factor 0.1: mean of 2.0 and 3.0; 0.2: only the ok run.
        assert_eq!(report.tables[0].rows[0][2], Cell::Num(2.5));
        assert_eq!(report.tables[0].rows[1][2], Cell::Num(1.5));
        assert!(matches!(report.plots[0].kind, PlotKind::Lines { .. }));
        assert!(matches!(report.plots[1].kind, PlotKind::Bars { .. }));
        assert!(warning.unwrap().starts_with("1 of 4 runs failed"));
        // Two keys: each plot has one series per value of the other key.
        let PlotKind::Bars { series, .. } = &report.plots[1].kind else { panic!() };
        let labels: Vec<&str> = series.iter().map(|s| s.0.as_str()).collect();
        assert_eq!(labels, ["device.spare_factor = 0.1", "device.spare_factor = 0.2"]);
        assert_eq!(series[0].1, [2.0, 3.0]);
        assert!(series[1].1[0] == 1.5 && series[1].1[1].is_nan(), "the failed run has no value: {series:?}");
    }

    #[test]
    fn a_sweep_over_mapping_units_tables_and_plots_the_ineffective_trim_share() {
        let columns =
            ["run", "ftl.mapping_unit", "seed", "status", TRIM_WITH_UNIT, TRIM_INEFFECTIVE, "report.waf"];
        let row = |unit: &str, received: Value, ineffective: Value, waf: f64| {
            vec![json!(0), json!(unit), json!(1), json!("ok"), received, ineffective, json!(waf)]
        };
        let table = Table {
            columns: columns.map(String::from).to_vec(),
            data: vec![
                // No unit: the counters are absent, every TRIM byte could unmap.
                row("4KiB", Value::Null, Value::Null, 1.5),
                row("16KiB", json!(4096), json!(1024), 4.0),
                row("16KiB", json!(4096), json!(3072), 6.0),
            ],
        };
        let (report, _) = sweep_report("t", &table, &["ftl.mapping_unit".to_string()]);
        let t = &report.tables[0];
        assert_eq!(t.columns.last().unwrap(), "mean TRIM bytes ineffective (%)");
        assert_eq!(t.rows[0].last().unwrap(), &Cell::Num(0.0));
        assert_eq!(t.rows[1].last().unwrap(), &Cell::Num(50.0), "(25 % + 75 %) / 2");
        assert_eq!(report.plots.len(), 2, "WAF and the ineffective share");
        assert_eq!(report.plots[1].name, "by-ftl-mapping_unit-trim-ineffective");
        let PlotKind::Bars { categories, series } = &report.plots[1].kind else { panic!() };
        assert_eq!(
            (categories.as_slice(), series[0].1.as_slice()),
            (&["4KiB".to_string(), "16KiB".to_string()][..], &[0.0, 50.0][..])
        );
    }
}
