//! Every name a config or a command accepts, read from the registries that define them, so the
//! CLI's help, docs/config.md's lists (checked by a test here) and anything else that lists them
//! can never name what the code does not know.

pub use trimlab_replay::trace_options::{trace_format_layouts, trace_formats};
use trimlab_scenario::catalog::{
    device_presets, ftl_kinds, host_policies, phase_kinds, trim_engines, workload_kinds,
};

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
        ("FTL KINDS ([ftl] kind = ...)", ftl_kinds()),
        ("TRIM ENGINES ([trim] engine = ...)", trim_engines()),
        ("HOST TRIM POLICIES ([host] discard = ...; docs/host-fs.md)", host_policies()),
        ("WORKLOAD KINDS ([workload] kind = ...)", workload_kinds()),
        ("PHASE KINDS ([[phase]] kind = ...)", phase_kinds()),
        ("DEVICE PRESETS ([device] preset = ...)", device_presets()),
    ]
}

/// The lists docs/config.md carries between `<!-- registry:NAME:begin -->` and
/// `<!-- registry:NAME:end -->`, as (NAME, markdown), generated from the registries.
pub fn docs_lists() -> Vec<(&'static str, String)> {
    let list = |rows: Vec<(String, String)>| -> String {
        rows.iter().map(|(name, about)| format!("- `{name}`: {about}\n")).collect()
    };
    vec![
        ("trim-engines", list(trim_engines())),
        ("host-policies", list(host_policies())),
        ("workload-kinds", list(workload_kinds())),
        ("trace-formats", list(trace_format_layouts())),
    ]
}

/// The FTL kinds `bench --ftl` takes.
pub use trimlab_device::FtlKind;

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/config.md's lists are the registries': a name added to a registry without its line
    /// in the docs (or left in the docs after it went) fails here, with the text to paste.
    #[test]
    fn docs_config_lists_match_the_registries() {
        let docs = include_str!("../../../docs/config.md");
        for (name, wanted) in docs_lists() {
            let begin = format!("<!-- registry:{name}:begin -->\n");
            let end = format!("<!-- registry:{name}:end -->");
            let start = docs.find(&begin).unwrap_or_else(|| panic!("docs/config.md lacks {begin}"));
            let body = &docs[start + begin.len()..];
            let stop = body.find(&end).unwrap_or_else(|| panic!("docs/config.md lacks {end}"));
            assert_eq!(
                &body[..stop],
                wanted,
                "docs/config.md's {name} list; it should read:\n{begin}{wanted}{end}"
            );
        }
    }

    #[test]
    fn help_lists_every_registered_name() {
        let all = registries();
        let names = |title: &str| -> Vec<String> {
            all.iter()
                .find(|(t, _)| t.starts_with(title))
                .map(|(_, r)| r.iter().map(|(n, _)| n.clone()).collect())
                .unwrap()
        };
        assert_eq!(names("TRIM ENGINES").len(), trimlab_scenario::catalog::trim_engine_count());
        assert!(names("HOST TRIM POLICIES").contains(&"selective:LOW:HIGH".to_string()));
        assert!(names("WORKLOAD KINDS").contains(&"postmark".to_string()));
        let phases = names("PHASE KINDS");
        assert!(
            phases.contains(&"trim-burst".to_string()) && !phases.contains(&"block-workload".to_string())
        );
    }
}
