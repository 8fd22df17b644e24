//! One fio job's options applied to a stream: the mode, mix, sizes, distribution and ends,
//! collected first (fio lets a later line override an earlier one) and combined at the end.

use super::units::{fio_bool, fio_size, fio_size_or_percent, fio_time, FioSize};
use super::{FioError, SUPPORTED};
use crate::config::{AccessPattern, AccessZone, BlockShare, RateProcess, WorkloadConfig};
use trimlab_sim::{ByteSize, DurationNs};

/// Options that have no effect on a simulated drive (no files, no page cache, no engine, no
/// logs, no CPU placement).
pub const IGNORED: &[&str] = &[
    "name",
    "description",
    "ioengine",
    "direct",
    "buffered",
    "filename",
    "directory",
    "group_reporting",
    "new_group",
    "thread",
    "threads",
    "write_lat_log",
    "write_bw_log",
    "write_iops_log",
    "log_avg_msec",
    "log_offset",
    "log_prio",
    "per_job_logs",
    "prio",
    "prioclass",
    "cmdprio_percentage",
    "cmdprio_class",
    "numa_cpu_nodes",
    "numa_mem_policy",
    "cpus_allowed",
    "io_submit_mode",
    "iodepth_batch",
    "iodepth_batch_complete",
    "invalidate",
    "randrepeat",
    "allrandrepeat",
    "clocksource",
    "blockalign",
    // The data's content: the modelled drives neither compress nor deduplicate.
    "dedupe_percentage",
    "dedupe_mode",
    "dedupe_global",
    "dedupe_working_set_percentage",
    "buffer_compress_percentage",
    "buffer_compress_chunk",
    "compress_percentage",
    "compress_chunk",
    "refill_buffers",
    "scramble_buffers",
    "zero_buffers",
    "buffer_pattern",
    // Thresholds fio fails a job below; they do not shape its I/O.
    "rate_min",
    "rate_iops_min",
    "rate_cycle",
];

/// Options fio has that trimlab does not model, with what to use instead.
const EQUIVALENTS: &[(&str, &str)] = &[
    ("verify", "trimlab keeps no data to verify; remove the verify options"),
    ("rate_ignore_thinktime", "thinktime and the rate always both apply; drop one of them"),
    ("exitall", "jobs are not stopped by another's end; bound each with runtime or number_ios"),
    ("fill_device", "use size=100% (with rw=write) to fill the device"),
    ("nrfiles", "several files are not modelled; use size, or a file-level [workload] on host.fs = \"ext4\""),
    ("zonemode", "zoned devices are not modelled; drop zonemode to run the job on a conventional drive, or give each zone's range as its own job with offset and size"),
    ("latency_target", "fio's search for the deepest queue within a latency target is not modelled; set iodepth (trimlab reports latency percentiles)"),
    ("continue_on_error", "trimlab injects no I/O errors; remove it"),
    ("percentage_random", "a sequential/random mix is not modelled; use two jobs without stonewall"),
    ("startdelay", "delayed starts are not modelled; use a [[phase]] kind = \"idle\" before a workload phase"),
    ("flow", "flow control between jobs is not modelled; use stonewall"),
];

/// `rw=` values: (random?, read share, trim share, trim then write?).
fn rw_mode(value: &str) -> Option<(bool, f64, f64, bool)> {
    Some(match value {
        "write" => (false, 0.0, 0.0, false),
        "randwrite" => (true, 0.0, 0.0, false),
        "read" => (false, 1.0, 0.0, false),
        "randread" => (true, 1.0, 0.0, false),
        "rw" | "readwrite" => (false, 0.5, 0.0, false),
        "randrw" => (true, 0.5, 0.0, false),
        "trim" => (false, 0.0, 1.0, false),
        "randtrim" => (true, 0.0, 1.0, false),
        "trimwrite" => (false, 0.0, 0.0, true),
        "randtrimwrite" => (true, 0.0, 0.0, true),
        _ => return None,
    })
}

/// fio's `rw=MODE:N`: on a sequential mode a size skipped after each command (negative goes
/// backwards: ddir_seq_add), on a random one how many commands share one drawn offset
/// (ddir_seq_nr).
#[derive(Clone, Copy, Debug, PartialEq)]
enum RwModifier {
    Skip(i64),
    Run(u32),
}

