//! Delayed TRIM's report text names the policies as its bars do, at every scale.

use trimlab_experiments::delayed_trim::{policies, summary, PROSE};

/// The bars are labelled with the caps of the run's scale; the sentences about the run use
/// the same names (issue 43: "DT-51MB" bars beside "DT-512MB" text at scale 0.1).
#[test]
fn the_text_names_the_policies_as_the_bars_do_at_every_scale() {
    for scale in [1.0, 0.5, 0.1, 0.01] {
        let list = policies(scale);
        let names = [list[1].label(), list[2].label()];
        let text = summary(scale, &names);
        for bar in list.iter().map(|p| p.label()).filter(|l| !l.contains("partial")) {
            assert!(text.contains(&bar), "scale {scale}: {bar:?} not in {text:?}");
        }
        assert_eq!(text.contains("002's DT-512MB and DT-1GB"), scale != 1.0, "scale {scale}: {text}");
    }
    assert_eq!(policies(0.1)[1].label(), "DT-51MB", "0.1 x 512 MiB");
    // The run's sentences are filled in: only the paper's own claims name 002's sizes.
    for section in ["summary", "notes"] {
        for item in PROSE.items(section) {
            assert!(!item.contains("DT-512MB") && !item.contains("DT-1GB"), "{section}: {item}");
        }
    }
}
