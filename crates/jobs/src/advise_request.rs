//! `advise` on what a user already has, as it is: a block trace, a config whose workload is
//! file-level, a fio job file, an strace of a program or a Filebench model, on a device config,
//! a preset or the built-in defaults. The CLI (`trimlab advise`) and the Python module
//! (`trimlab.advise`) both build a [`Request`] and call [`advise`], so they answer alike.
//!
//! A fio job sends block commands of its own (its TRIMs are the application's), so it is
//! answered as a block trace: the job runs once on the device with its commands recorded, and
//! the recording is replayed under each way of handling its discards. An strace and a
//! Filebench model are file-level workloads: they run on the file system once per host TRIM
//! policy, aged and repeated as a config's file workload is.

use crate::advise::life::Life;
use crate::advise::Advice;
use crate::replay::TraceInput;
use crate::trace_options::TraceOptions;
use crate::{parse_config, RunConfig};
use anyhow::{bail, Result};
use std::io::Write;
use std::sync::{Arc, Mutex};
use trimlab_experiments::Progress;

/// What the user brought.
pub enum Brought<'a> {
    /// A block trace: its name and a way to open it once per replay.
    Trace { name: &'a str, open: &'a (dyn Fn() -> Result<TraceInput> + Sync), options: TraceOptions },
    /// A TOML config (its own device and file-level workload).
    Config { text: &'a str, origin: &'a str },
    /// A fio job file's text.
    Fio { text: &'a str, origin: &'a str },
    /// An strace of a program (`strace -f -ttt -o FILE`) and the directory its paths are under.
    Strace { path: &'a str, root: &'a str },
    /// A Filebench model's text.
    Filebench { text: &'a str, origin: &'a str },
}

/// One `advise` question.
pub struct Request<'a> {
    pub brought: Brought<'a>,
    /// The device: a config's text and name (`--device`); `None` for the built-in defaults.
    /// A config brings its own and takes none.
    pub device: Option<(&'a str, &'a str)>,
    /// `--set` overrides, applied to the device config (or to the config brought).
    pub set: &'a [String],
    pub fstrim_periods: &'a [String],
    pub mapping_units: &'a [String],
    /// File-level workloads: aged and repeated (`None`: one run as it is, `--as-is`).
    pub life: Option<Life>,
}

/// A device config naming preset `name` (`--device nvme-qlc`), if `name` is one.
pub fn preset_device_text(name: &str) -> Option<String> {
    let known = trimlab_device::config::preset_list().into_iter().any(|(n, _)| n == name);
    known.then(|| format!("[device]\npreset = {name:?}\n"))
}

/// A trace's (and a fio job's) fstrim periods when none are given: fstrim.timer's weekly and
/// a daily one, in the trace's own time.
pub const TRACE_FSTRIM_PERIODS: [&str; 2] = ["1d", "7d"];

fn trace_periods(given: &[String]) -> Vec<String> {
    if given.is_empty() {
        TRACE_FSTRIM_PERIODS.iter().map(|p| p.to_string()).collect()
    } else {
        given.to_vec()
    }
}

pub fn advise(request: &Request, progress: &dyn Progress) -> Result<Advice> {
    let device = || match request.device {
        Some((text, origin)) => parse_config(text, origin, request.set),
        None => crate::default_config(request.set),
    };
    let file_level = |config: &RunConfig, name: &str| {
        crate::advise::advise_file(
            config,
            name,
            request.fstrim_periods,
            request.mapping_units,
            request.life.as_ref(),
            progress,
        )
    };
    match &request.brought {
        Brought::Trace { name, open, options } => {
            let periods = trace_periods(request.fstrim_periods);
            crate::advise::advise(&device()?, name, open, options, &periods, request.mapping_units, progress)
        }
        Brought::Config { text, origin } => {
            if request.device.is_some() {
                bail!("{origin}: a config brings its own device; --device is for a trace, a fio job, an strace or a Filebench model");
            }
            file_level(&parse_config(text, origin, request.set)?, origin)
        }
        Brought::Strace { path, root } => {
            let (text, origin) = request.device.unwrap_or(("", "<defaults>"));
            let sets = crate::run::strace_sets(path, Some(root), request.device.is_some(), request.set);
            file_level(&parse_config(text, origin, &sets)?, path)
        }
        Brought::Filebench { text, origin } => {
            let mut config = device()?;
            trimlab_scenario::fio_job::with_filebench(
                &mut config,
                text.to_string(),
                origin,
                request.device.is_some(),
            );
            file_level(&config, origin)
        }
        Brought::Fio { text, origin } => advise_fio(request, device()?, text, origin, progress),
    }
}

/// A fio job: run once on the device with its commands recorded, then the recording advised
/// on as a block trace.
fn advise_fio(
    request: &Request,
    device: RunConfig,
    text: &str,
    origin: &str,
    progress: &dyn Progress,
) -> Result<Advice> {
    let recorded = Arc::new(Mutex::new(Vec::new()));
    let sink = SharedBuffer(Arc::clone(&recorded));
    let fio = crate::run::FioJob { text, origin };
    // `false`: the device config's [workload] (its precondition) is not the job's; the job
    // runs on the device as fio finds a new one, as `run --fio JOB` without a config does.
    crate::run::run(device.clone(), false, Some(fio), None, None, &mut (), Some(Box::new(sink)))?;
    let bytes: Arc<[u8]> =
        std::mem::take(&mut *recorded.lock().map_err(|_| anyhow::anyhow!("recording lost"))?).into();
    let name = format!("{origin} (its commands as the model ran the job)");
    let open = move || -> Result<TraceInput> {
        Ok(TraceInput { reader: Box::new(std::io::Cursor::new(Arc::clone(&bytes))), name: name.clone() })
    };
    let options = TraceOptions { format: Some("fio-v3".into()), ..TraceOptions::default() };
    let mut advice = crate::advise::advise(
        &device,
        origin,
        &open,
        &options,
        &trace_periods(request.fstrim_periods),
        request.mapping_units,
        progress,
    )?;
    advice.report.notes.insert(
        0,
        format!("{origin}: the job ran once on the device with its commands recorded (fio iolog v3, as `trimlab run --fio {origin} --record FILE` writes it); each row replays that recording, its TRIMs handled as the row says."),
    );
    Ok(advice)
}

/// The recording's sink: the bytes stay in memory for the replays.
struct SharedBuffer(Arc<Mutex<Vec<u8>>>);

impl Write for SharedBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut v = self.0.lock().map_err(|_| std::io::Error::other("recording lost"))?;
        v.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
