//! trimlab-device's integration tests, one module per file, in one test binary: one link
//! instead of one per file keeps the test command's build short (issue 41). Run one file's
//! tests with `cargo test -p trimlab-device --test device FILE::`.

mod bandwidth;
mod capacity;
mod common;
mod delayed;
mod gc_reserve;
mod host_page_tags;
mod mapping_unit;
mod model;
mod power_cut;
mod wear_levelling;
