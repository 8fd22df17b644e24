//! `trimlab replay` and `trimlab advise`: a block trace on a device configuration, and the
//! operator's question of 003 (online discard, periodic fstrim, or none?) answered for it.

use crate::output;
use anyhow::{bail, Context, Result};
use clap::Args;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender};
use std::thread::JoinHandle;
use trimlab_device::{DeviceReport, Ssd, SsdConfig};
use trimlab_experiments::parallel_map;
use trimlab_report::{Cell, ExperimentReport, Plot, PlotKind, Table};
use trimlab_scenario::RunConfig;
use trimlab_trace::{
    BlkAction, FioTimeUnit, LbaMode, Pacing, ReaderOptions, ReplayOptions, ReplayStats, TraceError,
    TraceFormat, TraceReader, TraceRecord, TrimHandling,
};

use trimlab_trace::advice::{period_label, scenarios, Scenario};

/// What every trace command needs to read a trace and build the device.
#[derive(Args, Clone, Debug)]
pub struct TraceArgs {
    /// The trace file (`-` for standard input, `replay` only).
    pub trace: PathBuf,
    /// Device, FTL and TRIM engine as in `trimlab run` configs ([workload] is ignored);
    /// default: the nvme-tlc preset.
    #[arg(long)]
    pub device: Option<PathBuf>,
    /// Override one key of the device config (repeatable): --set ftl.kind=hybrid
    #[arg(long = "set", value_name = "KEY.PATH=VALUE")]
    pub set: Vec<String>,
    /// Trace format (default: detected): blkparse, ftrace-blk, fio-v2, fio-v3, msr, mqsim, disksim.
    #[arg(long)]
    pub format: Option<String>,
    /// blkparse / ftrace events to replay: Q (queued), D (issued to the device), C (completed).
    #[arg(long, default_value = "D")]
    pub blk_action: String,
    /// Unit of fio iolog v3 timestamps: us (what fio writes) or ms (older fio).
    #[arg(long, default_value = "us")]
    pub fio_time_unit: String,
    /// Skip malformed lines (counted in the report) instead of stopping at the first.
    #[arg(long)]
    pub skip_bad: bool,
    /// Requests past the device's end: check (error) or remap (wrap around).
    #[arg(long, default_value = "check")]
    pub lba: String,
    /// Divide the trace's inter-arrival times by this factor (open loop).
    #[arg(long, default_value_t = 1.0)]
    pub speed: f64,
}

impl TraceArgs {
    fn reader_options(&self) -> Result<ReaderOptions> {
        let format =
            self.format.as_deref().map(TraceFormat::parse).transpose().map_err(anyhow::Error::msg)?;
        let blk_action =
            BlkAction::parse(&self.blk_action).map_err(|e| anyhow::anyhow!("--blk-action: {e}"))?;
        let fio_time_unit = match self.fio_time_unit.as_str() {
            "us" => FioTimeUnit::Micros,
            "ms" => FioTimeUnit::Millis,
            other => bail!("--fio-time-unit {other} (accepted: us, ms)"),
        };
        Ok(ReaderOptions { format, blk_action, fio_time_unit, skip_bad: self.skip_bad })
    }

    fn lba(&self) -> Result<LbaMode> {
        match self.lba.as_str() {
            "check" => Ok(LbaMode::Check),
            "remap" => Ok(LbaMode::Remap),
            other => bail!("--lba {other} (accepted: check, remap)"),
        }
    }

    fn speed(&self) -> Result<f64> {
        if !(self.speed > 0.0 && self.speed.is_finite()) {
            bail!("--speed {} (must be a positive number)", self.speed);
        }
        Ok(self.speed)
    }

    fn device_config(&self) -> Result<RunConfig> {
        match &self.device {
            Some(path) => crate::config_arg::load(path, &self.set),
            None => crate::config_arg::defaults(&self.set),
        }
    }

    fn open(&self) -> Result<TraceReader<Box<dyn BufRead + Send>>> {
        open_trace(&self.trace, self.reader_options()?)
    }
}

