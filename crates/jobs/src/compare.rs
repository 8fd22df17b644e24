//! `compare A B`: two recordings of the commands that reached a device, side by side per
//! phase (how the model is checked against a kernel: `serve --record` of a real file system
//! as A, `run --record` of the same script as B). A is the reference: errors are (B - A) / A.
//!
//! Reads `serve --record` / `run --record` files (fio iolog v3 with `# phase NAME AT_US`
//! lines) and the TRIM-only split recordings kept in tests/data/discard-patterns
//! (`# phase NAME START_US END_US`, then `AT_US OFFSET BYTES` per TRIM range).
//!
//! A command belongs to the phase whose marker precedes it in the file: the file's order, not
//! its µs stamp, decides (a command stamped before its marker's start is still counted there).
//! Phases pair by name and occurrence (the second `rm` of A with the second `rm` of B); a phase
//! on one side only is shown against zeros and fails `--within`.

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
    /// Bytes covered by at least one TRIM of the phase: ext4 since Linux 6.8 sends TRIMs that
    /// overlap ones it sent before, so their sum can exceed what the device was asked to forget.
    pub trim_union_bytes: u64,
    #[serde(skip)]
    trim_sizes: Vec<u64>,
    /// (offset, bytes) of each TRIM range, for the union at `finish`.
    #[serde(skip)]
    trim_ranges: Vec<(u64, u64)>,
}

impl PhaseCommands {
    fn new(name: &str, start_us: u64) -> PhaseCommands {
        PhaseCommands { name: name.to_string(), start_us, ..PhaseCommands::default() }
    }

    fn trim(&mut self, at_us: u64, offset: u64, bytes: u64) {
        self.trim_commands += 1;
        self.trim_ranges.push((offset, bytes));
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
        self.trim_union_bytes = union_bytes(std::mem::take(&mut self.trim_ranges));
    }
}

