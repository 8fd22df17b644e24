//! `[trim]`: the TRIM engine, its costs (`[trim.cost]`, laid over the preset's), each engine's
//! own keys (`[trim.<engine>]`, as data the engine's file reads and checks), and the bounds
//! every cost must keep.

use super::bounds::{at_most, operation_ns, PER_PAGE_NS_MAX};
use super::error::ConfigError;
use serde::de::{DeserializeSeed, Error as _, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;
use trimlab_trim::{EngineKind, EngineLimits, KeyError, KeyTable, TrimCostModel, TrimCostOverrides};

/// `[trim]`. Its sub-tables are typed where they live: the costs in `trimlab_trim::cost_model`,
/// an engine's keys in the engine's file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TrimSection {
    pub engine: Option<EngineKind>,
    /// `[trim.cost]`: the keys given replace the preset's TRIM costs.
    pub cost: Option<TrimCostOverrides>,
    /// `[trim.<engine>]` (`[trim.delayed]`) as written, by engine; an engine's section is used
    /// when it is the engine, and checked always.
    pub engines: BTreeMap<EngineKind, KeyTable>,
}

impl TrimSection {
    /// `keys`, if given, as the section of `engine` (a config built in code).
    pub fn keys_of<T: Serialize>(engine: EngineKind, keys: Option<&T>) -> BTreeMap<EngineKind, KeyTable> {
        keys.map(|k| (engine, trimlab_trim::engine_keys::table_of(k))).into_iter().collect()
    }
}

impl Serialize for TrimSection {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // As the struct with one field per section always serialized: unset keys as null
        // (which TOML leaves out).
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("engine", &self.engine)?;
        map.serialize_entry("cost", &self.cost)?;
        for (engine, keys) in &self.engines {
            map.serialize_entry(engine.name(), keys)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for TrimSection {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // As a struct with the fixed keys: schema readers (the docs test) see those, and every
        // format reads it as a table.
        d.deserialize_struct("TrimSection", &["engine", "cost"], TrimVisitor)
    }
}

struct TrimVisitor;

impl<'de> Visitor<'de> for TrimVisitor {
    type Value = TrimSection;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("the [trim] table")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TrimSection, A::Error> {
        let mut section = TrimSection::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "engine" => section.engine = map.next_value()?,
                "cost" => section.cost = map.next_value()?,
                _ => match EngineKind::with_section(&format!("trim.{key}")) {
                    Some(engine) => {
                        let keys = map.next_value_seed(SectionSeed(engine))?;
                        section.engines.insert(engine, keys);
                    }
                    // Refused as the section's value, so that the message points at it.
                    None => map.next_value_seed(UnknownSection(key))?,
                },
            }
        }
        Ok(section)
    }
}

/// `[trim.<engine>]` as written; each key is checked as it is read, so that the message of a
/// bad one points at its line.
struct SectionSeed(EngineKind);

impl<'de> DeserializeSeed<'de> for SectionSeed {
    type Value = KeyTable;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<KeyTable, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for SectionSeed {
    type Value = KeyTable;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "the [{}] table", self.0.spec().section())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<KeyTable, A::Error> {
        let mut keys = KeyTable::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(KeySeed(self.0, &key))?;
            keys.insert(key, value);
        }
        Ok(keys)
    }
}

/// One key of an engine's section, checked alone against the engine's keys.
struct KeySeed<'a>(EngineKind, &'a str);

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = toml::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<toml::Value, D::Error> {
        let value = toml::Value::deserialize(d)?;
        let one = KeyTable::from_iter([(self.1.to_string(), value.clone())]);
        engine_keys(self.0, &one).map_err(|e| D::Error::custom(format!("{}: {}", e.key, e.accepted)))?;
        Ok(value)
    }
}

/// A `[trim]` key that is neither a key of its own nor an engine's section.
struct UnknownSection(String);

impl<'de> DeserializeSeed<'de> for UnknownSection {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, _d: D) -> Result<(), D::Error> {
        let mut accepted = vec!["engine".to_string(), "cost".to_string()];
        accepted.extend(trimlab_trim::engine_sections().iter().map(|s| s["trim.".len()..].to_string()));
        Err(D::Error::custom(format!(
            "trim.{}: no such key or engine section; [trim] accepts: {} (an engine's section is [trim.<engine>] for a registered engine that has keys)",
            self.0,
            accepted.join(", ")
        )))
    }
}

