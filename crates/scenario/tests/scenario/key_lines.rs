//! Finding the line of a config key in its TOML text, so that an error found after parsing names it.

use trimlab_scenario::key_lines::{line_of, Step};

#[test]
fn keys_are_found_in_tables_dotted_keys_and_phase_entries() {
    let text = "seed = 1\n[workload]\nkind = \"aging\"\nfles = 3\n\n[[phase]]\nkind = \"fill\"\n\n[[phase]]\nkind = \"workload\"\nworkload.fles = 4\n";
    assert_eq!(line_of(text, &[Step::Key("workload"), Step::Key("fles")]), Some(4));
    let phase = [Step::Key("phase"), Step::Entry(1), Step::Key("workload"), Step::Key("fles")];
    assert_eq!(line_of(text, &phase), Some(11));
    assert_eq!(line_of(text, &[Step::Key("workload"), Step::Key("files")]), None);
}
