//! An engine's own keys (`[trim.<engine>]`): a serde struct declared in the engine's file and
//! read from its section's table by the generic functions here, so that the interface, the
//! config and the device carry any engine's keys as data without naming one engine.

use serde::de::DeserializeOwned;
use serde::Serialize;

/// One section's keys: as written, or completed with the engine's defaults.
pub type KeyTable = toml::Table;

/// The device limits an engine's keys are checked against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineLimits {
    pub trim_max_ranges: u32,
}

/// A bad key: its full name (`trim.delayed.before_gc`), its value as written, and what it
/// accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyError {
    pub key: String,
    pub value: String,
    pub accepted: String,
}

impl std::fmt::Display for KeyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} = {} ({})", self.key, self.value, self.accepted)
    }
}

/// An engine's keys as its file declares them: a struct whose every key has a default
/// (`#[serde(default, deny_unknown_fields)]`), and its checks against the device's limits.
pub trait EngineConfig: Serialize + DeserializeOwned + Default {
    /// Checks the keys; `Err((key, value, accepted))` names the first bad one by its name in
    /// the section (`"before_gc"`).
    fn validate(&self, limits: &EngineLimits) -> Result<(), (&'static str, String, String)>;
}

/// How the registry reads and checks one engine's section, whatever the engine's key type.
#[derive(Clone, Copy)]
pub struct EngineSection {
    /// The section as written, completed with the defaults; the error names the first key that
    /// is unknown or whose value does not parse.
    pub complete: fn(section: &str, keys: &KeyTable) -> Result<KeyTable, KeyError>,
    /// Checks the section's keys against the device's limits.
    pub validate: fn(section: &str, keys: &KeyTable, limits: &EngineLimits) -> Result<(), KeyError>,
}

impl EngineSection {
    /// The section whose keys are the fields of `T`.
    pub const fn of<T: EngineConfig>() -> EngineSection {
        EngineSection { complete: complete::<T>, validate: validate::<T> }
    }
}

/// `value` as a key table (a config built in code, a test).
pub fn table_of<T: Serialize>(value: &T) -> KeyTable {
    match toml::Value::try_from(value) {
        Ok(toml::Value::Table(table)) => table,
        other => unreachable!("an engine's keys serialize as a table: {other:?}"),
    }
}

/// `keys` read as `T`; keys it does not set get their defaults.
pub fn parse<T: EngineConfig>(section: &str, keys: &KeyTable) -> Result<T, KeyError> {
    let accepted = table_of(&T::default());
    if let Some((key, value)) = keys.iter().find(|(key, _)| !accepted.contains_key(*key)) {
        let names: Vec<&str> = accepted.keys().map(String::as_str).collect();
        return Err(KeyError {
            key: format!("{section}.{key}"),
            value: value.to_string(),
            accepted: format!("no such key; [{section}] accepts: {}", names.join(", ")),
        });
    }
    T::deserialize(toml::Value::Table(keys.clone())).map_err(|whole| {
        // The message of a bad value need not name its key: try the keys one at a time.
        for (key, value) in keys {
            let mut one = accepted.clone();
            one.insert(key.clone(), value.clone());
            if let Err(e) = T::deserialize(toml::Value::Table(one)) {
                return KeyError {
                    key: format!("{section}.{key}"),
                    value: value.to_string(),
                    accepted: e.message().to_string(),
                };
            }
        }
        KeyError {
            key: section.to_string(),
            value: toml::Value::Table(keys.clone()).to_string(),
            accepted: whole.message().to_string(),
        }
    })
}

fn complete<T: EngineConfig>(section: &str, keys: &KeyTable) -> Result<KeyTable, KeyError> {
    parse::<T>(section, keys).map(|config| table_of(&config))
}

fn validate<T: EngineConfig>(section: &str, keys: &KeyTable, limits: &EngineLimits) -> Result<(), KeyError> {
    parse::<T>(section, keys)?.validate(limits).map_err(|(key, value, accepted)| KeyError {
        key: format!("{section}.{key}"),
        value,
        accepted,
    })
}
