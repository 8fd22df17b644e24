//! `trimlab bench`'s file-operation case (issue 22 item 6): a script of a quarter of a million
//! small files (mkdir, create + write, overwrite, truncate, rm every third, rm -r, fstrim) on
//! ext4 with online discard over the 8 GiB `nvme-tlc` drive, run end to end through the same
//! entry as `trimlab run` (mkfs, page cache, journal, discard, the SSD model, umount and the
//! consistency check). Reports file operations per wall second: each call the script makes
//! into the file system (create, write, truncate, unlink, mkdir, rmdir, rename, fsync, sync,
//! fstrim) counts one.
//!
//! Wall-clock time and /proc are read here, at the edge, never inside the model.
// Bench measures wall-clock speed of the model; the model itself runs on simulated time.
#![allow(clippy::disallowed_methods)]

use crate::ui::Ui;
use anyhow::{Context, Result};
use std::time::Instant;

/// The issue's goal: file operations per wall second on one core.
const GOAL_OPS_PER_S: f64 = 1e6;

const CONFIG: &str = r#"[device]
preset = "nvme-tlc"
logical_bytes = "8GiB"
[host]
fs = "ext4"
discard = "discard"
[workload]
kind = "script"
operations = """
phase create
mkdir -p d{0..249}
create d{0..249}/f{0..999} size=4KiB
sync
phase overwrite
write d*/f* bytes=4KiB
truncate d*/f{0..999..2} size=0
sync
phase rm
rm every=3 d*/f*
sync
rm -r d{0..124}
sync
fstrim
"""
"#;

pub fn run(ui: &mut dyn Ui) -> Result<()> {
    ui.line(&format!(
        "\n{:<26} {:>10} {:>8} {:>12} {:>8} {:>12}",
        "file-operation script", "file ops", "wall s", "file ops/s", "x goal", "peak RSS MiB"
    ));
    let config = trimlab_scenario::RunConfig::parse_with(CONFIG, "bench script", &[])?;
    let wall = Instant::now();
    let result = trimlab_scenario::run(&config, Some(1), &mut ()).context("bench script")?;
    let wall_s = wall.elapsed().as_secs_f64();
    let ops: u64 = result.metrics["phases"]
        .as_array()
        .map(|phases| phases.iter().filter_map(|p| p["figures"]["file_ops"].as_u64()).sum())
        .unwrap_or(0);
    anyhow::ensure!(ops > 0, "bench script: no file operation ran");
    let rate = ops as f64 / wall_s;
    ui.line(&format!(
        "{:<26} {:>10} {:>8.2} {:>12.0} {:>8.2} {:>12.1}",
        "8GiB ext4 discard 250k files",
        ops,
        wall_s,
        rate,
        rate / GOAL_OPS_PER_S,
        crate::machine::peak_rss_bytes().map_or(0.0, |b| b as f64 / (1 << 20) as f64)
    ));
    Ok(())
}
