//! fio job files as workloads: one job (plus `[global]`) of a plain fio job file becomes a
//! [`WorkloadConfig`], so `trimlab run --fio JOB.fio` runs what a fio user already wrote.
//!
//! Only options with a faithful trimlab counterpart are accepted; every other option is an
//! error naming it with `file:line`, so a job never runs with a silently different meaning.
//! A few options that change nothing in a simulation (`ioengine`, `direct`, `filename`, ...)
//! are ignored and reported back to the caller. The mapping is documented in docs/config.md
//! ("fio job files"); fio's own semantics are from the fio HOWTO (fio.readthedocs.io,
//! "Job file parameters").

use crate::config::{AccessPattern, Volume, WorkloadConfig};
use std::fmt;
use trimlab_sim::{ByteSize, DurationNs};

/// A problem in a fio job file, with where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FioError {
    pub origin: String,
    pub line: usize,
    pub message: String,
}

impl fmt::Display for FioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.origin, self.line, self.message)
    }
}

impl std::error::Error for FioError {}

/// The workload and what the import did not use.
#[derive(Clone, Debug, PartialEq)]
pub struct FioJob {
    /// The job section's name (`[name]`).
    pub name: String,
    pub workload: WorkloadConfig,
    /// Options accepted but without effect in a simulation, as `file:line: option`.
    pub ignored: Vec<String>,
}

/// The options we map; listed in errors so a user sees what is possible.
pub const SUPPORTED: &str = "rw (write, randwrite, read, randread, rw, readwrite, randrw, trim, randtrim, trimwrite), bs, size, offset, io_size, iodepth, number_ios, rwmixread, rwmixwrite, random_distribution (random, zipf:THETA), thinktime, numjobs=1";

/// Options that have no effect on a simulated drive (no files, no page cache, no engine).
const IGNORED: &[&str] = &[
    "name",
    "description",
    "ioengine",
    "direct",
    "buffered",
    "filename",
    "group_reporting",
    "thread",
    "randrepeat",
    "norandommap",
];

/// `rw=` values as (random?, read share, trim share); rwmixread overrides the read share of
/// the mixed modes.
fn rw_mode(value: &str) -> Option<(bool, f64, f64)> {
    Some(match value {
        "write" => (false, 0.0, 0.0),
        "randwrite" => (true, 0.0, 0.0),
        "read" => (false, 1.0, 0.0),
        "randread" => (true, 1.0, 0.0),
        "rw" | "readwrite" => (false, 0.5, 0.0),
        "randrw" => (true, 0.5, 0.0),
        "trim" => (false, 0.0, 1.0),
        "randtrim" => (true, 0.0, 1.0),
        // fio trims a block and then writes it; trimlab mixes the two in equal shares.
        "trimwrite" => (false, 0.0, 0.5),
        _ => return None,
    })
}

/// Parses a fio size: a number with an optional k/m/g/t suffix (fio's default `kb_base=1024`
/// makes them all powers of 1024, as do `KiB`...; `KB` is 1000 only with `kb_base=1000`, which
/// we do not support, so we read it as 1024 like fio).
fn fio_size(value: &str) -> Option<u64> {
    let v = value.trim();
    let lower = v.to_ascii_lowercase();
    let (digits, mult) = match lower.trim_end_matches(['b', 'i']).char_indices().last() {
        Some((i, 'k')) => (&v[..i], 1u64 << 10),
        Some((i, 'm')) => (&v[..i], 1 << 20),
        Some((i, 'g')) => (&v[..i], 1 << 30),
        Some((i, 't')) => (&v[..i], 1 << 40),
        _ => (lower.trim_end_matches('b'), 1),
    };
    digits.trim().parse::<u64>().ok()?.checked_mul(mult)
}

/// fio times without a unit are microseconds for `thinktime` (fio HOWTO).
fn fio_time_us(value: &str) -> Option<u64> {
    let v = value.trim();
    if let Ok(us) = v.parse::<u64>() {
        // The bound every config duration has (a year), so bare microseconds cannot pass it.
        return us.checked_mul(1000).filter(|&ns| ns <= DurationNs::MAX_NS);
    }
    DurationNs::parse(v).ok().map(|d| d.0)
}

