//! `trimlab bench`'s replay case: how fast a fio iolog v3 trace of 4 KiB random writes with
//! 10 % TRIMs replays on the 8 GiB `nvme-tlc` device, parse alone and parse + simulate,
//! through the same file reader and replay path as `trimlab replay`, and the peak memory
//! while it does (issue 15).
//!
//! Wall-clock time and /proc are read here, at the edge, never inside the model.
// Bench measures wall-clock speed of the model; the model itself runs on simulated time.
#![allow(clippy::disallowed_methods)]

use crate::ui::Ui;
use anyhow::{Context, Result};
use rand::Rng;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;
use trimlab_device::{Ssd, SsdConfig};
use trimlab_sim::{SeedTree, SimTime};
use trimlab_trace::{
    CommandKind, LbaMode, Pacing, ReaderOptions, ReplayOptions, TraceError, TraceRecord, TrimHandling,
};
use trimlab_workload::{Precondition, Volume, WorkloadConfig};

/// The workload: 4 KiB random writes with 10 % TRIMs.
const REQUEST_BYTES: u64 = 4096;
const TRIM_SHARE: f64 = 0.1;
/// Microseconds between two requests, uniform in 0..GAP_US_END (mean 4.5 us, about 220 k
/// requests/s as a fio job at a deep queue logs them). Assumption: the replay's speed does not
/// depend on it, the device simply queues what it cannot serve yet.
const GAP_US_END: u64 = 10;
/// The goal of issue 15, parse + simulate.
const GOAL_REQUESTS_PER_S: f64 = 2e6;

/// Removes the generated trace however the case ends.
struct TempTrace(PathBuf);

impl Drop for TempTrace {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The workload's requests in order: (time in us, operation, byte offset), seeded. The trace
/// file is written from it, and the simulate-alone pass replays it without any text.
struct Requests {
    rng: trimlab_sim::SimRng,
    pages: u64,
    time_us: u64,
    left: u64,
}

impl Requests {
    fn new(requests: u64, logical_bytes: u64, seeds: &SeedTree) -> Requests {
        Requests {
            rng: seeds.fork("bench.replay.trace"),
            pages: logical_bytes / REQUEST_BYTES,
            time_us: 0,
            left: requests,
        }
    }
}

impl Iterator for Requests {
    type Item = (u64, CommandKind, u64);