/// Opens a trace file (`-`: standard input) behind a 1 MiB buffer, the reader `trimlab replay`
/// and `trimlab bench`'s replay case both use.
pub fn open_trace(path: &Path, options: ReaderOptions) -> Result<TraceReader<Box<dyn BufRead + Send>>> {
    let name = path.display().to_string();
    let input: Box<dyn BufRead + Send> = if name == "-" {
        Box::new(BufReader::with_capacity(1 << 20, std::io::stdin()))
    } else {
        let file = File::open(path).with_context(|| format!("cannot read {name}"))?;
        Box::new(BufReader::with_capacity(1 << 20, file))
    };
    Ok(TraceReader::new(input, &name, options)?)
}

/// Requests handed from the reader thread to the replay at a time: enough that the hand-over
/// costs nothing per request, few enough that what is in flight stays far below the device
/// model's own memory (memory flat in the trace's length). Assumption, tried with `trimlab
/// bench`.
const BATCH_RECORDS: usize = 4096;
/// Batches queued between the threads (at most this many, plus one being filled and one being
/// replayed: about 1 MB).
const BATCHES_IN_FLIGHT: usize = 4;

enum Batch {
    Records(Vec<TraceRecord>),
    /// The trace ended, at its end or at its first error, after `skipped_bad` skipped lines.
    End {
        error: Option<TraceError>,
        skipped_bad: u64,
    },
}

/// A trace read and parsed on its own thread, its records handed over in file order through a
/// bounded channel, so parsing runs beside the simulation instead of before each request.
/// Reading and parsing text is I/O, not simulation: the single-threaded replay sees the same
/// records, the same error and the same skipped count in the same order as from the reader
/// itself, so no result changes.
pub struct ParsedTrace {
    format: TraceFormat,
    batches: Receiver<Batch>,
    /// Emptied batches go back to the reader thread to be filled again.
    recycle: Sender<Vec<TraceRecord>>,
    current: Vec<TraceRecord>,
    position: usize,
    ended: bool,
    skipped_bad: u64,
    thread: Option<JoinHandle<()>>,
}

impl ParsedTrace {
    pub fn spawn<R: BufRead + Send + 'static>(mut reader: TraceReader<R>) -> Result<ParsedTrace> {
        let format = reader.format();
        let (batch_tx, batches) = sync_channel(BATCHES_IN_FLIGHT);
        let (recycle, recycled) = channel::<Vec<TraceRecord>>();
        let thread = std::thread::Builder::new()
            .name("trace-reader".into())
            .spawn(move || {
                let fresh = || recycled.try_recv().unwrap_or_else(|_| Vec::with_capacity(BATCH_RECORDS));
                let mut batch = fresh();
                loop {
                    match reader.next() {
                        Some(Ok(record)) => {
                            batch.push(record);
                            if batch.len() == BATCH_RECORDS {
                                let full = std::mem::replace(&mut batch, fresh());
                                // A closed channel: the replay stopped (at a device error), so
                                // nobody wants the rest.
                                if batch_tx.send(Batch::Records(full)).is_err() {
                                    return;
                                }
                            }
                        }
                        end => {
                            if !batch.is_empty() && batch_tx.send(Batch::Records(batch)).is_err() {
                                return;
                            }
                            let error = end.and_then(Result::err);
                            let _ = batch_tx.send(Batch::End { error, skipped_bad: reader.skipped_bad() });
                            return;
                        }
                    }
                }
            })
            .context("cannot start the trace reader thread")?;
        Ok(ParsedTrace {
            format,
            batches,
            recycle,
            current: Vec::new(),
            position: 0,
            ended: false,
            skipped_bad: 0,
            thread: Some(thread),
        })
    }

    pub fn format(&self) -> TraceFormat {
        self.format
    }

    /// Malformed lines skipped (with `--skip-bad`); final once the records have run out.
    pub fn skipped_bad(&self) -> u64 {
        self.skipped_bad
    }
}

