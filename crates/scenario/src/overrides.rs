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
