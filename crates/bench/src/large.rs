//! `trimlab bench --large`: today's largest drives at their full size (issue 27 item 4). A
//! 61.44 TB QLC drive mapped in 64 KiB indirection units and a 30.72 TB TLC drive mapped in
//! 16 KiB units, each filled sequentially and then given its capacity once in random
//! unit-sized writes (GC in steady state), on a machine whose RAM could not hold either drive's
//! map at 4 KiB (58 and 115 GB at 7.7 B per 4 KiB page).
//!
//! Per drive and phase: host writes (unit-sized commands) per wall second, NAND programs per
//! second, WAF, wall time; at the end the peak resident set (VmHWM, reset before each drive as
//! the replay case does) and the model's bytes per physical mapping unit, two ways: the RSS
//! the drive added over its units, and the model's own count (`Ssd::heap_bytes`: both maps
//! and the per-block state).
//!
//! Wall-clock time and /proc are read here, at the edge, never inside the model.
// Bench measures wall-clock speed of the model; the model itself runs on simulated time.
#![allow(clippy::disallowed_methods)]

use crate::ui::Ui;
use anyhow::{bail, Result};
use std::time::Instant;
use trimlab_device::{DeviceSection, FtlSection, Ssd, SsdConfig, TrimSection};
use trimlab_sim::{ByteSize, SeedTree};
use trimlab_workload::{run_phase, AccessPattern, Drive, Generator, Precondition, Target, WorkloadConfig};

/// One large drive: a preset with the real drive's capacity, spare, shape and mapping unit
/// laid over it. Sources are in [`DRIVES`]; every value not cited there is an assumption.
pub struct LargeDrive {
    /// What `--large NAME` selects.
    pub name: &'static str,
    pub about: &'static str,
    preset: &'static str,
    logical_bytes: u64,
    /// Raw NAND: the spare factor follows from it, (raw - logical) / raw.
    raw_bytes: u64,
    channels: u32,
    chips_per_channel: u32,
    dies_per_chip: u32,
    planes_per_die: u32,
    /// Erase block in 4 KiB device pages.
    pages_per_block: u32,
    mapping_unit: u64,
}

/// The two drives of issue 27 item 4.
///
/// 61.44 TB: Solidigm D5-P5336 (192-layer QLC, PCIe 4.0 x4, 7400 MB/s read and 3200 MB/s
/// write sequential: hwcooling.net/en/ssd-reaches-122tb-capacity-beating-largest-hdd-by-four-times),
/// on the `qlc-ssd` preset's NAND timing (its file gives the sources and assumptions). The
/// 64 KiB indirection unit is the figure (an assumption: no datasheet found states it).
///
/// 30.72 TB: a TLC drive of the Micron 6500 ION / Samsung PM1643 class (PM1643 30.72 TB: 32
/// packages of 16 x 512 Gb dies, i.e. 32 TiB of NAND, cdmagurus.com's report of Samsung's
/// announcement) on the `nvme-tlc` preset's timing. The 16 KiB unit follows Micron's case for
/// coarser map granularity on 30 TB+ drives (my.micron.com blog "Real life workloads allow more
/// efficient data granularity", Sept. 2023: one 4-byte entry per 16 KiB+ instead of per 4 KiB);
/// which IU any one 30.72 TB drive uses is an assumption.
///
/// Both: raw NAND is the binary TiB count above the decimal capacity (32 TiB under 30.72 TB,
/// 64 TiB under 61.44 TB, as the PM1643's 512 dies of 512 Gb give), so the spare factor is
/// 1 - 30.72e12 / 2^45 = 12.7 % (assumption for the D5-P5336). Dies: raw / 1 Tb dies for
/// the QLC drive (512), 512 Gb dies for the TLC drive (512), arranged as 16 channels (PCIe 4.0
/// controllers of this class have 16; assumption) of 8 chips of 4 dies with 2 planes each;
/// blocks of 64 MiB (QLC) and 32 MiB (TLC) (assumption: 3D NAND blocks of this generation are
/// tens of MiB; the block size also keeps per-block state negligible next to the maps).
pub const DRIVES: [LargeDrive; 2] = [
    LargeDrive {
        name: "61T",
        about: "61.44 TB QLC, 64 KiB IU (D5-P5336-like)",
        preset: "qlc-ssd",
        logical_bytes: 61_440_000_000_000,
        raw_bytes: 1 << 46,
        channels: 16,
        chips_per_channel: 8,
        dies_per_chip: 4,
        planes_per_die: 2,
        pages_per_block: 16384,
        mapping_unit: 64 << 10,
    },
    LargeDrive {
        name: "30T",
        about: "30.72 TB TLC, 16 KiB IU (6500 ION / PM1643 class)",
        preset: "nvme-tlc",
        logical_bytes: 30_720_000_000_000,
        raw_bytes: 1 << 45,
        channels: 16,
        chips_per_channel: 8,
        dies_per_chip: 4,
        planes_per_die: 2,
        pages_per_block: 8192,
        mapping_unit: 16 << 10,
    },
];

