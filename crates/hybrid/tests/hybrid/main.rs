//! trimlab-hybrid's tests in one test binary: the FAST and HBL model tests (`model`) and the
//! tests of each source module (the lib sets `test = false`, so the crate compiles once in the
//! test command). Run one file's tests with `cargo test -p trimlab-hybrid --test hybrid FILE::`.

mod fast;
mod hbl;
mod model;
