//! The steady-state part of a run's page: per phase that ran `until = "steady"`, the
//! per-round table and, for each tracked figure, a convergence plot in the manner of SNIA
//! PTS's steady-state reports: the figure per round, and over the judged window its mean, the
//! ±range band around it and the least-squares line.

use serde_json::Value;
use trimlab_report::{Cell, ExperimentReport, Plot, PlotKind, Series, SeriesStyle, Table};
use trimlab_sim::steady_state::least_squares_slope;

/// Adds every `steady_state` entry of metrics.json to `report`.
pub fn add_steady_state(report: &mut ExperimentReport, steady: &Value) {
    for (i, s) in steady.as_array().into_iter().flatten().enumerate() {
        let rounds: Vec<&Value> = s["rounds"].as_array().map(|r| r.iter().collect()).unwrap_or_default();
        let name = s["name"].as_str().unwrap_or("phase");
        report.notes.push(s["verdict"].as_str().unwrap_or("steady state: ?").to_string());
        report.tables.push(rounds_table(i, name, &rounds));
        let window = s["window"].as_u64().unwrap_or(5) as usize;
        let mut figures: Vec<(&str, Option<f64>)> = Vec::new();
        for j in s["window_judged"].as_array().into_iter().flatten() {
            let figure = j["figure"].as_str().unwrap_or("");
            let band = (j["test"] == "range").then(|| band_of(j["limit"].as_str().unwrap_or(""))).flatten();
            match figures.iter_mut().find(|(f, _)| *f == figure) {
                Some(entry) => entry.1 = entry.1.or(band),
                None => figures.push((figure, band)),
            }
        }
        for (figure, band) in figures {
            report.plots.push(convergence_plot(i, name, figure, &rounds, window, band));
        }
    }
}

/// "20 % of the mean" as 0.20.
fn band_of(limit: &str) -> Option<f64> {
    limit.strip_suffix(" % of the mean")?.trim().parse::<f64>().ok().map(|p| p / 100.0)
}

fn rounds_table(i: usize, name: &str, rounds: &[&Value]) -> Table {
    let mut t = Table::new(
        format!("steady_state_{i}"),
        format!("{name}: rounds toward steady state"),
        &[
            "round",
            "host MiB written",
            "NAND MiB programmed",
            "erases",
            "WAF",
            "IOPS",
            "MiB/s",
            "mean latency (us)",
        ],
    );
    let mib = |v: &Value| Cell::Num(v.as_u64().unwrap_or(0) as f64 / (1u64 << 20) as f64);
    let num = |v: &Value| Cell::Num(v.as_f64().unwrap_or(0.0));
    for r in rounds {
        t.push_row([
            Cell::from(r["round"].as_u64().unwrap_or(0) + 1),
            mib(&r["host_write_bytes"]),
            mib(&r["nand_write_bytes"]),
            Cell::from(r["erases"].as_u64().unwrap_or(0)),
            num(&r["waf"]),
            num(&r["iops"]),
            Cell::Num(r["bw"].as_f64().unwrap_or(0.0) / (1u64 << 20) as f64),
            Cell::Num(r["lat"].as_f64().unwrap_or(0.0) / 1e3),
        ]);
    }
    t
}

/// The figure per round (1-based), and over the last `window` rounds their mean, the lines at
/// 110 % and 90 % of it for PTS's 20 % (data within them has the excursion PTS allows; PTS's
/// own reports draw these) and the least-squares line.
fn convergence_plot(
    i: usize,
    name: &str,
    figure: &str,
    rounds: &[&Value],
    window: usize,
    band: Option<f64>,
) -> Plot {
    let ys: Vec<f64> = rounds.iter().map(|r| r[figure].as_f64().unwrap_or(0.0)).collect();
    let x = |k: usize| (k + 1) as f64;
    let mut series = vec![Series {
        label: format!("{figure} per round"),
        points: ys.iter().enumerate().map(|(k, y)| (x(k), *y)).collect(),
        style: SeriesStyle::Line,
    }];
    if ys.len() >= window && window >= 2 {
        let first = ys.len() - window;
        let w = &ys[first..];
        let mean = w.iter().sum::<f64>() / window as f64;
        let (a, b) = (x(first), x(ys.len() - 1));
        let flat = |label: String, y: f64| Series {
            label,
            points: vec![(a, y), (b, y)],
            style: SeriesStyle::Dashed,
        };
        series.push(flat("last window's mean".into(), mean));
        if let Some(band) = band {
            let pct = band * 100.0;
            series.push(flat(format!("{:.0} % of the mean", 100.0 + pct / 2.0), mean * (1.0 + band / 2.0)));
            series.push(flat(format!("{:.0} % of the mean", 100.0 - pct / 2.0), mean * (1.0 - band / 2.0)));
        }
        let slope = least_squares_slope(w);
        let mid = (window as f64 - 1.0) / 2.0;
        series.push(Series {
            label: "least-squares fit over the window".into(),
            points: vec![(a, mean - slope * mid), (b, mean + slope * mid)],
            style: SeriesStyle::Dashed,
        });
    }
    Plot {
        name: format!("steady_state_{i}_{figure}"),
        title: format!("{name}: {figure} per round (steady-state window)"),
        x_label: "round".into(),
        y_label: figure.into(),
        log_y: false,
        log_x: false,
        symlog_y: false,
        kind: PlotKind::Lines { series },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_tracked_figure_gets_a_convergence_plot_with_its_window() {
        let rounds: Vec<Value> = (0..7)
            .map(|r| {
                json!({"round": r, "waf": 2.0 + (r as f64).min(2.0), "iops": 1000.0, "bw": 0.0, "lat": 0.0,
                "host_write_bytes": 1u64 << 20, "nand_write_bytes": 3u64 << 20, "erases": 1})
            })
            .collect();
        let steady = json!([{"name": "w", "window": 5, "verdict": "steady state: w: reached at round 7",
            "window_judged": [
                {"figure": "waf", "test": "range", "limit": "20 % of the mean"},
                {"figure": "waf", "test": "slope excursion", "limit": "10 % of the mean"},
                {"figure": "iops", "test": "range", "limit": "20 % of the mean"}],
            "rounds": rounds}]);
        let mut report = crate::run_report::run_report("t", &Default::default(), &[], None);
        add_steady_state(&mut report, &steady);
        assert_eq!(report.plots.len(), 2);
        let PlotKind::Lines { series } = &report.plots[0].kind else { panic!() };
        assert_eq!(series[0].points.len(), 7);
        // The window is rounds 3..=7 (1-based), all at 4.0: mean 4, lines at 110 % and 90 %, a
        // flat fit.
        assert_eq!(series[1].points, vec![(3.0, 4.0), (7.0, 4.0)]);
        assert!((series[2].points[0].1 - 4.4).abs() < 1e-12 && series[2].label == "110 % of the mean");
        assert!((series[3].points[0].1 - 3.6).abs() < 1e-12 && series[3].label == "90 % of the mean");
        assert_eq!(series[4].points, vec![(3.0, 4.0), (7.0, 4.0)]);
        assert_eq!(report.tables.last().unwrap().rows.len(), 7);
        assert!(report.notes.iter().any(|n| n.contains("reached at round 7")));
    }
}