fn rw_modifier(opt: &FioOption, v: &str, n: &str, random: bool) -> Result<RwModifier, FioError> {
    if random {
        return n.trim().parse::<u32>().ok().filter(|n| *n > 0).map(RwModifier::Run).ok_or_else(|| {
            opt.bad(v, "a random mode's :N is how many commands share a drawn offset, a whole number >= 1")
        });
    }
    let (sign, size) = n.trim().strip_prefix('-').map_or((1, n), |rest| (-1, rest));
    fio_size(size).and_then(|b| i64::try_from(b).ok()).map(|b| RwModifier::Skip(sign * b)).ok_or_else(|| {
        opt.bad(v, "a sequential mode's :N is a size skipped after each command, like write:64k or read:-8k")
    })
}

/// `random_distribution=`.
#[derive(Clone, Debug, PartialEq)]
enum Distribution {
    Random,
    Zipf(f64),
    Pareto(f64),
    Normal(f64),
    Zoned(Vec<AccessZone>),
}

/// One option line being applied, for its errors.
pub struct FioOption<'a> {
    pub origin: &'a str,
    pub line: usize,
    pub key: &'a str,
    pub value: Option<&'a str>,
}

impl FioOption<'_> {
    pub fn err(&self, message: String) -> FioError {
        FioError { origin: self.origin.to_owned(), line: self.line, message }
    }

    /// The value, or an error saying the option needs `what`.
    fn need(&self, what: &str) -> Result<String, FioError> {
        let key = self.key;
        self.value
            .map(str::to_owned)
            .ok_or_else(|| self.err(format!("fio option `{key}` needs a value ({what})")))
    }

    fn bad(&self, v: &str, what: &str) -> FioError {
        self.err(format!("fio option `{}={v}`: {what}", self.key))
    }

    fn size(&self, what: &str) -> Result<u64, FioError> {
        let v = self.need(what)?;
        fio_size(&v).ok_or_else(|| self.bad(&v, &format!("expected {what}")))
    }

    /// A request size: a size, a positive whole number of 512-byte sectors (the device's unit;
    /// checked here so the error names the job file's line, not the config key it becomes).
    fn block_size(&self, what: &str) -> Result<u64, FioError> {
        let bytes = self.size(what)?;
        match bytes > 0 && bytes.is_multiple_of(512) {
            true => Ok(bytes),
            false => Err(self.bad(
                self.value.unwrap_or(""),
                "a block size must be a positive multiple of 512 bytes (whole sectors), like 4k",
            )),
        }
    }

    fn size_or_percent(&self) -> Result<FioSize, FioError> {
        let v = self.need("a size like 1g or a percentage like 50%")?;
        fio_size_or_percent(&v)
            .ok_or_else(|| self.bad(&v, "expected a size like 1g or a percentage 1..=100 like 50%"))
    }

    fn number<T: std::str::FromStr>(&self) -> Result<T, FioError> {
        let v = self.need("a number")?;
        v.parse().map_err(|_| self.bad(&v, "expected a whole number"))
    }

    fn time(&self, bare_unit_ns: u64, bare: &str) -> Result<u64, FioError> {
        let v = self.need("a time")?;
        fio_time(&v, bare_unit_ns).ok_or_else(|| {
            self.bad(
                &v,
                &format!("expected a time like 60 ({bare}), 500ms, 2m (minutes) or 1h, at most a year"),
            )
        })
    }

    /// fio's per-direction list `read,write,trim`; a blank entry is 0 (no limit), a missing
    /// one takes the last given.
    fn per_direction<T: Default>(&self, parse: impl Fn(&str) -> Option<T>) -> Result<Vec<T>, FioError> {
        let v = self.need("a value, or read,write,trim values")?;
        v.split(',')
            .take(3)
            .map(|part| if part.trim().is_empty() { Some(T::default()) } else { parse(part.trim()) })
            .collect::<Option<Vec<T>>>()
            .ok_or_else(|| {
                self.bad(&v, "expected one value or read,write,trim values (a blank one is unlimited)")
            })
    }

    fn flag(&self) -> Result<bool, FioError> {
        fio_bool(self.value).ok_or_else(|| self.bad(self.value.unwrap_or(""), "expected 0 or 1"))
    }
}