impl LargeDrive {
    /// The drive resolved at `logical_bytes` (its own capacity in the bench; smaller in tests,
    /// with `shrink` halving the parallelism that many times so a small drive keeps its shape).
    pub fn config(&self, logical_bytes: u64, shrink: u32) -> Result<SsdConfig> {
        let device = DeviceSection {
            preset: Some(self.preset.into()),
            logical_bytes: Some(ByteSize(logical_bytes)),
            spare_factor: Some(1.0 - self.logical_bytes as f64 / self.raw_bytes as f64),
            channels: Some((self.channels >> shrink).max(1)),
            chips_per_channel: Some((self.chips_per_channel >> shrink).max(1)),
            dies_per_chip: Some((self.dies_per_chip >> shrink).max(1)),
            planes_per_die: Some(self.planes_per_die),
            pages_per_block: Some((self.pages_per_block >> shrink).max(256)),
            ..Default::default()
        };
        let ftl = FtlSection { mapping_unit: Some(ByteSize(self.mapping_unit)), ..Default::default() };
        Ok(SsdConfig::resolve(&device, &ftl, &TrimSection::default())?)
    }
}

/// One phase's figures, and the memory when it ended.
#[derive(Clone, Copy, Debug)]
pub struct PhaseFigures {
    pub host_writes: u64,
    pub nand_programs: u64,
    pub wall_s: f64,
    /// CPU time the process spent in the phase (on a shared machine wall time is longer).
    pub cpu_s: Option<f64>,
    /// Peak resident set since the drive was built (VmHWM, reset before it).
    pub peak_rss_bytes: Option<u64>,
}

/// One drive's figures.
#[derive(Clone, Copy, Debug)]
pub struct DriveFigures {
    pub fill: PhaseFigures,
    pub random: PhaseFigures,
    pub physical_units: u64,
    /// The model's own count of its memory (`Ssd::heap_bytes`).
    pub heap_bytes: u64,
    /// The resident set before the drive was built.
    pub rss_before_bytes: Option<u64>,
}

impl DriveFigures {
    /// The random phase's WAF: NAND programs over host writes, both in units.
    #[cfg(test)]
    fn waf(&self) -> f64 {
        self.random.nand_programs as f64 / self.random.host_writes.max(1) as f64
    }
}

/// `trimlab bench --large [NAME]`: every drive, or the one called `only`.
pub fn run(only: Option<&str>, ui: &mut dyn Ui) -> Result<()> {
    let drives: Vec<&LargeDrive> = DRIVES.iter().filter(|d| only.is_none_or(|n| n == d.name)).collect();
    if drives.is_empty() {
        let names: Vec<_> = DRIVES.iter().map(|d| d.name).collect();
        bail!("bench --large: no drive \"{}\" (one of: {})", only.unwrap_or(""), names.join(", "));
    }
    for drive in drives {
        let config = drive.config(drive.logical_bytes, 0)?;
        ui.line(&format!("{}: {}; {}", drive.name, drive.about, shape(&config)));
        ui.line(&header());
        run_drive(&config, drive.name, ui)?;
    }
    Ok(())
}

/// The geometry in one line.
fn shape(config: &SsdConfig) -> String {
    let g = &config.geometry;
    format!(
        "{} logical units of {} B, {} physical ({:.1} % spare), {} ch x {} chips x {} dies x {} planes x {} blocks x {} units",
        config.logical_pages,
        g.page_bytes,
        g.physical_pages(),
        config.spare_factor * 100.0,
        g.channels,
        g.chips_per_channel,
        g.dies_per_chip,
        g.planes_per_die,
        g.blocks_per_plane,
        g.pages_per_block
    )
}

