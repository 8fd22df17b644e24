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

pub fn after_help() -> String {
    let mut out = String::new();
    for (title, rows) in trimlab_jobs::catalog::registries() {
        section(&mut out, title, &rows);
    }
    let formats = trimlab_jobs::catalog::trace_formats();
    let _ = writeln!(
        out,
        "TRACES (trimlab replay / trimlab advise TRACE): {} (detected or --format); see docs/traces.md.",
        formats.join(", ")
    );
    out.push_str(
        "SWEEPS (trimlab sweep GRID.toml --out DIR): the cartesian product of [grid] values and seeds\n  \
         on local workers, one row per run in DIR/results.csv (resumable, --shard K/N); the Python\n  \
         package (python/) runs the same grids locally or on Ray; see docs/sweeps.md.\n\
         SERVING (trimlab serve CONFIG.toml): the simulated SSD as an NBD export for real clients\n  \
         (ext4 via nbdfuse + loop, qemu-io, nbdcopy); see docs/serve.md.\n\n\
         Config keys and defaults: docs/config.md; any key can be overridden with --set KEY.PATH=VALUE.\n\
         Replay any run: same config and --seed.",
    );
    out
}