/// What a job's options say, combined only at the end.
#[derive(Default)]
pub struct Shape {
    rw: Option<(bool, f64, f64, bool)>,
    modifier: Option<RwModifier>,
    read_mix: Option<f64>,
    distribution: Option<Distribution>,
    size: Option<FioSize>,
    /// One file's size: the region, with `size` then only the default `io_size` (fio).
    filesize: Option<FioSize>,
    io_size: Option<u64>,
    offset: Option<FioSize>,
    pub offset_increment: Option<FioSize>,
    time_based: bool,
    runtime_ns: Option<u64>,
    pub ramp_ns: Option<u64>,
    loops: Option<u64>,
    norandommap: bool,
    pub randseed: Option<u64>,
    split: Option<Vec<BlockShare>>,
    pub numjobs: Option<u32>,
    pub stonewall: bool,
    pub wait_for: Option<String>,
    pub steady: FioSteady,
}

/// fio's steady-state options as written (`ss=`, `ss_dur`, `ss_ramp`, `ss_interval`); the
/// group's rule is made from them when the jobs are grouped.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FioSteady {
    /// `steadystate=` / `ss=`: fio's criterion, e.g. `iops_slope:0.3%`.
    pub criterion: Option<String>,
    /// `steadystate_duration` / `ss_dur`: the rolling window (0, fio's default, disables it).
    pub dur_ns: Option<u64>,
    /// `steadystate_ramp_time` / `ss_ramp`: time before data collection begins.
    pub ramp_ns: Option<u64>,
    /// `steadystate_check_interval` / `ss_interval`: one sample per interval (default 1 s).
    pub interval_ns: Option<u64>,
}

/// A group's steady-state rule in rounds of `interval_ns` of simulated time.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupSteady {
    pub criterion: String,
    /// Samples in the rolling window: `ss_dur / ss_interval` (fio's `intervals`).
    pub window: u32,
    /// Samples before the first one judged: fio records from one second after `ss_ramp`.
    pub ramp: u32,
    pub interval_ns: u64,
}

impl FioSteady {
    pub fn is_set(&self) -> bool {
        *self != FioSteady::default()
    }

    /// The rule in rounds, or why the options cannot make one; `None` when fio would not check
    /// (no `ss_dur`, or 0).
    pub fn rule(&self) -> Result<Option<GroupSteady>, String> {
        let dur = match self.dur_ns {
            Some(d) if d > 0 => d,
            _ => return Ok(None),
        };
        let criterion =
            self.criterion.clone().ok_or("ss_dur without ss= (fio's criterion, e.g. ss=iops:10%)")?;
        trimlab_sim::steady_state::fio_criterion(&criterion).map_err(|e| format!("ss={criterion}: {e}"))?;
        let interval = self.interval_ns.unwrap_or(1_000_000_000);
        let window = u32::try_from(dur / interval).unwrap_or(u32::MAX);
        if window < 2 {
            return Err(format!(
                "ss_dur ({} ms) must span at least two ss_interval samples ({} ms each)",
                dur / 1_000_000,
                interval / 1_000_000
            ));
        }
        // steadystate.c: data is recorded from one second after ss_ramp has elapsed.
        let ramp = match self.ramp_ns {
            Some(r) if r > 0 => u32::try_from((r + 1_000_000_000).div_ceil(interval)).unwrap_or(u32::MAX),
            _ => 0,
        };
        Ok(Some(GroupSteady { criterion, window, ramp, interval_ns: interval }))
    }
}

/// Applies one option to the stream `w` or the `shape`. Returns false for an option that is
/// neither supported nor ignored.
pub fn apply(opt: &FioOption, w: &mut WorkloadConfig, shape: &mut Shape) -> Result<bool, FioError> {
    if let Some((_, instead)) =
        EQUIVALENTS.iter().find(|(k, _)| opt.key == *k || opt.key.starts_with(&format!("{k}_")))
    {
        return Err(opt.err(format!("fio option `{}` is not supported by trimlab: {instead}", opt.key)));
    }
    Ok(apply_size(opt, w)? || apply_shape(opt, shape)? || apply_schedule(opt, shape)?)
}

