//! Bounded fuzzing of `compare`'s recording reader (issue 41): arbitrary bytes, and the corpus
//! of hostile recordings (tests/data/fuzz/compare) and the kernel recordings with edits laid
//! over them.
//!
//! Strategy: half the cases are arbitrary bytes; the rest a seed with up to 8 edits (a byte
//! replaced, a token inserted from a pool of separators and numbers at their limits, a span
//! deleted, a line repeated up to 200 times). A recording that reads is compared with itself.
//!
//! Invariants: reading returns phases or an error naming `file:line`, never panics; a
//! recording compares with itself at 0 %; the target runs in a child under a 1 GiB address
//! space.
//!
//! Time: 8000 recordings, a second; the runner's stream is fixed, so a failure repeats
//! and prints the shrunk input.

use proptest::prelude::*;
use trimlab_jobs::compare::{compare, read_recording, worst_error};

#[path = "../../../tests/support/fuzz_harness.rs"]
mod fuzz_harness;

use fuzz_harness::*;

#[test]
fn compare_reader() {
    capped("compare_reader", || {
        let mut s = seeds(&root().join("tests/data/fuzz/compare"), &[".rec"]);
        s.extend(seeds(&root().join("tests/data/discard-patterns/ext4-discard-rm-dir"), &[".trims"]));
        let result = runner(8000).run(&inputs(s), |text| {
            match read_recording(&text, "fuzz.rec") {
                Ok(phases) => {
                    let rows = compare(&phases, &phases);
                    prop_assert!(worst_error(&rows) == 0.0);
                }
                Err(e) => {
                    let shown = format!("{e:#}");
                    prop_assert!(shown.starts_with("fuzz.rec:"), "{shown:.200}");
                    prop_assert!(shown.len() < 2000, "{} bytes: {shown:.200}", shown.len());
                }
            }
            Ok(())
        });
        result.unwrap_or_else(|e| panic!("{e}"));
    });
}
