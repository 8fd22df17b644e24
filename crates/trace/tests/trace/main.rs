//! trimlab-trace's integration tests, one module per file, in one test binary: one link
//! instead of one per file keeps the test command's build short (issue 41). Run one file's
//! tests with `cargo test -p trimlab-trace --test trace FILE::`.

mod formats;
mod fuzz_trace;
mod replay;
