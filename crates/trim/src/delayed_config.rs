//! `[trim.delayed]`: the keys of the Delayed TRIM engine (crate::delayed), typed and checked;
//! only the engine's file names them (its `SPEC` registers them with the section).

use crate::engine_keys::{EngineConfig, EngineLimits};
use crate::trim_bitmap::BitmapKind;
use serde::{Deserialize, Serialize};
use trimlab_sim::ByteSize;

/// How much pending TRIM a GC applies before it runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BeforeGcCap {
    /// Everything pending (002's DT-ALL).
    #[default]
    All,
    /// At most this many bytes of trim-buffer pages per busy period (DT-512MB, DT-1GB).
    Bytes(u64),
}

impl BeforeGcCap {
    pub const ACCEPTED: &'static str = "\"all\" or a size like \"512MiB\" or \"1GiB\"";

    pub fn parse(text: &str) -> Result<BeforeGcCap, String> {
        if text.trim().eq_ignore_ascii_case("all") {
            return Ok(BeforeGcCap::All);
        }
        ByteSize::parse(text).map(|b| BeforeGcCap::Bytes(b.0)).map_err(|_| Self::ACCEPTED.to_string())
    }

    /// The short label 002 uses (DT-ALL, DT-512MB, ...).
    pub fn label(self) -> String {
        match self {
            BeforeGcCap::All => "DT-ALL".into(),
            BeforeGcCap::Bytes(b) if b >= 1 << 30 && b % (1 << 30) == 0 => format!("DT-{}GB", b >> 30),
            BeforeGcCap::Bytes(b) => format!("DT-{}MB", b >> 20),
        }
    }
}

impl Serialize for BeforeGcCap {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            BeforeGcCap::All => s.serialize_str("all"),
            BeforeGcCap::Bytes(b) => s.serialize_str(&ByteSize(*b).to_string()),
        }
    }
}

impl<'de> Deserialize<'de> for BeforeGcCap {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        BeforeGcCap::parse(&text)
            .map_err(|accepted| serde::de::Error::custom(format!("\"{text}\": {accepted}")))
    }
}

/// `[trim.delayed]`: the delayed engine's knobs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DelayedConfig {
    pub bitmap: BitmapKind,
    /// Logical pages per region of the partial bitmap (a power of two, at least 64).
    pub partial_region_pages: u32,
    /// Trim-buffer entries (one per TRIM range); when full, the oldest are applied at once.
    pub trim_buffer_entries: u32,
    pub before_gc: BeforeGcCap,
    /// Pages an idle drain handles before it looks for host commands again: a command that
    /// arrives mid-drain waits at most one chunk.
    pub idle_chunk_pages: u32,
}

impl Default for DelayedConfig {
    fn default() -> Self {
        DelayedConfig {
            bitmap: BitmapKind::Full,
            partial_region_pages: 32_768,
            trim_buffer_entries: 65_536,
            before_gc: BeforeGcCap::All,
            idle_chunk_pages: 1024,
        }
    }
}

impl EngineConfig for DelayedConfig {
    fn validate(&self, limits: &EngineLimits) -> Result<(), (&'static str, String, String)> {
        let trim_max_ranges = limits.trim_max_ranges;
        let r = self.partial_region_pages;
        if !(r.is_power_of_two() && (64..=1 << 24).contains(&r)) {
            return Err(("partial_region_pages", r.to_string(), "a power of two, 64..=16777216".into()));
        }
        if self.trim_buffer_entries < trim_max_ranges.max(1) {
            return Err((
                "trim_buffer_entries",
                self.trim_buffer_entries.to_string(),
                format!("at least device.trim_max_ranges ({trim_max_ranges}) so one TRIM always fits"),
            ));
        }
        if self.idle_chunk_pages == 0 {
            return Err(("idle_chunk_pages", "0".into(), "at least 1".into()));
        }
        Ok(())
    }
}
