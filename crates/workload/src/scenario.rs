//! A whole run: precondition the drive, start measuring, run the configured workload.

use crate::config::{AccessPattern, Precondition, WorkloadConfig};
use crate::generator::Generator;
use crate::runner::{run_phase, Drive, PhaseResult, Progress, Target};
use trimlab_device::{BlockDevice, CommandError, DeviceReport, Ssd};
use trimlab_sim::{ByteSize, SeedTree, SimTime};

#[derive(Clone, Debug)]
pub struct RunOutcome {
    pub report: DeviceReport,
    pub precondition_end: SimTime,
    pub measured: PhaseResult,
}

/// Brings the drive to the requested starting state; returns when the last command completed.
pub fn precondition<D: BlockDevice>(
    dev: &mut D,
    workload: &WorkloadConfig,
    seeds: &SeedTree,
    next_tag: &mut u64,
    progress: &mut dyn Progress,
) -> Result<SimTime, CommandError> {
    precondition_from(dev, workload, seeds, SimTime::ZERO, next_tag, progress)
}

/// [`precondition`] starting at `start` (a fill or aging phase after others).
pub fn precondition_from<D: BlockDevice>(
    dev: &mut D,
    workload: &WorkloadConfig,
    seeds: &SeedTree,
    start: SimTime,
    next_tag: &mut u64,
    progress: &mut dyn Progress,
) -> Result<SimTime, CommandError> {
    let limits = dev.limits();
    let (capacity, page) = (limits.capacity_bytes, limits.tag_bytes);
    let (_, region) = workload.region(capacity);
    let mut now = start;
    if workload.precondition == Precondition::None {
        return Ok(now);
    }
    // Sequential fill in large transfers: every page of the region written once.
    let fill_block = (limits.max_transfer_bytes.min(1 << 20) / page) * page;
    let fill_block = if region % fill_block == 0 { fill_block } else { page };
    let fill = WorkloadConfig {
        pattern: AccessPattern::Sequential,
        read_fraction: 0.0,
        trim_fraction: 0.0,
        block_bytes: ByteSize(fill_block),
        ..without_fio_keys(workload)
    };
    let mut generator =
        Generator::new(&fill, capacity, seeds.fork("precondition.mix"), seeds.fork("precondition.fill"));
    let drive = Drive::closed_loop(32, Target::WriteBytes(region));
    progress.phase("precondition fill");
    now = run_phase(dev, &mut generator, now, drive, next_tag, progress)?.end;
    if workload.precondition == Precondition::Steady {
        let random = WorkloadConfig { pattern: AccessPattern::UniformRandom, ..fill };
        // The random phase carries the workload's TRIM share too, so the trimmed share of the
        // address space is in steady state when measurement starts.
        // A trim-only workload (fio's rw=trim) would never write this phase's volume: its
        // precondition writes without TRIMs (issue 26: it spun here forever).
        let trim_fraction = if workload.trim_fraction >= 1.0 { 0.0 } else { workload.trim_fraction };
        let random = WorkloadConfig {
            block_bytes: workload.block_bytes,
            trim_fraction,
            trim_bytes: workload.trim_bytes,
            ..random
        };
        let bytes = workload.precondition_writes.bytes(region);
        if bytes > 0 {
            let mut generator = Generator::new(
                &random,
                capacity,
                seeds.fork("precondition.mix"),
                seeds.fork("precondition.random"),
            );
            let drive = Drive { target: Target::WriteBytes(bytes), ..drive };
            progress.phase("precondition random writes");
            now = run_phase(dev, &mut generator, now, drive, next_tag, progress)?.end;
        }
    }
    Ok(now)
}

/// `workload` without the keys of fio's jobs: a precondition writes its own volume, with its
/// own sizes and random streams, whatever ends or shapes the measured stream.
fn without_fio_keys(workload: &WorkloadConfig) -> WorkloadConfig {
    WorkloadConfig {
        io_bytes: None,
        runtime: None,
        random_map: None,
        block_split: None,
        trim_then_write: None,
        stream_seed: None,
        jobs: None,
        ..workload.clone()
    }
}

/// Preconditions, then measures the workload. The caller validated `workload`.
pub fn run_workload(
    ssd: &mut Ssd,
    workload: &WorkloadConfig,
    seeds: &SeedTree,
    progress: &mut dyn Progress,
) -> Result<RunOutcome, CommandError> {
    let mut next_tag = 1u64;
    let precondition_end = precondition(ssd, workload, seeds, &mut next_tag, progress)?;
    ssd.start_measurement(precondition_end);
    let capacity = ssd.capacity_bytes();
    let mut generator =
        Generator::new(workload, capacity, seeds.fork("workload.mix"), seeds.fork("workload.address"));
    let drive = measured_drive(workload, capacity);
    progress.phase("measured workload");
    let measured = run_phase(ssd, &mut generator, precondition_end, drive, &mut next_tag, progress)?;
    Ok(RunOutcome { report: ssd.report(measured.end), precondition_end, measured })
}

/// How the measured part of `workload` is driven on a device of `capacity_bytes`: its
/// submitters, think time, idle gaps and flushes, until `ops` operations or `writes` bytes.
pub fn measured_drive(workload: &WorkloadConfig, capacity_bytes: u64) -> Drive {
    // fio's jobs end each on its own (size, runtime, number_ios): the generator says when.
    let streams = workload.jobs.is_some() || workload.io_bytes.is_some() || workload.runtime.is_some();
    let target = match workload.ops {
        _ if streams => Target::Streams,
        Some(n) => Target::Ops(n),
        None => Target::WriteBytes(workload.writes.bytes(capacity_bytes)),
    };
    let streams_depth: Option<u32> =
        workload.jobs.as_ref().map(|jobs| jobs.iter().map(|j| j.queue_depth).sum());
    Drive {
        queue_depth: streams_depth.unwrap_or(workload.queue_depth),
        think_time_ns: workload.think_time.0,
        idle_every: workload.idle_every,
        idle_ns: workload.idle.0,
        flush_every: workload.flush_every,
        target,
    }
}
