//! The trace knobs as `trimlab replay` / `advise` flags and Python keywords give them (text),
//! parsed once into the trace crate's types. Both adapters fill [`TraceOptions`]; neither
//! parses a knob itself, so a value means the same thing from either.

use anyhow::{bail, Result};
use trimlab_trace::{BlkAction, FioTimeUnit, LbaMode, Pacing, ReaderOptions, TraceFormat, TrimHandling};

/// The text form of every trace knob; `Default` is what the flags default to.
#[derive(Clone, Debug)]
pub struct TraceOptions {
    /// `None`: detected from the first lines.
    pub format: Option<String>,
    /// blkparse / ftrace events to replay: Q, D or C.
    pub blk_action: String,
    /// Unit of fio iolog v3 timestamps: us or ms.
    pub fio_time_unit: String,
    pub skip_bad: bool,
    /// check or remap.
    pub lba: String,
    /// Open loop: inter-arrival times divided by this.
    pub speed: f64,
    /// Closed loop with this many requests outstanding (replay only).
    pub closed_loop: Option<u32>,
    /// as-recorded, drop or fstrim:PERIOD (replay only; advise replays each way).
    pub trims: String,
}

impl Default for TraceOptions {
    fn default() -> TraceOptions {
        TraceOptions {
            format: None,
            blk_action: "D".into(),
            fio_time_unit: "us".into(),
            skip_bad: false,
            lba: "check".into(),
            speed: 1.0,
            closed_loop: None,
            trims: "as-recorded".into(),
        }
    }
}

/// The knobs parsed.
#[derive(Clone, Copy, Debug)]
pub struct Parsed {
    pub reader: ReaderOptions,
    pub lba: LbaMode,
    pub pacing: Pacing,
    pub trims: TrimHandling,
    pub speed: f64,
}

impl TraceOptions {
    pub fn parse(&self) -> Result<Parsed> {
        let format =
            self.format.as_deref().map(TraceFormat::parse).transpose().map_err(anyhow::Error::msg)?;
        let blk_action =
            BlkAction::parse(&self.blk_action).map_err(|e| anyhow::anyhow!("--blk-action: {e}"))?;
        let fio_time_unit = match self.fio_time_unit.as_str() {
            "us" => FioTimeUnit::Micros,
            "ms" => FioTimeUnit::Millis,
            other => bail!("--fio-time-unit {other} (accepted: us, ms)"),
        };
        let lba = match self.lba.as_str() {
            "check" => LbaMode::Check,
            "remap" => LbaMode::Remap,
            other => bail!("--lba {other} (accepted: check, remap)"),
        };
        if !(self.speed > 0.0 && self.speed.is_finite()) {
            bail!("--speed {} (must be a positive number)", self.speed);
        }
        let pacing = match self.closed_loop {
            Some(0) => bail!("--closed-loop 0 (must be at least 1)"),
            Some(queue_depth) => Pacing::ClosedLoop { queue_depth },
            None => Pacing::OpenLoop { speed: self.speed },
        };
        Ok(Parsed {
            reader: ReaderOptions { format, blk_action, fio_time_unit, skip_bad: self.skip_bad },
            lba,
            pacing,
            trims: parse_trims(&self.trims)?,
            speed: self.speed,
        })
    }
}

/// "1d", "7d", "3600s", "500ms" to nanoseconds; a bare number is refused (its unit would be a guess).
pub fn parse_period(text: &str) -> Result<u64, String> {
    match trimlab_sim::DurationNs::parse(text)?.0 {
        0 => Err(format!("\"{text}\" is zero (a period must be positive)")),
        ns => Ok(ns),
    }
}

/// `--trims`: as-recorded, drop, or fstrim:PERIOD.
pub fn parse_trims(text: &str) -> Result<TrimHandling> {
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

/// `--fstrim-periods` of advise: sorted, without repeats.
pub fn parse_periods(texts: &[String]) -> Result<Vec<u64>> {
    let mut periods = Vec::new();
    for p in texts {
        match parse_period(p) {
            Ok(ns) => periods.push(ns),
            Err(e) => bail!("--fstrim-periods: {e}; give durations like 1d, 3600s or 500ms"),
        }
    }
    periods.sort_unstable();
    periods.dedup();
    Ok(periods)
}

/// The trace formats `replay` and `advise` read, in the order detection tries them.
pub fn trace_formats() -> Vec<&'static str> {
    trimlab_trace::TraceFormat::ALL.iter().map(|f| f.name()).collect()
}

/// Each trace format with the layout of its lines.
pub fn trace_format_layouts() -> Vec<(String, String)> {
    trimlab_trace::format::FORMATS.iter().map(|s| (s.kind.name().to_string(), s.layout.to_string())).collect()
}
