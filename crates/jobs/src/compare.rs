//! `compare A B`: two recordings of the commands that reached a device, side by side per
//! phase (how the model is checked against a kernel: `serve --record` of a real file system
//! as A, `run --record` of the same script as B). A is the reference: errors are (B - A) / A.
//!
//! Reads `serve --record` / `run --record` files (fio iolog v3 with `# phase NAME AT_US`
//! lines) and the TRIM-only split recordings kept in tests/data/discard-patterns
//! (`# phase NAME START_US END_US`, then `AT_US OFFSET BYTES` per TRIM range).

use anyhow::{bail, Context, Result};
use serde::Serialize;

/// What reached the device in one phase.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PhaseCommands {
    pub name: String,
    pub start_us: u64,
    pub trim_commands: u64,
    pub trim_bytes: u64,
    pub trim_bytes_min: u64,
    pub trim_bytes_median: u64,
    pub trim_bytes_max: u64,
    /// First and last TRIM after the phase's start (None without TRIMs).
    pub first_trim_after_us: Option<u64>,
    pub last_trim_after_us: Option<u64>,
    pub write_commands: u64,
    pub write_bytes: u64,
    pub read_commands: u64,
    pub flush_commands: u64,
    #[serde(skip)]
    trim_sizes: Vec<u64>,
}

impl PhaseCommands {
    fn new(name: &str, start_us: u64) -> PhaseCommands {
        PhaseCommands { name: name.to_string(), start_us, ..PhaseCommands::default() }
    }

    fn trim(&mut self, at_us: u64, bytes: u64) {
        self.trim_commands += 1;
        // Sums of hostile sizes saturate rather than wrap (a trimmed byte count over 2^64 is
        // not a recording of a real device anyway).
        self.trim_bytes = self.trim_bytes.saturating_add(bytes);
        self.trim_sizes.push(bytes);
        let after = at_us.saturating_sub(self.start_us);
        self.first_trim_after_us.get_or_insert(after);
        self.last_trim_after_us = Some(after);
    }

    fn finish(&mut self) {
        let mut sizes = std::mem::take(&mut self.trim_sizes);
        sizes.sort_unstable();
        if let (Some(&lo), Some(&hi)) = (sizes.first(), sizes.last()) {
            self.trim_bytes_min = lo;
            self.trim_bytes_max = hi;
            self.trim_bytes_median = sizes[(sizes.len() - 1) / 2];
        }
    }
}

/// The most phases a recording may have: `serve` keeps at most 1000 per run and a script
/// 10,000 (docs/limits.md); each phase is a row of the comparison.
pub const PHASES_MAX: usize = 100_000;

/// Reads a recording; `origin` names it in errors (with the line).
pub fn read_recording(text: &str, origin: &str) -> Result<Vec<PhaseCommands>> {
    let mut phases = vec![PhaseCommands::new("start", 0)];
    for (i, line) in text.lines().enumerate() {
        let at = || format!("{origin}:{}", i + 1);
        let f: Vec<&str> = line.split_whitespace().collect();
        let num = |s: &str| {
            s.parse::<u64>().with_context(|| format!("{}: \"{}\" is not a whole number", at(), clip(s)))
        };
        match f[..] {
            [] => {}
            ["#", "phase", name, start, ..] => {
                if phases.len() > PHASES_MAX {
                    bail!("{}: more than {PHASES_MAX} phases (docs/limits.md)", at());
                }
                phases.last_mut().map(PhaseCommands::finish);
                phases.push(PhaseCommands::new(name, num(start)?));
            }
            [first, ..] if first.starts_with('#') => {}
            ["fio", "version", ..] => {}
            [_, _, "add" | "open" | "close"] => {}
            [us, _, action, offset, bytes] => {
                let (us, _, bytes) = (num(us)?, num(offset)?, num(bytes)?);
                let p = phases.last_mut().unwrap_or_else(|| unreachable!());
                match action {
                    "trim" => p.trim(us, bytes),
                    "write" => {
                        (p.write_commands, p.write_bytes) = (p.write_commands + 1, p.write_bytes.saturating_add(bytes))
                    }
                    "read" => p.read_commands += 1,
                    "sync" => p.flush_commands += 1,
                    other => {
                        bail!("{}: unknown action \"{}\" (accepted: read, write, trim, sync)", at(), clip(other))
                    }
                }
            }
            // A split recording's TRIM line: AT_US OFFSET BYTES.
            [us, offset, bytes] => {
                let (us, _, bytes) = (num(us)?, num(offset)?, num(bytes)?);
                phases.last_mut().unwrap_or_else(|| unreachable!()).trim(us, bytes);
            }
            _ => bail!(
                "{}: not a recording line (expected \"AT_US FILE ACTION OFFSET BYTES\", \"# phase NAME AT_US\" or \"AT_US OFFSET BYTES\")",
                at()
            ),
        }
    }
    phases.last_mut().map(PhaseCommands::finish);
    // An empty leading "start" (a recording that marks its first phase at once) says nothing.
    if phases.len() > 1 && phases[0] == PhaseCommands::new("start", 0) {
        phases.remove(0);
    }
    Ok(phases)
}

