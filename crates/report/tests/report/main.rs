//! trimlab-report's tests, one module per file, in one test binary: the lib has no test
//! harness of its own (Cargo.toml), so its tests are here and link the built lib (issue 41).
//! Run one file's tests with `cargo test -p trimlab-report --test report FILE::`.

mod crate_level;
mod csv;
mod html;
mod num;
mod svg;
mod text;
mod units;
