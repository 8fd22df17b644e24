//! `--set key.path=value`: one assignment into the TOML document before it is checked, so an
//! override is validated exactly like the same key written in the file.

use crate::ScenarioError;

/// Sets `key.path` to `value` in `doc`, creating tables on the way. The value is read as a TOML
/// value (`0.1`, `true`, `"8GiB"`, `[1, 2]`); anything that is not one is taken as a string, so
/// `--set device.logical_bytes=8GiB` works unquoted.
pub fn apply_set(doc: &mut toml::Table, assignment: &str) -> Result<(), ScenarioError> {
    let fail = |why: &str| ScenarioError::Set { assignment: assignment.to_string(), why: why.to_string() };
    let (path, raw) = assignment
        .split_once('=')
        .ok_or_else(|| fail("expected KEY.PATH=VALUE, e.g. device.spare_factor=0.1"))?;
    let keys: Vec<&str> = path.trim().split('.').map(str::trim).collect();
    if keys.iter().any(|k| k.is_empty()) {
        return Err(fail("the key path has an empty part"));
    }
    let raw = raw.trim();
    let value = match toml::from_str::<toml::Table>(&format!("v = {raw}")) {
        Ok(mut t) => t.remove("v").expect("the parsed table has v"),
        Err(_) => toml::Value::String(raw.to_string()),
    };
    let (last, parents) = keys.split_last().expect("split yields at least one key");
    let mut table = doc;
    for key in parents {
        let entry = table.entry(key.to_string()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
        table = entry.as_table_mut().ok_or_else(|| fail(&format!("`{key}` is a value, not a section")))?;
    }
    table.insert(last.to_string(), value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(text: &str, assignment: &str) -> Result<toml::Table, ScenarioError> {
        let mut doc: toml::Table = toml::from_str(text).unwrap();
        apply_set(&mut doc, assignment).map(|_| doc)
    }

    #[test]
    fn numbers_booleans_and_bare_strings() {
        let doc = set("[device]\nspare_factor = 0.2\n", "device.spare_factor=0.1").unwrap();
        assert_eq!(doc["device"]["spare_factor"].as_float(), Some(0.1));
        let doc = set("", "device.logical_bytes=8GiB").unwrap();
        assert_eq!(doc["device"]["logical_bytes"].as_str(), Some("8GiB"));
        let doc = set("", "ftl.track_data = true").unwrap();
        assert_eq!(doc["ftl"]["track_data"].as_bool(), Some(true));
        let doc = set("", "trim.delayed.before_gc=\"512MiB\"").unwrap();
        assert_eq!(doc["trim"]["delayed"]["before_gc"].as_str(), Some("512MiB"));
    }

    #[test]
    fn malformed_assignments_say_what_is_expected() {
        let e = set("", "device.spare_factor").unwrap_err().to_string();
        assert!(e.contains("KEY.PATH=VALUE"), "{e}");
        let e = set("", "device..x=1").unwrap_err().to_string();
        assert!(e.contains("empty part"), "{e}");
        let e = set("seed = 3\n", "seed.x=1").unwrap_err().to_string();
        assert!(e.contains("`seed` is a value"), "{e}");
    }
}