/// A sequential fill in 1 MiB commands, then the capacity once in random unit-sized writes
/// (queue depth 32, no TRIM), timed apart, each phase's row printed as it ends; the drive's
/// peak memory is its own.
pub fn run_drive(config: &SsdConfig, label: &str, ui: &mut dyn Ui) -> Result<DriveFigures> {
    crate::replay::reset_peak_rss();
    let rss_before_bytes = rss_bytes();
    let unit = config.geometry.page_bytes as u64;
    let wall = Instant::now();
    let cpu = cpu_s();
    let mut ssd = Ssd::new(config.clone());
    let seeds = SeedTree::new(1);
    let mut tag = 1;
    let mut bar = ui.progress(&format!("bench large {label}"));
    let fill = WorkloadConfig { precondition: Precondition::Fill, ..Default::default() };
    let fill_end = trimlab_workload::precondition(&mut ssd, &fill, &seeds, &mut tag, bar.as_mut())?;
    let fill = PhaseFigures {
        host_writes: ssd.capacity_bytes() / unit,
        nand_programs: ssd.ftl().flash().counters().pages_programmed,
        wall_s: wall.elapsed().as_secs_f64(),
        cpu_s: cpu_s().zip(cpu).map(|(end, start)| end - start),
        peak_rss_bytes: crate::machine::peak_rss_bytes(),
    };
    let mut figures = DriveFigures {
        fill,
        random: PhaseFigures {
            host_writes: 0,
            nand_programs: 0,
            wall_s: 0.0,
            cpu_s: None,
            peak_rss_bytes: None,
        },
        physical_units: config.geometry.physical_pages() as u64,
        heap_bytes: ssd.heap_bytes() as u64,
        rss_before_bytes,
    };
    ui.line(&row(label, "fill", &figures.fill, &figures));
    ui.line(&huge_pages_line(label));
    ssd.start_measurement(fill_end);
    let random = WorkloadConfig {
        pattern: AccessPattern::UniformRandom,
        read_fraction: 0.0,
        trim_fraction: 0.0,
        block_bytes: ByteSize(unit),
        ..Default::default()
    };
    let mut generator = Generator::new(
        &random,
        ssd.capacity_bytes(),
        seeds.fork("bench.large.mix"),
        seeds.fork("bench.large.address"),
    );
    let drive = Drive::closed_loop(32, Target::WriteBytes(ssd.capacity_bytes()));
    bar.phase("random writes");
    let wall = Instant::now();
    let cpu = cpu_s();
    let phase = run_phase(&mut ssd, &mut generator, fill_end, drive, &mut tag, bar.as_mut())?;
    let random_s = wall.elapsed().as_secs_f64();
    bar.finish();
    figures.random = PhaseFigures {
        host_writes: phase.ops,
        nand_programs: ssd.report(phase.end).nand_pages_programmed,
        wall_s: random_s,
        cpu_s: cpu_s().zip(cpu).map(|(end, start)| end - start),
        peak_rss_bytes: crate::machine::peak_rss_bytes(),
    };
    ui.line(&row(label, "random", &figures.random, &figures));
    Ok(figures)
}

/// CPU time of this thread so far (the model runs on one), where /proc exists: the first field
/// of /proc/thread-self/schedstat, nanoseconds on a CPU.
pub(crate) fn cpu_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = stat.split_whitespace().next()?.parse().ok()?;
    Some(ns as f64 / 1e9)
}

/// How much of the resident set the kernel backs with transparent huge pages, after the fill
/// has touched every map page: the maps ask for them (crates/ftl/src/map_array.rs), and the
/// random phase runs about 1.3x faster with them on the 61T drive (docs/performance.md), so a
/// user whose kernel refuses them (THP `never`, fragmented memory) learns why it is slower.
fn huge_pages_line(label: &str) -> String {
    let rollup = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
    let field = |name: &str| crate::machine::kib_field_bytes(&rollup, name);
    let mode = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
        .map_or_else(|_| "unknown".to_string(), |m| m.trim().to_string());
    match (field("AnonHugePages:"), field("Rss:")) {
        (Some(huge), Some(rss)) => format!(
            "huge pages ({label}): {:.2} of {:.2} GB resident in transparent huge pages (THP mode: {mode})",
            huge as f64 / 1e9,
            rss as f64 / 1e9
        ),
        _ => format!("huge pages ({label}): unknown (/proc/self/smaps_rollup unreadable; THP mode: {mode})"),
    }
}

/// The process's resident set now (VmRSS), where /proc exists.
fn rss_bytes() -> Option<u64> {
    crate::machine::status_bytes("VmRSS:")
}

