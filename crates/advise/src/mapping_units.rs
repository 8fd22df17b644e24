//! What discard buys at each mapping unit (issue 27): a drive that maps 16 or 64 KiB
//! indirection units deallocates only the whole units inside a TRIM's ranges, so the small
//! discards a file system sends can stop buying anything. Both advice forms run the ways of
//! handling discards (online, each fstrim period, none) again at each unit compared (a trace
//! is replayed; a file workload runs on a drive of each unit, its 4 KiB blocks carried by the
//! drive's tags per host page), and this file turns those runs into a table, two plots and the
//! sentence the recommendation carries.
//!
//! Which units: `--mapping-units 4KiB,16KiB,64KiB` names them (`none`: no comparison); without
//! the flag, a drive whose unit is larger than its page is compared at its page, 16 KiB, 64 KiB
//! and its own unit (those its geometry accepts), and a drive that maps pages is not compared.
//! The trace form reuses the advice's own replays at the drive's unit.

use anyhow::{bail, Result};
use trimlab_device::{DeviceReport, FtlSection, SsdConfig};
use trimlab_report::{Cell, ExperimentReport, Plot, PlotKind, Table};
use trimlab_scenario::RunConfig;
use trimlab_sim::ByteSize;

/// The units compared without `--mapping-units` on a drive whose unit is larger than its page:
/// the page, the two ends of the QLC range and the drive's own.
const DEFAULT_UNITS: [u64; 2] = [16 << 10, 64 << 10];

/// How a run treats the workload's discards, for the sentence and the plots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Online,
    Fstrim,
    NoDiscard,
}

/// One way of handling discards at one unit, as the table shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct UnitRun {
    pub unit_bytes: u64,
    pub label: String,
    pub role: Role,
    pub waf: f64,
    /// Bytes of TRIM ranges the device received.
    pub trim_bytes: u64,
    pub trim_bytes_ineffective: u64,
    pub read_modify_writes: u64,
    pub unit_pages_filled: u64,
}

impl UnitRun {
    pub fn new(unit_bytes: u64, label: &str, role: Role, report: &DeviceReport, trim_bytes: u64) -> Self {
        UnitRun {
            unit_bytes,
            label: label.to_string(),
            role,
            waf: report.waf,
            trim_bytes,
            trim_bytes_ineffective: report.trim.trim_bytes_ineffective,
            read_modify_writes: report.host.read_modify_writes,
            unit_pages_filled: report.host.unit_pages_filled,
        }
    }

    /// The share of the discarded bytes that unmapped nothing; `None` without discards.
    pub fn ineffective_share(&self) -> Option<f64> {
        (self.trim_bytes > 0).then(|| (self.trim_bytes_ineffective as f64 / self.trim_bytes as f64).min(1.0))
    }
}

/// The TRIM bytes the drive of `report` (of `unit_bytes` units) received in its measured
/// window: counted as such on a drive whose unit is larger than its page, and as whole units
/// (the file system's ranges are whole blocks) on one that maps pages.
pub fn trim_bytes_received(report: &DeviceReport, unit_bytes: u64) -> u64 {
    report.host.trim_bytes_with_unit.max(report.host.pages_trim_requested * unit_bytes)
}

