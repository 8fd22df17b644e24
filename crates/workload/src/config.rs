//! The `[workload]` section.

use serde::{Deserialize, Serialize};
use std::fmt;
use trimlab_device::ConfigError;
use trimlab_sim::{ByteSize, DurationNs};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum AccessPattern {
    Sequential,
    #[default]
    UniformRandom,
    /// `hot_access` of operations go to the first `hot_fraction` of the region (the r/f model).
    HotCold,
    /// Page popularity follows Zipf(`zipf_theta`), ranks scattered over the region.
    Zipf,
    /// fio's `random_distribution=pareto:H`: rank = (slots - 1) * u^(ln H / ln(1 - H)),
    /// scattered over the region (`pareto_h`).
    Pareto,
    /// fio's `random_distribution=normal:DEV`: the mean of 12 uniform draws plus a uniform
    /// deviation of `normal_deviation_percent` % of the region, scattered over the region.
    Normal,
    /// fio's `random_distribution=zoned:` / `zoned_abs:`: each of `zones` takes its share of
    /// the operations, uniformly over its own consecutive part of the region.
    Zoned,
}

/// The smallest share of writes in a mix whose phase ends after a volume of writes.
pub const WRITE_SHARE_MIN: f64 = 0.001;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Precondition {
    /// Start from an erased drive.
    None,
    /// Write the region once sequentially.
    Fill,
    /// Fill, then `precondition_writes` of uniform random block writes: GC in steady state.
    #[default]
    Steady,
}

/// An amount of host data: bytes, or a multiple of the device's logical capacity ("5x").
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Volume {
    Bytes(u64),
    Capacity(f64),
}

impl Volume {
    pub const ACCEPTED: &'static str =
        "a multiple of the logical capacity like \"5x\" or a byte size like \"10GiB\"";

    pub fn bytes(self, capacity_bytes: u64) -> u64 {
        match self {
            Volume::Bytes(b) => b,
            Volume::Capacity(x) => (capacity_bytes as f64 * x).round() as u64,
        }
    }

    /// The largest multiple of the capacity a volume may name ("1000000x").
    pub const CAPACITY_MAX: f64 = 1e6;
    /// The most bytes a volume may come to: 1 EiB, so that byte counters (u64) cannot wrap.
    pub const BYTES_MAX: u64 = 1 << 60;

    /// [`Volume::bytes`], or the error when it comes to more than [`Volume::BYTES_MAX`].
    pub fn checked_bytes(self, capacity_bytes: u64) -> Result<u64, String> {
        let bytes = match self {
            Volume::Bytes(b) => b as f64,
            Volume::Capacity(x) => (capacity_bytes as f64 * x).round(),
        };
        if bytes <= Volume::BYTES_MAX as f64 {
            Ok(self.bytes(capacity_bytes))
        } else {
            Err(format!("comes to {bytes:e} bytes, more than the 2^60 bytes (1 EiB) a run may write"))
        }
    }

    /// A bare number is refused: `writes = 5` read as 5 bytes ran a run that wrote nothing.
    fn no_unit(number: impl fmt::Display) -> String {
        format!("{number} has no unit; write \"{number}x\" ({number} times the logical capacity) or a byte size like \"{number}GiB\"")
    }

    pub fn parse(text: &str) -> Result<Volume, String> {
        let t = text.trim();
        if !t.is_empty()
            && t.chars().all(|c| c.is_ascii_digit() || c == '.' || c == '_')
            && t.parse::<f64>() != Ok(0.0)
        {
            return Err(Volume::no_unit(t));
        }
        if let Some(x) = t.strip_suffix('x').or_else(|| t.strip_suffix('X')) {
            return match x.trim().parse::<f64>() {
                Ok(v) if (0.0..=Volume::CAPACITY_MAX).contains(&v) => Ok(Volume::Capacity(v)),
                // Issue 26: "1e30x" was taken and came to u64::MAX bytes, a run without end.
                Ok(v) if v.is_finite() && v > Volume::CAPACITY_MAX => Err(format!(
                    "\"{text}\" is more than {}x the logical capacity, the most a volume may name",
                    Volume::CAPACITY_MAX
                )),
                _ => Err(format!("\"{text}\" is not {}", Volume::ACCEPTED)),
            };
        }
        ByteSize::parse(t)
            .map(|b| Volume::Bytes(b.0))
            .map_err(|_| format!("\"{text}\" is not {}", Volume::ACCEPTED))
    }
}