/// Imports the single job of a fio job file. `base` supplies every key fio has no option for
/// (precondition, hot/cold shares, flushes ...).
pub fn parse_fio_job(text: &str, origin: &str, base: &WorkloadConfig) -> Result<FioJob, FioError> {
    let (name, options) = read_job(text, origin)?;
    let mut w = base.clone();
    let mut shape = Shape::default();
    let mut ignored = Vec::new();
    for (line, key, value) in &options {
        let opt = FioOption { origin, line: *line, key, value: value.as_deref() };
        if !(apply_size(&opt, &mut w)? || apply_shape(&opt, &mut shape)?) {
            if !IGNORED.contains(&key.as_str()) {
                return Err(opt.err(format!(
                    "fio option `{key}` is not supported by trimlab (supported: {SUPPORTED}; ignored: {})",
                    IGNORED.join(", ")
                )));
            }
            ignored.push(format!("{origin}:{line}: {key}"));
        }
    }
    shape.finish(&mut w).map_err(|message| FioError { origin: origin.to_owned(), line: 1, message })?;
    Ok(FioJob { name, workload: w, ignored })
}

/// (line, key, value) of one option line.
type OptionLine = (usize, String, Option<String>);

/// The job's name and the options of `[global]` then the job, in file order: later settings
/// win, as in fio.
fn read_job(text: &str, origin: &str) -> Result<(String, Vec<OptionLine>), FioError> {
    let err = |line: usize, message: String| FioError { origin: origin.to_owned(), line, message };
    let mut job_name: Option<(String, usize)> = None;
    let mut section: Option<String> = None;
    let mut options = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            let name = rest
                .strip_suffix(']')
                .ok_or_else(|| err(line_no, format!("section header {line:?} has no closing ']'")))?
                .trim()
                .to_owned();
            if name != "global" {
                if let Some((first, at)) = &job_name {
                    return Err(err(
                        line_no,
                        format!("a second job [{name}] (the first is [{first}] at line {at}); trimlab runs one job, put each in its own file"),
                    ));
                }
                job_name = Some((name.clone(), line_no));
            }
            section = Some(name);
            continue;
        }
        if section.is_none() {
            return Err(err(line_no, format!("option {line:?} before any [section]")));
        }
        let (key, value) = match line.split_once('=') {
            Some((k, v)) => (k.trim().to_owned(), Some(v.trim().to_owned())),
            None => (line.to_owned(), None),
        };
        options.push((line_no, key, value));
    }
    let (name, _) =
        job_name.ok_or_else(|| err(text.lines().count().max(1), "no job section (only [global])".into()))?;
    Ok((name, options))
}

/// One option line being applied, for its errors.
struct FioOption<'a> {
    origin: &'a str,
    line: usize,
    key: &'a str,
    value: Option<&'a str>,
}

impl FioOption<'_> {
    fn err(&self, message: String) -> FioError {
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

    /// A fio size, or the error `what`.
    fn size(&self, example: &str, what: &str) -> Result<u64, FioError> {
        let v = self.need(example)?;
        fio_size(&v).ok_or_else(|| self.bad(&v, what))
    }

    fn whole_number<T: std::str::FromStr>(&self) -> Result<T, FioError> {
        let v = self.need("a number")?;
        v.parse().map_err(|_| self.bad(&v, "expected a whole number"))
    }
}

/// What the options say about the mix and the access pattern, and the sizes that decide how
/// long the job runs: combined only at the end, since fio lets later lines override earlier.
#[derive(Default)]
struct Shape {
    rw: Option<(bool, f64, f64)>,
    read_mix: Option<f64>,
    distribution: Option<Option<f64>>,
    size: Option<u64>,
    io_size: Option<u64>,
}

