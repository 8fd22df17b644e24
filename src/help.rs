//! The text after `trimlab --help`: every name a config or a command accepts, read from the
//! registries that define them (experiments, FTL kinds, TRIM engines, host policies, presets,
//! trace formats), so the help can never list a name the code does not know or miss one.

use std::fmt::Write;

/// One titled list of `name  description` lines.
fn section(out: &mut String, title: &str, rows: &[(String, String)]) {
    let width = rows.iter().map(|(n, _)| n.len()).max().unwrap_or(0).clamp(12, 22);
    let _ = writeln!(out, "{title}:");
    for (name, about) in rows {
        if name.len() > width {
            let _ = writeln!(out, "  {name}\n  {:width$}  {about}", "");
        } else {
            let _ = writeln!(out, "  {name:width$}  {about}");
        }
    }
    out.push('\n');
}

fn rows<'a>(items: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<(String, String)> {
    items.into_iter().map(|(n, a)| (n.to_string(), a.to_string())).collect()
}

pub fn after_help() -> String {
    let mut out = String::new();
    section(
        &mut out,
        "EXPERIMENTS (trimlab reproduce NAME)",
        &rows(trimlab_experiments::EXPERIMENTS.iter().map(|e| (e.name, e.about))),
    );
    section(
        &mut out,
        "FTL KINDS ([ftl] kind = ...)",
        &rows(trimlab_device::FtlKind::ALL.iter().map(|(_, name, about)| (*name, *about))),
    );
    section(
        &mut out,
        "TRIM ENGINES ([trim] engine = ...)",
        &rows(trimlab_trim::EngineKind::ALL.iter().copied()),
    );
    section(
        &mut out,
        "HOST TRIM POLICIES (file-system layer; docs/host-fs.md)",
        &rows(trimlab_fs::PolicyKind::NAMES.iter().copied()),
    );
    section(&mut out, "DEVICE PRESETS ([device] preset = ...)", &rows(trimlab_device::config::preset_list()));
    let formats: Vec<&str> = trimlab_trace::TraceFormat::ALL.iter().map(|f| f.name()).collect();
    let _ = writeln!(
        out,
        "TRACES (trimlab replay / trimlab advise TRACE): {} (detected or --format); see docs/traces.md.",
        formats.join(", ")
    );
    out.push_str(
        "SERVING (trimlab serve CONFIG.toml): the simulated SSD as an NBD export for real clients\n  \
         (ext4 via nbdfuse + loop, qemu-io, nbdcopy); see docs/serve.md.\n\n\
         Config keys and defaults: docs/config.md; any key can be overridden with --set KEY.PATH=VALUE.\n\
         Replay any run: same config and --seed.",
    );
    out
}
