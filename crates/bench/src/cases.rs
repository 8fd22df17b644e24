//! The device cases: an SSD of each size and shape driven to GC steady state, timed, with its
//! model bytes per page and peak resident set beside the bare-map limit; FAST's case.
// Bench measures wall-clock speed of the model; the model itself runs on simulated time.
#![allow(clippy::disallowed_methods)]

use crate::limit;
use crate::machine::peak_rss_bytes;
use crate::ui::Ui;
use anyhow::Result;
use std::time::Instant;
use trimlab_device::{DeviceSection, FtlKind, FtlSection, Ssd, SsdConfig, TrimSection};
use trimlab_sim::{ByteSize, SeedTree};
use trimlab_workload::{run_phase, Drive, Generator, Precondition, Target, Volume, WorkloadConfig};

pub struct Case {
    pub name: &'static str,
    pub logical_bytes: u64,
    pub engine: trimlab_trim::EngineKind,
    pub trim_fraction: f64,
    pub precondition_random: f64,
    pub measured: f64,
    pub shape: Shape,
}

/// The device's layout: the preset's 64 planes, or a single plane.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Preset,
    /// One channel, chip, die and plane with 64-page blocks: 18 000 blocks in one plane, where
    /// the preset has a few hundred per plane. GC's victim choice scans per plane, so this
    /// shape times what the many-plane cases hide (a victim index once ran 1.6-2.2x slower
    /// here and nowhere else, docs/performance.md "Session 14").
    OnePlane,
}

/// The device cases: 8 GiB three ways, 4 GiB on one plane, and 256 GiB unless `quick`.
pub fn cases(quick: bool) -> Vec<Case> {
    let mut cases = vec![
        Case {
            name: "8GiB immediate",
            logical_bytes: 8 << 30,
            engine: trimlab_trim::EngineKind::Immediate,
            trim_fraction: 0.0,
            precondition_random: 1.0,
            measured: 2.0,
            shape: Shape::Preset,
        },
        Case {
            name: "8GiB immediate trim10%",
            logical_bytes: 8 << 30,
            engine: trimlab_trim::EngineKind::Immediate,
            trim_fraction: 0.1,
            precondition_random: 1.0,
            measured: 2.0,
            shape: Shape::Preset,
        },
        // The same workload with Delayed TRIM: no idle time, so GC applies the pending TRIMs.
        Case {
            name: "8GiB delayed trim10%",
            logical_bytes: 8 << 30,
            engine: trimlab_trim::EngineKind::Delayed,
            trim_fraction: 0.1,
            precondition_random: 1.0,
            measured: 2.0,
            shape: Shape::Preset,
        },
        Case {
            name: "4GiB one-plane trim10%",
            logical_bytes: 4 << 30,
            engine: trimlab_trim::EngineKind::Immediate,
            trim_fraction: 0.1,
            precondition_random: 1.0,
            measured: 1.0,
            shape: Shape::OnePlane,
        },
    ];
    if !quick {
        cases.push(Case {
            name: "256GiB immediate",
            logical_bytes: 256 << 30,
            engine: trimlab_trim::EngineKind::Immediate,
            trim_fraction: 0.0,
            precondition_random: 0.5,
            measured: 0.25,
            shape: Shape::Preset,
        });
    }
    cases
}

/// The hybrid FAST FTL (crates/hybrid) on a 1 GiB K9LAG08U0M-like array (4 chips, 128 x 2 KiB
/// pages per block): a sequential fill, then a measured mix of 64 KiB sequential runs from a
/// block's first page (switch merges), random 2 KiB writes (RW logs, full merges) and 64 KiB
/// TRIMs (the trimmed-range list). Reports simulated operations per wall second.
pub fn bench_hybrid(ui: &mut dyn Ui) -> Result<()> {
    use rand::Rng;
    use trimlab_hybrid::{HybridConfig, HybridFtl};
    use trimlab_sim::SimTime;
    let geometry = trimlab_nand::Geometry {
        channels: 4,
        chips_per_channel: 1,
        dies_per_chip: 1,
        planes_per_die: 4,
        blocks_per_plane: 256,
        pages_per_block: 128,
        page_bytes: 2048,
        flash_page_bytes: 2048,
    };
    geometry.validate()?;
    let ppb = geometry.pages_per_block;
    let logical = (geometry.block_count() as u32 * 93 / 100) * ppb;
    let config = HybridConfig::paper(logical);
    HybridFtl::check_config(&geometry, &config).map_err(anyhow::Error::msg)?;
    let mut ftl = HybridFtl::new(geometry, trimlab_nand::Timing::k9lag08u0m(), config);
    let mut now = SimTime::ZERO;
    for lpn in 0..logical {
        now = ftl.write(now, lpn, 1);
    }
    let mut rng = SeedTree::new(1).fork("bench.hybrid");
    let before = ftl.flash().counters().clone();
    let host_before = ftl.stats().host_pages_programmed;
    let mut operations = 0u64;
    let wall = Instant::now();
    while ftl.stats().host_pages_programmed - host_before < logical as u64 {
        match rng.gen_range(0..10) {
            0..=4 => {
                let first = rng.gen_range(0..logical / ppb) * ppb;
                for lpn in first..first + 32 {
                    now = ftl.write(now, lpn, 1);
                }
            }
            5..=8 => now = ftl.write(now, rng.gen_range(0..logical), 1),
            _ => {
                ftl.trim(rng.gen_range(0..logical - 32), 32);
            }
        }
        operations += 1;
    }
    let seconds = wall.elapsed().as_secs_f64();
    let after = ftl.flash().counters();
    let nand_ops = (after.pages_read - before.pages_read)
        + (after.pages_programmed - before.pages_programmed)
        + (after.blocks_erased - before.blocks_erased);
    let host_pages = ftl.stats().host_pages_programmed - host_before;
    ftl.check().map_err(anyhow::Error::msg)?;
    ui.line("");
    ui.line(&format!(
        "{:<24} {:>10} {:>14} {:>14} {:>14} {:>7}",
        "case", "physical", "host ops/s", "host pages/s", "NAND ops/s", "WAF"
    ));
    ui.line(&format!(
        "{:<24} {:>10} {:>14.0} {:>14.0} {:>14.0} {:>7.3}",
        "1GiB hybrid FAST mix",
        format!("{}", ByteSize(ftl.geometry().physical_bytes())),
        operations as f64 / seconds,
        host_pages as f64 / seconds,
        nand_ops as f64 / seconds,
        (after.pages_programmed - before.pages_programmed) as f64 / host_pages as f64,
    ));
    Ok(())
}