impl fmt::Display for Volume {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Volume::Bytes(b) => write!(f, "{}", ByteSize(*b)),
            Volume::Capacity(x) => write!(f, "{x}x"),
        }
    }
}

impl Serialize for Volume {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Volume {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(u64),
            Text(String),
        }
        match Raw::deserialize(d).map_err(|_| serde::de::Error::custom(Volume::ACCEPTED))? {
            Raw::Int(0) => Ok(Volume::Bytes(0)),
            Raw::Int(n) => Err(serde::de::Error::custom(Volume::no_unit(n))),
            Raw::Text(t) => Volume::parse(&t).map_err(serde::de::Error::custom),
        }
    }
}

use crate::kind::keys::KindKeys;
/// What drives the stack: the block generator, or a file-level workload on the host file
/// system; the kinds are registered in crates/workload/src/kind/.
pub use crate::kind::spec::WorkloadKind;

fn is_block(kind: &WorkloadKind) -> bool {
    *kind == WorkloadKind::Block
}

/// `[workload]`: the kind, the block generator's keys and the kind's own. Every key has a
/// default; see docs/config.md. Keys that are not the generator's are the kind's, checked
/// against the kind's own declaration when the config is resolved.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WorkloadConfig {
    /// Left out of the serialized form when `block`, so block configs keep their hash.
    #[serde(skip_serializing_if = "is_block")]
    pub kind: WorkloadKind,
    /// The keys of the kind `kind` names, declared in the kind's own file
    /// (crates/workload/src/kind/): every key of the section that is not the generator's.
    #[serde(flatten)]
    pub keys: KindKeys,
    /// The directory of the config file, which a kind's file keys (`strace`) are relative to.
    /// Not a key.
    #[serde(skip)]
    pub dir: Option<std::path::PathBuf>,
    // ----- keys of the block generator -----
    pub pattern: AccessPattern,
    pub hot_fraction: f64,
    pub hot_access: f64,
    pub zipf_theta: f64,
    pub read_fraction: f64,
    /// Share of operations that are TRIMs of `trim_bytes` at a random aligned offset.
    pub trim_fraction: f64,
    pub block_bytes: ByteSize,
    /// Size of each TRIM; defaults to `block_bytes`.
    pub trim_bytes: Option<ByteSize>,
    pub region_offset: ByteSize,
    /// Bytes of the address space the workload touches; defaults to the whole device.
    pub region_bytes: Option<ByteSize>,
    pub queue_depth: u32,
    /// Host write volume of the measured phase.
    pub writes: Volume,
    /// Or a fixed number of operations (takes precedence when set).
    pub ops: Option<u64>,
    /// Every `idle_every` operations all submitters pause for `idle` (0: never).
    pub idle_every: u64,
    pub idle: DurationNs,
    /// Pause of each submitter between a completion and its next command.
    pub think_time: DurationNs,
    pub precondition: Precondition,
    pub precondition_writes: Volume,
    /// A FLUSH every this many writes (0: never).
    pub flush_every: u64,
    // ----- keys of fio's job semantics (crates/workload/src/fio/); all unset by default -----
    /// The stream ends after this many bytes of the directions fio counts (reads + writes of
    /// a read/write mix, else writes, else reads, else TRIMs): fio's `size` / `io_size`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub io_bytes: Option<ByteSize>,
    /// The stream ends this long (simulated) after it starts: fio's `runtime`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime: Option<DurationNs>,
    /// Random offsets cover every block of the region once before any repeats (fio's random
    /// map, on unless `norandommap`); the map restarts when the region is covered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub random_map: Option<bool>,
    /// Block sizes by share of operations (fio's `bssplit`), instead of `block_bytes`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_split: Option<Vec<BlockShare>>,
    /// `pattern = "pareto"`: fio's power H in (0, 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pareto_h: Option<f64>,
    /// `pattern = "normal"`: fio's deviation, 0..=100 % of the region.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub normal_deviation_percent: Option<f64>,
    /// `pattern = "zoned"`: the region's parts, in order, and their shares of operations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zones: Option<Vec<AccessZone>>,
    /// Each block is TRIMmed and then written (fio's `trimwrite`): the region ends written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trim_then_write: Option<bool>,
    /// `pattern = "sequential"`: bytes skipped after each command (fio's `rw=write:112k`);
    /// negative moves backwards (`rw=read:-8k`). A multiple of `block_bytes`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequential_skip_bytes: Option<i64>,
    /// Random patterns: only every Nth command draws a new offset, the others follow the
    /// previous one (fio's `rw=randread:8`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub random_run: Option<u32>,
    /// fio's `rate_iops`: commands per second, one value for every direction or `[read, write,
    /// trim]` (0: that direction unlimited); the stream waits rather than exceed it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_iops: Option<Vec<f64>>,
    /// fio's `rate`: bytes per second, as `rate_iops`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_bytes: Option<Vec<ByteSize>>,
    /// fio's `rate_process`: `"linear"` (default) or `"poisson"` gaps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_process: Option<RateProcess>,
    /// The stream's own random seed (fio's `randseed`), instead of one forked from the run's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_seed: Option<u64>,
    /// Streams that run at once in this phase, each with its own `queue_depth` submitters,
    /// pattern and end (fio's jobs between two stonewalls, and `numjobs` clones); the
    /// section's own generator keys are then unused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jobs: Option<Vec<WorkloadConfig>>,
}

