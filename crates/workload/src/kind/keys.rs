//! A workload kind's own keys: the `[workload]` keys that are not the block generator's belong
//! to the kind `kind` names, and each kind declares them in its own file as a serde struct
//! ([`OwnKeys`]). The section carries them as written ([`KindKeys`]); resolution checks them
//! against the kind's struct and keeps them in its canonical form, and the kind reads its
//! struct back when it runs. A new kind with keys is thus its file plus its registry line.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// A key at fault: (key within `[workload]`, its value, what is accepted).
pub type KeyError = (String, String, String);

/// A kind's keys as a serde struct (every key optional: the kind's `run` gives the defaults),
/// with the checks that span its keys. Keys the struct does not name are refused on reading.
pub trait OwnKeys: Serialize + DeserializeOwned + Default {
    /// Checks values the types alone cannot (ranges, one key against another).
    fn check(&self) -> Result<(), KeyError> {
        Ok(())
    }
}

/// The keys of a kind without any.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoKeys {}

impl OwnKeys for NoKeys {}

/// What the registry knows of a kind's keys: their names and how to check them.
#[derive(Clone, Copy)]
pub struct KeysSpec {
    /// The keys, in declaration order (help, docs and errors list them).
    pub names: fn() -> &'static [&'static str],
    /// The keys as written, checked and in canonical form.
    pub check: fn(&KindKeys) -> Result<KindKeys, KeyError>,
}

impl KeysSpec {
    /// The spec of the keys `T` declares.
    pub const fn of<T: OwnKeys>() -> KeysSpec {
        KeysSpec { names: trimlab_sim::field_names::<T>, check: check::<T> }
    }
}

/// The kind's keys of a `[workload]` section, as written (or, after resolution, as its kind's
/// struct writes them). Serialized inline with the section's other keys.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct KindKeys(toml::Table);

impl KindKeys {
    /// The keys of `keys`, as its struct writes them (unset keys left out).
    pub fn of<T: Serialize>(keys: &T) -> KindKeys {
        match toml::Table::try_from(keys) {
            Ok(table) => KindKeys(table),
            // A kind's keys struct is flat: strings, numbers, sizes, lists of them.
            Err(e) => unreachable!("a kind's keys serialize as a table: {e}"),
        }
    }

    /// The keys as the kind `T` declares them; the error names the first key at fault.
    pub fn read<T: OwnKeys>(&self) -> Result<T, KeyError> {
        let names = trimlab_sim::field_names::<T>();
        if let Some(key) = self.0.keys().find(|k| !names.contains(&k.as_str())) {
            return Err(unknown_key(key, "this kind", names, &[]));
        }
        T::deserialize(toml::Value::Table(self.0.clone())).map_err(|whole| {
            // Name the key: the first that fails alone (the others' absence is fine, every
            // kind key being optional).
            for (key, value) in &self.0 {
                let alone = toml::Table::from_iter([(key.clone(), value.clone())]);
                if let Err(e) = T::deserialize(toml::Value::Table(alone)) {
                    return (key.clone(), value.to_string(), e.to_string().trim_end().to_string());
                }
            }
            (String::new(), String::new(), whole.to_string().trim_end().to_string())
        })
    }

    /// The value of a text key, if set as text.
    pub fn text(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.as_str())
    }

    /// Sets the text key `key`.
    pub fn set_text(&mut self, key: &str, value: &str) {
        self.0.insert(key.to_string(), toml::Value::String(value.to_string()));
    }

    /// Removes `key` and returns its value (the run loop's keys a run without `[[phase]]`
    /// gives in `[workload]`: `until`, `repeat`, `steady`).
    pub fn take(&mut self, key: &str) -> Option<toml::Value> {
        self.0.remove(key)
    }

    /// The keys set, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The error for `key`, which `reader` (a kind) does not read: its own keys `names`, and the
