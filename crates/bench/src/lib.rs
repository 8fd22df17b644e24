//! `trimlab bench`: simulator speed in GC steady state and memory per physical page, and the
//! hybrid FAST FTL's speed in simulated operations per second.
//!
//! Each device case is also set against the bare-map limit (`limit.rs`), measured in the same
//! run: the tightest loop that does only what a page-mapping FTL cannot avoid per NAND program
//! (one random forward-map swap, one random backward-map invalidation, one append) over maps of
//! the case's size. The bench opens with that loop head to head with the same loop in C.
//! `x limit` is the case's NAND programs per second over the loop's writes per second;
//! everything else the simulator does (events, timelines, GC victim choice, TRIM, counters) is
//! what separates the two (docs/performance.md, "The limit").
//!
//! Wall-clock time and /proc are read here, at the edge (this job measures the machine), never
//! inside the model. Rows go to the adapter's `Ui` as they are measured.
// Bench measures wall-clock speed of the model; the model itself runs on simulated time.
#![allow(clippy::disallowed_methods)]

mod aged;
mod cases;
mod ftl_alone;
mod large;
mod limit;
mod machine;
mod replay;
mod script;
mod strace;
mod ui;

use anyhow::Result;
use cases::{bench_case, bench_hybrid, cases, ssd_config, Shape};
use trimlab_device::FtlKind;
pub use ui::{BenchProgress, Ui};

/// `trimlab bench --limit`: only the limit, the Rust loop against the C loop.
pub fn run_limit(ui: &mut dyn Ui) -> Result<()> {
    limit::compare(limit_maps_8gib()?, ui)
}

/// `trimlab bench --large [NAME]`: the 61.44 TB and 30.72 TB drives at full size, or one of
/// them; `--large 1T-aged` the aged 1 TiB ext4 run to steady state (by name only: it takes
/// minutes of CPU; `1T-aged=64GiB` runs the same case on a smaller drive).
pub fn run_large(only: Option<&str>, ui: &mut dyn Ui) -> Result<()> {
    if let Some(name) = only.filter(|n| n.starts_with(aged::NAME)) {
        return aged::run(aged_bytes(name)?, ui);
    }
    large::run(only, ui)
}

/// `1T-aged` at its full size, or `1T-aged=SIZE` at SIZE (at least 4 GiB).
fn aged_bytes(name: &str) -> Result<u64> {
    let Some(size) = name.strip_prefix(aged::NAME).filter(|s| !s.is_empty()) else {
        return Ok(aged::LOGICAL_BYTES);
    };
    let bad = || {
        anyhow::anyhow!(
            "--large {name}: accepted: {} or {}=SIZE with SIZE from 4GiB to 1TiB (e.g. 64GiB)",
            aged::NAME,
            aged::NAME
        )
    };
    let bytes = size.strip_prefix('=').ok_or_else(bad)?;
    let bytes = trimlab_sim::ByteSize::parse(bytes).map_err(|_| bad())?.0;
    if !(4 << 30..=aged::LOGICAL_BYTES).contains(&bytes) {
        return Err(bad());
    }
    Ok(bytes)
}

/// The 8 GiB page-mapped case's map sizes, which the head-to-head comparison uses.
fn limit_maps_8gib() -> Result<limit::Maps> {
    let config = ssd_config(8 << 30, FtlKind::Page, trimlab_trim::EngineKind::Immediate, Shape::Preset)?;
    let logical_pages = (8u64 << 30) / config.geometry.page_bytes as u64;
    Ok(limit::Maps::new(logical_pages as u32, config.geometry.physical_pages() as u32))
}

/// `ftl`: the FTL kind of the device cases. Under uniform random writes FAST fully merges a
/// logical block for nearly every page of a reclaimed RW log (WAF in the hundreds), so the
/// hybrid cases run at 1/16 of the size with 35 % spare (FAST needs 7 log and reserve blocks
/// on each of the preset's 32 chips).
pub fn run(quick: bool, ftl: FtlKind, ui: &mut dyn Ui) -> Result<()> {
    limit::compare(limit_maps_8gib()?, ui)?;
    ui.line("");
    ui.line(&format!(
        "{:<24} {:>10} {:>14} {:>14} {:>7} {:>12} {:>14} {:>14} {:>7}",
        "case",
        "physical",
        "host writes/s",
        "NAND progs/s",
        "WAF",
        "model B/page",
        "peak RSS MiB",
        "limit w/s",
        "x limit"
    ));
    for mut case in cases(quick) {
        if ftl == FtlKind::Hybrid {
            if case.shape == Shape::OnePlane {
                continue; // FAST's log blocks are per chip: the hybrid cases keep the preset's
            }
            case.logical_bytes /= 16;
            case.name = match case.name {
                "8GiB immediate" => "512MiB hybrid",
                "8GiB immediate trim10%" => "512MiB hybrid trim10%",
                "8GiB delayed trim10%" => "512MiB hybrid delayed",
                _ => "16GiB hybrid",
            };
        }
        bench_case(&case, ftl, ui)?;
    }
    bench_hybrid(ui)?;
    if ftl == FtlKind::Page {
        replay::run(quick, ui)?;
        script::run(ui)?;
        strace::run(quick, ui)?;
        // Last: what it allocates would stay in the allocator's heap and raise the peak
        // resident sets the replay, script and strace cases report.
        ftl_alone::run(ui)?;
    }
    Ok(())
}
