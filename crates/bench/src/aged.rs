//! `trimlab bench --large 1T-aged` (issue 39 item 6): a 1 TiB ext4 aged to 80 % with the
//! realistic profile (`age`, `profile = "impressions"`, one capacity of churn), then a file
//! workload run in rounds until SNIA's steady state, end to end through the same entry as
//! `trimlab run`. The issue's limit: at most 5 minutes of one core.
//!
//! The drive maps 16 KiB units (a config choice, stated: drives of this size map coarser
//! than 4 KiB to keep the map in DRAM, Micron's "Real life workloads allow more efficient
//! data granularity", 2023; the `large` drives use 16 and 64 KiB), so its maps are a quarter
//! of 4 KiB's. Reported: wall and CPU seconds per part (aging, rounds), peak resident set,
//! the SSD model's bytes per mapping unit (`Ssd::heap_bytes`) and the rest of the peak per
//! live file.
//!
//! Wall-clock time and /proc are read here, at the edge, never inside the model.
// Bench measures wall-clock speed of the model; the model itself runs on simulated time.
#![allow(clippy::disallowed_methods)]

use crate::ui::Ui;
use anyhow::{Context, Result};
use std::time::Instant;

/// What `--large` names this case.
pub const NAME: &str = "1T-aged";
/// The issue's limit: 5 minutes of one core.
const LIMIT_S: f64 = 300.0;

/// The case at its full size.
pub const LOGICAL_BYTES: u64 = 1 << 40;
/// A round writes this share of the capacity (16 GiB of 1 TiB).
const ROUND_SHARE: u64 = 64;

/// The case's config at `logical_bytes` (smaller sizes for measuring: `--large
/// 1T-aged=64GiB`). Between rounds the workload's files are removed (`between = "remove"`),
/// as a program run daily leaves none behind: file-churn keeps no utilization of its own
/// across rounds (it deletes one file per file it creates, and the aged files it deletes are
/// mostly smaller than its own), so with `own` the file system fills round by round until
/// ENOSPC. Steady state is judged on WAF, the figure a TRIM policy moves; a round's IOPS
/// swings with the flusher's 5 s and 30 s periods against rounds of a few simulated seconds.
fn config(logical_bytes: u64) -> String {
    let (mib, round_mib) = (logical_bytes >> 20, (logical_bytes / ROUND_SHARE) >> 20);
    format!(
        r#"[device]
preset = "nvme-tlc"
logical_bytes = "{mib}MiB"
[ftl]
mapping_unit = "16KiB"
[host]
fs = "ext4"
discard = "discard"
[workload]
kind = "file-churn"
utilization = 0.8
file_bytes_min = "16KiB"
file_bytes_max = "4MiB"
append_bytes = "256KiB"
writes = "{round_mib}MiB"
[[phase]]
kind = "age"
profile = "impressions"
utilization = 0.8
churn = 1.0
[[phase]]
kind = "workload"
until = "steady"
between = "remove"
[phase.steady]
track = ["waf"]
"#
    )
}

/// Wall and CPU time at each phase's end (the run loop reports a file system's phases as
/// they end), and the terminal's progress display (aging cycles, rounds, steady-state status).
struct Marks {
    start: Instant,
    at: Vec<(f64, Option<f64>, Option<u64>)>,
    display: Box<dyn crate::ui::BenchProgress>,
}

impl trimlab_scenario::Progress for Marks {
    fn update(&mut self, permille: u64) {
        if permille > 0 {
            self.at.push((
                self.start.elapsed().as_secs_f64(),
                crate::large::cpu_s(),
                crate::machine::status_bytes("VmRSS:"),
            ));
        }
        self.display.update(permille);
    }

    fn phase(&mut self, name: &str) {
        self.display.phase(name);
    }

    fn note(&mut self, line: &str) {
        self.display.note(line);
    }
}