/// Each name's first phase.
fn first_by_name(side: &[PhaseCommands]) -> std::collections::BTreeMap<&str, usize> {
    let mut first = std::collections::BTreeMap::new();
    for (i, p) in side.iter().enumerate() {
        first.entry(p.name.as_str()).or_insert(i);
    }
    first
}

/// A token as an error quotes it (a hostile recording's token can be a megabyte long).
fn clip(token: &str) -> &str {
    token.char_indices().nth(60).map_or(token, |(at, _)| &token[..at])
}

/// One phase of the comparison (a phase missing on one side is all zeros there).
#[derive(Clone, Debug, Serialize)]
pub struct PhaseComparison {
    pub name: String,
    pub a: PhaseCommands,
    pub b: PhaseCommands,
    /// (B - A) / A of TRIM commands and bytes; None when A is 0 and B is not.
    pub trim_commands_error: Option<f64>,
    pub trim_bytes_error: Option<f64>,
}

/// (b - a) / a, 0 when both are 0, None when only a is 0.
pub fn relative_error(a: u64, b: u64) -> Option<f64> {
    match (a, b) {
        (0, 0) => Some(0.0),
        (0, _) => None,
        _ => Some((b as f64 - a as f64) / a as f64),
    }
}

/// Pairs the phases by name, in A's order (B's extra phases after); a name given twice pairs
/// its first phase. Each side is indexed by name once, so 10^5 phases take no longer than
/// reading them (the pairing was a scan per name: 32 s).
pub fn compare(a: &[PhaseCommands], b: &[PhaseCommands]) -> Vec<PhaseComparison> {
    let (in_a, in_b) = (first_by_name(a), first_by_name(b));
    let mut names: Vec<&str> = a.iter().map(|p| p.name.as_str()).collect();
    names.extend(b.iter().map(|p| p.name.as_str()).filter(|n| !in_a.contains_key(n)));
    let find = |side: &[PhaseCommands], first: &std::collections::BTreeMap<&str, usize>, name: &str| {
        first.get(name).map_or_else(|| PhaseCommands::new(name, 0), |&i| side[i].clone())
    };
    names
        .into_iter()
        .map(|name| {
            let (a, b) = (find(a, &in_a, name), find(b, &in_b, name));
            PhaseComparison {
                name: name.to_string(),
                trim_commands_error: relative_error(a.trim_commands, b.trim_commands),
                trim_bytes_error: relative_error(a.trim_bytes, b.trim_bytes),
                a,
                b,
            }
        })
        .collect()
}

/// The largest |error| of TRIM commands and bytes over all phases (infinite when a phase has
/// TRIMs on B only).
pub fn worst_error(rows: &[PhaseComparison]) -> f64 {
    rows.iter()
        .flat_map(|r| [r.trim_commands_error, r.trim_bytes_error])
        .map(|e| e.map_or(f64::INFINITY, f64::abs))
        .fold(0.0, f64::max)
}

fn percent(e: Option<f64>) -> String {
    match e {
        Some(e) => format!("{:+.1}%", 100.0 * e),
        None => "new".to_string(),
    }
}

fn ms(us: Option<u64>) -> String {
    us.map_or("-".to_string(), |us| format!("{:.3}", us as f64 / 1000.0))
}

