//! trimlab-device's integration tests, one module per file, in one test binary: one link
//! instead of one per file keeps the test command's build short (issue 41). Run one file's
//! tests with `cargo test -p trimlab-device --test device FILE::`.

mod bandwidth;
mod capacity;
mod command;
mod common;
mod config;
mod config_nvme_id;
mod config_preset;
mod delayed;
mod ftl_kind;
mod gc_reserve;
mod host_page_tags;
mod host_queue;
mod lifetime;
mod mapping_unit;
mod metered;
mod metrics;
mod model;
mod outstanding;
mod power_cut;
mod thin_volume;
mod timeseries;
mod wear_levelling;
