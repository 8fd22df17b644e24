//! Bounded fuzzing of the Filebench model parser and the strace reader and replay (issue 41):
//! arbitrary bytes, and the corpus of hostile inputs (tests/data/fuzz) and the examples with
//! edits laid over them.
//!
//! Strategy: half the cases are arbitrary bytes; the rest a seed file with up to 8 edits (a
//! byte replaced, a token inserted from a pool of separators and numbers at their limits, a
//! span deleted, a line repeated up to 200 times). A model that parses and is small (at most
//! 200 entries, 4 threads) runs for a simulated second on a 48 MiB ext4; every trace is
//! replayed on one.
//!
//! Invariants: a parse or a replay returns a value or an error naming `file:line`, never
//! panics, and prints a bounded message; the file system is consistent after a replay; the
//! whole target runs in a child under a 1 GiB address space.
//!
//! Time: 3000 models and 3000 traces, a few seconds; the runner's stream is fixed, so a
//! failure repeats and prints the shrunk input.

use crate::fs;
use proptest::prelude::*;
use rand::SeedableRng;
use trimlab_importers::{filebench, strace};
use trimlab_sim::SimRng;

#[path = "../../../../tests/support/fuzz_harness.rs"]
mod fuzz_harness;

use fuzz_harness::*;

#[test]
fn filebench_parser() {
    capped("fuzz_inputs::filebench_parser", || {
        let mut s = seeds(&root().join("tests/data/fuzz/filebench"), &[".f"]);
        s.extend(seeds(&root().join("examples/filebench"), &[".f"]));
        let result = runner(3000).run(&inputs(s), |text| {
            match filebench::parse(&text, "fuzz.f") {
                Ok(mut model) => {
                    let entries: u64 = model.filesets.iter().map(|f| f.entries).sum();
                    let threads: u64 = model.threads.iter().map(|t| t.instances).sum();
                    if entries <= 200 && threads <= 4 {
                        model.runtime_s = Some(1);
                        let mut fs = fs();
                        let mut rng = SimRng::seed_from_u64(1);
                        if let Err(e) = filebench::run(&mut fs, &model, "fuzz.f", &mut rng) {
                            let shown = e.to_string();
                            prop_assert!(shown.starts_with("fuzz.f:") && shown.len() < 2000, "{shown:.200}");
                        }
                    }
                }
                Err(e) => {
                    let shown = e.to_string();
                    prop_assert!(shown.starts_with("fuzz.f:"), "{shown:.200}");
                    prop_assert!(shown.len() < 2000, "{} bytes: {shown:.200}", shown.len());
                }
            }
            Ok(())
        });
        result.unwrap_or_else(|e| panic!("{e}"));
    });
}

#[test]
fn strace_reader() {
    capped("fuzz_inputs::strace_reader", || {
        let s = seeds(&root().join("tests/data/fuzz/strace"), &[".strace"]);
        let options =
            strace::StraceOptions { root: "/tmp/work".into(), gap_max_ns: Some(1_000_000), reads: true };
        let result = runner(3000).run(&inputs(s), |text| {
            let mut fs = fs();
            match strace::replay(text.as_bytes(), "fuzz.strace", &mut fs, &options) {
                Ok(counts) => prop_assert!(counts.lines <= text.len() as u64 + 1),
                Err(e) => {
                    let shown = e.to_string();
                    prop_assert!(shown.starts_with("fuzz.strace:"), "{shown:.200}");
                    prop_assert!(shown.len() < 2000, "{} bytes: {shown:.200}", shown.len());
                }
            }
            prop_assert!(fs.check().is_ok(), "{:?}", fs.check());
            Ok(())
        });
        result.unwrap_or_else(|e| panic!("{e}"));
    });
}