impl Iterator for ParsedTrace {
    type Item = Result<TraceRecord, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(&record) = self.current.get(self.position) {
                self.position += 1;
                return Some(Ok(record));
            }
            if self.ended {
                return None;
            }
            match self.batches.recv() {
                Ok(Batch::Records(records)) => {
                    let mut done = std::mem::replace(&mut self.current, records);
                    self.position = 0;
                    done.clear();
                    // The reader thread may have finished; then the vector is simply dropped.
                    if done.capacity() >= BATCH_RECORDS {
                        let _ = self.recycle.send(done);
                    }
                }
                Ok(Batch::End { error, skipped_bad }) => {
                    self.ended = true;
                    self.skipped_bad = skipped_bad;
                    if let Some(error) = error {
                        return Some(Err(error));
                    }
                }
                Err(_) => {
                    // The thread always ends the trace before it returns, so it panicked: a bug.
                    if let Some(Err(panic)) = self.thread.take().map(JoinHandle::join) {
                        std::panic::resume_unwind(panic);
                    }
                    unreachable!("the trace reader thread stopped without ending the trace");
                }
            }
        }
    }
}

#[derive(Args, Debug)]
pub struct ReplayArgs {
    #[command(flatten)]
    pub trace: TraceArgs,
    /// Closed loop with this many requests outstanding instead of the trace's times.
    #[arg(long)]
    pub closed_loop: Option<u32>,
    /// The trace's TRIMs: as-recorded (online discard), drop (no discard), or fstrim:PERIOD
    /// (collected and sent every PERIOD of trace time, e.g. fstrim:1d, fstrim:10s).
    #[arg(long, default_value = "as-recorded")]
    pub trims: String,
    #[arg(long, default_value = "out/replay")]
    pub out: PathBuf,
    /// Write OUT/timeseries.csv with one row per this much simulated time, e.g. 100ms
    /// (overrides [output] interval of --device).
    #[arg(long)]
    pub log_interval: Option<String>,
}

/// "1d", "7d", "3600s", "500ms" to nanoseconds; a bare number is refused (its unit would be a guess).
fn parse_period(text: &str) -> Result<u64, String> {
    match trimlab_sim::DurationNs::parse(text)?.0 {
        0 => Err(format!("\"{text}\" is zero (a period must be positive)")),
        ns => Ok(ns),
    }
}

fn parse_trims(text: &str) -> Result<TrimHandling> {
    match text {
        "as-recorded" => Ok(TrimHandling::AsRecorded),
        "drop" => Ok(TrimHandling::Drop),
        other => match other.strip_prefix("fstrim:") {
            Some(period) => match parse_period(period) {
                Ok(ns) => Ok(TrimHandling::Periodic { period_ns: ns }),
                Err(e) => {
                    bail!("--trims {other}: {e}; the period must be a duration like 1d, 3600s or 500ms")
                }
            },
            None => bail!("--trims {other} (accepted: as-recorded, drop, fstrim:PERIOD such as fstrim:1d)"),
        },
    }
}

struct Replayed {
    stats: ReplayStats,
    report: DeviceReport,
    skipped_bad: u64,
    format: TraceFormat,
    /// Pages still in the write buffer when the trace ended, programmed before the report.
    drained_pages: u64,
    series: output::Series,
}

fn replay_once(
    args: &TraceArgs,
    device: &SsdConfig,
    pacing: Pacing,
    trims: TrimHandling,
    interval_ns: Option<u64>,
) -> Result<Replayed> {
    let mut records = ParsedTrace::spawn(args.open()?)?;
    let format = records.format();
    let mut ssd = Ssd::new(device.clone());
    if let Some(ns) = interval_ns {
        ssd.enable_timeseries(ns, trimlab_sim::SimTime::ZERO);
    }
    let options = ReplayOptions { pacing, lba: args.lba()?, trims };
    let outcome = trimlab_trace::replay(&mut ssd, records.by_ref(), options)?;
    // Pages still buffered at the end would count as host writes without their programs (a WAF
    // of 0.94 on a trace that rewrites nothing); a drive programs them once the host is idle.
    let (drained_pages, end) = ssd.drain_write_buffer(outcome.end);
    ssd.finish_timeseries(end);
    ssd.check().map_err(anyhow::Error::msg).context("consistency check after the replay")?;
    let report = ssd.report(end);
    let series = output::series_of(&ssd, interval_ns.is_some());
    Ok(Replayed {
        stats: outcome.stats,
        report,
        skipped_bad: records.skipped_bad(),
        format,
        drained_pages,
        series,
    })
}