/// `keys` as the section of `engine`, completed with its defaults.
fn engine_keys(engine: EngineKind, keys: &KeyTable) -> Result<KeyTable, KeyError> {
    let spec = engine.spec();
    match spec.keys {
        Some(section) => (section.complete)(&spec.section(), keys),
        None => unreachable!("{} has no section: the config accepts none for it", spec.section()),
    }
}

/// Every engine's own keys, completed: each registered engine that has keys, with its section
/// as the config (or its preset) gives it, defaults filled in. In the resolved config each is
/// `trim_<engine>` (`trim_delayed`), the delayed engine's keys' place before engines owned them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EngineKeys(BTreeMap<EngineKind, KeyTable>);

impl EngineKeys {
    /// The sections of `own`, else of `preset`, else empty, completed.
    pub(super) fn resolve(own: &TrimSection, preset: &TrimSection) -> Result<EngineKeys, ConfigError> {
        let mut all = BTreeMap::new();
        for spec in trimlab_trim::ENGINES.iter().filter(|s| s.keys.is_some()) {
            let written = own.engines.get(&spec.kind).or_else(|| preset.engines.get(&spec.kind));
            let keys = engine_keys(spec.kind, written.unwrap_or(&KeyTable::new()))
                .map_err(|e| ConfigError::new(&e.key, e.value, e.accepted))?;
            all.insert(spec.kind, keys);
        }
        Ok(EngineKeys(all))
    }

    /// Checks every engine's keys against the device's limits.
    pub(super) fn check(&self, limits: &EngineLimits) -> Result<(), ConfigError> {
        for (engine, keys) in &self.0 {
            let spec = engine.spec();
            if let Some(section) = spec.keys {
                (section.validate)(&spec.section(), keys, limits)
                    .map_err(|e| ConfigError::new(&e.key, e.value, e.accepted))?;
            }
        }
        Ok(())
    }

    /// The keys of `engine` (empty for an engine without keys).
    pub fn of(&self, engine: EngineKind) -> &KeyTable {
        static NONE: std::sync::OnceLock<KeyTable> = std::sync::OnceLock::new();
        self.0.get(&engine).unwrap_or_else(|| NONE.get_or_init(KeyTable::new))
    }

    /// Sets one of `engine`'s keys in a resolved config (a comparison run varying one key);
    /// the value must be one the key accepts.
    pub fn set<T: Serialize>(&mut self, engine: EngineKind, key: &str, value: &T) {
        let value = toml::Value::try_from(value).unwrap_or_else(|e| {
            unreachable!("{}.{key}: a key's value serializes: {e}", engine.spec().section())
        });
        self.0.entry(engine).or_default().insert(key.to_string(), value);
    }
}

impl Serialize for EngineKeys {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (engine, keys) in &self.0 {
            map.serialize_entry(&format!("trim_{}", engine.name()), keys)?;
        }
        map.end()
    }
}

/// The costs charged once per command or per range; every other cost is per page or per
/// bitmap word, so a new cost gets the tighter bound unless it is listed here.
const PER_OPERATION_COSTS: [&str; 3] = ["command_ns", "range_ns", "trim_buffer_append_ns"];

/// Checks every TRIM cost: per command and per range at most `OPERATION_NS_MAX`, per page or
/// bitmap word at most [`PER_PAGE_NS_MAX`]. The keys come from the model's own fields.
pub(super) fn check_trim_cost(cost: &TrimCostModel) -> Result<(), ConfigError> {
    let overrides = TrimCostOverrides::all(cost);
    let costs = serde_json::to_value(&overrides).unwrap_or_default();
    for key in TrimCostOverrides::KEYS {
        let Some(value) = costs.get(key).and_then(|v| v.as_u64()) else {
            unreachable!("trim.cost.{key} is a u64 cost: {costs}")
        };
        let name = format!("trim.cost.{key}");
        if PER_OPERATION_COSTS.contains(key) {
            operation_ns(&name, value)?;
        } else {
            at_most(
                &name,
                value,
                PER_PAGE_NS_MAX,
                "1 ms per page or bitmap word (a TRIM may name 2^32 pages)",
            )?;
        }
    }
    Ok(())
}
