//! trimlab-scenario's integration tests, one module per file, in one test binary: one link
//! instead of one per file keeps the test command's build short (issue 41). Run one file's
//! tests with `cargo test -p trimlab-scenario --test scenario FILE::`.

mod canonical_form;
mod config_docs;
mod config_sections;
mod faults;
mod file_size_dist;
mod file_system_on_mapping_units;
mod filebench;
mod flatten;
mod fuzz_config;
mod fuzz_script;
mod host_section;
mod key_lines;
mod live_names;
mod overrides;
mod phases;
mod series;
mod steady_state;
mod tree_shape;
mod workload_latency;
mod xfs_host;
