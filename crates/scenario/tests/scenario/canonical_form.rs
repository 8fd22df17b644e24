//! The canonical form and the config hash (moved from canonical.rs's unit tests, so the crate
//! is not compiled twice).

use trimlab_scenario::canonical::*;
use trimlab_scenario::{Resolved, RunConfig};

fn resolved(text: &str) -> Resolved {
    RunConfig::parse(text, "t").unwrap().resolve().unwrap()
}

#[test]
fn the_form_is_sorted_lines_of_set_keys() {
    let r = resolved("[host]\nfs = \"ext4\"\ndiscard = \"selective:40:90\"\n[[phase]]\nkind = \"fill\"\n");
    let form = canonical_form(&r);
    let lines: Vec<&str> = form.lines().collect();
    let mut sorted = lines.clone();
    sorted.sort();
    assert_eq!(lines, sorted);
    assert!(lines.contains(&"host.fs.policy = \"selective:40:90\""), "{form}");
    assert!(lines.contains(&"phases.0.kind = \"fill\""), "{form}");
    assert!(!form.contains("null") && !form.contains("seed_path"), "{form}");
}

#[test]
fn the_hash_follows_what_the_run_does_not_how_it_was_spelled() {
    // A preset's value written out, and the seed, change nothing; a key changes the hash.
    let base = config_hash(&resolved("[device]\npreset = \"nvme-tlc\"\n"));
    assert_eq!(base, config_hash(&resolved("seed = 7\n[device]\npreset = \"nvme-tlc\"\n")));
    assert_ne!(base, config_hash(&resolved("[device]\npreset = \"nvme-tlc\"\nqueue_depth = 3\n")));
    assert_eq!(base.len(), 16);
}
