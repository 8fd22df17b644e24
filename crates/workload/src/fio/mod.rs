//! fio job files as fio runs them: `[global]` plus several jobs in order. Jobs between two
//! `stonewall`s run at once, each as its own stream of the block generator with its own
//! submitters (`iodepth`), pattern and end; `numjobs` clones a job into that many streams.
//! Each such group becomes one `[[phase]]` on the same drive (crates/jobs/src/run.rs builds
//! them), so a fill job followed by a trim job sees the filled drive.
//!
//! Only options with a faithful trimlab counterpart are accepted; every other option is an
//! error naming it with `file:line`, and those fio has an equivalent for say what to use. A few
//! options that change nothing in a simulation (`ioengine`, `direct`, `filename`, ...) are
//! ignored and reported back. The mapping is documented in docs/config.md ("fio job files");
//! fio's semantics are from fio's HOWTO.rst and source (backend.c, io_u.c, lib/gauss.c,
//! lib/zipf.c).

mod options;
mod report;
mod sections;
mod units;

use crate::config::WorkloadConfig;
use crate::script::clip;
pub use options::GroupSteady;
use options::{apply, FioOption, Shape, IGNORED};
use report::apply_report;
pub use report::{ReportOptions, DEFAULT_PERCENTILES, REPORT_ONLY};
use std::fmt;
use trimlab_sim::DurationNs;

/// A problem in a fio job file, with where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FioError {
    pub origin: String,
    pub line: usize,
    pub message: String,
}

impl fmt::Display for FioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let message =
            trimlab_importers::input::clip(&self.message, trimlab_importers::input::MESSAGE_CHARS_MAX);
        write!(f, "{}:{}: {}", self.origin, self.line, message)
    }
}

impl std::error::Error for FioError {}

/// The options we map; listed in errors so a user sees what is possible.
pub const SUPPORTED: &str = "rw (write, randwrite, read, randread, rw, readwrite, randrw, trim, randtrim, trimwrite, randtrimwrite, each with an optional :N), bs, bsrange (one size), bssplit, size, filesize and offset (bytes or %), offset_increment, io_size, loops, iodepth, number_ios, rwmixread, rwmixwrite, random_distribution (random, zipf:THETA, pareto:H, normal:DEV, zoned:A/S:..., zoned_abs:A/BYTES:...), rate, rate_iops, rate_process, norandommap, random_generator, randseed, thinktime, fsync, numjobs, runtime, time_based, ramp_time, steadystate (ss, ss_dur, ss_ramp, ss_interval), stonewall, wait_for";

/// One job of a file as the single workload (the whole file must be one job).
#[derive(Clone, Debug, PartialEq)]
pub struct FioJob {
    /// The job section's name (`[name]`).
    pub name: String,
    pub workload: WorkloadConfig,
    /// Options accepted but without effect in a simulation, as `file:line: option`.
    pub ignored: Vec<String>,
}

/// Jobs that run at once: between two stonewalls (or `wait_for`s).
#[derive(Clone, Debug, PartialEq)]
pub struct FioGroup {
    /// The jobs' names, in file order.
    pub names: Vec<String>,
    /// One stream per job clone.
    pub streams: Vec<WorkloadConfig>,
    /// The streams of the jobs with `ramp_time`, each running for its ramp: they run before
    /// `streams`, which then start afresh (fio's counters restart after the ramp).
    pub ramp: Vec<WorkloadConfig>,
    /// fio's steady-state rule (`ss=` with `ss_dur`): the group runs in rounds of its check
    /// interval until the rule holds over the group's combined figures or `runtime` ends.
    pub steady: Option<GroupSteady>,
    /// How fio reports the group: its first job's reporting options (fio's group_reporting
    /// takes the first job's too).
    pub report: ReportOptions,
    /// The first job's own options as written (fio's JSON "job options").
    pub options: Vec<(String, String)>,
    /// How many jobs the group has, counting clones (fio's "jobs=" of a group).
    pub jobs: usize,
}

/// A whole job file.
#[derive(Clone, Debug, PartialEq)]
pub struct FioFile {
    pub groups: Vec<FioGroup>,
    /// Options without effect, as `file:line: option`, each option once.
    pub ignored: Vec<String>,
    /// The `[global]` options as written (fio's JSON "global options").
    pub global_options: Vec<(String, String)>,
    /// How an option was modelled where that differs from fio in a way a user may notice.
    pub notes: Vec<String>,
}

/// One job section read: the stream of its first clone, and the schedule options.
struct JobSpec {
    name: String,
    line: usize,
    workload: WorkloadConfig,
    shape: Shape,
    report: ReportOptions,
    /// The options written in the job's own section, as written (fio's "job options").
    options: Vec<(String, String)>,
}

