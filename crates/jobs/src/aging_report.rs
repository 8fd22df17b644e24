//! The aged file system's part of a run: the line `run` prints and the page's section for
//! metrics.json's `aging` (an `age` phase with a profile): the free-extent histogram, the
//! layout scores and the live files' sizes beside the cited distribution.

use serde_json::Value;
use trimlab_report::{Cell, ExperimentReport, Table};

/// One line for `run`'s terminal summary, when the run aged a file system with a profile.
pub fn summary_line(aging: &Value) -> Option<String> {
    let free = aging.get("free_space")?;
    let block = free["block_bytes"].as_u64().unwrap_or(4096) as f64;
    let mib = |v: &Value| v.as_u64().unwrap_or(0) as f64 * block / (1u64 << 20) as f64;
    let target = match aging["target_reached"].as_bool() {
        Some(true) => format!(" (target {} reached)", aging["target_free_layout_score"]),
        Some(false) => format!(" (target {} NOT reached)", aging["target_free_layout_score"]),
        None => String::new(),
    };
    Some(format!(
        "aged ({}): {} files in {} directories, utilization {:.3}, churn {:.2} capacities; free space: {} extents, largest {:.1} MiB, half in extents >= {:.2} MiB, layout score {:.3}{target}; files' layout score {:.3}",
        aging["profile"].as_str().unwrap_or("?"),
        aging["files"],
        aging["directories"],
        aging["utilization"].as_f64().unwrap_or(0.0),
        aging["churn_capacities"].as_f64().unwrap_or(0.0),
        free["free_extents"],
        mib(&free["largest_extent_blocks"]),
        mib(&free["median_extent_blocks_by_blocks"]),
        free["layout_score"].as_f64().unwrap_or(0.0),
        aging["layout"]["layout_score"].as_f64().unwrap_or(0.0),
    ))
}

/// Adds the aging section to a run's page (nothing when the run did not age with a profile).
pub fn add_aging(report: &mut ExperimentReport, aging: &Value) {
    let Some(line) = summary_line(aging) else { return };
    report.notes.push(line);
    let free = &aging["free_space"];
    let block = free["block_bytes"].as_u64().unwrap_or(4096);
    let mut t = Table::new(
        "aging_free_extents".to_string(),
        "aged file system: free extents by size (e2freefrag's buckets)".to_string(),
        &["extent size from (KiB)", "extents", "free MiB", "share of free space"],
    );
    let total = free["free_blocks"].as_u64().unwrap_or(0).max(1) as f64;
    for b in free["histogram"].as_array().into_iter().flatten() {
        let blocks = b["blocks"].as_u64().unwrap_or(0);
        t.push_row([
            Cell::Num((b["min_blocks"].as_u64().unwrap_or(0) * block) as f64 / 1024.0),
            Cell::from(b["extents"].as_u64().unwrap_or(0)),
            Cell::Num((blocks * block) as f64 / (1u64 << 20) as f64),
            Cell::Num(blocks as f64 / total),
        ]);
    }
    report.tables.push(t);
    let mut s = Table::new(
        "aging_file_sizes".to_string(),
        format!(
            "aged file system: live files by size against the cited distribution (KS distance {:.4})",
            aging["file_sizes_ks_distance"].as_f64().unwrap_or(0.0)
        ),
        &["size from (bytes)", "files", "share", "distribution's share"],
    );
    for b in aging["file_sizes"].as_array().into_iter().flatten() {
        s.push_row([
            Cell::from(b["min_bytes"].as_u64().unwrap_or(0)),
            Cell::from(b["files"].as_u64().unwrap_or(0)),
            Cell::Num(b["share"].as_f64().unwrap_or(0.0)),
            Cell::Num(b["expected_share"].as_f64().unwrap_or(0.0)),
        ]);
    }
    report.tables.push(s);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_run_without_aging_adds_nothing_and_one_with_it_a_line_and_two_tables() {
        assert_eq!(summary_line(&Value::Null), None);
        let aging = json!({
            "profile": "impressions", "files": 10, "directories": 2, "utilization": 0.8,
            "churn_capacities": 1.0, "target_reached": null,
            "free_space": {"block_bytes": 4096, "free_blocks": 300, "free_extents": 2,
                "largest_extent_blocks": 256, "median_extent_blocks_by_blocks": 256, "layout_score": 0.99,
                "histogram": [{"min_blocks": 32, "extents": 1, "blocks": 44}, {"min_blocks": 256, "extents": 1, "blocks": 256}]},
            "layout": {"layout_score": 0.9},
            "file_sizes": [{"min_bytes": 8192, "files": 10, "share": 1.0, "expected_share": 0.1}],
            "file_sizes_ks_distance": 0.3,
        });
        let line = summary_line(&aging).unwrap();
        assert!(line.contains("10 files in 2 directories") && line.contains("largest 1.0 MiB"), "{line}");
        let mut r = crate::run_report::run_report("t", &trimlab_device::DeviceReport::default(), &[], None);
        let (notes, tables) = (r.notes.len(), r.tables.len());
        add_aging(&mut r, &aging);
        assert_eq!((r.notes.len(), r.tables.len()), (notes + 1, tables + 2));
    }
}