/// The units to compare on a drive of `drive`: the flag's list (validated against the drive's
/// geometry, each refusal naming the unit), or the default set. Returns them ascending, the
/// drive's own unit included, or an empty list when there is nothing to compare.
pub fn units_to_compare(config: &RunConfig, drive: &SsdConfig, flag: &[String]) -> Result<Vec<u64>> {
    let (page, own) = (drive.host_page_bytes as u64, drive.geometry.page_bytes as u64);
    let mut units: Vec<u64> = if flag.iter().any(|t| t.trim().eq_ignore_ascii_case("none")) {
        if flag.len() > 1 {
            bail!("--mapping-units: \"none\" turns the comparison off and takes no sizes beside it");
        }
        return Ok(Vec::new());
    } else if flag.is_empty() {
        if own == page {
            return Ok(Vec::new());
        }
        let candidates = [page].into_iter().chain(DEFAULT_UNITS);
        candidates.filter(|&u| u >= page && resolve_at(config, u).is_ok()).collect()
    } else {
        let mut units = Vec::new();
        for text in flag {
            let unit = ByteSize::parse(text.trim()).map_err(|e| anyhow::anyhow!("--mapping-units: {e}"))?.0;
            if let Err(e) = resolve_at(config, unit) {
                bail!("--mapping-units: {text} on this drive: {e}");
            }
            units.push(unit);
        }
        units
    };
    units.push(own);
    units.sort_unstable();
    units.dedup();
    Ok(if units.len() > 1 { units } else { Vec::new() })
}

/// The drive of `config` with its mapping unit set to `unit_bytes` (the rest as configured).
pub fn resolve_at(config: &RunConfig, unit_bytes: u64) -> Result<SsdConfig> {
    let ftl = FtlSection { mapping_unit: Some(ByteSize(unit_bytes)), ..config.ftl.clone() };
    Ok(SsdConfig::resolve(&config.device, &ftl, &config.trim)?)
}

fn unit_label(bytes: u64) -> String {
    ByteSize(bytes).to_string()
}

fn gain(none: &UnitRun, run: &UnitRun) -> f64 {
    if run.waf > 0.0 {
        none.waf / run.waf - 1.0
    } else {
        0.0
    }
}

fn pct(x: f64) -> String {
    format!("{:.1} %", x * 100.0)
}

/// One row per unit and way of handling discards.
pub fn table(runs: &[UnitRun]) -> Table {
    let mut table = Table::new(
        "mapping_units",
        "Each way of handling discards at each mapping unit: WAF, its gain over no discard at the same unit, and the discarded bytes that unmap nothing (partial units stay mapped)",
        &[
            "mapping_unit",
            "scenario",
            "waf",
            "waf_gain_pct",
            "trim_bytes",
            "trim_bytes_ineffective",
            "trim_ineffective_pct",
            "read_modify_writes",
            "unit_pages_filled",
        ],
    );
    for run in runs {
        let none = runs.iter().find(|r| r.unit_bytes == run.unit_bytes && r.role == Role::NoDiscard);
        table.push_row([
            Cell::Text(unit_label(run.unit_bytes)),
            Cell::Text(run.label.clone()),
            Cell::Num(run.waf),
            none.map_or(Cell::Empty, |n| Cell::Num(gain(n, run) * 100.0)),
            Cell::from(run.trim_bytes),
            Cell::from(run.trim_bytes_ineffective),
            run.ineffective_share().map_or(Cell::Empty, |s| Cell::Num(s * 100.0)),
            Cell::from(run.read_modify_writes),
            Cell::from(run.unit_pages_filled),
        ]);
    }
    table
}

/// The labels of the ways of handling discards, in the order of the runs.
fn labels(runs: &[UnitRun]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in runs {
        if !out.contains(&r.label) {
            out.push(r.label.clone());
        }
    }
    out
}