/// Reads every job of a fio job file. `base` supplies every key fio has no option for;
/// `capacity_bytes` is the device's (for `size=100%` and jobs without a size). Every option
/// fio has and trimlab does not, and every bad value, is reported in one error (the first
/// names its line); an option set in `[global]` is judged once, not once per job.
pub fn parse_fio_file(
    text: &str,
    origin: &str,
    base: &WorkloadConfig,
    capacity_bytes: Option<u64>,
) -> Result<FioFile, FioError> {
    let mut found = Found::default();
    let mut specs = Vec::new();
    for section in sections::read_sections(text, origin)? {
        let mut w = WorkloadConfig { precondition: crate::Precondition::None, ..base.clone() };
        let mut shape = Shape::default();
        let mut report = ReportOptions::default();
        for (line, key, value) in &section.options {
            let opt = FioOption { origin, line: *line, key, value: value.as_deref() };
            match apply(&opt, &mut w, &mut shape)
                .and_then(|done| Ok(done || apply_report(&opt, &mut report)?))
            {
                Ok(true) => {}
                Ok(false) if IGNORED.contains(&key.as_str()) || REPORT_ONLY.contains(&key.as_str()) => {
                    found.ignore(origin, *line, key)
                }
                Ok(false) => {
                    found.problem(opt.err(format!("fio option `{}` is not supported by trimlab", clip(key))))
                }
                Err(e) => found.problem(e),
            }
        }
        let own = section.own.iter().map(|(_, k, v)| (k.clone(), v.clone().unwrap_or_default())).collect();
        specs.push(JobSpec {
            name: section.name,
            line: section.line,
            workload: w,
            shape,
            report,
            options: own,
        });
    }
    found.error()?;
    let mut file = FioFile {
        groups: Vec::new(),
        ignored: found.ignored,
        notes: Vec::new(),
        global_options: sections::global_options(text),
    };
    group_jobs(&specs, origin, capacity_bytes, &mut file)?;
    Ok(file)
}

/// What reading a file's options found besides the options it maps: the ones ignored (each
/// named once, at its first line) and the problems, all reported together.
#[derive(Default)]
struct Found {
    ignored: Vec<String>,
    ignored_keys: Vec<String>,
    problems: Vec<FioError>,
}

impl Found {
    fn ignore(&mut self, origin: &str, line: usize, key: &str) {
        if !self.ignored_keys.iter().any(|k| k == key) {
            self.ignored_keys.push(key.to_owned());
            self.ignored.push(format!("{origin}:{line}: {key}"));
        }
    }

    /// A problem; a `[global]` line copied into several jobs is one problem.
    fn problem(&mut self, e: FioError) {
        if !self.problems.iter().any(|p| p.line == e.line) {
            self.problems.push(e);
        }
    }

    /// The problems as one error at the first one's line: each on its own line, then what is
    /// supported and ignored when an option is unknown.
    fn error(&mut self) -> Result<(), FioError> {
        let Some(first) = self.problems.first() else { return Ok(()) };
        let mut message = first.message.clone();
        for p in &self.problems[1..] {
            message.push_str(&format!("\n  and {}:{}: {}", p.origin, p.line, p.message));
        }
        if self.problems.iter().any(|p| p.message.ends_with("is not supported by trimlab")) {
            message.push_str(&format!(" (supported: {SUPPORTED}; ignored: {})", IGNORED.join(", ")));
        }
        Err(FioError { message, ..first.clone() })
    }
}