/// closest of those and of `others` (the generator's keys, which every section has).
pub fn unknown_key(key: &str, reader: &str, names: &[&str], others: &[&str]) -> KeyError {
    let hint = trimlab_sim::names::did_you_mean(key, names.iter().chain(others).copied())
        .map(|m| format!("did you mean \"{m}\"? "))
        .unwrap_or_default();
    let keys = if names.is_empty() { "none".to_string() } else { names.join(", ") };
    (key.to_string(), "set".into(), format!("is not read by {reader}; {hint}its own keys: {keys}"))
}

/// `keys` read as `T`, checked, and written back in `T`'s canonical form (sizes and durations
/// as their types print them), so that a config's hash does not depend on how a size was spelt.
fn check<T: OwnKeys>(keys: &KindKeys) -> Result<KindKeys, KeyError> {
    let typed: T = keys.read()?;
    typed.check()?;
    Ok(KindKeys::of(&typed))
}

/// Helpers for the checks kinds share.
pub mod checks {
    use super::KeyError;
    use trimlab_sim::ByteSize;

    /// `value`, when set, in 0.0..=1.0.
    pub fn fraction(key: &str, value: Option<f64>) -> Result<(), KeyError> {
        match value {
            Some(v) if !(0.0..=1.0).contains(&v) => {
                Err((key.into(), v.to_string(), "must be in 0.0..=1.0".into()))
            }
            _ => Ok(()),
        }
    }

    /// Each size, when set, above zero.
    pub fn positive(sizes: &[(&str, Option<ByteSize>)]) -> Result<(), KeyError> {
        match sizes.iter().find(|(_, v)| v.is_some_and(|b| b.0 == 0)) {
            Some((key, _)) => Err((key.to_string(), "0B".into(), "must be > 0".into())),
            None => Ok(()),
        }
    }

    /// `file_bytes_min` at most `file_bytes_max` when both are set.
    pub fn min_max(min: Option<ByteSize>, max: Option<ByteSize>) -> Result<(), KeyError> {
        match (min, max) {
            (Some(lo), Some(hi)) if lo.0 > hi.0 => {
                Err(("file_bytes_min".into(), lo.to_string(), format!("must be <= file_bytes_max ({hi})")))
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trimlab_sim::ByteSize;

    #[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Two {
        #[serde(skip_serializing_if = "Option::is_none")]
        files: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        file_bytes: Option<ByteSize>,
    }

    impl OwnKeys for Two {}

    fn keys(text: &str) -> KindKeys {
        KindKeys(toml::from_str(text).unwrap())
    }

    #[test]
    fn keys_are_read_as_the_kind_declares_them_and_faults_are_named() {
        let k = keys("files = 3\nfile_bytes = \"1MiB\"");
        assert_eq!(k.read::<Two>().unwrap(), Two { files: Some(3), file_bytes: Some(ByteSize(1 << 20)) });
        let (key, _, why) = keys("files = 3\nfile_byte = 1").read::<Two>().unwrap_err();
        assert_eq!(key, "file_byte");
        assert!(
            why.contains("did you mean \"file_bytes\"?") && why.contains("keys: files, file_bytes"),
            "{why}"
        );
        let (key, value, _) = keys("files = 3\nfile_bytes = \"lots\"").read::<Two>().unwrap_err();
        assert_eq!((key.as_str(), value.as_str()), ("file_bytes", "\"lots\""));
        let (key, _, why) = keys("files = 1").read::<NoKeys>().unwrap_err();
        assert_eq!(key, "files");
        assert!(why.ends_with("its own keys: none"), "{why}");
    }

    #[test]
    fn checked_keys_take_their_canonical_form() {
        let spec = KeysSpec::of::<Two>();
        assert_eq!((spec.names)(), ["files", "file_bytes"]);
        let canonical = (spec.check)(&keys("file_bytes = 1048576")).unwrap();
        assert_eq!(canonical, KindKeys::of(&Two { files: None, file_bytes: Some(ByteSize(1 << 20)) }));
    }
}
