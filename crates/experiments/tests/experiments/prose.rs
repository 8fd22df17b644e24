//! An experiment's prose file: bullets joined per section, and `{name}` values filled in, a mismatch being a bug.

use trimlab_experiments::prose::Prose;

const TEXT: &str =
    "# x\n\nWhat this is.\n\n## paper\n\n- one line\n- two\n  lines\n\n## notes\n\n- {a} and {b}\n- static\n";

#[test]
fn bullets_join_their_lines_and_end_at_the_next_section() {
    assert_eq!(Prose(TEXT).items("paper"), ["one line", "two lines"]);
}

#[test]
fn values_fill_every_name() {
    let b = format!("{:.2}", 1.0 / 3.0);
    let notes = Prose(TEXT).filled("notes", &[("a", &7), ("b", &b)]);
    assert_eq!(notes, ["7 and 0.33", "static"]);
}

#[test]
#[should_panic(expected = "does not name `{c}`")]
fn a_value_no_bullet_names_is_a_bug() {
    Prose(TEXT).filled("notes", &[("a", &1), ("b", &2), ("c", &3)]);
}

#[test]
#[should_panic(expected = "no value for `{a}`")]
fn a_name_without_a_value_is_a_bug() {
    Prose(TEXT).filled("notes", &[("b", &2)]);
}