    fn next(&mut self) -> Option<Self::Item> {
        self.left = self.left.checked_sub(1)?;
        self.time_us += self.rng.gen_range(0..GAP_US_END);
        let offset = self.rng.gen_range(0..self.pages) * REQUEST_BYTES;
        let op = if self.rng.gen_bool(TRIM_SHARE) { CommandKind::Trim } else { CommandKind::Write };
        Some((self.time_us, op, offset))
    }
}

/// A generated request as the reader makes it, its time relative to the first request's.
fn relative(
    first_us: u64,
    (time_us, op, offset): (u64, CommandKind, u64),
) -> Result<TraceRecord, TraceError> {
    Ok(TraceRecord { time_ns: Some((time_us - first_us) * 1000), op, offset, bytes: REQUEST_BYTES })
}

/// The requests as fio iolog v3, as fio writes them.
fn write_trace(path: &Path, requests: Requests) -> Result<()> {
    let file = std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    let dev = "/dev/nvme0n1";
    writeln!(out, "fio version 3 iolog\n0 {dev} add\n0 {dev} open")?;
    let mut last_us = 0;
    for (time_us, op, offset) in requests {
        let action = if op == CommandKind::Trim { "trim" } else { "write" };
        writeln!(out, "{time_us} {dev} {action} {offset} {REQUEST_BYTES}")?;
        last_us = time_us;
    }
    writeln!(out, "{last_us} {dev} close")?;
    out.flush().with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// A fresh device in GC steady state, as the device cases start: a sequential fill and the
/// capacity once more in random writes with the trace's TRIM share, so the replay runs with GC
/// throughout and the trimmed share of the drive already near its level under the trace.
fn preconditioned(device: &SsdConfig, seeds: &SeedTree, ui: &mut dyn Ui) -> Result<(Ssd, SimTime)> {
    let mut ssd = Ssd::new(device.clone());
    let workload = WorkloadConfig {
        precondition: Precondition::Steady,
        precondition_writes: Volume::Capacity(1.0),
        trim_fraction: TRIM_SHARE,
        ..Default::default()
    };
    let mut tag = 1;
    let mut bar = ui.progress("bench replay");
    let start = trimlab_workload::precondition(&mut ssd, &workload, seeds, &mut tag, bar.as_mut())?;
    bar.finish();
    Ok((ssd, start))
}

/// Resets the process's peak resident set (Linux: writing 5 to clear_refs), so the replay
/// case's peak is its own and not the device cases' before it. False where that fails.
pub(super) fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn mib(bytes: Option<u64>) -> f64 {
    bytes.map_or(f64::NAN, |b| b as f64 / (1 << 20) as f64)
}

/// One trace length: generate; parse alone; replay the trace on a preconditioned device
/// (parse + simulate, the parser on its own thread as in `trimlab replay`), with the peak
/// resident set after a quarter of the trace and at its end (equal when memory is flat in the
/// trace's length); then the same requests without text on a second preconditioned device
/// (simulate alone), which must end in the same report. Returns the table row.
fn case(requests: u64, device: &SsdConfig, dir: &Path, ui: &mut dyn Ui) -> Result<String> {
    let seeds = SeedTree::new(1);
    let logical_bytes = device.logical_bytes();
    let trace = TempTrace(dir.join(format!("trimlab-bench-replay-{}-{requests}.log", std::process::id())));
    write_trace(&trace.0, Requests::new(requests, logical_bytes, &seeds))?;
    let options = ReplayOptions {
        pacing: Pacing::OpenLoop { speed: 1.0 },
        lba: LbaMode::Check,
        trims: TrimHandling::AsRecorded,
    };

    let wall = Instant::now();
    let mut parsed = 0u64;
    for record in open_trace(&trace.0)? {
        std::hint::black_box(record?);
        parsed += 1;
    }
    let parse_s = wall.elapsed().as_secs_f64();
    anyhow::ensure!(parsed == requests, "bench replay: parsed {parsed} of {requests} requests");

    let peak_reset = reset_peak_rss();
    let (mut ssd, start) = preconditioned(device, &seeds, ui)?;
    let quarter = requests / 4;
    let mut peak_quarter = None;
    let wall = Instant::now();
    let reader = open_trace(&trace.0)?;
    let records = trimlab_replay::parsed_trace::ParsedTrace::spawn(reader)?.enumerate().map(|(i, r)| {
        if i as u64 == quarter {
            peak_quarter = crate::machine::peak_rss_bytes();
        }
        r
    });
    let replayed = trimlab_trace::replay_from(&mut ssd, start, records, options)?;
    let replay_s = wall.elapsed().as_secs_f64();
    let peak_end = crate::machine::peak_rss_bytes();
    ssd.check().map_err(anyhow::Error::msg).context("consistency check after the bench replay")?;
    drop(ssd);

    let (mut ssd, start) = preconditioned(device, &seeds, ui)?;
    let wall = Instant::now();
    // Times relative to the first request, as the reader makes them.
    let mut first_us = None;
    let records =
        Requests::new(requests, logical_bytes, &seeds).map(|r| relative(*first_us.get_or_insert(r.0), r));
    let simulated = trimlab_trace::replay_from(&mut ssd, start, records, options)?;
    let simulate_s = wall.elapsed().as_secs_f64();
    // The text path must deliver exactly the requests: the two replays end in the same state.
    anyhow::ensure!(
        replayed.stats.requests == requests
            && serde_json::to_value(&replayed.report)? == serde_json::to_value(&simulated.report)?,
        "bench replay: the trace's replay and the same requests without text disagree"
    );

    let rate = requests as f64 / replay_s;
    let simulate_rate = requests as f64 / simulate_s;
    Ok(format!(
        "{:<22} {:>9} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>8.2} {:>6.3} {:>8.1} {:>8.1}{}",
        "8GiB fio-v3 trim10%",
        requests,
        requests as f64 / parse_s / 1e6,
        simulate_rate / 1e6,
        rate / 1e6,
        rate / simulate_rate,
        rate / GOAL_REQUESTS_PER_S,
        replayed.report.waf,
        mib(peak_quarter),
        mib(peak_end),
        if peak_reset { "" } else { "  (peak RSS of the whole process: /proc/self/clear_refs refused)" }
    ))
}

/// The replay case: 6 M requests, and with the full bench 24 M as well (4x the trace, the
/// same peak memory).
pub fn run(quick: bool, ui: &mut dyn Ui) -> Result<()> {
    let config = trimlab_scenario::RunConfig::parse_with("", "<defaults>", &[])?;
    let device = SsdConfig::resolve(&config.device, &config.ftl, &config.trim)?;
    let lengths: &[u64] = if quick { &[6_000_000] } else { &[6_000_000, 24_000_000] };
    // The rows come after the cases' progress lines.
    let rows =
        lengths.iter().map(|&n| case(n, &device, &std::env::temp_dir(), ui)).collect::<Result<Vec<_>>>()?;
    ui.line("");
    ui.line(&format!(
        "{:<22} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>6} {:>8} {:>8}",
        "replay case",
        "requests",
        "parse",
        "simulate",
        "replay",
        "replay/",
        "replay/",
        "WAF",
        "RSS@1/4",
        "RSS@end"
    ));
    ui.line(&format!(
        "{:<22} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>6} {:>8} {:>8}",
        "", "", "M req/s", "M req/s", "M req/s", "simulate", "2M/s", "", "MiB", "MiB"
    ));
    for row in rows {
        ui.line(&row);
    }
    Ok(())
}

/// The generated trace behind a 1 MiB buffer, as `trimlab replay` reads a file.
fn open_trace(path: &Path) -> Result<trimlab_trace::TraceReader<std::io::BufReader<std::fs::File>>> {
    let file = std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let reader = std::io::BufReader::with_capacity(1 << 20, file);
    Ok(trimlab_trace::TraceReader::new(reader, &path.display().to_string(), ReaderOptions::default())?)
}
