//! Crate-level tests: files on disk, determinism, SVG text content, log axes, HTML escaping.

use std::fs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use trimlab_report::*;

/// A fresh directory under the system temp dir, unique per process and call, so parallel
/// tests (and parallel `cargo test` runs) never share one.
fn temp_dir(tag: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("trimlab-report-test-{}-{tag}-{n}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn sample_report() -> ExperimentReport {
    let mut table =
        Table::new("waf_by_util", "WAF by utilization", &["policy", "utilization", "waf", "erases"]);
    table.push_row([Cell::from("greedy"), Cell::Num(0.5), Cell::Num(1.234567), Cell::Int(1200)]);
    table.push_row([Cell::from("cost, benefit \"cb\""), Cell::Num(0.9), Cell::Num(f64::NAN), Cell::Empty]);
    let model: Vec<(f64, f64)> = (1..=9)
        .map(|i| {
            let u = f64::from(i) / 10.0;
            (u, (1.0 + u) / (2.0 * (1.0 - u)))
        })
        .collect();
    let measured: Vec<(f64, f64)> = model.iter().map(|&(u, w)| (u, w * 1.07)).collect();
    let waf_curve = Plot {
        name: "waf_curve".into(),
        title: "WAF vs utilization".into(),
        x_label: "utilization".into(),
        y_label: "write amplification".into(),
        log_y: false,
        log_x: false,
        symlog_y: false,
        kind: PlotKind::Lines {
            series: vec![
                Series { label: "model (paper)".into(), points: model, style: SeriesStyle::Dashed },
                Series { label: "trimlab greedy".into(), points: measured, style: SeriesStyle::Points },
            ],
        },
    };
    ExperimentReport {
        name: "waf".into(),
        title: "Write amplification <vs> utilization".into(),
        summary: "Uniform random 4 KiB writes on a 1/64-scale device & greedy GC.".into(),
        paper: vec!["WAF grows as (1+u)/(2(1-u)) for greedy".into()],
        verdicts: vec![
            Verdict {
                claim: "WAF within 10% of model".into(),
                holds: true,
                detail: "max rel. error 7%".into(),
            },
            Verdict {
                claim: "TRIM halves WAF at u=0.9".into(),
                holds: false,
                detail: "measured 0.62x".into(),
            },
        ],
        notes: vec!["device scaled down 64x".into()],
        tables: vec![table],
        plots: vec![
            waf_curve.clone(),
            Plot {
                name: "policies".into(),
                title: "Erases per policy".into(),
                x_label: "workload".into(),
                y_label: "erases".into(),
                kind: PlotKind::Bars {
                    categories: vec!["uniform".into(), "hot/cold".into(), "seq".into()],
                    series: vec![
                        ("greedy".into(), vec![120.0, 80.0, 10.0]),
                        ("cost-benefit".into(), vec![110.0, 50.0, 12.0]),
                    ],
                },
                ..waf_curve
            },
        ],
        params: vec![("seed".into(), "42".into()), ("scale".into(), "1/64".into())],
    }
}

/// Text contents of all `<text>` elements, in document order.
fn svg_texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let (_, rest) = t.split_once('>')?;
            let (content, _) = rest.split_once("</text>")?;
            Some(content.trim().to_owned())
        })
        .collect()
}

/// The `y` attribute of the `<text>` element whose content is `label`.
fn text_y(svg: &str, label: &str) -> Option<i32> {
    text_attr(svg, label, "y")
}

/// Attribute `attr` (a number) of the `<text>` element whose content is `label`.
fn text_attr(svg: &str, label: &str, attr: &str) -> Option<i32> {
    svg.split("<text").skip(1).find_map(|t| {
        let (attrs, rest) = t.split_once('>')?;
        let (content, _) = rest.split_once("</text>")?;
        if content.trim() != label {
            return None;
        }
        let value = attrs.split(&format!(" {attr}=\"")).nth(1)?.split('"').next()?;
        value.parse().ok()
    })
}

