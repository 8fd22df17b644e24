//! Bounded fuzzing of file-operation scripts (issue 22: bad scripts get an error with the line,
//! never a panic). Each case is 1 to 12 lines drawn from the operations with arguments from a
//! pool of good and bad words (paths with braces and globs, missing parents, sizes with and
//! without units, offsets past 2^64, flags and options each operation does or does not take,
//! arbitrary text), run on a small ext4, XFS or btrfs.
//!
//! Invariants: a script runs, or fails with an error that names its line (`ops:N`), and never
//! panics; a failure at run time keeps the phases before it (metrics.json's `error`).
//!
//! Time: 600 scripts, a few seconds; the runner's stream is fixed, so a failure repeats and
//! prints the shrunk script.

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};

const OPS: &[&str] = &[
    "phase",
    "mkdir",
    "mkdir -p",
    "create",
    "touch",
    "write",
    "append",
    "fsync",
    "fdatasync",
    "sync",
    "rm",
    "rm -r",
    "rm -rf",
    "rm -f",
    "rmdir",
    "mv",
    "truncate",
    "fallocate",
    "punch-hole",
    "sleep",
    "fstrim",
    "umount",
    "mount",
    "remount",
    "frob",
];

const WORDS: &[&str] = &[
    "d",
    "d/e",
    "d{0..3}",
    "d{0..2}/f{1..5..2}",
    "f",
    "f{0..9}",
    "d*/f*",
    "d/*",
    "*",
    "x/y/z",
    "/",
    "..",
    "d/../f",
    "{a,b}",
    "f{1..",
    "size=4KiB",
    "size=24",
    "size=4KiB..64KiB",
    "size=64KiB..4KiB",
    "size=0",
    "bytes=8KiB",
    "bytes=1",
    "bytes=18446744073709551615B",
    "offset=16EiB",
    "offset=4KiB",
    "bs=4KiB",
    "bs=0",
    "fsync",
    "every=2",
    "every=0",
    "start=1",
    "random=3",
    "random=99999",
    "minlen=64KiB",
    "length=1MiB",
    "discard=discard",
    "discard=async",
    "discard=bogus",
    "200ms",
    "5",
    "1d",
    "-z",
    "-p",
    "=",
    "é",
    "\t",
    "k=v=w",
];

/// Lines of the right shape (so that scripts get past the parser and run), with paths that
/// may or may not exist when the line runs.
const TEMPLATES: &[&str] = &[
    "mkdir -p P",
    "mkdir P",
    "create P size=16KiB",
    "create P size=4KiB..64KiB bs=4KiB fsync",
    "touch P",
    "write P bytes=8KiB",
    "write P offset=1MiB bytes=4KiB",
    "append P bytes=4KiB",
    "fsync P",
    "sync",
    "rm P",
    "rm -r P",
    "rm -rf P",
    "rm every=2 P",
    "rm random=2 P",
    "rmdir P",
    "mv P P",
    "truncate P size=4KiB",
    "truncate P size=0",
    "fallocate P bytes=64KiB",
    "punch-hole P offset=4KiB bytes=8KiB",
    "sleep 200ms",
    "sleep 6s",
    "fstrim",
    "fstrim minlen=64KiB",
    "umount",
    "mount",
    "remount",
    "mount discard=nodiscard",
    "phase a",
    "phase b",
];

const PATHS: &[&str] =
    &["d", "d/e", "d{0..2}", "d0/f{0..3}", "d*/f*", "d0/*", "f{0..3}", "f1", "d0/f1", "x/y", "d0"];

fn good_line() -> impl Strategy<Value = String> {
    (prop::sample::select(TEMPLATES), prop::sample::select(PATHS), prop::sample::select(PATHS))
        .prop_map(|(t, a, b)| t.replacen('P', a, 1).replacen('P', b, 1))
}

fn any_line() -> impl Strategy<Value = String> {
    (prop::sample::select(OPS), prop::collection::vec(prop::sample::select(WORDS), 0..4))
        .prop_map(|(op, words)| format!("{op} {}", words.join(" ")))
}

fn line() -> impl Strategy<Value = String> {
    prop_oneof![12 => good_line(), 1 => any_line()]
}

const LAYOUTS: &[&str] = &[
    "",
    "layout = \"xfs\"\ndiscard = \"discard-batch\"\n",
    "layout = \"btrfs\"\ndiscard = \"async\"\n",
    "kernel = \"linux-6.18\"\ndiscard = \"ext4-discard\"\n",
];

fn config(layout: &str, lines: &[String]) -> String {
    format!(
        "[device]\npreset = \"nvme-tlc\"\nlogical_bytes = \"256MiB\"\n[host]\nfs = \"ext4\"\n{layout}[workload]\nkind = \"script\"\noperations = '''\n{}\n'''\n",
        lines.join("\n")
    )
}

fn check(layout: &str, lines: &[String]) -> Result<(), TestCaseError> {
    let text = config(layout, lines);
    let outcome = std::panic::catch_unwind(|| trimlab_scenario::run_text(&text, "fuzz.toml", None, &[]));
    let Ok(result) = outcome else {
        return Err(TestCaseError::fail(format!("panicked on\n{text}")));
    };
    if std::env::var_os("FUZZ_SHOW").is_some() {
        eprintln!(
            "{}",
            match &result {
                Ok(_) => "OK".to_string(),
                Err(e) => format!("ERR {e}"),
            }
        );
    }
    if let Err(e) = result {
        let message = e.to_string();
        let named = message.contains("operations:") || message.contains("operations =");
        prop_assert!(named, "the error does not name the script's line: {message}\n{text}");
    }
    Ok(())
}

#[test]
fn random_scripts_run_or_fail_at_a_named_line_and_never_panic() {
    let config = Config { cases: 600, failure_persistence: None, ..Config::default() };
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[22; 32]);
    let mut runner = TestRunner::new_with_rng(config, rng);
    let strategy = (prop::sample::select(LAYOUTS), prop::collection::vec(line(), 1..12));
    runner.run(&strategy, |(layout, lines)| check(layout, &lines)).unwrap_or_else(|e| panic!("{e}"));
}