/// The comparison as a table: two lines per phase (A, B) and one of errors.
pub fn table(rows: &[PhaseComparison], a_name: &str, b_name: &str) -> Vec<String> {
    let mut out = vec![
        format!("A = {a_name}"),
        format!("B = {b_name}"),
        format!(
            "{:<14} {:<4} {:>7} {:>13} {:>10} {:>10} {:>12} {:>11} {:>11} {:>7} {:>13} {:>7}",
            "phase",
            "",
            "TRIMs",
            "TRIM bytes",
            "min",
            "median",
            "max",
            "first ms",
            "last ms",
            "writes",
            "write bytes",
            "flushes"
        ),
    ];
    for r in rows {
        for (side, p) in [("A", &r.a), ("B", &r.b)] {
            out.push(format!(
                "{:<14} {:<4} {:>7} {:>13} {:>10} {:>10} {:>12} {:>11} {:>11} {:>7} {:>13} {:>7}",
                if side == "A" { r.name.as_str() } else { "" },
                side,
                p.trim_commands,
                p.trim_bytes,
                p.trim_bytes_min,
                p.trim_bytes_median,
                p.trim_bytes_max,
                ms(p.first_trim_after_us),
                ms(p.last_trim_after_us),
                p.write_commands,
                p.write_bytes,
                p.flush_commands
            ));
        }
        out.push(format!(
            "{:<14} {:<4} {:>7} {:>13}",
            "",
            "err",
            percent(r.trim_commands_error),
            percent(r.trim_bytes_error)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SERVE: &str = "fio version 3 iolog\n0 trimlab add\n0 trimlab open\n# phase mkfs 0\n10 trimlab trim 0 4096\n20 trimlab trim 8192 1048576\n30 trimlab write 0 4096\n# phase rm 1000\n1500 trimlab trim 0 8192\n1600 trimlab sync 0 0\n1600 trimlab close\n";
    const SPLIT: &str = "# TRIM ranges\n# phase mkfs 0 900\n10 0 4096\n20 8192 1048576\n# phase rm 1000 2000\n1800 0 4096\n1900 4096 4096\n";

    #[test]
    fn both_formats_read_per_phase() {
        let a = read_recording(SERVE, "a").unwrap();
        assert_eq!(a.len(), 2);
        assert_eq!((a[0].trim_commands, a[0].trim_bytes, a[0].write_commands), (2, 1052672, 1));
        assert_eq!((a[0].trim_bytes_min, a[0].trim_bytes_median, a[0].trim_bytes_max), (4096, 4096, 1048576));
        assert_eq!((a[1].first_trim_after_us, a[1].flush_commands), (Some(500), 1));
        let b = read_recording(SPLIT, "b").unwrap();
        assert_eq!((b[1].trim_commands, b[1].trim_bytes, b[1].last_trim_after_us), (2, 8192, Some(900)));
        let rows = compare(&a, &b);
        assert_eq!(rows[0].trim_commands_error, Some(0.0));
        assert_eq!(rows[1].trim_commands_error, Some(1.0));
        assert_eq!(rows[1].trim_bytes_error, Some(0.0));
        assert_eq!(worst_error(&rows), 1.0);
        assert!(table(&rows, "a", "b").iter().any(|l| l.contains("+100.0%")));
    }

    #[test]
    fn bad_lines_name_their_place() {
        let e = read_recording("# phase x 0\n12 trimlab frob 0 1\n", "k.log").unwrap_err().to_string();
        assert!(e.contains("k.log:2") && e.contains("unknown action"), "{e}");
        let e = read_recording("1 2\n", "k.log").unwrap_err().to_string();
        assert!(e.contains("k.log:1: not a recording line"), "{e}");
        let e = read_recording("x 2 3\n", "k.log").unwrap_err().to_string();
        assert!(e.contains("\"x\" is not a whole number"), "{e}");
    }

    #[test]
    fn phases_on_one_side_only_compare_against_zero() {
        let a = read_recording("# phase a 0\n5 0 4096\n", "a").unwrap();
        let b = read_recording("# phase b 0\n5 0 4096\n", "b").unwrap();
        let rows = compare(&a, &b);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].trim_commands_error, Some(-1.0));
        assert_eq!(rows[1].trim_commands_error, None);
        assert!(worst_error(&rows).is_infinite());
    }
}
