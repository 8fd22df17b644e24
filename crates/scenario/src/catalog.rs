//! Every name the config schema accepts, read from the registries that define them: FTL kinds,
//! TRIM engines, host TRIM policies, workload kinds, phase kinds and device presets (the
//! `--help` lists and docs/config.md's generated lists are assembled from these by `jobs`).

use trimlab_workload::kind::{Level, KINDS};

/// The FTL kinds: name and help.
pub fn ftl_kinds() -> Vec<(String, String)> {
    trimlab_device::FtlKind::ALL
        .iter()
        .map(|(_, name, about)| (name.to_string(), about.to_string()))
        .collect()
}

/// The TRIM engines: name, help (and the table of the engine's own keys).
pub fn trim_engines() -> Vec<(String, String)> {
    trimlab_trim::ENGINES.iter().map(|s| (s.kind.name().to_string(), s.help.to_string())).collect()
}

/// The host TRIM policies as `[host] discard` spells them (`selective:LOW:HIGH`; the bare name
/// takes the defaults its help gives).
pub fn host_policies() -> Vec<(String, String)> {
    trimlab_fs::policy::POLICIES
        .iter()
        .map(|s| {
            let name = s.args.map_or_else(|| s.name.to_string(), |a| format!("{}:{a}", s.name));
            (name, s.help.to_string())
        })
        .collect()
}

/// The workload kinds, each with what it drives.
pub fn workload_kinds() -> Vec<(String, String)> {
    KINDS
        .iter()
        .map(|s| {
            let on = match s.level {
                Level::Block => "block device",
                Level::ClusterHost => "block device, 004's cluster host",
                Level::File => "file system",
            };
            (s.kind.name().to_string(), format!("{} [{on}]", s.help))
        })
        .collect()
}

/// The phase kinds a `[[phase]]` may name, each with its help.
pub fn phase_kinds() -> Vec<(String, String)> {
    crate::phases::written_kinds().map(|s| (s.kind.name().to_string(), s.help.to_string())).collect()
}

/// The device presets: name and what it models.
pub fn device_presets() -> Vec<(String, String)> {
    trimlab_device::config::preset_list().iter().map(|(n, a)| (n.to_string(), a.to_string())).collect()
}

/// How many TRIM engines are registered (a test of the lists counts them).
pub fn trim_engine_count() -> usize {
    trimlab_trim::ENGINES.len()
}
