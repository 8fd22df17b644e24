//! docs/config.md's key tables list exactly the schema's keys, so the docs cannot drift: every
//! section's keys come from its type (serde's own field list, `trimlab_sim::field_names`; for
//! `[workload]`, the generator's list and each kind's own keys), and each key table of the page
//! is compared with them; the phase table's rows are the registered phase kinds. The
//! `[trim.cost]` table's "002 default" column is compared with `TrimCostModel::default()` as well.

use serde::Deserialize;
use std::collections::BTreeSet;
use trimlab_device::config::{DelayedConfig, TrimCostModel, TrimCostOverrides};
use trimlab_device::{DeviceSection, FtlSection, TrimSection};
use trimlab_scenario::host::{HostSection, ThinSection};
use trimlab_scenario::phase::PhaseSection;
use trimlab_scenario::{OutputSection, RunConfig};
use trimlab_workload::kind::KINDS;
use trimlab_workload::WorkloadConfig;

const DOC: &str = include_str!("../../../../docs/config.md");

/// The keys of a serde struct, as a config file spells them.
fn keys_of<T: for<'de> Deserialize<'de>>() -> BTreeSet<&'static str> {
    let list = trimlab_sim::field_names::<T>();
    assert!(!list.is_empty(), "{} is not a struct with named keys", std::any::type_name::<T>());
    list.iter().copied().collect()
}

/// The rows of every `| key | ...` table between `heading` and the next heading of its level
/// or above, as (key, the row's other cells), one list per table.
fn key_tables(heading: &str) -> Vec<Vec<(String, Vec<String>)>> {
    let start = DOC.lines().position(|l| l == heading).unwrap_or_else(|| panic!("no heading {heading:?}"));
    let level = heading.chars().take_while(|&c| c == '#').count();
    let mut tables = Vec::new();
    let mut in_table = false;
    for line in DOC.lines().skip(start + 1) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if hashes > 0 && hashes <= level && line[hashes..].starts_with(' ') {
            break;
        }
        if line.starts_with("| key |") {
            tables.push(Vec::new());
            in_table = true;
        } else if in_table && line.starts_with("| `") {
            let cells: Vec<String> =
                line.trim_matches('|').split(" | ").map(|c| c.trim().to_string()).collect();
            let key = cells[0].trim_matches('`').to_string();
            tables.last_mut().expect("a table was opened").push((key, cells[1..].to_vec()));
        } else if !line.starts_with('|') {
            in_table = false;
        }
    }
    tables
}

fn keys(rows: &[(String, Vec<String>)]) -> BTreeSet<&str> {
    rows.iter().map(|(k, _)| k.as_str()).collect()
}

#[test]
fn device_ftl_and_trim_tables_list_the_schema_keys() {
    let device = key_tables("## [device]");
    assert_eq!(keys(&device[0]), DeviceSection::KEYS.iter().copied().collect(), "## [device]");
    let ftl = key_tables("## [ftl]");
    assert_eq!(keys(&ftl[0]), FtlSection::KEYS.iter().copied().collect(), "## [ftl]");
    assert_eq!(keys_of::<DeviceSection>(), DeviceSection::KEYS.iter().copied().collect());
    assert_eq!(keys_of::<FtlSection>(), FtlSection::KEYS.iter().copied().collect());

    // [trim]: its scalar keys, then [trim.delayed], then [trim.cost].
    let trim = key_tables("## [trim] and [trim.cost]");
    assert_eq!(trim.len(), 3, "[trim], [trim.delayed] and [trim.cost] tables");
    let sub_tables = BTreeSet::from(["cost", "delayed"]);
    assert_eq!(keys(&trim[0]), &keys_of::<TrimSection>() - &sub_tables, "[trim]");
    assert_eq!(keys(&trim[1]), keys_of::<DelayedConfig>(), "[trim.delayed]");
    assert_eq!(keys(&trim[2]), TrimCostOverrides::KEYS.iter().copied().collect(), "[trim.cost]");
    let defaults = serde_json::to_value(TrimCostModel::default()).unwrap();
    for (key, cells) in &trim[2] {
        assert_eq!(cells[0], defaults[key].to_string(), "[trim.cost] {key}: the 002 default column");
    }
}