/// Puts the jobs into groups that run at once, cloning each `numjobs` times.
fn group_jobs(
    specs: &[JobSpec],
    origin: &str,
    capacity: Option<u64>,
    file: &mut FioFile,
) -> Result<(), FioError> {
    let err = |line: usize, message: String| FioError { origin: origin.to_owned(), line, message };
    let mut thread = 0u64;
    for (i, spec) in specs.iter().enumerate() {
        let mut new_group = i == 0 || spec.shape.stonewall;
        if let Some(waitee) = &spec.shape.wait_for {
            if !specs[..i].iter().any(|s| &s.name == waitee) {
                return Err(err(
                    spec.line,
                    format!(
                        "wait_for={waitee} names no job before [{}] (fio needs the waitee defined first)",
                        spec.name
                    ),
                ));
            }
            let current = file.groups.last().is_some_and(|g| g.names.contains(waitee));
            if current {
                new_group = true;
                let others = file.groups.last().map_or(0, |g| g.names.len()) > 1;
                if others {
                    file.notes.push(format!("[{}] wait_for={waitee}: runs after every job of [{waitee}]'s group ends (fio starts it when [{waitee}] alone ends)", spec.name));
                }
            }
        }
        if new_group {
            file.groups.push(FioGroup {
                names: Vec::new(),
                streams: Vec::new(),
                ramp: Vec::new(),
                steady: None,
                report: spec.report.clone(),
                options: spec.options.clone(),
                jobs: 0,
            });
        }
        let group = file.groups.last_mut().expect("a group was pushed for the first job");
        group_steady(spec, group, &mut file.notes)
            .map_err(|m| err(spec.line, format!("[{}]: {m}", spec.name)))?;
        group.names.push(spec.name.clone());
        // fio's job limit counts every clone; checked before any is built (numjobs clones
        // of many jobs once took 3.5 GB before a later check of the streams).
        let clones = spec.shape.numjobs.unwrap_or(1);
        if thread + u64::from(clones) > sections::JOBS_MAX as u64 {
            return Err(err(
                spec.line,
                format!(
                    "[{}]: numjobs={clones} makes more than {} jobs in the file, counting clones (fio's own \
                     limit, REAL_MAX_JOBS)",
                    clip(&spec.name),
                    sections::JOBS_MAX
                ),
            ));
        }
        group.jobs += clones as usize;
        for clone in 0..clones {
            thread += 1;
            add_clone(spec, group, capacity, (clone, thread)).map_err(|m| err(spec.line, m))?;
        }
    }
    Ok(())
}

/// Clone `clone` of `spec` (fio's thread number `thread`) as a stream of `group`, and its ramp.
fn add_clone(
    spec: &JobSpec,
    group: &mut FioGroup,
    capacity: Option<u64>,
    (clone, thread): (u32, u64),
) -> Result<(), String> {
    let mut w = spec.workload.clone();
    spec.shape.finish(&mut w, capacity, clone, thread).map_err(|m| format!("[{}]: {m}", spec.name))?;
    if let Some(ramp) = spec.shape.ramp_ns {
        group.ramp.push(WorkloadConfig {
            runtime: Some(DurationNs(ramp)),
            io_bytes: None,
            ops: None,
            ..w.clone()
        });
    }
    group.streams.push(w);
    Ok(())
}

/// Adds `spec`'s steady-state rule to its group: fio judges a reporting group's jobs
/// together (`steadystate_setup` with group_reporting) and refuses a group whose jobs'
/// options differ (`td_steadystate_init`).
fn group_steady(spec: &JobSpec, group: &mut FioGroup, notes: &mut Vec<String>) -> Result<(), String> {
    let rule = spec.shape.steady.rule()?;
    if spec.shape.steady.is_set() && rule.is_none() {
        notes.push(format!("[{}]: ss= without ss_dur (or ss_dur=0) checks nothing, as in fio", spec.name));
    }
    let first = group.names.is_empty();
    if first {
        group.steady = rule;
    } else if group.steady != rule {
        return Err("steadystate options must be consistent within a group of jobs that run at once (fio refuses them too)".into());
    }
    if group.steady.is_some()
        && (!first || spec.shape.numjobs.unwrap_or(1) > 1)
        && !notes.iter().any(|n| n.contains("judged on the group"))
    {
        notes.push(format!(
            "[{}]: steady state is judged on the group's combined IOPS / bandwidth (fio's group_reporting); without group_reporting fio judges each job alone",
            spec.name
        ));
    }
    Ok(())
}

/// Imports a job file of exactly one job (no clones, no ramp) as one workload.
pub fn parse_fio_job(text: &str, origin: &str, base: &WorkloadConfig) -> Result<FioJob, FioError> {
    parse_one(text, origin, base, None)
}

/// [`parse_fio_job`] on a device of `capacity_bytes` (for percentages and jobs without size).
pub fn parse_one(
    text: &str,
    origin: &str,
    base: &WorkloadConfig,
    capacity: Option<u64>,
) -> Result<FioJob, FioError> {
    let names = sections::read_sections(text, origin)?;
    let file = parse_fio_file(text, origin, base, capacity)?;
    match file.groups.as_slice() {
        [g] if g.streams.len() == 1 && g.ramp.is_empty() && g.steady.is_none() => {
            let mut workload = g.streams[0].clone();
            workload.precondition = base.precondition;
            Ok(FioJob { name: g.names[0].clone(), workload, ignored: file.ignored })
        }
        _ => Err(FioError {
            origin: origin.to_owned(),
            line: names.get(1).map_or(1, |s| s.line),
            message: "the file has several jobs, clones, a ramp_time or steady state: run it with `trimlab run --fio`, which makes a phase of each group".into(),
        }),
    }
}

#[cfg(test)]
mod tests;