/// WAF per unit and the ineffective share per unit, one bar per way of handling discards.
pub fn plots(runs: &[UnitRun]) -> Vec<Plot> {
    let mut units: Vec<u64> = runs.iter().map(|r| r.unit_bytes).collect();
    units.dedup();
    let categories: Vec<String> = units.iter().map(|&u| unit_label(u)).collect();
    let series = |f: &dyn Fn(&UnitRun) -> Option<f64>, trimming_only: bool| -> Vec<(String, Vec<f64>)> {
        let lines = labels(runs)
            .into_iter()
            .filter(|l| !trimming_only || runs.iter().any(|r| &r.label == l && r.role != Role::NoDiscard));
        lines
            .map(|label| {
                let at = |u: u64| runs.iter().find(|r| r.unit_bytes == u && r.label == label);
                let values = units.iter().map(|&u| at(u).and_then(f).unwrap_or(f64::NAN)).collect();
                (label, values)
            })
            .collect()
    };
    let bars = |name: &str, title: &str, y: &str, series| Plot {
        name: name.into(),
        title: title.into(),
        x_label: "mapping unit".into(),
        y_label: y.into(),
        log_y: false,
        log_x: false,
        symlog_y: false,
        kind: PlotKind::Bars { categories: categories.clone(), series },
    };
    vec![
        bars("waf_by_mapping_unit", "WAF at each mapping unit", "WAF", series(&|r| Some(r.waf), false)),
        bars(
            "trim_ineffective_by_mapping_unit",
            "Discarded bytes that unmap nothing, at each mapping unit",
            "% of the discarded bytes",
            series(&|r| r.ineffective_share().map(|s| s * 100.0), true),
        ),
    ]
}

/// The comparison across units: every run, and the drive's own unit.
pub struct UnitComparison {
    pub runs: Vec<UnitRun>,
    pub own_unit: u64,
}

impl UnitComparison {
    /// Adds the table, the plots and a note to `report`, and the sentence to its
    /// recommendation (note and `reason` parameter). Nothing without runs.
    pub fn add_to(&self, report: &mut ExperimentReport, how: &str) {
        if self.runs.is_empty() {
            return;
        }
        if let Some(s) = sentence(&self.runs, self.own_unit) {
            if let Some(note) = report.notes.iter_mut().find(|n| n.starts_with("Recommendation:")) {
                *note = format!("{note} {s}");
            }
            if let Some(param) = report.params.iter_mut().find(|p| p.0 == "reason") {
                param.1 = format!("{} {s}", param.1);
            }
        }
        let mut units: Vec<String> = self.runs.iter().map(|r| unit_label(r.unit_bytes)).collect();
        units.dedup();
        report.notes.push(format!(
            "Mapping units (the table mapping_units): {how} with [ftl] mapping_unit = {} (the drive's own: {}). A TRIM deallocates only the whole units inside its ranges; the bytes of partial units stay mapped and are counted as ineffective; a write that covers part of a unit is a read-modify-write (read_modify_writes, and unit_pages_filled pages programmed that the host did not write), so WAF is in bytes. `--mapping-units` picks the units (docs/config.md, \"Mapping units\").",
            units.join(", "),
            unit_label(self.own_unit)
        ));
        report.tables.push(table(&self.runs));
        report.plots.extend(plots(&self.runs));
    }
}

/// The runs at `unit` of `role`.
fn at(runs: &[UnitRun], unit: u64, role: Role) -> impl Iterator<Item = &UnitRun> {
    runs.iter().filter(move |r| r.unit_bytes == unit && r.role == role)
}