#[test]
fn host_thin_workload_output_and_top_level_tables_list_the_schema_keys() {
    host_table_lists_its_own_keys_and_the_policies();
    assert_eq!(keys(&key_tables("## [thin]")[0]), keys_of::<ThinSection>(), "## [thin]");
    assert_eq!(keys(&key_tables("## [output]")[0]), keys_of::<OutputSection>(), "## [output]");
    let sections = BTreeSet::from(["device", "ftl", "trim", "thin", "host", "workload", "phase", "output"]);
    assert_eq!(keys(&key_tables("## Top level")[0]), &keys_of::<RunConfig>() - &sections, "## Top level");
    for section in sections {
        let heading = if section == "phase" { "## [[phase]]".to_string() } else { format!("## [{section}]") };
        assert!(DOC.lines().any(|l| l.starts_with(&heading)), "no heading for [{section}]");
    }
    // [workload]: the block generator's keys are the table; the file-level kinds' keys are
    // the "keys (default)" column of the kinds' table.
    let block = key_tables("## [workload]");
    let file_level = DOC
        .split("## [workload] kind and the file-level workloads")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("the file-level workloads section");
    let all: BTreeSet<&str> = WorkloadConfig::GENERATOR_KEYS
        .iter()
        .copied()
        .chain(["kind"])
        .chain(trimlab_scenario::workload_rounds::KEYS)
        .chain(KINDS.iter().flat_map(|s| (s.keys.names)().iter().copied()))
        .collect();
    for key in keys(&block[0]) {
        assert!(all.contains(key), "[workload] documents {key}, which the schema does not have");
    }
    for key in &all {
        let documented = keys(&block[0]).contains(key) || file_level.contains(&format!("`{key}`"));
        assert!(documented, "[workload] {key} is in the schema but not in docs/config.md");
    }
}

/// `[host]`'s table: its own keys (the file system's), then every key a registered TRIM policy
/// lets `[host]` set, each with the type and default its policy's file declares.
fn host_table_lists_its_own_keys_and_the_policies() {
    use trimlab_fs::policy;
    let table = &key_tables("## [host]")[0];
    let policy_keys: Vec<_> = policy::keys().into_iter().filter(|k| k.in_host).collect();
    // As the page writes defaults: numbers bare, sizes and durations quoted in code.
    let spelled = |key: &policy::PolicyKey| match key.unit {
        policy::Unit::Count => key.unit.spell(key.default),
        _ => format!("`{}`", key.unit.spell(key.default)),
    };
    let row = |key: &policy::PolicyKey| {
        let readers = policy::readers(key).join(", ");
        format!("| `{}` | {} | {} | {} ({readers}) |", key.name, key.unit.type_name(), spelled(key), key.help)
    };
    let mut wanted = keys_of::<HostSection>();
    for key in &policy_keys {
        assert!(wanted.insert(key.name), "[host] {} is both a file-system and a policy key", key.name);
    }
    let missing: Vec<String> = policy_keys
        .iter()
        .filter(|k| !table.iter().any(|(name, _)| name == k.name))
        .map(|k| row(k))
        .collect();
    assert_eq!(
        keys(table),
        wanted,
        "## [host]: the file system's keys and the TRIM policies'; rows to add:\n{}",
        missing.join("\n")
    );
    for key in policy_keys {
        let (_, cells) = table.iter().find(|(k, _)| k == key.name).expect("listed");
        let row = row(key);
        assert_eq!(cells[0], key.unit.type_name(), "[host] {}'s type; the row could read:\n{row}", key.name);
        assert_eq!(cells[1], spelled(key), "[host] {}'s default; the row could read:\n{row}", key.name);
    }
}