/// Block size, depth, counts and think time, straight into the stream.
fn apply_size(opt: &FioOption, w: &mut WorkloadConfig) -> Result<bool, FioError> {
    match opt.key {
        "bs" | "blocksize" => {
            w.block_bytes =
                ByteSize(opt.block_size(
                    "one size like 4k or 128k (per-direction lists like 4k,8k are not supported)",
                )?);
        }
        "bsrange" | "blocksize_range" => {
            let v = opt.need("a range like 4k-4k")?;
            let (lo, hi) = v.split_once('-').ok_or_else(|| opt.bad(&v, "expected a range like 4k-16k"))?;
            match (fio_size(lo), fio_size(hi)) {
                (Some(lo), Some(hi)) if lo == hi && lo > 0 && lo.is_multiple_of(512) => {
                    w.block_bytes = ByteSize(lo)
                }
                (Some(lo), Some(hi)) if lo == hi => {
                    return Err(
                        opt.bad(&v, "a block size must be a positive multiple of 512 bytes, like 4k-4k")
                    )
                }
                _ => {
                    return Err(opt
                        .bad(&v, "only a single size (4k-4k) is supported; use bssplit for a mix of sizes"))
                }
            }
        }
        "iodepth" => w.queue_depth = opt.number()?,
        "number_ios" => w.ops = Some(opt.number()?),
        "fsync" => w.flush_every = opt.number()?,
        "thinktime" => w.think_time = DurationNs(opt.time(1_000, "microseconds")?),
        "rate_iops" => {
            w.rate_iops =
                Some(opt.per_direction(|v| v.parse::<f64>().ok().filter(|r| r.is_finite() && *r >= 0.0))?)
        }
        "rate" => w.rate_bytes = Some(opt.per_direction(|v| fio_size(v).map(ByteSize))?),
        "rate_process" => {
            w.rate_process = Some(match opt.need("linear or poisson")?.as_str() {
                "linear" => RateProcess::Linear,
                "poisson" => RateProcess::Poisson,
                v => return Err(opt.bad(v, "expected linear or poisson")),
            })
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// Mode, mix, distribution, sizes and block split, kept in `shape`.
fn apply_shape(opt: &FioOption, shape: &mut Shape) -> Result<bool, FioError> {
    match opt.key {
        "rw" | "readwrite" => {
            let v = opt.need("a mode")?;
            let (mode, modifier) = v.split_once(':').map_or((v.as_str(), None), |(m, n)| (m, Some(n)));
            let rw = rw_mode(mode).ok_or_else(|| {
                opt.bad(&v, "unsupported mode (accepted: write, randwrite, read, randread, rw, readwrite, randrw, trim, randtrim, trimwrite, randtrimwrite, each with an optional :N)")
            })?;
            shape.modifier = modifier.map(|n| rw_modifier(opt, &v, n, rw.0)).transpose()?;
            shape.rw = Some(rw);
        }
        "size" => shape.size = Some(opt.size_or_percent()?),
        "filesize" => {
            if opt.value.is_some_and(|v| v.contains('-') || v.contains(':')) {
                return Err(opt.bad(
                    opt.value.unwrap_or(""),
                    "a range of file sizes needs several files, which are not modelled; give one size",
                ));
            }
            shape.filesize = Some(opt.size_or_percent()?);
        }
        "offset" => shape.offset = Some(opt.size_or_percent()?),
        "offset_increment" => shape.offset_increment = Some(opt.size_or_percent()?),
        "io_size" | "io_limit" => shape.io_size = Some(opt.size("a size like 8g")?),
        "rwmixread" | "rwmixwrite" => {
            let v = opt.need("a percentage")?;
            let pct: u32 =
                v.parse().ok().filter(|p| *p <= 100).ok_or_else(|| opt.bad(&v, "expected 0..=100"))?;
            let read = if opt.key == "rwmixread" { pct } else { 100 - pct };
            shape.read_mix = Some(f64::from(read) / 100.0);
        }
        "random_distribution" => shape.distribution = Some(distribution(opt)?),
        "bssplit" => shape.split = Some(bssplit(opt)?),
        "norandommap" => shape.norandommap = opt.flag()?,
        // fio's LFSR visits every block once per period, as the random map does (in another
        // order); the Tausworthe generators draw uniformly as ours does.
        "random_generator" => match opt.need("tausworthe, tausworthe64 or lfsr")?.as_str() {
            "tausworthe" | "tausworthe64" => {}
            "lfsr" => shape.norandommap = false,
            v => return Err(opt.bad(v, "expected tausworthe, tausworthe64 or lfsr")),
        },
        "randseed" => shape.randseed = Some(opt.number()?),
        _ => return Ok(false),
    }
    Ok(true)
}

/// When and how long the job runs, and how many clones.
fn apply_schedule(opt: &FioOption, shape: &mut Shape) -> Result<bool, FioError> {
    match opt.key {
        "runtime" | "timeout" => {
            shape.runtime_ns = Some(opt.time(1_000_000_000, "seconds")?).filter(|&ns| ns > 0)
        }
        "time_based" => shape.time_based = opt.flag()?,
        "ramp_time" => shape.ramp_ns = Some(opt.time(1_000_000_000, "seconds")?).filter(|&ns| ns > 0),
        "loops" => shape.loops = Some(opt.number::<u64>()?.max(1)),
        "numjobs" => {
            let n: u32 = opt.number()?;
            if !(1..=1024).contains(&n) {
                return Err(opt.bad(&n.to_string(), "expected 1..=1024"));
            }
            shape.numjobs = Some(n);
        }
        "steadystate" | "ss" => {
            let v = opt.need("a criterion like iops:10% or bw_slope:1%")?;
            trimlab_sim::steady_state::fio_criterion(&v).map_err(|e| opt.bad(&v, &e))?;
            shape.steady.criterion = Some(v);
        }
        "steadystate_duration" | "ss_dur" => shape.steady.dur_ns = Some(opt.time(1_000_000_000, "seconds")?),
        "steadystate_ramp_time" | "ss_ramp" => {
            shape.steady.ramp_ns = Some(opt.time(1_000_000_000, "seconds")?)
        }
        "steadystate_check_interval" | "ss_interval" => {
            shape.steady.interval_ns = Some(opt.time(1_000_000_000, "seconds")?).filter(|&ns| ns > 0)
        }
        "stonewall" | "wait_for_previous" => shape.stonewall = opt.flag()?,
        "wait_for" => shape.wait_for = Some(opt.need("a job name")?),
        _ => return Ok(false),
    }
    Ok(true)
}

fn distribution(opt: &FioOption) -> Result<Distribution, FioError> {
    let v = opt.need("random, zipf:THETA, pareto:H or normal:DEV")?;
    let (name, params) = v.split_once(':').unwrap_or((&v, ""));
    if name == "zoned" || name == "zoned_abs" {
        return zoned(opt, &v, params, name == "zoned_abs").map(Distribution::Zoned);
    }
    if name == "sequence" {
        return Err(opt.bad(
            &v,
            "the sequence distribution is not supported; use zoned:, zipf:THETA, pareto:H or normal:DEV",
        ));
    }
    if params.contains(':') || params.contains(',') {
        return Err(opt.bad(&v, "a center (zipf:1.2:0.25) and per-direction lists are not supported"));
    }
    let param = params.parse::<f64>().ok().filter(|p| p.is_finite());
    let d = match (name, param) {
        ("random", _) if params.is_empty() => Distribution::Random,
        ("zipf", Some(t)) if t > 0.0 => Distribution::Zipf(t),
        ("pareto", Some(h)) if h > 0.0 && h < 1.0 => Distribution::Pareto(h),
        ("normal", Some(d)) if (0.0..=100.0).contains(&d) => Distribution::Normal(d),
        ("normal", None) if params.is_empty() => Distribution::Normal(0.0),
        ("zipf" | "pareto" | "normal", _) => {
            return Err(opt.bad(&v, "zipf needs a theta > 0 (zipf:1.2), pareto an H in (0, 1) (pareto:0.9), normal a deviation 0..=100 (normal:10)"))
        }
        _ => return Err(opt.bad(&v, "unsupported distribution (accepted: random, zipf:THETA, pareto:H, normal:DEV, zoned:ACCESS/SIZE:..., zoned_abs:ACCESS/BYTES:...)")),
    };
    Ok(d)
}

/// fio's `zoned:50/5:30/15:20/` (access % / size %; blank sizes split the rest evenly, as
/// fio's zone_split_ddir does) or `zoned_abs:50/1g:50/3g` (access % / bytes).
fn zoned(opt: &FioOption, v: &str, params: &str, absolute: bool) -> Result<Vec<AccessZone>, FioError> {
    if params.contains(',') {
        return Err(opt.bad(v, "per-direction lists are not supported; give one list for all directions"));
    }
    let mut zones = Vec::new();
    for part in params.split(':').filter(|p| !p.is_empty()) {
        let (access, size) = part.split_once('/').unwrap_or((part, ""));
        let access: u32 = access
            .parse()
            .ok()
            .filter(|a| *a <= 100)
            .ok_or_else(|| opt.bad(v, &format!("{access:?} is not an access percentage 0..=100")))?;
        let mut zone = AccessZone { access_percent: access, size_percent: None, bytes: None };
        match (absolute, size) {
            (_, "") if absolute => return Err(opt.bad(v, "zoned_abs needs a size for every zone (50/1g)")),
            (_, "") => {}
            (true, size) => {
                zone.bytes = Some(ByteSize(
                    fio_size(size).ok_or_else(|| opt.bad(v, &format!("{size:?} is not a size")))?,
                ))
            }
            (false, size) => {
                zone.size_percent =
                    Some(
                        size.trim_end_matches('%').parse().ok().filter(|p| *p <= 100).ok_or_else(|| {
                            opt.bad(v, &format!("{size:?} is not a size percentage 0..=100"))
                        })?,
                    )
            }
        }
        zones.push(zone);
    }
    let access: u32 = zones.iter().map(|z| z.access_percent).sum();
    let sizes: u32 = zones.iter().filter_map(|z| z.size_percent).sum();
    if zones.is_empty() || access != 100 || sizes > 100 {
        return Err(
            opt.bad(v, "the access percentages must add up to 100 and the size percentages to at most 100")
        );
    }
    let blank = zones.iter().filter(|z| z.size_percent.is_none() && z.bytes.is_none()).count() as u32;
    for z in zones.iter_mut().filter(|z| z.size_percent.is_none() && z.bytes.is_none()) {
        z.size_percent = Some((100 - sizes) / blank);
    }
    Ok(zones)
}

/// fio's `bssplit=4k/10:64k/50:32k/40`; blank shares split the rest evenly.
fn bssplit(opt: &FioOption) -> Result<Vec<BlockShare>, FioError> {
    let v = opt.need("sizes with shares like 4k/10:64k/90")?;
    if v.contains(',') {
        return Err(opt.bad(&v, "per-direction lists are not supported; give one list for all directions"));
    }
    let mut shares = Vec::new();
    for part in v.split(':') {
        let (size, pct) = part.split_once('/').unwrap_or((part, ""));
        let bytes = fio_size(size).ok_or_else(|| opt.bad(&v, &format!("{size:?} is not a size")))?;
        let pct: Option<u32> = if pct.is_empty() {
            None
        } else {
            Some(pct.parse().map_err(|_| opt.bad(&v, &format!("{pct:?} is not a percentage")))?)
        };
        shares.push((bytes, pct));
    }
    let given: u32 = shares.iter().filter_map(|s| s.1).sum();
    let blank = shares.iter().filter(|s| s.1.is_none()).count() as u32;
    if given > 100 || (blank == 0 && given != 100) {
        return Err(opt.bad(&v, "the shares must add up to 100"));
    }
    let rest = 100 - given;
    let (each, mut extra) = (rest.checked_div(blank).unwrap_or(0), rest.checked_rem(blank).unwrap_or(0));
    Ok(shares
        .into_iter()
        .map(|(bytes, pct)| {
            let percent = pct.unwrap_or_else(|| each + u32::from(std::mem::take(&mut extra) > 0));
            BlockShare { bytes: ByteSize(bytes), percent }
        })
        .filter(|s| s.percent > 0)
        .collect())
}

impl Shape {
    /// Sets the stream's pattern, mix, region and ends. `capacity` is the device's (None:
    /// percentages and a job without size are refused); `clone` counts the job's clones from 0
    /// and `thread` the file's streams from 1 (fio's thread_number, which seeds randseed jobs).
    pub fn finish(
        &self,
        w: &mut WorkloadConfig,
        capacity: Option<u64>,
        clone: u32,
        thread: u64,
    ) -> Result<(), String> {
        let (random, read, trim, trim_write) = self.rw.unwrap_or((false, 1.0, 0.0, false)); // fio's default rw is read
        let dist = if random {
            self.distribution.clone().unwrap_or(Distribution::Random)
        } else {
            Distribution::Random
        };
        w.pattern = match (random, dist) {
            (false, _) => AccessPattern::Sequential,
            (true, Distribution::Random) => AccessPattern::UniformRandom,
            (true, Distribution::Zipf(t)) => {
                w.zipf_theta = t;
                AccessPattern::Zipf
            }
            (true, Distribution::Pareto(h)) => {
                w.pareto_h = Some(h);
                AccessPattern::Pareto
            }
            (true, Distribution::Normal(d)) => {
                w.normal_deviation_percent = Some(d);
                AccessPattern::Normal
            }
            (true, Distribution::Zoned(zones)) => {
                w.zones = Some(zones);
                AccessPattern::Zoned
            }
        };
        // fio keeps a random map for uniform random I/O only (it disables it for the others).
        w.random_map = (w.pattern == AccessPattern::UniformRandom && !self.norandommap).then_some(true);
        w.trim_then_write = trim_write.then_some(true);
        match self.modifier {
            Some(RwModifier::Skip(bytes)) if bytes != 0 => w.sequential_skip_bytes = Some(bytes),
            Some(RwModifier::Run(n)) if n > 1 => w.random_run = Some(n),
            _ => {}
        }
        w.trim_fraction = trim;
        w.read_fraction = self.read_mix.filter(|_| read > 0.0 && read < 1.0).unwrap_or(read);
        w.block_split = self.split.clone();
        // toml integers are i64: keep the seed in range.
        w.stream_seed = self.randseed.map(|s| s.wrapping_mul(thread) & (i64::MAX as u64));
        self.finish_region(w, capacity, clone)?;
        self.finish_ends(w, capacity)
    }

    /// `offset` (+ `offset_increment` per clone) and `size`; percentages are of the device.
    fn finish_region(&self, w: &mut WorkloadConfig, capacity: Option<u64>, clone: u32) -> Result<(), String> {
        let percent = |s: Option<FioSize>, key: &str| match (s, capacity) {
            (Some(FioSize::Percent(_)), None) => Err(format!("{key}=N% needs the device's capacity")),
            (Some(s), _) => Ok(Some(s.bytes(capacity.unwrap_or(0)))),
            (None, _) => Ok(None),
        };
        let align = w.block_bytes.0.max(1);
        // Near 2^64 the sum (or its alignment) would wrap to a small offset: refused instead.
        let wraps = || "offset (+ offset_increment x clone) passes 2^64 bytes".to_string();
        let (first, increment) = (
            percent(self.offset, "offset")?.unwrap_or(0),
            percent(self.offset_increment, "offset_increment")?.unwrap_or(0),
        );
        // fio aligns a percentage offset to the block size.
        let offset = increment
            .checked_mul(u64::from(clone))
            .and_then(|inc| inc.checked_add(first))
            .and_then(|o| o.div_ceil(align).checked_mul(align))
            .ok_or_else(wraps)?;
        w.region_offset = ByteSize(offset);
        let region = self.filesize.or(self.size);
        if let Some(size) = percent(region, "size")? {
            // A percentage is of the whole device, capped at what lies after the offset.
            let after = capacity.map_or(u64::MAX, |c| c.saturating_sub(offset));
            let size = if matches!(region, Some(FioSize::Percent(_))) { size.min(after) } else { size };
            w.region_bytes = Some(ByteSize(size / align * align));
        }
        let end = w.region_offset.0.saturating_add(w.region_bytes.map_or(0, |b| b.0));
        if let Some(c) = capacity.filter(|&c| end > c) {
            return Err(format!(
                "offset + size end at {} bytes, past the device's {c} bytes (use size=100%, or a config with a larger [device] logical_bytes)",
                end
            ));
        }
        Ok(())
    }

    /// fio ends a job on `io_size` (default `size`, the region) times `loops`, `number_ios`,
    /// or `runtime`; `time_based` keeps it going until `runtime`.
    fn finish_ends(&self, w: &mut WorkloadConfig, capacity: Option<u64>) -> Result<(), String> {
        w.runtime = self.runtime_ns.map(DurationNs);
        if self.time_based {
            if self.runtime_ns.is_none() {
                return Err("time_based needs runtime (fio would run until stopped)".into());
            }
            return Ok(());
        }
        let region =
            w.region_bytes.map(|b| b.0).or_else(|| capacity.map(|c| c.saturating_sub(w.region_offset.0)));
        // With filesize, size is only the default io_size.
        let size = match (self.filesize, self.size) {
            (Some(_), Some(s)) => Some(s.bytes(capacity.unwrap_or(0))),
            _ => None,
        };
        let volume = self.io_size.or(size).or(region);
        match volume {
            Some(v) => w.io_bytes = Some(ByteSize(v.saturating_mul(self.loops.unwrap_or(1)))),
            None if w.ops.is_none() && w.runtime.is_none() => {
                return Err(format!("a job needs size, io_size, number_ios or runtime to know when it ends (supported: {SUPPORTED})"))
            }
            None => {}
        }
        Ok(())
    }
}
