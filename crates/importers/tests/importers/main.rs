//! trimlab-importers' tests, one module per file, in one test binary: the lib has no test
//! harness of its own (Cargo.toml), so its tests are here and link the built lib (issue 41).
//! Run one file's tests with `cargo test -p trimlab-importers --test importers FILE::`.

mod filebench_fileset;
mod filebench_parser;
mod filebench_value;
mod fuzz_inputs;
mod input;
mod strace;
mod strace_calls;
mod strace_line;
mod strace_process;
