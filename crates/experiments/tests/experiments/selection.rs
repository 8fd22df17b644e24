//! Choosing experiments by name: a mistyped name gets a suggestion.

use trimlab_experiments::{did_you_mean, select};

#[test]
fn mistyped_experiment_names_get_a_suggestion() {
    assert_eq!(did_you_mean("delayed_trim"), Some("delayed-trim"));
    assert_eq!(did_you_mean("lazytrim"), Some("lazy-trim"));
    assert_eq!(did_you_mean("WAF"), Some("waf"));
    assert_eq!(did_you_mean("discard-vs-fstrm"), Some("discard-vs-fstrim"));
    assert_eq!(did_you_mean("postmark"), None);
    let Err(e) = select(&["delayed_trim".into()]) else { panic!("delayed_trim was selected") };
    assert!(e.to_string().contains("did you mean \"delayed-trim\"?"), "{e}");
}
