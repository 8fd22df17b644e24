//! The page `trimlab sweep --html` writes: a summary of results.csv with, per swept key, the
//! measures averaged over the other keys and the seeds, one plot per key.

use crate::sweep::Table;
use serde_json::Value;
use trimlab_report::{Cell, ExperimentReport, Plot, PlotKind, Series, SeriesStyle, Table as ReportTable};

/// The measures each key is plotted against (when results.csv has them).
const MEASURES: [(&str, &str); 3] = [
    ("report.waf", "WAF"),
    ("report.nand_blocks_erased", "NAND blocks erased"),
    ("report.latency.write.p99_ns", "write p99 (ns)"),
];

/// The summary of a sweep's table over the swept `keys`, and a warning when points failed.
pub fn sweep_report(title: &str, table: &Table, keys: &[String]) -> (ExperimentReport, Option<String>) {
    let status = table.column("status");
    let ok: Vec<&Vec<Value>> =
        table.data.iter().filter(|row| status.is_none_or(|i| row[i] == "ok")).collect();
    let failed = table.data.len() - ok.len();
    let measures: Vec<(usize, &str)> =
        MEASURES.iter().filter_map(|(column, label)| Some((table.column(column)?, *label))).collect();
    let mut plots = Vec::new();
    let mut tables = Vec::new();
    for key in keys {
        let Some(k) = table.column(key) else { continue };
        let groups = group_by(&ok, k);
        tables.push(key_table(key, &groups, &measures));
        if let Some(&(m, label)) = measures.first() {
            plots.push(key_plot(key, &groups, m, label));
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

fn mean(rows: &[&Vec<Value>], m: usize) -> Option<f64> {
    let values: Vec<f64> = rows.iter().filter_map(|r| r[m].as_f64()).collect();
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

fn label(value: &Value) -> String {
    value.as_str().map_or_else(|| value.to_string(), str::to_owned)
}

/// A file-stem-safe name for a key's table and plot.
fn stem(key: &str) -> String {
    key.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '-' }).collect()
}

fn key_table(key: &str, groups: &[(Value, Vec<&Vec<Value>>)], measures: &[(usize, &str)]) -> ReportTable {
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

/// Numeric values as a line over the key; other values as bars, one per value.
fn key_plot(key: &str, groups: &[(Value, Vec<&Vec<Value>>)], m: usize, measure: &str) -> Plot {
    let numeric = groups.iter().all(|(v, _)| v.as_f64().is_some());
    let kind = if numeric {
        let mut points: Vec<(f64, f64)> = groups
            .iter()
            .map(|(v, rows)| (v.as_f64().unwrap_or(f64::NAN), mean(rows, m).unwrap_or(f64::NAN)))
            .collect();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        PlotKind::Lines {
            series: vec![Series { label: format!("mean {measure}"), points, style: SeriesStyle::Line }],
        }
    } else {
        PlotKind::Bars {
            categories: groups.iter().map(|(v, _)| label(v)).collect(),
            series: vec![(
                format!("mean {measure}"),
                groups.iter().map(|(_, rows)| mean(rows, m).unwrap_or(f64::NAN)).collect(),
            )],
        }
    };
    Plot {
        name: format!("by-{}", stem(key)),
        title: format!("{measure} by {key} (mean over the other keys and the seeds)"),
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
    }
}