#[test]
fn phase_keys_are_the_ones_the_phase_table_names() {
    let section = DOC.split("## [[phase]]").nth(1).and_then(|s| s.split("\n## ").next()).unwrap();
    // The kinds' table: the rows after its `| kind |` header (the section has other tables).
    let table: String = section
        .lines()
        .skip_while(|l| !l.starts_with("| kind |"))
        .skip(2)
        .take_while(|l| l.starts_with("| `"))
        .collect::<Vec<_>>()
        .join("\n");
    for key in keys_of::<PhaseSection>() {
        let documented = match key {
            // The kind is the table's first column; `name` is described above the table.
            "kind" => true,
            "name" => section.contains("an optional `name`"),
            // Rounds are the loop's, read for every kind: described above the table.
            "repeat" => section.contains("`repeat = N`"),
            "between" => section.contains("`between`"),
            "until" | "steady" => {
                section.contains("`until = \"steady\"`") && section.contains("`[phase.steady]`")
            }
            _ => table.contains(&format!("`{key}`")),
        };
        assert!(documented, "[[phase]] {key} is in the schema but not in the phase table");
    }
    let rows: Vec<&str> = table.lines().filter_map(|l| l.strip_prefix("| `")?.split('`').next()).collect();
    let kinds: Vec<String> = trimlab_scenario::catalog::phase_kinds().into_iter().map(|(n, _)| n).collect();
    assert_eq!(rows, kinds, "the phase table's rows, in order, are the phase kinds a [[phase]] may name");
}

/// One cell of the presets table: parentheses dropped, the result of an `a × b = c` product
/// taken, code quotes removed.
fn cell_value(cell: &str) -> &str {
    let cell = cell.split(" (").next().unwrap_or(cell);
    let cell = cell.rsplit("= ").next().unwrap_or(cell);
    cell.trim().trim_matches('`').trim_matches('"')
}

/// A documented value equals the preset's: unset keys read "derived", sizes compare as sizes.
fn same_value(documented: &str, data: &serde_json::Value) -> bool {
    use trimlab_sim::ByteSize;
    match data {
        serde_json::Value::Null => documented.starts_with("derived"),
        serde_json::Value::String(text) => match (ByteSize::parse(documented), ByteSize::parse(text)) {
            (Ok(a), Ok(b)) => a == b,
            _ => documented == text,
        },
        // Numbers and booleans as JSON writes them (`Value == &str` compares strings only).
        other => {
            let text = other.to_string();
            documented == text
        }
    }
}

#[test]
fn the_presets_table_shows_the_preset_data() {
    let table: Vec<Vec<&str>> = DOC
        .split("### Presets")
        .nth(1)
        .expect("a presets table")
        .lines()
        .skip_while(|l| !l.starts_with("| value |"))
        .take_while(|l| l.starts_with('|'))
        .map(|l| l.trim_matches('|').split(" | ").map(str::trim).collect())
        .collect();
    let names: Vec<&str> = table[0][1..].iter().map(|c| c.split('`').nth(1).unwrap_or(c)).collect();
    let presets = trimlab_device::config::presets().unwrap();
    assert_eq!(names, presets.iter().map(|p| p.name).collect::<Vec<_>>(), "the table's columns");
    let mut checked = 0;
    for row in &table[2..] {
        let (keys, sep): (Vec<&str>, &str) = match row[0] {
            "channels × chips × dies × planes" => {
                (vec!["channels", "chips_per_channel", "dies_per_chip", "planes_per_die"], " × ")
            }
            "read / program / erase ns" => (vec!["read_ns", "program_ns", "erase_ns"], " / "),
            label => (label.split(", ").map(|k| k.split(" (").next().unwrap_or(k)).collect(), ", "),
        };
        let known = |k: &&str| DeviceSection::KEYS.contains(k) || FtlSection::KEYS.contains(k);
        if !keys.iter().all(known) {
            continue; // prose rows: what, speeds, TRIM costs and sources
        }
        for (column, preset) in presets.iter().enumerate() {
            let mut cell = row[column + 1];
            if let Some(other) = cell.strip_prefix("as `").and_then(|c| c.split('`').next()) {
                cell = row[names.iter().position(|n| *n == other).expect("a preset column") + 1];
            }
            let cell = if sep == " × " { cell.split(" (").next().unwrap_or(cell) } else { cell };
            let parts: Vec<&str> = cell.split(sep).collect();
            assert_eq!(parts.len(), keys.len(), "{:?} for {}", row[0], preset.name);
            let device = serde_json::to_value(&preset.device).unwrap();
            let ftl = serde_json::to_value(&preset.ftl).unwrap();
            for (key, part) in keys.iter().zip(parts) {
                let data = if DeviceSection::KEYS.contains(key) { &device[key] } else { &ftl[key] };
                assert!(
                    same_value(cell_value(part), data),
                    "docs/config.md's presets table: {key} of {} reads {part:?}; the data file says {data}",
                    preset.name
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 60, "only {checked} values checked");
}