/// Bytes covered by the union of `ranges` (offset, bytes); ends past 2^64 saturate.
fn union_bytes(mut ranges: Vec<(u64, u64)>) -> u64 {
    ranges.sort_unstable();
    let (mut total, mut covered_to) = (0u64, 0u64);
    for (offset, bytes) in ranges {
        let end = offset.saturating_add(bytes);
        let from = offset.max(covered_to);
        if end > from {
            total = total.saturating_add(end - from);
            covered_to = end;
        }
    }
    total
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
                let (us, offset, bytes) = (num(us)?, num(offset)?, num(bytes)?);
                let p = phases.last_mut().unwrap_or_else(|| unreachable!());
                match action {
                    "trim" => p.trim(us, offset, bytes),
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
                let (us, offset, bytes) = (num(us)?, num(offset)?, num(bytes)?);
                phases.last_mut().unwrap_or_else(|| unreachable!()).trim(us, offset, bytes);
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

/// Each phase's key: its name and how many phases of that name came before it on its side.
fn keyed(side: &[PhaseCommands]) -> Vec<(&str, usize)> {
    let mut seen = std::collections::BTreeMap::<&str, usize>::new();
    side.iter()
        .map(|p| {
            let n = seen.entry(p.name.as_str()).or_insert(0);
            *n += 1;
            (p.name.as_str(), *n)
        })
        .collect()
}

/// A token as an error quotes it (a hostile recording's token can be a megabyte long).
fn clip(token: &str) -> &str {
    token.char_indices().nth(60).map_or(token, |(at, _)| &token[..at])
}

/// One phase of the comparison (a phase missing on one side is all zeros there).
#[derive(Clone, Debug, Serialize)]
pub struct PhaseComparison {
    pub name: String,
    /// 1 for a name's first phase on its side, 2 for its second, ...: phases pair by name and
    /// occurrence.
    pub occurrence: usize,
    /// `"A"` or `"B"` when the phase is on that side only (the other side's figures are zeros);
    /// such a phase fails `--within`.
    pub only_in: Option<&'static str>,
    pub a: PhaseCommands,
    pub b: PhaseCommands,
    /// (B - A) / A of TRIM commands, bytes and union bytes; None when A is 0 and B is not.
    pub trim_commands_error: Option<f64>,
    pub trim_bytes_error: Option<f64>,
    pub trim_union_bytes_error: Option<f64>,
}

/// Which TRIM byte figure `--within` holds besides the commands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TrimBytes {
    /// The sum of the TRIM ranges' bytes.
    #[default]
    Sum,
    /// The bytes their union covers (overlapping TRIMs counted once).
    Union,
}

/// (b - a) / a, 0 when both are 0, None when only a is 0.
pub fn relative_error(a: u64, b: u64) -> Option<f64> {
    match (a, b) {
        (0, 0) => Some(0.0),
        (0, _) => None,
        _ => Some((b as f64 - a as f64) / a as f64),
    }
}

/// Pairs the phases by name and occurrence (the k-th phase named N in A with the k-th named N
/// in B), in A's order, B's unpaired phases after in B's order. Each side is keyed once, so
/// 10^5 phases take no longer than reading them (the pairing was a scan per name: 32 s).
pub fn compare(a: &[PhaseCommands], b: &[PhaseCommands]) -> Vec<PhaseComparison> {
    let (keys_a, keys_b) = (keyed(a), keyed(b));
    let index_b: std::collections::BTreeMap<(&str, usize), usize> =
        keys_b.iter().enumerate().map(|(i, &k)| (k, i)).collect();
    let in_a: std::collections::BTreeSet<(&str, usize)> = keys_a.iter().copied().collect();
    let mut rows: Vec<PhaseComparison> = keys_a
        .iter()
        .enumerate()
        .map(|(i, key)| match index_b.get(key) {
            Some(&j) => row(*key, None, a[i].clone(), b[j].clone()),
            None => row(*key, Some("A"), a[i].clone(), PhaseCommands::new(key.0, 0)),
        })
        .collect();
    rows.extend(
        keys_b
            .iter()
            .enumerate()
            .filter(|(_, key)| !in_a.contains(*key))
            .map(|(j, key)| row(*key, Some("B"), PhaseCommands::new(key.0, 0), b[j].clone())),
    );
    rows
}

fn row(
    (name, occurrence): (&str, usize),
    only_in: Option<&'static str>,
    a: PhaseCommands,
    b: PhaseCommands,
) -> PhaseComparison {
    PhaseComparison {
        name: name.to_string(),
        occurrence,
        only_in,
        trim_commands_error: relative_error(a.trim_commands, b.trim_commands),
        trim_bytes_error: relative_error(a.trim_bytes, b.trim_bytes),
        trim_union_bytes_error: relative_error(a.trim_union_bytes, b.trim_union_bytes),
        a,
        b,
    }
}

/// The largest |error| of TRIM commands and summed bytes over all phases (infinite when a
/// phase has TRIMs on B only, or is on one side only).
pub fn worst_error(rows: &[PhaseComparison]) -> f64 {
    worst_error_of(rows, TrimBytes::Sum)
}

/// The same, holding the summed or the union bytes.
pub fn worst_error_of(rows: &[PhaseComparison], bytes: TrimBytes) -> f64 {
    let worst_of = |r: &PhaseComparison| {
        if r.only_in.is_some() {
            // A phase one side lacks is a mismatch whatever its figures.
            return f64::INFINITY;
        }
        let b = match bytes {
            TrimBytes::Sum => r.trim_bytes_error,
            TrimBytes::Union => r.trim_union_bytes_error,
        };
        [r.trim_commands_error, b].into_iter().map(|e| e.map_or(f64::INFINITY, f64::abs)).fold(0.0, f64::max)
    };
    rows.iter().map(worst_of).fold(0.0, f64::max)
}

/// The phases on one side only, as `--within`'s failure names them (`rm#2 (only in B)`).
pub fn one_sided(rows: &[PhaseComparison]) -> Vec<String> {
    rows.iter().filter_map(|r| r.only_in.map(|side| format!("{} (only in {side})", label(r)))).collect()
}

/// A row's phase as the table names it: the name, with `#k` from its second occurrence on.
fn label(r: &PhaseComparison) -> String {
    match r.occurrence {
        1 => r.name.clone(),
        k => format!("{}#{k}", r.name),
    }
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
    let columns = |c: [&str; 13]| {
        format!(
            "{:<14} {:<4} {:>7} {:>13} {:>10} {:>10} {:>12} {:>11} {:>11} {:>7} {:>13} {:>7} {:>13}",
            c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9], c[10], c[11], c[12]
        )
    };
    let mut out = vec![
        format!("A = {a_name}"),
        format!("B = {b_name}"),
        columns([
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
            "flushes",
            "union bytes",
        ]),
    ];
    for r in rows {
        for (side, p) in [("A", &r.a), ("B", &r.b)] {
            let name = if side == "A" { label(r) } else { String::new() };
            let n = [
                p.trim_commands,
                p.trim_bytes,
                p.trim_bytes_min,
                p.trim_bytes_median,
                p.trim_bytes_max,
                p.write_commands,
                p.write_bytes,
                p.flush_commands,
                p.trim_union_bytes,
            ]
            .map(|v| v.to_string());
            let (first, last) = (ms(p.first_trim_after_us), ms(p.last_trim_after_us));
            out.push(columns([
                &name, side, &n[0], &n[1], &n[2], &n[3], &n[4], &first, &last, &n[5], &n[6], &n[7], &n[8],
            ]));
        }
        let (commands, bytes) = (percent(r.trim_commands_error), percent(r.trim_bytes_error));
        let union = percent(r.trim_union_bytes_error);
        let err = match r.only_in {
            Some(side) => format!("only in {side}"),
            None => "err".to_string(),
        };
        out.push(columns(["", &err, &commands, &bytes, "", "", "", "", "", "", "", "", &union]));
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

    #[test]
    fn repeated_names_pair_by_occurrence() {
        let a = read_recording("# phase rm 0\n5 0 4096\n# phase rm 10\n15 0 8192\n", "a").unwrap();
        let b = read_recording("# phase rm 0\n5 0 4096\n# phase rm 10\n15 0 4096\n", "b").unwrap();
        let rows = compare(&a, &b);
        assert_eq!(
            rows.iter().map(|r| (r.name.as_str(), r.occurrence)).collect::<Vec<_>>(),
            [("rm", 1), ("rm", 2)]
        );
        assert_eq!((rows[0].trim_bytes_error, rows[1].trim_bytes_error), (Some(0.0), Some(-0.5)));
        assert_eq!(worst_error(&rows), 0.5, "the second rm is compared, not dropped");
        assert!(
            table(&rows, "a", "b").iter().any(|l| l.starts_with("rm#2 ")),
            "{:?}",
            table(&rows, "a", "b")
        );
    }

    #[test]
    fn a_phase_on_one_side_only_fails_whatever_its_figures() {
        let a = read_recording("# phase mkfs 0\n5 0 4096\n# phase sleep 10\n", "a").unwrap();
        let b = read_recording("# phase mkfs 0\n5 0 4096\n# phase idle 10\n", "b").unwrap();
        let rows = compare(&a, &b);
        assert_eq!(rows.iter().map(|r| r.only_in).collect::<Vec<_>>(), [None, Some("A"), Some("B")]);
        assert_eq!(rows[1].trim_commands_error, Some(0.0), "no TRIMs on either side");
        assert!(worst_error(&rows).is_infinite() && worst_error_of(&rows, TrimBytes::Union).is_infinite());
        assert_eq!(one_sided(&rows), ["sleep (only in A)", "idle (only in B)"]);
        let text = table(&rows, "a", "b");
        assert!(text.iter().any(|l| l.contains("only in B")), "{text:?}");
        assert_eq!(worst_error(&compare(&a, &a)), 0.0);
    }

    #[test]
    fn union_bytes_count_overlapping_trims_once() {
        // ext4 6.8+: a TRIM covers a range already trimmed in the same phase.
        let text = "# phase rm 0\n1 0 8192\n2 4096 8192\n3 4096 4096\n4 65536 4096\n";
        let a = read_recording(text, "a").unwrap();
        assert_eq!((a[0].trim_bytes, a[0].trim_union_bytes), (24576, 16384));
        let b = read_recording("# phase rm 0\n1 0 12288\n2 65536 4096\n", "b").unwrap();
        let rows = compare(&a, &b);
        assert_eq!((rows[0].trim_bytes_error, rows[0].trim_union_bytes_error), (Some(-1.0 / 3.0), Some(0.0)));
        assert_eq!(worst_error_of(&rows, TrimBytes::Union), 0.5, "the commands still count: 4 against 2");
        assert_eq!(union_bytes(vec![(u64::MAX - 1, 4096), (0, 0)]), 1, "ends past 2^64 saturate");
    }

    #[test]
    fn file_order_not_the_stamp_puts_a_command_in_its_phase() {
        // The TRIM stamped 5 µs comes after the marker of phase b (start 10): it is b's.
        let a = read_recording("# phase a 0\n# phase b 10\n5 trimlab trim 0 4096\n", "a").unwrap();
        assert_eq!((a[0].trim_commands, a[1].trim_commands), (0, 1));
        assert_eq!(a[1].first_trim_after_us, Some(0), "an early stamp counts as the phase's start");
    }
}