/// The sentence the recommendation carries: at the drive's unit `own`, the share of the online
/// discard's bytes that unmap nothing and what discard buys, against the smallest unit
/// compared; when most of them unmap nothing, whether fstrim's merged extents would do better.
/// On a drive that maps pages (the user asked), the same for the largest unit compared.
pub fn sentence(runs: &[UnitRun], own: u64) -> Option<String> {
    let smallest = runs.iter().map(|r| r.unit_bytes).min()?;
    let largest = runs.iter().map(|r| r.unit_bytes).max()?;
    let (unit, other) = if own > smallest { (own, smallest) } else { (largest, smallest) };
    let none = at(runs, unit, Role::NoDiscard).next()?;
    let online = at(runs, unit, Role::Online).next()?;
    let other_none = at(runs, other, Role::NoDiscard).next()?;
    let other_online = at(runs, other, Role::Online).next()?;
    let share = online.ineffective_share()?;
    let lead = if unit == own {
        format!("At this drive's {} mapping unit", unit_label(unit))
    } else {
        format!("On a drive with a {} mapping unit", unit_label(unit))
    };
    let mut s = format!(
        "{lead}, {} of the bytes online discard sends unmap nothing (a TRIM frees only the whole units inside its ranges): discard lowers WAF by {} ({:.3} against {:.3} without), against {} at {}.",
        pct(share),
        pct(gain(none, online)),
        online.waf,
        none.waf,
        pct(gain(other_none, other_online)),
        unit_label(other)
    );
    if share >= 0.5 {
        let fstrim = at(runs, unit, Role::Fstrim)
            .filter(|f| gain(none, f) > gain(none, online))
            .max_by(|a, b| gain(none, a).total_cmp(&gain(none, b)));
        s += &match fstrim {
            Some(f) => format!(
                " Online discard buys little here; {} (free extents merged into larger ranges: {} ineffective) lowers WAF by {}.",
                f.label,
                f.ineffective_share().map_or("none".to_string(), pct),
                pct(gain(none, f))
            ),
            None => " Online discard buys little here; only coarser discards (whole, aligned units: fstrim of larger free extents) would.".to_string(),
        };
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(unit_kib: u64, label: &str, role: Role, waf: f64, trim: u64, ineffective: u64) -> UnitRun {
        UnitRun {
            unit_bytes: unit_kib << 10,
            label: label.into(),
            role,
            waf,
            trim_bytes: trim,
            trim_bytes_ineffective: ineffective,
            read_modify_writes: 0,
            unit_pages_filled: 0,
        }
    }

    fn runs() -> Vec<UnitRun> {
        vec![
            run(4, "online", Role::Online, 1.10, 1000, 0),
            run(4, "fstrim", Role::Fstrim, 1.12, 800, 0),
            run(4, "none", Role::NoDiscard, 1.40, 0, 0),
            run(64, "online", Role::Online, 5.90, 1000, 830),
            run(64, "fstrim", Role::Fstrim, 4.00, 800, 100),
            run(64, "none", Role::NoDiscard, 6.00, 0, 0),
        ]
    }

    #[test]
    fn the_sentence_names_the_ineffective_share_and_what_would_buy_more() {
        let s = sentence(&runs(), 64 << 10).unwrap();
        assert!(s.starts_with("At this drive's 64KiB mapping unit, 83.0 % of the bytes"), "{s}");
        assert!(
            s.contains("lowers WAF by 1.7 % (5.900 against 6.000 without), against 27.3 % at 4KiB"),
            "{s}"
        );
        assert!(
            s.contains(
                "fstrim (free extents merged into larger ranges: 12.5 % ineffective) lowers WAF by 50.0 %"
            ),
            "{s}"
        );
        // Asked on a drive that maps pages: the largest unit, worded as a what-if.
        let s = sentence(&runs(), 4 << 10).unwrap();
        assert!(s.starts_with("On a drive with a 64KiB mapping unit, 83.0 %"), "{s}");
        // Most discards effective: no advice to change.
        let mut r = runs();
        r[3].trim_bytes_ineffective = 100;
        assert!(!sentence(&r, 64 << 10).unwrap().contains("buys little"));
    }

    #[test]
    fn the_table_and_plots_hold_every_unit_and_scenario() {
        let r = runs();
        let t = table(&r);
        assert_eq!(t.rows.len(), 6);
        assert_eq!(t.rows[3][0], Cell::Text("64KiB".into()));
        assert!(matches!(t.rows[3][6], Cell::Num(p) if (p - 83.0).abs() < 1e-9), "{:?}", t.rows[3]);
        assert_eq!(t.rows[2][6], Cell::Empty, "no discard sends no bytes");
        let p = plots(&r);
        let PlotKind::Bars { categories, series } = &p[1].kind else { panic!() };
        assert_eq!(categories, &["4KiB", "64KiB"]);
        assert_eq!(series.len(), 2, "no discard has no ineffective share: {series:?}");
        assert_eq!(series[0].1[0], 0.0);
        assert!((series[0].1[1] - 83.0).abs() < 1e-9, "{series:?}");
    }
}