/// One entry of `block_split`: `percent` of the operations are `bytes` long.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlockShare {
    pub bytes: ByteSize,
    pub percent: u32,
}

/// How a rate-limited stream spaces its commands (fio's `rate_process`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RateProcess {
    /// Evenly: the k-th command waits for the bytes before it at the rate.
    Linear,
    /// Exponential gaps with the rate's mean.
    Poisson,
}

/// One part of the region under `pattern = "zoned"`: `access_percent` of the operations land
/// in it, uniformly. Its size is `size_percent` of the region (fio's `zoned`) or `bytes`
/// (fio's `zoned_abs`); the parts follow each other from the region's start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessZone {
    pub access_percent: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_percent: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<ByteSize>,
}

impl Default for WorkloadConfig {
    fn default() -> Self {
        WorkloadConfig {
            kind: WorkloadKind::Block,
            keys: KindKeys::default(),
            dir: None,
            pattern: AccessPattern::UniformRandom,
            hot_fraction: 0.2,
            hot_access: 0.8,
            zipf_theta: 0.99,
            read_fraction: 0.0,
            trim_fraction: 0.0,
            block_bytes: ByteSize(4096),
            trim_bytes: None,
            region_offset: ByteSize(0),
            region_bytes: None,
            queue_depth: 32,
            writes: Volume::Capacity(2.0),
            ops: None,
            idle_every: 0,
            idle: DurationNs(0),
            think_time: DurationNs(0),
            precondition: Precondition::Steady,
            precondition_writes: Volume::Capacity(1.0),
            flush_every: 0,
            io_bytes: None,
            runtime: None,
            random_map: None,
            block_split: None,
            pareto_h: None,
            normal_deviation_percent: None,
            zones: None,
            trim_then_write: None,
            sequential_skip_bytes: None,
            random_run: None,
            rate_iops: None,
            rate_bytes: None,
            rate_process: None,
            stream_seed: None,
            jobs: None,
        }
    }
}