#[test]
fn write_experiment_is_byte_deterministic() {
    let report = sample_report();
    let (a, b) = (temp_dir("det-a"), temp_dir("det-b"));
    let files_a = write_experiment(&a, &report).unwrap();
    let files_b = write_experiment(&b, &report.clone()).unwrap();
    let index_a = write_index(&a, std::slice::from_ref(&report)).unwrap();
    let index_b = write_index(&b, &[report]).unwrap();
    assert_eq!(files_a.len(), files_b.len());
    let names: Vec<String> =
        files_a.iter().map(|p| p.strip_prefix(&a).unwrap().display().to_string()).collect();
    assert_eq!(
        names,
        [
            "waf/waf_by_util.csv",
            "waf/waf_by_util.json",
            "waf/waf_curve.svg",
            "waf/policies.svg",
            "waf/report.json",
            "waf/summary.txt",
        ]
    );
    for (fa, fb) in files_a.iter().chain([&index_a]).zip(files_b.iter().chain([&index_b])) {
        let (ba, bb) = (fs::read(fa).unwrap(), fs::read(fb).unwrap());
        assert!(!ba.is_empty(), "{} is empty", fa.display());
        assert_eq!(ba, bb, "{} differs between runs", fa.display());
    }
    let _ = fs::remove_dir_all(&a);
    let _ = fs::remove_dir_all(&b);
}

