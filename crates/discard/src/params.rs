//! A host TRIM policy's keys and the values a file system gives them: each policy's file
//! declares its own [`PolicyKey`]s (name, unit, default, lowest value, help), `[host]` reads
//! the ones a user may set, and the policy reads its values from [`PolicyParams`] when it is
//! built. No struct lists every policy's tunables, so a policy with a key is its file alone.

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use std::collections::BTreeMap;
use trimlab_sim::{ByteSize, DurationNs};

/// How a key's value is written and held (always as a `u64`: bytes, nanoseconds, 0 or 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// A whole number, written bare (`lazy_workers_max = 8`).
    Count,
    /// A byte size, written with its unit (`"64MiB"`, `"0B"`).
    Bytes,
    /// A duration, written with its unit (`"120s"`).
    Duration,
    /// `true` or `false` (held as 1 or 0).
    Flag,
}

impl Unit {
    /// As docs/config.md's key tables name the type.
    pub fn type_name(self) -> &'static str {
        match self {
            Unit::Count => "integer",
            Unit::Bytes => "byte size",
            Unit::Duration => "duration",
            Unit::Flag => "bool",
        }
    }

    /// `value` as a config spells it: `"64MiB"` and `"120s"` in quotes, numbers and
    /// booleans bare (docs/config.md's default column).
    pub fn spell(self, value: u64) -> String {
        match self {
            Unit::Count => value.to_string(),
            Unit::Bytes => format!("\"{}\"", ByteSize(value)),
            Unit::Duration => format!("\"{}\"", DurationNs(value)),
            Unit::Flag => (value != 0).to_string(),
        }
    }
}

/// One tunable of a policy, declared in the policy's file. Two policies that share a key
/// (lazy and lazy-reuse) list the same constant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PolicyKey {
    /// Its name in `[host]` and in the resolved config (prefixed with the policy's name).
    pub name: &'static str,
    pub unit: Unit,
    /// Its value when nothing sets it.
    pub default: u64,
    /// The lowest value accepted (1: "must be > 0").
    pub min: u64,
    /// Whether `[host]` takes it. `false`: only the model sets it (a kernel's or layout's
    /// defaults, a policy's `NAME:ARGS` text, tests), so `[host]` accepts what it always has.
    pub in_host: bool,
    /// One line for docs/config.md.
    pub help: &'static str,
}

impl PolicyKey {
    /// A key `[host]` takes (unless [`PolicyKey::model_only`]), of `unit`, that may be any
    /// value from 0.
    pub const fn new(name: &'static str, unit: Unit, default: u64, help: &'static str) -> Self {
        PolicyKey { name, unit, default, min: 0, in_host: true, help }
    }

    /// The same key, refused below 1.
    pub const fn positive(self) -> Self {
        PolicyKey { min: 1, ..self }
    }

    /// The same key, set only by the model (not a `[host]` key).
    pub const fn model_only(self) -> Self {
        PolicyKey { in_host: false, ..self }
    }

    /// Whether `value` is accepted, or why not.
    pub fn check(&self, value: u64) -> Result<(), String> {
        match (value < self.min, self.min) {
            (false, _) => Ok(()),
            (true, 1) => Err("must be > 0".into()),
            (true, min) => Err(format!("must be >= {}", self.unit.spell(min))),
        }
    }
}

/// The values set for policies' keys (by `[host]`, a kernel's or layout's defaults, or a
/// policy's `NAME:ARGS` text); a key nothing set reads as its default. Only set keys are
/// held, and only they serialize (as their config spelling, by name), so a policy added later
/// or a default changed leaves every other config's serialized form as it was.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PolicyParams {
    set: BTreeMap<&'static str, (&'static PolicyKey, u64)>,
}

impl PolicyParams {
    /// The value of `key`: the one set, else its default.
    pub fn get(&self, key: &PolicyKey) -> u64 {
        self.set.get(key.name).map_or(key.default, |&(_, v)| v)
    }

    /// A [`Unit::Flag`] key's value.
    pub fn flag(&self, key: &PolicyKey) -> bool {
        self.get(key) != 0
    }

    pub fn set(&mut self, key: &'static PolicyKey, value: u64) {
        self.set.insert(key.name, (key, value));
    }

    /// `self` with `key` set to `value`.
    pub fn with(mut self, key: &'static PolicyKey, value: u64) -> Self {
        self.set(key, value);
        self
    }

    /// The keys set in `other` laid over this one's.
    pub fn overlay(&mut self, other: &PolicyParams) {
        self.set.extend(other.set.iter().map(|(name, v)| (*name, *v)));
    }

    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    /// The keys set and their values, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&'static PolicyKey, u64)> + '_ {
        self.set.values().copied()
    }
}

/// Each set key by name, as a config spells it (`"120s"`, `"64MiB"`, 8, true), so that
/// `[host]` written back reads the same.
impl Serialize for PolicyParams {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.set.len()))?;
        for (key, value) in self.iter() {
            match key.unit {
                Unit::Count => map.serialize_entry(key.name, &value)?,
                Unit::Bytes => map.serialize_entry(key.name, &ByteSize(value))?,
                Unit::Duration => map.serialize_entry(key.name, &DurationNs(value))?,
                Unit::Flag => map.serialize_entry(key.name, &(value != 0))?,
            }
        }
        map.end()
    }
}