/// `--large 1T-aged`, or `--large 1T-aged=SIZE` (the same case on a smaller drive, rounds of
/// a 64th of it, for measuring the rate at sizes that run in seconds).
pub fn run(logical_bytes: u64, ui: &mut dyn Ui) -> Result<()> {
    let size = trimlab_sim::ByteSize(logical_bytes);
    let round = trimlab_sim::ByteSize(logical_bytes / ROUND_SHARE);
    ui.line(&format!("{NAME}: {size} nvme-tlc, 16 KiB mapping unit, ext4 -o discard: age (impressions, 80 %, churn 1x), then file-churn rounds of {round} (files removed between rounds) until WAF is steady"));
    let config = trimlab_scenario::RunConfig::parse_with(&config(logical_bytes), "bench aged", &[])?;
    crate::replay::reset_peak_rss();
    let cpu0 = crate::large::cpu_s();
    let display = ui.progress(NAME);
    let mut marks = Marks { start: Instant::now(), at: Vec::new(), display };
    let result = trimlab_scenario::run(&config, Some(1), &mut marks).context("bench aged");
    marks.display.finish();
    let result = result?;
    let wall_s = marks.start.elapsed().as_secs_f64();
    let cpu = |c: Option<f64>| c.zip(cpu0).map_or(f64::NAN, |(c, c0)| c - c0);
    let aging = &result.metrics["aging"];
    let steady = &result.metrics["steady_state"][0];
    let files = aging["files"].as_u64().unwrap_or(0);
    let (aged_wall, aged_cpu) = marks.at.first().map_or((f64::NAN, f64::NAN), |m| (m.0, cpu(m.1)));
    let peak = crate::machine::peak_rss_bytes().unwrap_or(0);
    // The SSD model's own bytes, measured on a fresh drive of the same config (its maps are
    // allocated whole at creation).
    let resolved = config.resolve()?;
    let units = resolved.device.logical_pages.max(1);
    let mut ssd = trimlab_device::Ssd::new(resolved.device.clone());
    // The file system reads its 4 KiB blocks back one by one: the drive keeps a tag per
    // host page beside its unit's (host_page_tags.rs), counted here as the run had it.
    ssd.use_tag_bytes(4096).map_err(anyhow::Error::msg)?;
    let ssd_bytes = ssd.heap_bytes() as u64;
    let cpu_s = cpu(crate::large::cpu_s());
    ui.line(&format!(
        "{:<16} {:>9} {:>8} {:>9} {:>8} {:>8} {:>9} {:>11} {:>11} {:>10}",
        "case", "files", "age s", "rounds", "wall s", "CPU s", "x limit", "peak MiB", "B/unit", "B/file"
    ));
    ui.line(&format!(
        "{:<16} {:>9} {:>8.1} {:>9} {:>8.1} {:>8.1} {:>9.2} {:>11.0} {:>11.1} {:>10.0}",
        format!("{NAME}@{size}"),
        files,
        aged_wall,
        steady["rounds_run"],
        wall_s,
        cpu_s,
        cpu_s / LIMIT_S,
        peak as f64 / (1 << 20) as f64,
        ssd_bytes as f64 / units as f64,
        peak.saturating_sub(ssd_bytes) as f64 / files.max(1) as f64,
    ));
    let rounds = steady["rounds_run"].as_u64().unwrap_or(0);
    ui.line(&format!(
        "aging CPU {aged_cpu:.1} s; rounds CPU {:.1} s ({:.2} s a round); {}",
        cpu_s - aged_cpu,
        (cpu_s - aged_cpu) / rounds.max(1) as f64,
        steady["verdict"].as_str().unwrap_or("steady state: ?")
    ));
    ui.line(&format!(
        "free space after aging: {} extents, layout score {:.3}; files' layout score {:.3}",
        aging["free_space"]["free_extents"],
        aging["free_space"]["layout_score"].as_f64().unwrap_or(0.0),
        aging["layout"]["layout_score"].as_f64().unwrap_or(0.0)
    ));
    Ok(())
}