pub fn replay(args: &ReplayArgs) -> Result<()> {
    let config = args.trace.device_config()?;
    let device = SsdConfig::resolve(&config.device, &config.ftl, &config.trim)?;
    let pacing = match args.closed_loop {
        Some(0) => bail!("--closed-loop 0 (must be at least 1)"),
        Some(qd) => Pacing::ClosedLoop { queue_depth: qd },
        None => Pacing::OpenLoop { speed: args.trace.speed()? },
    };
    let trims = parse_trims(&args.trims)?;
    let interval_ns = config.output.interval_ns(args.log_interval.as_deref())?;
    let r = replay_once(&args.trace, &device, pacing, trims, interval_ns)?;
    let metrics = serde_json::json!({
        "trimlab_version": env!("CARGO_PKG_VERSION"),
        "trace": args.trace.trace.display().to_string(),
        "format": r.format,
        "skipped_bad_lines": r.skipped_bad,
        "trims": trims,
        "device": device,
        "replay": r.stats,
        "buffered_pages_programmed_at_end": r.drained_pages,
        "report": r.report,
    });
    std::fs::create_dir_all(&args.out).with_context(|| format!("cannot create {}", args.out.display()))?;
    output::write_json(&args.out.join("metrics.json"), &metrics)?;
    output::write_flat_csv(&args.out.join("metrics.csv"), &metrics)?;
    output::write_series(&args.out, &r.series)?;
    let rep = &r.report;
    if r.drained_pages > 0 {
        println!(
            "{} pages were still in the write buffer when the trace ended; they were programmed before the totals below",
            r.drained_pages
        );
    }
    println!(
        "{} requests ({}), WAF {}, erases {}, TRIM commands {} ({} bytes), write p99 {} us, sim time {:.3} s{}",
        r.stats.requests,
        r.format.name(),
        crate::run_cmd::waf_text(rep),
        rep.nand_blocks_erased,
        rep.trim.commands,
        rep.host.pages_trim_requested * device.geometry.page_bytes as u64,
        rep.latency.write.p99_ns / 1000,
        rep.sim_time_ns as f64 / 1e9,
        if r.skipped_bad > 0 { format!(", {} bad lines skipped", r.skipped_bad) } else { String::new() }
    );
    println!("wrote {}", args.out.join("metrics.json").display());
    Ok(())
}

#[derive(Args, Debug)]
pub struct AdviseArgs {
    #[command(flatten)]
    pub trace: TraceArgs,
    /// Periods of the fstrim scenarios, in trace time (a short captured trace needs short ones).
    #[arg(long, default_value = "1d,7d", value_delimiter = ',')]
    pub fstrim_periods: Vec<String>,
    #[arg(long, default_value = "out/advise")]
    pub out: PathBuf,
}

