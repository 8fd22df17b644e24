//! `trimlab bench`: simulator speed in GC steady state and memory per physical page.
//!
//! Wall-clock time is read here, in the binary, never inside the model.

use anyhow::Result;
use std::time::Instant;
use trimlab_device::{DeviceSection, FtlSection, Ssd, SsdConfig, TrimSection};
use trimlab_sim::{ByteSize, SeedTree};
use trimlab_workload::{run_phase, Drive, Generator, Precondition, Target, Volume, WorkloadConfig};

struct Case {
    name: &'static str,
    logical_bytes: u64,
    engine: trimlab_trim::EngineKind,
    trim_fraction: f64,
    precondition_random: f64,
    measured: f64,
}

pub fn run(quick: bool) -> Result<()> {
    let mut cases = vec![
        Case {
            name: "8GiB immediate",
            logical_bytes: 8 << 30,
            engine: trimlab_trim::EngineKind::Immediate,
            trim_fraction: 0.0,
            precondition_random: 1.0,
            measured: 2.0,
        },
        Case {
            name: "8GiB immediate trim10%",
            logical_bytes: 8 << 30,
            engine: trimlab_trim::EngineKind::Immediate,
            trim_fraction: 0.1,
            precondition_random: 1.0,
            measured: 2.0,
        },
        // The same workload with Delayed TRIM: no idle time, so GC applies the pending TRIMs.
        Case {
            name: "8GiB delayed trim10%",
            logical_bytes: 8 << 30,
            engine: trimlab_trim::EngineKind::Delayed,
            trim_fraction: 0.1,
            precondition_random: 1.0,
            measured: 2.0,
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
        });
    }
    println!(
        "{:<24} {:>10} {:>14} {:>14} {:>7} {:>12} {:>14}",
        "case", "physical", "host writes/s", "NAND progs/s", "WAF", "model B/page", "peak RSS MiB"
    );
    for case in cases {
        bench_case(&case)?;
    }
    Ok(())
}

fn bench_case(case: &Case) -> Result<()> {
    let device = DeviceSection {
        preset: Some("nvme-tlc".into()),
        logical_bytes: Some(ByteSize(case.logical_bytes)),
        spare_factor: Some(0.10),
        ..Default::default()
    };
    let trim = TrimSection { engine: Some(case.engine), ..Default::default() };
    let config = SsdConfig::resolve(&device, &FtlSection::default(), &trim)?;
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
    let start = trimlab_workload::precondition(&mut ssd, &workload, &seeds, &mut tag, &mut ())?;
    ssd.start_measurement(start);
    let mut generator =
        Generator::new(&workload, ssd.capacity_bytes(), seeds.fork("bench.mix"), seeds.fork("bench.address"));
    let drive =
        Drive::closed_loop(32, Target::WriteBytes((case.logical_bytes as f64 * case.measured) as u64));
    let wall = Instant::now();
    let phase = run_phase(&mut ssd, &mut generator, start, drive, &mut tag, &mut ())?;
    let seconds = wall.elapsed().as_secs_f64();
    let report = ssd.report(phase.end);
    println!(
        "{:<24} {:>10} {:>14.0} {:>14.0} {:>7.3} {:>12.2} {:>14.0}",
        case.name,
        format!("{}", ByteSize(physical_pages as u64 * 4096)),
        report.host.pages_written as f64 / seconds,
        report.nand_pages_programmed as f64 / seconds,
        report.waf,
        ssd.heap_bytes() as f64 / physical_pages as f64,
        peak_rss_bytes().map_or(f64::NAN, |b| b as f64 / (1 << 20) as f64),
    );
    Ok(())
}

/// The process's peak resident set (VmHWM), where /proc exists.
fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
