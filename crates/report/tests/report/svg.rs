//! SVG plots' pieces: category names wrapped at word breaks, series colours, nice steps and log axes.

use trimlab_report::svg::{is_paper, log_axis, nice_step, series_colors, wrap_words, PAPER};

#[test]
fn category_names_wrap_at_spaces_and_hyphens_never_mid_word() {
    let w = wrap_words("online discard, drive ignores TRIM", 14).unwrap();
    assert_eq!(w, ["online", "discard, drive", "ignores TRIM"]);
    assert_eq!(wrap_words("DT-512MB drive", 6).unwrap(), ["DT-", "512MB", "drive"]);
    assert_eq!(wrap_words("unbreakable-ish", 6), None);
}

#[test]
fn paired_series_share_a_colour_and_paper_is_black() {
    assert!(is_paper("paper") && is_paper("paper, GC running") && is_paper("paper total"));
    assert!(!is_paper("papers") && !is_paper("trimlab"));
    let c =
        series_colors(["trimlab b=16", "mean-field b=16", "trimlab b=64", "model b=64", "paper"].into_iter());
    assert_eq!(c[0], c[1]);
    assert_eq!(c[2], c[3]);
    assert_ne!(c[0], c[2]);
    assert_eq!(c[4], PAPER);
    assert!(!c[..4].contains(&PAPER));
}

#[test]
fn three_decades_get_1_2_5_labels() {
    let a = log_axis(1.0, 2.5); // 10 .. 316
    let labels: Vec<String> = a.ticks.iter().map(|&t| a.label(t)).collect();
    assert!(labels.contains(&"20".to_owned()) && labels.contains(&"50".to_owned()), "{labels:?}");
    assert!(labels.contains(&"100".to_owned()) && labels.contains(&"200".to_owned()), "{labels:?}");
}

#[test]
fn the_lowest_point_has_a_label_at_or_below_it() {
    for (min, max) in [(-0.72, 2.41), (0.3, 1.1), (-3.3, 2.0), (1.0, 2.5)] {
        let a = log_axis(min, max);
        assert!(a.ticks.iter().any(|&t| t <= min + 1e-9), "{min}..{max}: {:?}", a.ticks);
    }
}

#[test]
fn nice_steps() {
    assert_eq!(nice_step(10.0, 5.0), 2.0);
    assert_eq!(nice_step(1.0, 6.0), 0.2);
    assert_eq!(nice_step(126.0, 6.0), 20.0);
    assert_eq!(nice_step(700.0, 6.0), 100.0);
    assert_eq!(nice_step(0.003, 6.0), 0.0005);
    assert_eq!(nice_step(0.74, 6.0), 0.1);
}

#[test]
fn log_axis_ticks_on_decades() {
    let a = log_axis(-2.0, 4.0);
    assert_eq!(a.ticks, vec![-2.0, -1.0, 0.0, 1.0, 2.0, 3.0, 4.0]);
    assert!(a.lo < -2.0 && a.hi > 4.0);
    let labels: Vec<String> = a.ticks.iter().map(|&t| a.label(t)).collect();
    assert_eq!(labels, ["0.01", "0.1", "1", "10", "100", "1000", "10000"]);
}

#[test]
fn wide_log_axis_is_thinned_and_labelled_scientific() {
    let a = log_axis(-9.0, 12.0);
    assert!(a.ticks.len() <= 11, "{:?}", a.ticks);
    assert_eq!(a.label(-9.0), "1e-9");
    assert_eq!(a.label(12.0), "1e12");
}

#[test]
fn narrow_log_axis_still_has_ticks() {
    let a = log_axis(2f64.log10(), 8f64.log10());
    assert!(a.ticks.len() >= 3, "{:?}", a.ticks);
    let labels: Vec<String> = a.ticks.iter().map(|&t| a.label(t)).collect();
    assert!(labels.contains(&"5".to_owned()), "{labels:?}");
}
