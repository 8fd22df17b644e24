//! The config hash every run prints: FNV-1a over the resolved config's canonical form, a text
//! that depends only on what the run does, not on how the model types happen to serialize.
//!
//! The canonical form is one line per set key of the resolved config, `path = value`, sorted
//! by path (bytewise), joined by `\n`:
//! - the sections: `device.` (the resolved device: preset expanded, geometry fitted, GC
//!   targets derived; of the TRIM engines' own keys, `device.trim_<engine>.`, only the
//!   selected engine's), `workload.` (`[workload]` with its defaults), `host.` (the file system
//!   mkfs makes, with `host.fs.policy` the policy as `[host] discard` spells it), `thin.` (the
//!   thin volume), `phases.N.` (the `[[phase]]` tables as written), `seed_path`; a section the
//!   run does not have contributes no line;
//! - a path is the dotted key path, array items numbered (`phases.0.kind`);
//! - a value is its JSON text (strings quoted, numbers as written by serde_json);
//! - unset keys (null) and empty tables and lists give no line, so whether a type leaves an
//!   unset key out or writes it as null, and in which order it writes its keys, does not
//!   change the hash.
//!
//! The seed is not part of it (the same config under two seeds has one hash).

use crate::config::Resolved;
use crate::flatten::flatten;
use serde_json::{json, Value};

/// The canonical form of `resolved` (module doc).
pub fn canonical_form(resolved: &Resolved) -> String {
    let mut lines: Vec<String> = Vec::new();
    // Only the selected engine's own keys: the others' sections do not change what the run
    // does, and a newly registered engine must not change every config's hash.
    let engine = resolved.device.trim_engine;
    let others: Vec<String> = trimlab_trim::ENGINES
        .iter()
        .filter(|s| s.kind != engine)
        .map(|s| format!("trim_{}", s.kind.name()))
        .collect();
    let others: Vec<&str> = others.iter().map(String::as_str).collect();
    section(&mut lines, "device", json!(resolved.device), &others);
    section(&mut lines, "workload", json!(resolved.workload), &[]);
    if let Some(host) = &resolved.host {
        // `PolicyKind` serializes as its config spelling, so `host.fs.policy` is the policy as
        // `[host] discard` spells it.
        section(&mut lines, "host", json!(host), &[]);
    }
    if let Some(thin) = &resolved.thin {
        section(&mut lines, "thin", json!(thin), &[]);
    }
    let written: Vec<_> = resolved.phases.iter().filter(|p| p.written).map(|p| &p.section).collect();
    section(&mut lines, "phases", json!(written), &[]);
    if let Some(path) = &resolved.seed_path {
        lines.push(format!("seed_path = {}", json!(path)));
    }
    lines.sort();
    lines.join("\n")
}

/// The lines of one section: its set leaves, but those under `skip` (which the caller writes
/// itself).
fn section(lines: &mut Vec<String>, name: &str, value: Value, skip: &[&str]) {
    for (key, leaf) in flatten(&json!({ name: value })) {
        let dropped = skip.iter().any(|s| {
            let s = format!("{name}.{s}");
            key == s || key.starts_with(&format!("{s}."))
        });
        if !leaf.is_null() && !dropped {
            lines.push(format!("{key} = {leaf}"));
        }
    }
}

/// The config hash: FNV-1a (64 bits, hex) of [`canonical_form`].
pub fn config_hash(resolved: &Resolved) -> String {
    crate::flatten::fnv1a_hex(canonical_form(resolved).as_bytes())
}