fn header() -> String {
    format!(
        "{:<5} {:<7} {:>9} {:>13} {:>13} {:>7} {:>11} {:>10} {:>10}",
        "drive",
        "phase",
        "wall s",
        "host w/s",
        "NAND progs/s",
        "WAF",
        "peak RSS MB",
        "B/unit RSS",
        "B/unit map"
    )
}

/// One phase's row: wall time, host writes (unit-sized commands; the fill's 1 MiB commands
/// counted in units) and NAND programs per second, WAF, and memory per physical unit: the
/// peak RSS the drive added over its units, and the model's own count.
pub fn row(name: &str, phase: &str, p: &PhaseFigures, f: &DriveFigures) -> String {
    let per_unit = |bytes: u64| bytes as f64 / f.physical_units as f64;
    let rss_delta =
        p.peak_rss_bytes.zip(f.rss_before_bytes).map(|(peak, before)| peak.saturating_sub(before));
    format!(
        "{:<5} {:<7} {:>9.1} {:>8.1} {:>13.0} {:>13.0} {:>7.3} {:>11.0} {:>10.2} {:>10.2}",
        name,
        phase,
        p.wall_s,
        p.cpu_s.unwrap_or(f64::NAN),
        p.host_writes as f64 / p.wall_s,
        p.nand_programs as f64 / p.wall_s,
        p.nand_programs as f64 / p.host_writes.max(1) as f64,
        p.peak_rss_bytes.map_or(f64::NAN, |b| b as f64 / 1e6),
        rss_delta.map_or(f64::NAN, per_unit),
        per_unit(f.heap_bytes),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Quiet(Vec<String>);
    struct NoBar;

    impl trimlab_workload::Progress for NoBar {
        fn update(&mut self, _permille: u64) {}
    }

    impl crate::ui::BenchProgress for NoBar {
        fn finish(&mut self) {}
    }

    impl Ui for Quiet {
        fn line(&mut self, text: &str) {
            self.0.push(text.to_string());
        }
        fn progress(&mut self, _label: &str) -> Box<dyn crate::ui::BenchProgress> {
            Box::new(NoBar)
        }
    }

    /// Both drives resolve at their full size within 32-bit unit addresses, with the spare,
    /// unit and memory the bench reports on; the maps stay under 8 B per physical unit.
    #[test]
    fn the_large_drives_resolve_at_full_size() {
        for drive in &DRIVES {
            let config =
                drive.config(drive.logical_bytes, 0).unwrap_or_else(|e| panic!("{}: {e}", drive.name));
            let g = &config.geometry;
            assert_eq!(g.page_bytes as u64, drive.mapping_unit, "{}", drive.name);
            assert_eq!(config.logical_bytes(), drive.logical_bytes, "{}", drive.name);
            assert!((0.12..0.13).contains(&config.spare_factor), "{}: {}", drive.name, config.spare_factor);
            let maps = 4 * (config.logical_pages as u64 + g.physical_pages() as u64);
            assert!(maps as f64 / (g.physical_pages() as f64) < 8.0, "{}", drive.name);
        }
    }

    /// The bench's path end to end on the drives' shapes at a small size: both phases write
    /// what they should, GC ran, and the figures are finite.
    #[test]
    fn a_small_large_drive_runs_both_phases() {
        for drive in &DRIVES {
            let config = drive.config(1 << 30, 4).unwrap();
            let mut ui = Quiet(Vec::new());
            let f = run_drive(&config, drive.name, &mut ui).unwrap();
            let units = config.logical_pages as u64;
            assert_eq!((f.fill.host_writes, f.random.host_writes), (units, units), "{}", drive.name);
            assert!(f.random.nand_programs > units && f.waf() > 1.0, "{}: {f:?}", drive.name);
            assert!(f.fill.wall_s > 0.0 && f.random.wall_s > 0.0 && f.heap_bytes > 4 * units);
            let rows: Vec<_> = ui.0.iter().filter(|l| l.starts_with(drive.name)).collect();
            assert_eq!(rows.len(), 2, "{:?}", ui.0);
            assert!(
                ui.0.iter().any(|l| l.starts_with(&format!("huge pages ({})", drive.name))),
                "{:?}",
                ui.0
            );
        }
    }

    #[test]
    fn an_unknown_drive_is_named() {
        let e = run(Some("90T"), &mut Quiet(Vec::new())).unwrap_err().to_string();
        assert!(e.contains("\"90T\"") && e.contains("61T, 30T"), "{e}");
    }
}