/// The bench's device: the `nvme-tlc` preset at `logical_bytes` with 10 % spare (35 % for the
/// hybrid FTL), in `shape`.
pub fn ssd_config(
    logical_bytes: u64,
    ftl: FtlKind,
    engine: trimlab_trim::EngineKind,
    shape: Shape,
) -> Result<SsdConfig> {
    let mut device = DeviceSection {
        preset: Some("nvme-tlc".into()),
        logical_bytes: Some(ByteSize(logical_bytes)),
        spare_factor: Some(if ftl == FtlKind::Hybrid { 0.35 } else { 0.10 }),
        ..Default::default()
    };
    if shape == Shape::OnePlane {
        device.channels = Some(1);
        device.chips_per_channel = Some(1);
        device.dies_per_chip = Some(1);
        device.planes_per_die = Some(1);
        device.pages_per_block = Some(64);
    }
    let trim = TrimSection { engine: Some(engine), ..Default::default() };
    Ok(SsdConfig::resolve(&device, &FtlSection { kind: Some(ftl), ..Default::default() }, &trim)?)
}

pub fn bench_case(case: &Case, ftl: FtlKind, ui: &mut dyn Ui) -> Result<()> {
    let config = ssd_config(case.logical_bytes, ftl, case.engine, case.shape)?;
    let physical_pages = config.geometry.physical_pages();
    let mut ssd = Ssd::new(config);
    let workload = WorkloadConfig {
        precondition: Precondition::Steady,
        precondition_writes: Volume::Capacity(case.precondition_random),
        trim_fraction: case.trim_fraction,
        ..Default::default()
    };
    let seeds = SeedTree::new(1);
    let mut tag = 1;
    let mut bar = ui.progress(&format!("bench {}", case.name));
    let start = trimlab_workload::precondition(&mut ssd, &workload, &seeds, &mut tag, bar.as_mut())?;
    ssd.start_measurement(start);
    let mut generator =
        Generator::new(&workload, ssd.capacity_bytes(), seeds.fork("bench.mix"), seeds.fork("bench.address"));
    let drive =
        Drive::closed_loop(32, Target::WriteBytes((case.logical_bytes as f64 * case.measured) as u64));
    bar.phase("measured");
    let wall = Instant::now();
    let phase = run_phase(&mut ssd, &mut generator, start, drive, &mut tag, bar.as_mut())?;
    let seconds = wall.elapsed().as_secs_f64();
    bar.finish();
    let report = ssd.report(phase.end);
    let rss = peak_rss_bytes();
    let logical_pages = (ssd.capacity_bytes() / ssd.page_bytes()) as u32;
    let limit = limit::case_limit(
        limit::Maps::new(logical_pages, physical_pages as u32),
        report.nand_pages_programmed.clamp(1 << 20, 1 << 27),
    );
    let nand_per_s = report.nand_pages_programmed as f64 / seconds;
    ui.line(&format!(
        "{:<24} {:>10} {:>14.0} {:>14.0} {:>7.3} {:>12.2} {:>14.0} {:>14.0} {:>7.2}",
        case.name,
        format!("{}", ByteSize(physical_pages as u64 * 4096)),
        report.host.pages_written as f64 / seconds,
        nand_per_s,
        report.waf,
        ssd.heap_bytes() as f64 / physical_pages as f64,
        rss.map_or(f64::NAN, |b| b as f64 / (1 << 20) as f64),
        limit,
        nand_per_s / limit,
    ));
    Ok(())
}