#[test]
fn written_files_have_expected_content() {
    let report = sample_report();
    let dir = temp_dir("content");
    write_experiment(&dir, &report).unwrap();
    let exp = dir.join("waf");
    let csv = fs::read_to_string(exp.join("waf_by_util.csv")).unwrap();
    assert_eq!(
        csv,
        "policy,utilization,waf,erases\ngreedy,0.5,1.2346,1200\n\"cost, benefit \"\"cb\"\"\",0.9,NaN,\n"
    );
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(exp.join("waf_by_util.json")).unwrap()).unwrap();
    assert_eq!(json["rows"][1], serde_json::json!(["cost, benefit \"cb\"", 0.9, null, null]));
    assert_eq!(json["rows"][0][2], serde_json::json!(1.234567));
    let summary = fs::read_to_string(exp.join("summary.txt")).unwrap();
    assert_eq!(summary, render_text(&report));
    assert!(summary.contains("[PASS] WAF within 10% of model"));
    assert!(summary.contains("[FAIL] TRIM halves WAF at u=0.9"));
    // report.json round-trips (NaN cells come back as Empty: JSON cannot tell them apart).
    let back: ExperimentReport =
        serde_json::from_str(&fs::read_to_string(exp.join("report.json")).unwrap()).unwrap();
    assert_eq!(back.plots, report.plots);
    assert_eq!(back.tables[0].rows[1][2], Cell::Empty);
    assert_eq!(back.tables[0].rows[0], report.tables[0].rows[0]);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn non_finite_values_serialize_as_null() {
    let s = Series {
        label: "s".into(),
        points: vec![(1.0, f64::NAN), (f64::INFINITY, 2.0)],
        style: SeriesStyle::Line,
    };
    let json = serde_json::to_string(&s).unwrap();
    assert_eq!(json, r#"{"label":"s","points":[[1.0,null],[null,2.0]],"style":"line"}"#);
    let back: Series = serde_json::from_str(&json).unwrap();
    assert!(back.points[0].1.is_nan() && back.points[1].0.is_nan());
    let kind =
        PlotKind::Bars { categories: vec!["a".into()], series: vec![("x".into(), vec![f64::NEG_INFINITY])] };
    assert_eq!(
        serde_json::to_string(&kind).unwrap(),
        r#"{"type":"bars","categories":["a"],"series":[["x",[null]]]}"#
    );
    let cells = vec![Cell::Num(f64::NAN), Cell::Int(-7), Cell::Num(2.5), Cell::from("t"), Cell::Empty];
    let json = serde_json::to_string(&cells).unwrap();
    assert_eq!(json, r#"[null,-7,2.5,"t",null]"#);
    let back: Vec<Cell> = serde_json::from_str(&json).unwrap();
    assert_eq!(back[1..], cells[1..]);
}

#[test]
fn svg_contains_title_legend_axis_and_tick_labels() {
    let report = sample_report();
    let svg = render_svg(&report.plots[0]).unwrap();
    assert!(svg.starts_with("<svg"));
    let texts = svg_texts(&svg);
    for want in
        ["WAF vs utilization", "model (paper)", "trimlab greedy", "utilization", "write amplification"]
    {
        assert!(texts.iter().any(|t| t == want), "{want:?} missing in {texts:?}");
    }
    // Tick labels come out of format_num: plain short decimals.
    assert!(texts.iter().any(|t| t == "0.4"), "{texts:?}");
    assert!(texts.iter().any(|t| t == "2"), "{texts:?}");
    // Dashed model line: many short <polyline> dashes rather than one path.
    assert!(svg.matches("<polyline").count() > 20);
    // Measured values as markers.
    assert!(svg.matches("<circle").count() >= 9);

    let bars = render_svg(&report.plots[1]).unwrap();
    let texts = svg_texts(&bars);
    for want in ["Erases per policy", "greedy", "cost-benefit", "uniform", "hot/cold", "seq"] {
        assert!(texts.iter().any(|t| t == want), "{want:?} missing in {texts:?}");
    }
    // 6 bars + 2 legend swatches (+ background rects).
    assert!(bars.matches("<rect").count() >= 8);
}

#[test]
fn svg_escapes_text() {
    let mut plot = sample_report().plots[0].clone();
    plot.title = "a < b & \"c\"".into();
    let svg = render_svg(&plot).unwrap();
    assert!(svg.contains("a &lt; b &amp; &quot;c&quot;"));
    assert!(!svg.contains("a < b"));
}

#[test]
fn log_y_spans_six_decades_with_equal_spacing() {
    let points: Vec<(f64, f64)> = (0..=6).map(|i| (f64::from(i), pow10(i - 2))).collect();
    let plot = Plot {
        name: "lat".into(),
        title: "Latency".into(),
        x_label: "step".into(),
        y_label: "ms".into(),
        log_y: true,
        log_x: false,
        symlog_y: false,
        kind: PlotKind::Lines {
            series: vec![
                Series { label: "p99".into(), points: points.clone(), style: SeriesStyle::Line },
                Series {
                    label: "with zero".into(),
                    points: vec![(0.0, 0.0), (1.0, 5.0)],
                    style: SeriesStyle::Points,
                },
            ],
        },
    };
    let svg = render_svg(&plot).unwrap();
    let labels = ["0.01", "0.1", "1", "10", "100", "1000", "10000"];
    let ys: Vec<i32> =
        labels.iter().map(|l| text_y(&svg, l).unwrap_or_else(|| panic!("tick {l} missing"))).collect();
    // Decades equally spaced, increasing upwards: that is a log axis.
    let gaps: Vec<i32> = ys.windows(2).map(|w| w[0] - w[1]).collect();
    assert!(gaps.iter().all(|&g| g > 20), "{gaps:?}");
    assert!(gaps.iter().max().unwrap() - gaps.iter().min().unwrap() <= 1, "{gaps:?}");
    // The non-positive value is reported, not silently dropped.
    let texts = svg_texts(&svg);
    assert!(texts.iter().any(|t| t == "1 value(s) &lt;= 0"), "{texts:?}");

    let bars = Plot {
        kind: PlotKind::Bars {
            categories: vec!["small".into(), "large".into()],
            series: vec![("v".into(), vec![1e-2, 1e4])],
        },
        ..plot
    };
    let svg = render_svg(&bars).unwrap();
    assert!(text_y(&svg, "0.01").is_some() && text_y(&svg, "10000").is_some());
}

#[test]
fn long_bar_categories_wrap_whole_and_crowded_ones_go_vertical() {
    let wrapped = Plot {
        name: "wrapped".into(),
        title: "Wrapped".into(),
        x_label: "scenario".into(),
        y_label: "WAF".into(),
        log_y: false,
        log_x: false,
        symlog_y: false,
        kind: PlotKind::Bars {
            series: vec![("WAF".into(), vec![1.0, 2.0, 3.0])],
            categories: vec![
                "online discard, drive ignores TRIM".into(),
                "fstrim daily".into(),
                "no discard".into(),
            ],
        },
    };
    let texts = svg_texts(&render_svg(&wrapped).unwrap());
    let joined = texts.join(" ");
    assert!(joined.contains("online discard, drive ignores TRIM"), "every word, in order: {texts:?}");
    assert!(!texts.iter().any(|t| t.contains('…')), "nothing is cut: {texts:?}");

    let categories: Vec<String> = (0..30).map(|i| format!("workload-{i}-with-a-long-name")).collect();
    let plot = Plot {
        name: "crowded".into(),
        title: "Crowded".into(),
        x_label: "workload".into(),
        y_label: "erases".into(),
        log_y: false,
        log_x: false,
        symlog_y: false,
        kind: PlotKind::Bars {
            series: vec![("greedy".into(), (1..=30).map(f64::from).collect())],
            categories,
        },
    };
    let svg = render_svg(&plot).unwrap();
    let texts = svg_texts(&svg);
    for i in 0..30 {
        let want = format!("workload-{i}-with-a-long-name");
        assert!(texts.contains(&want), "{want} missing in {texts:?}");
    }
    assert_eq!(svg.matches("rotate(270,").count(), 30 + 1); // labels + y-axis description
}

fn pow10(e: i32) -> f64 {
    format!("1e{e}").parse().unwrap()
}

#[test]
fn empty_and_degenerate_plots_render() {
    let mut plot = sample_report().plots[0].clone();
    plot.kind = PlotKind::Lines { series: vec![] };
    assert!(svg_texts(&render_svg(&plot).unwrap()).contains(&"no data".to_owned()));
    plot.log_y = true;
    plot.kind = PlotKind::Lines {
        series: vec![Series {
            label: "one".into(),
            points: vec![(1.0, 3.0), (f64::NAN, 1.0), (2.0, 3.0)],
            style: SeriesStyle::Line,
        }],
    };
    render_svg(&plot).unwrap();
    plot.kind = PlotKind::Bars { categories: vec![], series: vec![] };
    render_svg(&plot).unwrap();
    // Extreme magnitudes must not panic or loop (the span overflows to infinity).
    plot.log_y = false;
    plot.kind = PlotKind::Lines {
        series: vec![Series {
            label: "huge".into(),
            points: vec![(-f64::MAX, -f64::MAX), (f64::MAX, f64::MAX), (0.0, 1e-300)],
            style: SeriesStyle::Points,
        }],
    };
    render_svg(&plot).unwrap();
}

#[test]
fn index_html_is_escaped_and_self_contained() {
    let report = sample_report();
    let dir = temp_dir("html");
    let path = write_index(&dir, &[report]).unwrap();
    let html = fs::read_to_string(path).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("Write amplification &lt;vs&gt; utilization"));
    assert!(!html.contains("<vs>"));
    assert!(html.contains("1/64-scale device &amp; greedy GC."));
    assert!(html.contains("cost, benefit &quot;cb&quot;"));
    assert!(html.contains("<li class=\"pass\">") && html.contains("<li class=\"fail\">"));
    assert!(html.contains("WAF grows as (1+u)/(2(1-u)) for greedy"));
    assert!(html.contains("<td class=\"num\">1.2346</td>"));
    assert!(html.contains("href=\"waf/waf_by_util.csv\""));
    assert_eq!(html.matches("<svg").count(), 2);
    assert!(html.contains("model (paper)"));
    // No external resource of any kind (the SVG namespace URL is dropped when inlining).
    assert!(!html.contains("http://") && !html.contains("https://"));
    assert!(!html.contains("<script"));
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn bad_input_is_rejected_with_path() {
    let dir = temp_dir("bad");
    let mut r = sample_report();
    r.tables[0].rows[0].pop();
    let err = write_experiment(&dir, &r).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("waf_by_util.csv") && msg.contains("row 0"), "{msg}");
    // Nothing was written for the rejected report.
    assert!(!dir.join("waf").exists());

    let mut r = sample_report();
    r.name = "../escape".into();
    assert!(matches!(write_experiment(&dir, &r), Err(ReportError::Invalid { .. })));

    let mut r = sample_report();
    r.tables[0].name = "report".into();
    assert!(write_experiment(&dir, &r).is_err());

    let mut r = sample_report();
    if let PlotKind::Bars { series, .. } = &mut r.plots[1].kind {
        series[0].1.push(1.0);
    }
    let msg = write_experiment(&dir, &r).unwrap_err().to_string();
    assert!(msg.contains("policies.svg"), "{msg}");

    let r = sample_report();
    let msg = write_index(&dir, &[r.clone(), r]).unwrap_err().to_string();
    assert!(msg.contains("index.html") && msg.contains("duplicate"), "{msg}");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn io_error_names_the_path() {
    let dir = temp_dir("io");
    // A file where the experiment directory should go makes create_dir_all fail.
    fs::write(dir.join("waf"), b"not a dir").unwrap();
    let err = write_experiment(&dir, &sample_report()).unwrap_err();
    assert!(matches!(err, ReportError::Io { .. }));
    assert!(err.to_string().contains("waf"), "{err}");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn index_puts_plots_before_tables_collapses_long_tables_and_cites_references() {
    let mut report = sample_report();
    let mut long = Table::new("long", "Every point", &["spare_factor", "paper_waf"]);
    for i in 0..20 {
        long.push_row([Cell::Int(i), Cell::Num(1.5)]);
    }
    report.tables.push(long);
    let refs = [Reference { key: "000".into(), citation: "K. Lee et al., \"Lazy TRIM\", ICCE 2018.".into() }];
    let html = render_index_html_with_references(&[report], &refs).unwrap();
    let plots_at = html.find("<h3>Plots</h3>").unwrap();
    let tables_at = html.find("<h3>Tables</h3>").unwrap();
    assert!(plots_at < tables_at, "plots come first");
    assert!(html.contains("<details>\n<summary>Every point <span class=\"muted\">(20 rows)</span></summary>"));
    assert!(
        html.contains("<th class=\"paper\" title=\"paper_waf\">paper WAF</th>"),
        "readable, marked paper header"
    );
    assert!(html.contains("<li id=\"ref-000\"><span class=\"refkey\">[000]</span> K. Lee et al., &quot;Lazy TRIM&quot;, ICCE 2018.</li>"));
    assert!(html.contains("href=\"#references\""));
}

/// The `x` attribute of the `<text>` element whose content is `label`.
fn text_x(svg: &str, label: &str) -> Option<i32> {
    text_attr(svg, label, "x")
}

#[test]
fn log_x_labels_values_not_logarithms_with_decades_equally_spaced() {
    // A TRIM cost swept from 5 us to 5 ms: ticks read 10, 100, 1000 (not 1, 2, 3).
    let points = vec![(5.0, 1.0), (50.0, 2.0), (500.0, 3.0), (5000.0, 4.0)];
    let plot = Plot {
        name: "sweep".into(),
        title: "Sweep".into(),
        x_label: "TRIM cost per command (µs)".into(),
        y_label: "share".into(),
        log_y: false,
        log_x: true,
        symlog_y: false,
        kind: PlotKind::Lines {
            series: vec![Series { label: "a".into(), points, style: SeriesStyle::Line }],
        },
    };
    let svg = render_svg(&plot).unwrap();
    let xs: Vec<i32> = ["10", "100", "1000"]
        .iter()
        .map(|l| text_x(&svg, l).unwrap_or_else(|| panic!("tick {l} missing: {:?}", svg_texts(&svg))))
        .collect();
    let gaps: Vec<i32> = xs.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps[0] > 50 && (gaps[0] - gaps[1]).abs() <= 1, "{gaps:?}");
    let bars = Plot { kind: PlotKind::Bars { categories: vec!["a".into()], series: vec![] }, ..plot };
    assert!(render_svg(&bars).is_err(), "log_x on bars is refused");
}

#[test]
fn symlog_bars_show_small_values_of_either_sign_beside_huge_ones() {
    let plot = Plot {
        name: "gain".into(),
        title: "Gain".into(),
        x_label: "phase".into(),
        y_label: "gain (%)".into(),
        log_y: false,
        log_x: false,
        symlog_y: true,
        kind: PlotKind::Bars {
            categories: vec!["write".into(), "re-write".into()],
            series: vec![("ours".into(), vec![1645.0, 86.0]), ("paper".into(), vec![-1.3, -4.7])],
        },
    };
    let svg = render_svg(&plot).unwrap();
    let y = |l: &str| text_y(&svg, l).unwrap_or_else(|| panic!("tick {l} missing: {:?}", svg_texts(&svg)));
    // Ticks at -1, 0, 1, 10, 100, 1000, decades equally spaced above 1.
    let (m1, zero, one, ten, hundred, thousand) = (y("-1"), y("0"), y("1"), y("10"), y("100"), y("1000"));
    assert!(m1 > zero && zero > one && one > ten, "{m1} {zero} {one} {ten}");
    // log10(1 + v): decades above 10 are equal within a few per cent.
    assert!(
        ((ten - hundred) - (hundred - thousand)).abs() * 20 <= hundred - thousand,
        "{ten} {hundred} {thousand}"
    );
    // The paper's -4.7 % bar is at least a tenth as tall as ours at +86 %, not a hairline.
    let heights: Vec<f64> = svg
        .split("<rect")
        .skip(1)
        .filter_map(|r| r.split(" height=\"").nth(1)?.split('"').next()?.parse().ok())
        .collect();
    // Leave out the background (540 px) and the legend swatches (14 px).
    let smallest_bar = heights.iter().copied().filter(|h| *h > 14.0 && *h < 400.0).fold(f64::MAX, f64::min);
    assert!(smallest_bar > 20.0, "{heights:?}");
}

fn plot_of(kind: PlotKind) -> Plot {
    Plot {
        name: "p".into(),
        title: "P".into(),
        x_label: "trim_fraction".into(),
        y_label: "WAF".into(),
        log_y: false,
        log_x: false,
        symlog_y: false,
        kind,
    }
}

#[test]
fn range_plots_draw_one_line_per_series_with_a_bar_per_point_and_round_trip() {
    let series = |label: &str, mean: [f64; 3], spread: f64| RangeSeries {
        label: label.into(),
        mean: mean.to_vec(),
        low: mean.iter().map(|m| m - spread).collect(),
        high: mean.iter().map(|m| m + spread).collect(),
    };
    let plot = plot_of(PlotKind::Ranges {
        categories: vec!["0".into(), "0.1".into(), "0.2".into()],
        series: vec![
            series("trim.engine = none", [11.6, 11.8, 12.0], 0.2),
            series("immediate", [8.0, 5.0, f64::NAN], 0.5),
        ],
    });
    let svg = render_svg(&plot).unwrap();
    let texts = svg_texts(&svg);
    for label in ["0", "0.1", "0.2", "trim.engine = none", "immediate", "WAF", "trim_fraction"] {
        assert!(texts.iter().any(|t| t == label), "{label} missing: {texts:?}");
    }
    // Markers: 3 + 2 points (the NaN has none) plus two legend glyphs.
    assert_eq!(svg.matches("<circle").count(), 7, "{svg}");
    let back: Plot = serde_json::from_str(&serde_json::to_string(&plot).unwrap()).unwrap();
    let PlotKind::Ranges { series, .. } = back.kind else { panic!() };
    assert!(series[1].mean[2].is_nan() && series[0].high[2] == 12.2);
    let bad = plot_of(PlotKind::Ranges {
        categories: vec!["a".into()],
        series: vec![RangeSeries { label: "x".into(), mean: vec![1.0], low: vec![], high: vec![1.0] }],
    });
    assert!(render_svg(&bad).unwrap_err().to_string().contains("mean/low/high"));
}

#[test]
fn heatmaps_write_each_value_in_its_cell_on_one_colour_scale() {
    let plot = plot_of(PlotKind::Heatmap {
        columns: vec!["0".into(), "0.5".into()],
        rows: vec!["none".into(), "immediate".into()],
        values: vec![vec![11.6, 12.0], vec![8.25, f64::NAN]],
    });
    let svg = render_svg(&plot).unwrap();
    let texts = svg_texts(&svg);
    for label in ["11.6", "12", "8.25", "–", "none", "immediate", "0.5"] {
        assert!(texts.iter().any(|t| t == label), "{label} missing: {texts:?}");
    }
    // The lowest value is the darkest (viridis' first stop), the highest the lightest.
    assert!(svg.contains("#440154") || svg.contains("rgb(68,1,84)"), "the low end of the scale");
    assert!(svg.contains("#FDE725") || svg.contains("#fde725") || svg.contains("rgb(253,231,37)"));
    let back: Plot = serde_json::from_str(&serde_json::to_string(&plot).unwrap()).unwrap();
    let PlotKind::Heatmap { values, .. } = back.kind else { panic!() };
    assert!(values[1][1].is_nan() && values[0][1] == 12.0);
    let ragged = plot_of(PlotKind::Heatmap {
        columns: vec!["a".into()],
        rows: vec!["r".into()],
        values: vec![vec![]],
    });
    assert!(render_svg(&ragged).is_err());
}