pub fn advise(args: &AdviseArgs) -> Result<()> {
    if args.trace.trace == Path::new("-") {
        bail!("advise replays the trace several times: give a file, not standard input");
    }
    let config = args.trace.device_config()?;
    let base = SsdConfig::resolve(&config.device, &config.ftl, &config.trim)?;
    let pacing = Pacing::OpenLoop { speed: args.trace.speed()? };
    let mut periods = Vec::new();
    for p in &args.fstrim_periods {
        match parse_period(p) {
            Ok(ns) => periods.push(ns),
            Err(e) => bail!("--fstrim-periods: {e}; give durations like 1d, 3600s or 500ms"),
        }
    }
    periods.sort_unstable();
    periods.dedup();
    let list = scenarios(base.trim_engine, &periods);
    let results = parallel_map(&crate::reproduce_cmd::Bars, &list, "advise", |s| {
        let mut device = base.clone();
        if let Some((engine, cap)) = s.engine {
            device.trim_engine = engine;
            device.trim_delayed.before_gc = cap;
        }
        replay_once(&args.trace, &device, pacing, s.trims, None)
    });
    let results: Vec<Replayed> = results.into_iter().collect::<Result<_>>()?;
    if let Some(warning) = fstrim_warning(&periods, results[0].stats.trace_span_ns) {
        eprintln!("trimlab advise: warning: {warning}");
    }
    let report = advice_report(args, &base, &list, &results);
    std::fs::create_dir_all(&args.out).with_context(|| format!("cannot create {}", args.out.display()))?;
    trimlab_report::write_experiment(&args.out, &report)?;
    let index = trimlab_report::write_index(&args.out, std::slice::from_ref(&report))?;
    println!("{}", trimlab_report::render_text(&report));
    println!("wrote {}", index.display());
    Ok(())
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// How the scenarios treat the trace's discards, worded from the periods actually replayed.
fn periods_note(periods_ns: &[u64], span_ns: u64) -> String {
    let fstrim = if periods_ns.is_empty() {
        "no fstrim period was given".to_string()
    } else {
        let when: Vec<String> = periods_ns.iter().map(|&p| period_label(p)).collect();
        format!(
            "fstrim collects the trimmed ranges not written again since and sends them {} of trace time, starting one period after the trace starts (this trace spans {:.3} s, so a longer period never reaches an fstrim)",
            when.join(" / "),
            span_ns as f64 / 1e9
        )
    };
    format!("Online discard sends each TRIM when it was recorded; {fstrim}; no discard drops them. The rows after \"no discard\" keep online discard and change the drive's TRIM engine.")
}

/// The fstrim periods that never fire within the trace make rows identical to "no discard";
/// say so, and what to pass instead.
fn fstrim_warning(periods_ns: &[u64], span_ns: u64) -> Option<String> {
    let never: Vec<String> = periods_ns.iter().filter(|&&p| p > span_ns).map(|&p| period_label(p)).collect();
    if never.is_empty() {
        return None;
    }
    let all = never.len() == periods_ns.len();
    // Suggest periods that fire a few times: a tenth and a third of the trace, in whole ms.
    let suggest = |share: u64| trimlab_sim::DurationNs((span_ns / share / 1_000_000).max(1) * 1_000_000);
    Some(format!(
        "{} no fstrim in this {:.3} s trace (fstrim {}), so {} the same as \"no discard\"; pass shorter periods, e.g. --fstrim-periods {},{}",
        if all { "no fstrim period fits in the trace:" } else { "some fstrim periods never run:" },
        span_ns as f64 / 1e9,
        never.join(", "),
        if never.len() == 1 { "that row is" } else { "those rows are" },
        suggest(10),
        suggest(3)
    ))
}

fn advice_report(
    args: &AdviseArgs,
    base: &SsdConfig,
    list: &[Scenario],
    results: &[Replayed],
) -> ExperimentReport {
    let mut table = Table::new(
        "advise",
        "Each way of handling the trace's discards, replayed on the same device",
        &[
            "scenario",
            "waf",
            "nand_blocks_erased",
            "read_p50_us",
            "read_p99_us",
            "read_p999_us",
            "write_p50_us",
            "write_p99_us",
            "write_p999_us",
            "trim_commands",
            "trim_foreground_ms",
            "gc_busy_ms",
            "sim_time_s",
        ],
    );
    for (s, r) in list.iter().zip(results) {
        let rep = &r.report;
        table.push_row([
            Cell::Text(s.label.clone()),
            Cell::Num(rep.waf),
            Cell::Int(rep.nand_blocks_erased as i64),
            Cell::Num(us(rep.latency.read.p50_ns)),
            Cell::Num(us(rep.latency.read.p99_ns)),
            Cell::Num(us(rep.latency.read.p999_ns)),
            Cell::Num(us(rep.latency.write.p50_ns)),
            Cell::Num(us(rep.latency.write.p99_ns)),
            Cell::Num(us(rep.latency.write.p999_ns)),
            Cell::Int(rep.trim.commands as i64),
            Cell::Num(ms(rep.trim.foreground_total_ns)),
            Cell::Num(ms(rep.gc.busy_ns)),
            Cell::Num(rep.sim_time_ns as f64 / 1e9),
        ]);
    }
    let replays: Vec<_> = results
        .iter()
        .map(|r| trimlab_trace::advice::Replayed { stats: &r.stats, report: &r.report })
        .collect();
    let advice = trimlab_trace::advice::recommend(list, &replays);
    let (choice, reason) = (advice.policy.to_string(), advice.reason);
    let labels: Vec<String> = list.iter().map(|s| s.label.clone()).collect();
    // Read and write latencies (and TRIM and GC times) differ by orders of magnitude: those
    // plots use a log axis so the small values stay visible.
    let bars = |name: &str, title: &str, y: &str, log_y: bool, series: Vec<(String, Vec<f64>)>| Plot {
        name: name.into(),
        title: title.into(),
        x_label: "scenario".into(),
        y_label: y.into(),
        log_y,
        kind: PlotKind::Bars { categories: labels.clone(), series },
    };
    let pick = |f: &dyn Fn(&DeviceReport) -> f64| results.iter().map(|r| f(&r.report)).collect::<Vec<f64>>();
    let plots = vec![
        bars("waf", "Write amplification", "WAF", false, vec![("WAF".into(), pick(&|r| r.waf))]),
        bars(
            "latency_p99",
            "p99 latency (us)",
            "microseconds (log)",
            true,
            vec![
                ("read p99".into(), pick(&|r| us(r.latency.read.p99_ns))),
                ("write p99".into(), pick(&|r| us(r.latency.write.p99_ns))),
            ],
        ),
        bars(
            "trim_and_gc_time",
            "Foreground TRIM time and GC time (ms)",
            "milliseconds (log)",
            true,
            vec![
                ("TRIM foreground".into(), pick(&|r| ms(r.trim.foreground_total_ns))),
                ("GC busy".into(), pick(&|r| ms(r.gc.busy_ns))),
            ],
        ),
    ];
    let s = &results[0].stats;
    let skipped = results[0].skipped_bad;
    let periods: Vec<u64> = list
        .iter()
        .filter_map(|sc| match sc.trims {
            TrimHandling::Periodic { period_ns } => Some(period_ns),
            _ => None,
        })
        .collect();
    let mut notes = vec![
        format!("Recommendation: {choice}. {reason}"),
        periods_note(&periods, s.trace_span_ns),
        "Rule: no TRIMs -> nothing to decide; trimming gains < 2 % WAF -> fstrim (or no discard when no fstrim period falls inside the trace); online discard costs > 10 % in p99 latency -> fstrim if it keeps half the WAF gain, else discard; otherwise discard if it beats the best fstrim's WAF by > 1 point, else fstrim.".into(),
    ];
    if skipped > 0 {
        notes.push(format!("{skipped} malformed lines were skipped (--skip-bad)."));
    }
    if let Some(warning) = fstrim_warning(&periods, s.trace_span_ns) {
        notes.insert(0, format!("Warning: {warning}"));
    }
    ExperimentReport {
        name: "advise".into(),
        title: format!("Discard advice for {}", args.trace.trace.display()),
        summary: format!(
            "{} requests ({} reads, {} writes, {} TRIMs of {} bytes, {} flushes) over {:.3} s of trace time, format {}, replayed open loop at speed {} on {} ({} logical bytes, engine {:?}).",
            s.requests,
            s.reads,
            s.writes,
            s.trims,
            s.trim_bytes_recorded,
            s.flushes,
            s.trace_span_ns as f64 / 1e9,
            results[0].format.name(),
            args.trace.speed,
            base.preset,
            base.logical_bytes(),
            base.trim_engine
        ),
        paper: vec![
            "003: online discard makes mkfs and rm many times slower on thin storage; not trimming raises write amplification and wear; periodic fstrim is the usual middle way.".into(),
        ],
        verdicts: Vec::new(),
        notes,
        tables: vec![table],
        plots,
        params: vec![
            ("trace".into(), args.trace.trace.display().to_string()),
            ("recommendation".into(), choice),
            ("reason".into(), reason),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trimlab_trace::advice::DAY_NS;

    /// The reader thread changes nothing: over several batches, with bad lines skipped or
    /// stopping the trace, it yields what the reader yields, in order, and the same count.
    #[test]
    fn the_reader_thread_hands_over_the_same_records_error_and_skipped_count() {
        let mut text = String::from("fio version 3 iolog\n");
        for i in 0..3 * BATCH_RECORDS as u64 {
            text += &format!("{i} f {} {} 4096\n", if i % 10 == 3 { "trim" } else { "write" }, i * 4096);
            if i % 1000 == 999 {
                text += "7 f write zero 4096\n";
            }
        }
        let show = |r: Result<TraceRecord, TraceError>| match r {
            Ok(record) => format!("{record:?}"),
            Err(e) => e.to_string(),
        };
        for skip_bad in [true, false] {
            let options = ReaderOptions { skip_bad, ..Default::default() };
            let direct: Vec<String> =
                TraceReader::new(text.as_bytes(), "t", options).unwrap().map(show).collect();
            let input = std::io::Cursor::new(text.clone().into_bytes());
            let mut threaded = ParsedTrace::spawn(TraceReader::new(input, "t", options).unwrap()).unwrap();
            let got: Vec<String> = threaded.by_ref().map(show).collect();
            assert_eq!(got.len(), direct.len());
            assert_eq!(got, direct);
            assert_eq!(threaded.skipped_bad(), if skip_bad { 12 } else { 0 });
            assert!(threaded.next().is_none());
        }
    }

    #[test]
    fn periods_parse_and_read_well() {
        assert_eq!(parse_period("7d"), Ok(7 * DAY_NS));
        assert!(parse_period("0s").is_err());
        assert_eq!(period_label(DAY_NS), "daily");
        assert_eq!(period_label(10_000_000_000), "every 10s");
    }

    #[test]
    fn advise_warns_when_no_fstrim_period_fits_and_words_notes_from_the_periods() {
        let span = 98_400_000_000; // 98.4 s, the shipped ext4 traces
        let w = fstrim_warning(&[DAY_NS, 7 * DAY_NS], span).unwrap();
        assert!(w.starts_with("no fstrim period fits in the trace"), "{w}");
        assert!(w.contains("98.400 s") && w.contains("daily, weekly") && w.contains("those rows are"), "{w}");
        assert!(w.contains("--fstrim-periods 9840ms,32800ms"), "{w}");
        let w = fstrim_warning(&[10_000_000_000, DAY_NS], span).unwrap();
        assert!(w.starts_with("some fstrim periods never run") && w.contains("(fstrim daily)"), "{w}");
        assert_eq!(fstrim_warning(&[10_000_000_000], span), None);
        let note = periods_note(&[10_000_000_000, DAY_NS], span);
        assert!(note.contains("sends them every 10s / daily of trace time"), "{note}");
        assert!(!note.contains("every day or week"), "{note}");
    }

    #[test]
    fn trim_modes_parse() {
        assert_eq!(parse_trims("as-recorded").unwrap(), TrimHandling::AsRecorded);
        assert_eq!(parse_trims("fstrim:1d").unwrap(), TrimHandling::Periodic { period_ns: DAY_NS });
        assert_eq!(parse_trims("fstrim:10s").unwrap(), TrimHandling::Periodic { period_ns: 10_000_000_000 });
        assert!(parse_trims("fstrim:").is_err());
        let e = parse_trims("fstrim:10").unwrap_err().to_string();
        assert!(e.contains("10 has no unit") && e.contains("10s"), "{e}");
        assert!(parse_trims("sometimes").unwrap_err().to_string().contains("fstrim:PERIOD"));
    }
}
