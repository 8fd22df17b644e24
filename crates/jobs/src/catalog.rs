//! Every name a config or a command accepts, read from the registries that define them, so the
//! CLI's help (and anything else that lists them) can never name what the code does not know.

/// (title, rows of (name, description)) for each registry.
pub fn registries() -> Vec<(&'static str, Vec<(String, String)>)> {
    fn rows<'a>(items: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<(String, String)> {
        items.into_iter().map(|(n, a)| (n.to_string(), a.to_string())).collect()
    }
    vec![
        (
            "EXPERIMENTS (trimlab reproduce NAME)",
            rows(trimlab_experiments::EXPERIMENTS.iter().map(|e| (e.name, e.about))),
        ),
        (
            "FTL KINDS ([ftl] kind = ...)",
            rows(trimlab_device::FtlKind::ALL.iter().map(|(_, name, about)| (*name, *about))),
        ),
        ("TRIM ENGINES ([trim] engine = ...)", rows(trimlab_trim::EngineKind::ALL.iter().copied())),
        (
            "HOST TRIM POLICIES (file-system layer; docs/host-fs.md)",
            rows(trimlab_fs::PolicyKind::NAMES.iter().copied()),
        ),
        ("DEVICE PRESETS ([device] preset = ...)", rows(trimlab_device::config::preset_list())),
    ]
}

/// The trace formats `replay` and `advise` read.
pub fn trace_formats() -> Vec<&'static str> {
    trimlab_trace::TraceFormat::ALL.iter().map(|f| f.name()).collect()
}

/// The FTL kinds `bench --ftl` takes.
pub use trimlab_device::FtlKind;
