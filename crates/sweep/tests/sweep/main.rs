//! trimlab-sweep's integration tests, one module per file, in one test binary: one link
//! instead of one per file keeps the test command's build short (issue 41). Run one file's
//! tests with `cargo test -p trimlab-sweep --test sweep FILE::`.

mod fake_runner;
mod fuzz_grid;
mod grid;
mod journal;
mod plan;
mod row;
mod scenario_runner;
mod shard;
mod table;
