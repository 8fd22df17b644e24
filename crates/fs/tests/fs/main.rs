//! trimlab-fs's integration tests, one module per file, in one test binary: one link
//! instead of one per file keeps the test command's build short (issue 41). Run one file's
//! tests with `cargo test -p trimlab-fs --test fs FILE::`.

mod common;
mod discard_pattern;
mod journal;
mod model;
mod namespace;
mod page_runs;
mod periodic_fstrim;
