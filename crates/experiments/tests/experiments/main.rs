//! trimlab-experiments' tests, one module per file, in one test binary: the lib has no test
//! harness of its own (Cargo.toml), so its tests are here and link the built lib (issue 41).
//! Run one file's tests with `cargo test -p trimlab-experiments --test experiments FILE::`.

mod bands;
mod delayed_trim;
mod host;
mod point_configs;
mod prose;
mod selection;
mod selective_trim;