impl WorkloadConfig {
    /// The block generator's keys (every kind's section has them; the rest are the kind's own).
    /// A test holds it to the struct's fields.
    pub const GENERATOR_KEYS: &'static [&'static str] = &[
        "pattern",
        "hot_fraction",
        "hot_access",
        "zipf_theta",
        "read_fraction",
        "trim_fraction",
        "block_bytes",
        "trim_bytes",
        "region_offset",
        "region_bytes",
        "queue_depth",
        "writes",
        "ops",
        "idle_every",
        "idle",
        "think_time",
        "precondition",
        "precondition_writes",
        "flush_every",
        "io_bytes",
        "runtime",
        "random_map",
        "block_split",
        "pareto_h",
        "normal_deviation_percent",
        "zones",
        "trim_then_write",
        "sequential_skip_bytes",
        "random_run",
        "rate_iops",
        "rate_bytes",
        "rate_process",
        "stream_seed",
        "jobs",
    ];

    /// A section of `kind` with its own keys `keys` (the struct its file declares) and the
    /// generator's defaults.
    pub fn of_kind<T: crate::kind::keys::OwnKeys>(kind: WorkloadKind, keys: &T) -> WorkloadConfig {
        WorkloadConfig { kind, keys: KindKeys::of(keys), ..WorkloadConfig::default() }
    }

    /// Checks the section against a device of `capacity_bytes` with `page_bytes` pages.
    pub fn validate(
        &self,
        capacity_bytes: u64,
        page_bytes: u64,
        max_transfer_bytes: u64,
    ) -> Result<(), ConfigError> {
        if let Some(jobs) = &self.jobs {
            return self.check_jobs(jobs, capacity_bytes, page_bytes, max_transfer_bytes);
        }
        self.check_mix()?;
        let region = self.check_sizes(capacity_bytes, page_bytes, max_transfer_bytes)?;
        self.check_fio_keys(region, max_transfer_bytes)?;
        for (key, volume, of) in [
            ("workload.writes", self.writes, capacity_bytes),
            ("workload.precondition_writes", self.precondition_writes, region),
        ] {
            volume.checked_bytes(of).map_err(|e| ConfigError::new(key, volume, e))?;
        }
        self.check_writes_end(region)
    }

    /// The command mix: shares in 0..=1, the hot set, the Zipf exponent.
    fn check_mix(&self) -> Result<(), ConfigError> {
        let fraction = |key: &str, v: f64| {
            if (0.0..=1.0).contains(&v) {
                Ok(())
            } else {
                Err(ConfigError::new(key, v, "must be in 0.0..=1.0"))
            }
        };
        fraction("workload.read_fraction", self.read_fraction)?;
        fraction("workload.trim_fraction", self.trim_fraction)?;
        if self.read_fraction + self.trim_fraction >= 1.0 && !self.ends_without_writes() {
            return Err(ConfigError::new(
                "workload.read_fraction + workload.trim_fraction",
                self.read_fraction + self.trim_fraction,
                "must be < 1 so that writes happen, unless workload.ops bounds the run",
            ));
        }
        if !(self.hot_fraction > 0.0 && self.hot_fraction < 1.0) {
            return Err(ConfigError::new("workload.hot_fraction", self.hot_fraction, "must be > 0 and < 1"));
        }
        fraction("workload.hot_access", self.hot_access)?;
        if !(self.zipf_theta > 0.0 && self.zipf_theta.is_finite()) {
            return Err(ConfigError::new("workload.zipf_theta", self.zipf_theta, "must be > 0"));
        }
        Ok(())
    }

    /// Block, TRIM and region sizes against the device, and the queue depth; returns the
    /// region's bytes.
    fn check_sizes(
        &self,
        capacity_bytes: u64,
        page_bytes: u64,
        max_transfer_bytes: u64,
    ) -> Result<u64, ConfigError> {
        let block = self.block_bytes.0;
        if block == 0 || !block.is_multiple_of(512) || block > max_transfer_bytes {
            return Err(ConfigError::new(
                "workload.block_bytes",
                self.block_bytes,
                format!("must be a positive multiple of 512 bytes, at most the device's largest transfer of {max_transfer_bytes} bytes"),
            ));
        }
        let trim = self.trim_bytes.unwrap_or(self.block_bytes).0;
        if trim == 0 || !trim.is_multiple_of(512) {
            return Err(ConfigError::new(
                "workload.trim_bytes",
                ByteSize(trim),
                "must be a positive multiple of 512 bytes",
            ));
        }
        let region = self.region_bytes.map_or(capacity_bytes.saturating_sub(self.region_offset.0), |b| b.0);
        if !self.region_offset.0.is_multiple_of(page_bytes)
            || region == 0
            || self.region_offset.0.checked_add(region).is_none_or(|end| end > capacity_bytes)
        {
            return Err(ConfigError::new(
                "workload.region_offset / workload.region_bytes",
                format!("{} + {}", self.region_offset, ByteSize(region)),
                format!("must be page-aligned and inside the device's {capacity_bytes} bytes"),
            ));
        }
        if region < block.max(trim) {
            return Err(ConfigError::new(
                "workload.region_bytes",
                ByteSize(region),
                "must hold at least one block and one TRIM",
            ));
        }
        if !(1..=65_536).contains(&self.queue_depth) {
            return Err(ConfigError::new("workload.queue_depth", self.queue_depth, "must be 1..=65536"));
        }
        Ok(region)
    }

    /// A phase that ends after some bytes of writes must write (issue 26).
    fn check_writes_end(&self, region: u64) -> Result<(), ConfigError> {
        // Issue 26: a trim-only mix never writes, so a phase that ends after some bytes of
        // writes (the steady precondition's random part, or the measured phase without `ops`)
        // would never end. A write share under 1/1000 is refused for the same reason: such a
        // phase runs over a thousand times its write volume in other commands.
        let write_share = 1.0 - self.read_fraction - self.trim_fraction;
        if !self.ends_without_writes() && write_share < WRITE_SHARE_MIN {
            return Err(ConfigError::new(
                "workload.read_fraction + workload.trim_fraction",
                self.read_fraction + self.trim_fraction,
                format!(
                    "must be at most {} so that writes end the run, unless workload.ops bounds it",
                    1.0 - WRITE_SHARE_MIN
                ),
            ));
        }
        if self.precondition == Precondition::Steady
            && self.trim_fraction > 1.0 - WRITE_SHARE_MIN
            && self.trim_fraction < 1.0
            && self.precondition_writes.bytes(region) > 0
        {
            return Err(ConfigError::new(
                "workload.trim_fraction",
                self.trim_fraction,
                format!(
                    "with precondition = \"steady\" must be 1 or at most {}: its random part writes precondition_writes with this TRIM share",
                    1.0 - WRITE_SHARE_MIN
                ),
            ));
        }
        Ok(())
    }

    /// Whether the phase ends on something other than a volume of writes (`ops`, or fio's
    /// `io_bytes` / `runtime`).
    pub fn ends_without_writes(&self) -> bool {
        self.ops.is_some() || self.io_bytes.is_some() || self.runtime.is_some()
    }

    /// Concurrent streams: each one a block workload of its own, none with streams inside.
    fn check_jobs(
        &self,
        jobs: &[WorkloadConfig],
        capacity_bytes: u64,
        page_bytes: u64,
        max_transfer_bytes: u64,
    ) -> Result<(), ConfigError> {
        if jobs.is_empty() || jobs.len() > 4096 {
            return Err(ConfigError::new("workload.jobs", jobs.len(), "must hold 1..=4096 streams"));
        }
        let mut submitters = 0u32;
        for (i, job) in jobs.iter().enumerate() {
            if job.jobs.is_some() {
                return Err(ConfigError::new(
                    &format!("workload.jobs[{i}].jobs"),
                    "set",
                    "a stream holds no streams",
                ));
            }
            if !job.ends_without_writes() && job.writes == WorkloadConfig::default().writes {
                // A stream needs its own end; the section's `writes` belongs to no stream.
                return Err(ConfigError::new(
                    &format!("workload.jobs[{i}]"),
                    "no end",
                    "needs io_bytes, runtime or ops",
                ));
            }
            job.validate(capacity_bytes, page_bytes, max_transfer_bytes).map_err(|e| {
                let key = e.key.replacen("workload.", &format!("workload.jobs[{i}]."), 1);
                ConfigError::new(&key, e.value, e.accepted)
            })?;
            submitters = submitters.saturating_add(job.queue_depth);
        }
        if submitters > 65_536 {
            return Err(ConfigError::new(
                "workload.jobs[*].queue_depth",
                submitters,
                "the streams' queue depths must add up to at most 65536",
            ));
        }
        Ok(())
    }

    /// The keys fio's jobs add: distribution parameters, block split, stream ends.
    fn check_fio_keys(&self, region: u64, max_transfer_bytes: u64) -> Result<(), ConfigError> {
        match (self.pattern, self.pareto_h, self.normal_deviation_percent) {
            (AccessPattern::Pareto, h, _) if !h.is_some_and(|h| h > 0.0 && h < 1.0) => {
                return Err(ConfigError::new(
                    "workload.pareto_h",
                    h.map_or("missing".into(), |h| h.to_string()),
                    "pattern = \"pareto\" needs pareto_h in (0, 1)",
                ))
            }
            (AccessPattern::Normal, _, d) if !d.is_some_and(|d| (0.0..=100.0).contains(&d)) => {
                return Err(ConfigError::new(
                    "workload.normal_deviation_percent",
                    d.map_or("missing".into(), |d| d.to_string()),
                    "pattern = \"normal\" needs it in 0..=100",
                ))
            }
            _ => {}
        }
        self.check_zones(region)?;
        self.check_runs(region)?;
        self.check_rate()?;
        if let Some(split) = &self.block_split {
            let sum: u64 = split.iter().map(|s| u64::from(s.percent)).sum();
            let bad = split.iter().find(|s| {
                s.bytes.0 == 0 || !s.bytes.0.is_multiple_of(512) || s.bytes.0 > max_transfer_bytes.min(region)
            });
            if split.is_empty() || sum != 100 || bad.is_some() {
                return Err(ConfigError::new(
                    "workload.block_split",
                    format!("{} entries, {sum} %", split.len()),
                    format!("each size a positive multiple of 512 bytes, at most {max_transfer_bytes} bytes and the region; the shares add up to 100"),
                ));
            }
        }
        if let Some(d) = self.runtime {
            if d.0 == 0 {
                return Err(ConfigError::new("workload.runtime", d, "must be > 0"));
            }
        }
        Ok(())
    }

    /// `pattern = "zoned"` and its `zones`, as fio's zone_split_ddir checks them: the access
    /// shares add up to 100; the sizes are all percentages (adding up to at most 100) or all
    /// byte sizes (fitting in the region).
    fn check_zones(&self, region: u64) -> Result<(), ConfigError> {
        let zones = match (self.pattern, &self.zones) {
            (AccessPattern::Zoned, Some(zones)) if !zones.is_empty() => zones,
            (AccessPattern::Zoned, _) => {
                return Err(ConfigError::new(
                    "workload.zones",
                    "missing",
                    "pattern = \"zoned\" needs zones = [{ access_percent, size_percent or bytes }, ...]",
                ))
            }
            (_, Some(_)) => {
                return Err(ConfigError::new(
                    "workload.zones",
                    "set",
                    "zones are read only with pattern = \"zoned\"",
                ))
            }
            (_, None) => return Ok(()),
        };
        let access: u64 = zones.iter().map(|z| u64::from(z.access_percent)).sum();
        if access != 100 {
            return Err(ConfigError::new(
                "workload.zones",
                format!("access_percent adding up to {access}"),
                "the zones' access_percent must add up to 100",
            ));
        }
        let percents: Option<u64> = zones.iter().map(|z| z.size_percent.map(u64::from)).sum();
        let bytes: Option<u64> = zones.iter().map(|z| z.bytes.map(|b| b.0)).sum();
        let ok = match (percents, bytes, zones.iter().all(|z| z.size_percent.is_none() || z.bytes.is_none()))
        {
            (Some(p), None, true) => p <= 100,
            (None, Some(b), true) => b <= region,
            _ => false,
        };
        if !ok {
            return Err(ConfigError::new(
                "workload.zones",
                format!("{} zones", zones.len()),
                format!("give every zone size_percent (adding up to at most 100) or every zone bytes (adding up to at most the region, {region} bytes)"),
            ));
        }
        Ok(())
    }

    /// fio's rate keys: one of `rate_iops` / `rate_bytes`, each one value or three.
    fn check_rate(&self) -> Result<(), ConfigError> {
        let bad_iops = self.rate_iops.as_ref().filter(|r| {
            r.is_empty()
                || r.len() > 3
                || r.iter().any(|v| !v.is_finite() || *v < 0.0)
                || r.iter().all(|v| *v == 0.0)
        });
        if let Some(r) = bad_iops {
            return Err(ConfigError::new(
                "workload.rate_iops",
                format!("{r:?}"),
                "one rate or [read, write, trim], each >= 0 commands per second, not all 0",
            ));
        }
        if let Some(r) =
            self.rate_bytes.as_ref().filter(|r| r.is_empty() || r.len() > 3 || r.iter().all(|b| b.0 == 0))
        {
            return Err(ConfigError::new(
                "workload.rate_bytes",
                format!("{} entries", r.len()),
                "one rate or [read, write, trim], sizes per second like \"100MiB\", not all 0",
            ));
        }
        match (&self.rate_iops, &self.rate_bytes, self.rate_process) {
            (Some(_), Some(_), _) => {
                Err(ConfigError::new("workload.rate_bytes", "set", "give rate_iops or rate_bytes, not both"))
            }
            (None, None, Some(p)) => Err(ConfigError::new(
                "workload.rate_process",
                format!("{p:?}"),
                "needs rate_iops or rate_bytes",
            )),
            _ => Ok(()),
        }
    }

    /// fio's `rw=MODE:N` modifiers: a skip on sequential streams, a run length on random ones.
    fn check_runs(&self, region: u64) -> Result<(), ConfigError> {
        let block = self.block_bytes.0.max(1) as i64;
        if let Some(skip) = self.sequential_skip_bytes {
            if self.pattern != AccessPattern::Sequential || skip % block != 0 || skip.unsigned_abs() >= region
            {
                return Err(ConfigError::new(
                    "workload.sequential_skip_bytes",
                    skip,
                    format!("needs pattern = \"sequential\"; a multiple of block_bytes ({block}), smaller than the region in size"),
                ));
            }
        }
        if let Some(run) = self.random_run {
            if self.pattern == AccessPattern::Sequential || run == 0 {
                return Err(ConfigError::new(
                    "workload.random_run",
                    run,
                    "needs a random pattern, and at least 1 (1: every command draws a new offset)",
                ));
            }
        }
        Ok(())
    }

    pub fn region(&self, capacity_bytes: u64) -> (u64, u64) {
        let region = self.region_bytes.map_or(capacity_bytes - self.region_offset.0, |b| b.0);
        (self.region_offset.0, region)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn volumes() {
        assert_eq!(Volume::parse("5x").unwrap(), Volume::Capacity(5.0));
        assert_eq!(Volume::parse("10GiB").unwrap(), Volume::Bytes(10 << 30));
        assert_eq!(Volume::Capacity(0.5).bytes(1000), 500);
        assert!(Volume::parse("lots").is_err());
        assert!(Volume::parse("-2x").is_err());
    }

    #[test]
    fn the_generator_keys_are_the_fields() {
        // Every field named (no `..`), so a new field fails to compile here until it is listed.
        let all = WorkloadConfig {
            kind: WorkloadKind::Postmark,
            keys: crate::kind::KindKeys::default(),
            dir: None,
            pattern: AccessPattern::Zoned,
            hot_fraction: 0.2,
            hot_access: 0.8,
            zipf_theta: 0.99,
            read_fraction: 0.0,
            trim_fraction: 0.0,
            block_bytes: ByteSize(4096),
            trim_bytes: Some(ByteSize(4096)),
            region_offset: ByteSize(0),
            region_bytes: Some(ByteSize(4096)),
            queue_depth: 1,
            writes: Volume::Capacity(1.0),
            ops: Some(1),
            idle_every: 0,
            idle: DurationNs(0),
            think_time: DurationNs(0),
            precondition: Precondition::None,
            precondition_writes: Volume::Capacity(1.0),
            flush_every: 0,
            io_bytes: Some(ByteSize(1)),
            runtime: Some(DurationNs(1)),
            random_map: Some(true),
            block_split: Some(vec![]),
            pareto_h: Some(0.5),
            normal_deviation_percent: Some(1.0),
            zones: Some(vec![]),
            trim_then_write: Some(true),
            sequential_skip_bytes: Some(0),
            random_run: Some(1),
            rate_iops: Some(vec![]),
            rate_bytes: Some(vec![]),
            rate_process: Some(RateProcess::Linear),
            stream_seed: Some(1),
            jobs: Some(vec![]),
        };
        let table = toml::Table::try_from(&all).unwrap();
        let written: Vec<&str> = table.keys().map(String::as_str).filter(|k| *k != "kind").collect();
        let mut listed = WorkloadConfig::GENERATOR_KEYS.to_vec();
        listed.sort();
        assert_eq!(written, listed);
    }

    #[test]
    fn fractions_out_of_range_are_named() {
        let w = WorkloadConfig { trim_fraction: 1.5, ..Default::default() };
        let e = w.validate(1 << 30, 4096, 1 << 21).unwrap_err();
        assert_eq!(e.key, "workload.trim_fraction");
    }

    #[test]
    fn zones_and_rw_modifiers_are_checked() {
        let zone = |access_percent, size_percent, bytes| AccessZone { access_percent, size_percent, bytes };
        let key = |w: WorkloadConfig| w.validate(1 << 30, 4096, 1 << 21).err().map(|e| e.key);
        let zoned = |zones| WorkloadConfig { pattern: AccessPattern::Zoned, zones, ..Default::default() };
        assert_eq!(key(zoned(Some(vec![zone(50, Some(5), None), zone(50, Some(95), None)]))), None);
        assert_eq!(
            key(zoned(Some(vec![
                zone(50, None, Some(ByteSize(1 << 20))),
                zone(50, None, Some(ByteSize(1 << 29)))
            ]))),
            None
        );
        for bad in [
            None,
            Some(vec![]),
            Some(vec![zone(40, Some(5), None), zone(50, Some(95), None)]),
            Some(vec![zone(50, Some(60), None), zone(50, Some(60), None)]),
            Some(vec![zone(50, Some(5), None), zone(50, None, Some(ByteSize(4096)))]),
            Some(vec![zone(100, None, Some(ByteSize(2 << 30)))]),
        ] {
            assert_eq!(key(zoned(bad.clone())).as_deref(), Some("workload.zones"), "{bad:?}");
        }
        let stray = WorkloadConfig { zones: Some(vec![zone(100, Some(100), None)]), ..Default::default() };
        assert_eq!(key(stray).as_deref(), Some("workload.zones"));
        let seq = |skip| WorkloadConfig {
            pattern: AccessPattern::Sequential,
            sequential_skip_bytes: Some(skip),
            ..Default::default()
        };
        assert_eq!(key(seq(-8192)), None);
        assert_eq!(
            key(seq(1000)).as_deref(),
            Some("workload.sequential_skip_bytes"),
            "not a multiple of the block"
        );
        let run =
            WorkloadConfig { pattern: AccessPattern::Sequential, random_run: Some(8), ..Default::default() };
        assert_eq!(key(run).as_deref(), Some("workload.random_run"));
    }
}