/// Block size, region, depth and counts. Returns whether `opt` was one of them.
fn apply_size(opt: &FioOption, w: &mut WorkloadConfig) -> Result<bool, FioError> {
    match opt.key {
        "bs" | "blocksize" => {
            let what = "expected one size like 4k or 128k (per-direction lists like 4k,8k are not supported)";
            w.block_bytes = ByteSize(opt.size("a block size like 4k", what)?);
        }
        "offset" => w.region_offset = ByteSize(opt.size("a size like 1g", "expected a size like 1g")?),
        "iodepth" => w.queue_depth = opt.whole_number()?,
        "number_ios" => w.ops = Some(opt.whole_number()?),
        "thinktime" => {
            let v = opt.need("a time; bare numbers are microseconds as in fio")?;
            let ns =
                fio_time_us(&v).ok_or_else(|| opt.bad(&v, "expected a time like 100 (us), 2ms or 1s"))?;
            w.think_time = DurationNs(ns);
        }
        "numjobs" => {
            let v = opt.need("1")?;
            if v != "1" {
                return Err(opt.bad(&v, "several jobs are not supported; use iodepth for concurrency"));
            }
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// The mode, mix, distribution and sizes, kept in `shape`. Returns whether `opt` was one of them.
fn apply_shape(opt: &FioOption, shape: &mut Shape) -> Result<bool, FioError> {
    match opt.key {
        "rw" | "readwrite" => {
            let v = opt.need("a mode")?;
            // fio allows "randwrite:8" (an offset modifier); we do not.
            shape.rw = Some(rw_mode(&v).ok_or_else(|| {
                opt.bad(&v, "unsupported mode (accepted: write, randwrite, read, randread, rw, readwrite, randrw, trim, randtrim, trimwrite)")
            })?);
        }
        "size" => {
            let what = "expected a size like 512m or 8g (percentages are not supported)";
            shape.size = Some(opt.size("a size like 1g", what)?);
        }
        "io_size" | "io_limit" => {
            shape.io_size = Some(opt.size("a size like 8g", "expected a size like 8g")?)
        }
        "rwmixread" | "rwmixwrite" => {
            let v = opt.need("a percentage")?;
            let pct: u32 =
                v.parse().ok().filter(|p| *p <= 100).ok_or_else(|| opt.bad(&v, "expected 0..=100"))?;
            let read = if opt.key == "rwmixread" { pct } else { 100 - pct };
            shape.read_mix = Some(f64::from(read) / 100.0);
        }
        "random_distribution" => {
            let v = opt.need("random or zipf:THETA")?;
            shape.distribution = Some(if v == "random" {
                None
            } else if let Some(theta) = v.strip_prefix("zipf:") {
                let t = theta.parse::<f64>().ok().filter(|t| *t > 0.0 && t.is_finite());
                Some(t.ok_or_else(|| opt.bad(&v, "zipf needs a positive theta, e.g. zipf:1.2"))?)
            } else {
                return Err(opt.bad(&v, "unsupported distribution (accepted: random, zipf:THETA)"));
            });
        }
        _ => return Ok(false),
    }
    Ok(true)
}

impl Shape {
    /// Sets the pattern, the mix and the region, and how long the job runs.
    fn finish(self, w: &mut WorkloadConfig) -> Result<(), String> {
        let (random, read, trim) = self.rw.unwrap_or((false, 1.0, 0.0)); // fio's default rw is read
        w.pattern = match (random, self.distribution) {
            (false, _) => AccessPattern::Sequential,
            (true, Some(Some(theta))) => {
                w.zipf_theta = theta;
                AccessPattern::Zipf
            }
            (true, _) => AccessPattern::UniformRandom,
        };
        w.trim_fraction = trim;
        w.read_fraction =
            if trim > 0.0 { 0.0 } else { self.read_mix.filter(|_| read > 0.0 && read < 1.0).unwrap_or(read) };
        if let Some(s) = self.size {
            w.region_bytes = Some(ByteSize(s));
        }
        // fio moves `io_size` (default: `size`) bytes per job; trimlab's target counts writes, so
        // the write share of that volume is what the run writes, unless `number_ios` bounds it.
        if let Some(total) = self.io_size.or(self.size) {
            let write_share = 1.0 - w.read_fraction - w.trim_fraction;
            if write_share > 0.0 {
                w.writes = Volume::Bytes((total as f64 * write_share).round() as u64);
            } else if w.ops.is_none() {
                w.ops = Some(total / w.block_bytes.0.max(1));
            }
        } else if w.read_fraction + w.trim_fraction >= 1.0 && w.ops.is_none() {
            return Err(
                "a read-only or trim-only job needs size, io_size or number_ios to know when it ends".into(),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn import(text: &str) -> Result<FioJob, FioError> {
        parse_fio_job(text, "job.fio", &WorkloadConfig::default())
    }

    #[test]
    fn a_random_write_job_maps_every_option() {
        let job = import(
            "; steady random writes\n[global]\nioengine=libaio\ndirect=1\nbs=16k\n\n[rand]\nrw=randwrite\nsize=1g\niodepth=8\nthinktime=50\nrandom_distribution=zipf:1.2\n",
        )
        .unwrap();
        let w = &job.workload;
        assert_eq!(job.name, "rand");
        assert_eq!(w.pattern, AccessPattern::Zipf);
        assert_eq!(w.zipf_theta, 1.2);
        assert_eq!(w.block_bytes, ByteSize(16 << 10));
        assert_eq!(w.region_bytes, Some(ByteSize(1 << 30)));
        assert_eq!(w.writes, Volume::Bytes(1 << 30));
        assert_eq!(w.queue_depth, 8);
        assert_eq!(w.think_time, DurationNs(50_000), "bare thinktime is microseconds in fio");
        assert_eq!(job.ignored, ["job.fio:3: ioengine", "job.fio:4: direct"]);
    }

    #[test]
    fn mixed_and_trim_modes() {
        let w = import("[j]\nrw=randrw\nrwmixread=70\nsize=64m\n").unwrap().workload;
        assert_eq!((w.pattern, w.read_fraction), (AccessPattern::UniformRandom, 0.7));
        assert_eq!(w.writes, Volume::Bytes(((64u64 << 20) as f64 * 0.3).round() as u64));
        let w = import("[j]\nrw=randtrim\nbs=64k\nsize=64m\n").unwrap().workload;
        assert_eq!((w.trim_fraction, w.ops), (1.0, Some(1024)));
        let w = import("[j]\nrw=trimwrite\nnumber_ios=500\n").unwrap().workload;
        assert_eq!((w.pattern, w.trim_fraction, w.ops), (AccessPattern::Sequential, 0.5, Some(500)));
        let w = import("[j]\nrw=randwrite\nrwmixwrite=20\nsize=1m\n").unwrap().workload;
        assert_eq!(w.read_fraction, 0.0, "rwmix only applies to mixed modes");
    }

    #[test]
    fn an_unsupported_option_is_named_with_file_and_line() {
        let e = import("[global]\nbs=4k\n[j]\nrw=randwrite\nverify=crc32c\n").unwrap_err();
        assert_eq!((e.origin.as_str(), e.line), ("job.fio", 5));
        let text = e.to_string();
        assert!(text.starts_with("job.fio:5: fio option `verify` is not supported"), "{text}");
        assert!(text.contains("random_distribution"), "the message lists what is supported: {text}");
    }

    #[test]
    fn bad_values_and_shapes_are_errors() {
        let e = import("[j]\nrw=randappend\n").unwrap_err();
        assert!(e.line == 2 && e.message.contains("randappend") && e.message.contains("trimwrite"), "{e}");
        let e = import("[j]\nbs=4k,8k\n").unwrap_err();
        assert!(e.message.contains("4k,8k"), "{e}");
        let e = import("[a]\nrw=write\n[b]\nrw=read\n").unwrap_err();
        assert!(e.line == 3 && e.message.contains("second job"), "{e}");
        let e = import("[j]\nnumjobs=4\n").unwrap_err();
        assert!(e.message.contains("numjobs=4"), "{e}");
        let e = import("[j]\nrw=randread\n").unwrap_err();
        assert!(e.message.contains("needs size"), "{e}");
        let e = import("[global]\nbs=4k\n").unwrap_err();
        assert!(e.message.contains("no job section"), "{e}");
    }

    #[test]
    fn fio_sizes() {
        assert_eq!(fio_size("4k"), Some(4096));
        assert_eq!(fio_size("4K"), Some(4096));
        assert_eq!(fio_size("4KiB"), Some(4096));
        assert_eq!(fio_size("1g"), Some(1 << 30));
        assert_eq!(fio_size("512"), Some(512));
        assert_eq!(fio_size("lots"), None);
        assert_eq!(fio_size("16777216t"), None, "2^64 bytes");
        assert_eq!(fio_time_us("31536000000000"), Some(DurationNs::MAX_NS), "365 days in us");
        assert_eq!(fio_time_us("31536000000001"), None);
        assert_eq!(fio_time_us("366d"), None);
    }
}
