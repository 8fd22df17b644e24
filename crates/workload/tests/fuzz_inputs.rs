//! Bounded fuzzing of the script and fio job-file parsers (issue 41): arbitrary bytes, and the
//! corpus of hostile inputs (tests/data/fuzz) and the examples with edits laid over them.
//!
//! Strategy: half the cases are arbitrary bytes; the rest a seed file with up to 8 edits (a
//! byte replaced, a token inserted from a pool of separators and numbers at their limits, a
//! span deleted, a line repeated up to 200 times).
//!
//! Invariants: parsing returns a value or an error naming `file:line`, never panics, and
//! prints at most a bounded message; a parsed script's lines name at most 10^7 paths and
//! expand lazily (the first thousand are walked); the whole target runs in a child under a
//! 1 GiB address space.
//!
//! Time: 8000 scripts and 5000 fio files, a few seconds; the runner's stream is fixed, so a
//! failure repeats and prints the shrunk input.

use proptest::prelude::*;
use trimlab_workload::fio::parse_fio_file;
use trimlab_workload::script::{Op, Paths, Script, EXPANSION_MAX};
use trimlab_workload::WorkloadConfig;

#[path = "../../../tests/support/fuzz_harness.rs"]
mod fuzz_harness;

use fuzz_harness::*;

fn paths_of(op: &Op) -> Option<&Paths> {
    match op {
        Op::Mkdir { paths, .. }
        | Op::Create { paths, .. }
        | Op::Write { paths, .. }
        | Op::Append { paths, .. }
        | Op::Fsync { paths }
        | Op::Rm { paths, .. }
        | Op::Truncate { paths, .. }
        | Op::Fallocate { paths, .. }
        | Op::PunchHole { paths, .. } => Some(paths),
        Op::Touch(paths) | Op::Rmdir(paths) => Some(paths),
        _ => None,
    }
}

#[test]
fn script_parser() {
    capped("script_parser", || {
        let mut s = seeds(&root().join("tests/data/fuzz/script"), &[".ops"]);
        s.extend(seeds(&root().join("examples/scenarios"), &[".ops"]));
        let result = runner(8000).run(&inputs(s), |text| {
            match Script::parse(&text, "fuzz.ops") {
                Ok(script) => {
                    for line in &script.lines {
                        let Some(paths) = paths_of(&line.op) else { continue };
                        prop_assert!(paths.count() <= EXPANSION_MAX as u64);
                        let mut walked = 0;
                        let _ = paths.each(&mut |p| {
                            walked += 1;
                            match walked < 1000 && p.len() <= text.len() * 2 + 64 {
                                true => Ok(()),
                                false => Err(()),
                            }
                        });
                    }
                    let _ = script.phases();
                }
                Err(e) => {
                    let shown = e.to_string();
                    prop_assert!(shown.starts_with("fuzz.ops:"), "{shown:.200}");
                    prop_assert!(shown.len() < 2000, "{} bytes: {shown:.200}", shown.len());
                }
            }
            Ok(())
        });
        result.unwrap_or_else(|e| panic!("{e}"));
    });
}

#[test]
fn fio_parser() {
    capped("fio_parser", || {
        let mut s = seeds(&root().join("tests/data/fuzz/fio"), &[".fio"]);
        s.extend(seeds(&root().join("examples/fio"), &[".fio"]));
        let base = WorkloadConfig::default();
        let result = runner(5000).run(&inputs(s), |text| {
            match parse_fio_file(&text, "fuzz.fio", &base, Some(1 << 30)) {
                Ok(file) => {
                    let streams: usize = file.groups.iter().map(|g| g.streams.len() + g.ramp.len()).sum();
                    prop_assert!(streams <= 2 * 4096);
                }
                Err(e) => {
                    let shown = e.to_string();
                    prop_assert!(shown.starts_with("fuzz.fio:"), "{shown:.200}");
                    prop_assert!(shown.len() < 2000, "{} bytes: {shown:.200}", shown.len());
                }
            }
            Ok(())
        });
        result.unwrap_or_else(|e| panic!("{e}"));
    });
}
