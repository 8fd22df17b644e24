//! `trimlab advise` across mapping units (issue 27): what discard buys at each indirection
//! unit, on a trace and on a file workload. A drive with a unit larger than its page is
//! compared at its page, 16 KiB, 64 KiB and its own unit without being asked; `--mapping-units`
//! picks the units; a drive that maps pages, unasked, keeps its advice as it was.

mod common;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A 64 MiB drive, written full in 64 KiB pieces, then 4 KiB random writes with a 4 KiB TRIM
/// of another random page after every second write: discards far smaller than a 64 KiB unit.
fn small_discards(dir: &Path) -> (PathBuf, PathBuf) {
    let device = dir.join("device.toml");
    std::fs::write(
        &device,
        "[device]\npreset = \"nvme-tlc\"\nchannels = 1\nchips_per_channel = 1\nlogical_bytes = \"64MiB\"\nspare_factor = 0.15\n",
    )
    .unwrap();
    let pages = 64u64 * 1024 * 1024 / 4096;
    let mut text = String::from("fio version 3 iolog\n0 dev add\n");
    let mut t = 0u64;
    for p in (0..pages).step_by(16) {
        t += 50;
        text += &format!("{t} dev write {} 65536\n", p * 4096);
    }
    let mut x = 7u64;
    let mut next = || {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (x >> 33) % pages * 4096
    };
    for i in 0..pages * 2 {
        t += 40;
        text += &format!("{t} dev write {} 4096\n", next());
        if i % 2 == 1 {
            text += &format!("{t} dev trim {} 4096\n", next());
        }
    }
    let trace = dir.join("small-discards.log");
    std::fs::write(&trace, text).unwrap();
    (device, trace)
}

fn advise(args: &[&str], out: &Path) -> Value {
    let mut all = vec!["advise"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--out", out.to_str().unwrap()]);
    let o = trimlab(&all);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice(&std::fs::read(out.join("advise/report.json")).unwrap()).unwrap()
}

fn param<'a>(report: &'a Value, key: &str) -> &'a str {
    let params = report["params"].as_array().unwrap();
    params.iter().find(|p| p[0] == key).unwrap()[1].as_str().unwrap()
}

/// The mapping_units table's rows as (unit, scenario, ineffective %) with its column names.
fn unit_rows(report: &Value) -> Option<Vec<(String, String, Option<f64>)>> {
    let table = report["tables"].as_array().unwrap().iter().find(|t| t["name"] == "mapping_units")?;
    let columns: Vec<&str> =
        table["columns"].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect();
    let at = |name: &str| columns.iter().position(|c| *c == name).unwrap();
    let (u, s, i) = (at("mapping_unit"), at("scenario"), at("trim_ineffective_pct"));
    let rows = table["rows"].as_array().unwrap();
    Some(
        rows.iter()
            .map(|r| (r[u].as_str().unwrap().to_string(), r[s].as_str().unwrap().to_string(), r[i].as_f64()))
            .collect(),
    )
}

#[test]
fn a_drive_with_a_64_kib_unit_is_told_its_small_discards_buy_nothing() {
    let dir = scratch("advise-units-trace");
    let (device, trace) = small_discards(&dir);
    let (trace, device) = (trace.to_str().unwrap(), device.to_str().unwrap());
    let out = dir.join("unit");
    let args = ["--device", device, "--set", "ftl.mapping_unit=64KiB", "--fstrim-periods", "100ms"];
    let report = advise(&[&[trace][..], &args].concat(), &out);
    let rows = unit_rows(&report).expect("a drive with a unit gets the comparison unasked");
    let units: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(units.iter().filter(|u| **u == "4KiB").count(), 3, "{rows:?}");
    assert!(units.contains(&"16KiB") && units.contains(&"64KiB"), "{rows:?}");
    let share = |unit: &str, scenario: &str| {
        rows.iter().find(|r| r.0 == unit && r.1.starts_with(scenario)).unwrap_or_else(|| panic!("{rows:?}")).2
    };
    assert_eq!(share("4KiB", "online discard"), Some(0.0));
    assert_eq!(share("64KiB", "online discard"), Some(100.0), "4 KiB TRIMs never cover a 64 KiB unit");
    assert_eq!(share("64KiB", "no discard"), None, "no discard sends no TRIM");
    let reason = param(&report, "reason");
    assert!(
        reason.contains(
            "At this drive's 64KiB mapping unit, 100.0 % of the bytes online discard sends unmap nothing"
        ),
        "{reason}"
    );
    assert!(reason.contains("Online discard buys little here"), "{reason}");
    assert!(out.join("advise/waf_by_mapping_unit.svg").exists());
    assert!(out.join("advise/trim_ineffective_by_mapping_unit.svg").exists());
    let page = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(page.contains("mapping_units") && page.contains("100.0 % of the bytes"), "the page shows both");

    // A drive that maps pages, unasked: the advice as it was (one table, no sentence).
    let plain = advise(&[trace, "--device", device, "--fstrim-periods", "100ms"], &dir.join("plain"));
    assert!(unit_rows(&plain).is_none());
    assert!(!param(&plain, "reason").contains("mapping unit"));
    // Asked on it: the same comparison, worded as a what-if.
    let asked = advise(
        &[trace, "--device", device, "--fstrim-periods", "100ms", "--mapping-units", "64KiB"],
        &dir.join("asked"),
    );
    assert_eq!(unit_rows(&asked).unwrap().len(), 6, "two units, three scenarios");
    assert!(param(&asked, "reason").contains("On a drive with a 64KiB mapping unit, 100.0 %"));
}

#[test]
fn units_the_drive_cannot_map_are_refused_by_name() {
    let dir = scratch("advise-units-bad");
    let (device, trace) = small_discards(&dir);
    let base = ["advise", trace.to_str().unwrap(), "--device", device.to_str().unwrap(), "--mapping-units"];
    for (units, expect) in [
        ("12KiB", "--mapping-units: 12KiB on this drive: config: ftl.mapping_unit = \"12KiB\""),
        ("4KiB,none", "\"none\" turns the comparison off"),
        ("lots", "--mapping-units: \"lots\" is not a byte size"),
    ] {
        let o = trimlab(&[&base[..], &[units]].concat());
        assert!(!o.status.success() && stderr(&o).contains(expect), "{units}: {}", stderr(&o));
    }
}

#[test]
fn a_file_workload_runs_at_each_unit() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = scratch("advise-units-file");
    let config = root.join("examples/scenarios/small-file-churn.toml");
    let config = config.to_str().unwrap();
    let report = advise(&[config, "--as-is", "--mapping-units", "16KiB,64KiB"], &dir.join("out"));
    let rows = unit_rows(&report).unwrap();
    assert_eq!(rows.len(), 12, "three units x (no discard, online, two fstrim periods): {rows:?}");
    let online =
        |unit: &str| rows.iter().find(|r| r.0 == unit && r.1.starts_with("online")).unwrap().2.unwrap();
    assert_eq!(online("4KiB"), 0.0);
    assert!(online("16KiB") > 0.0 && online("64KiB") > online("16KiB"), "{rows:?}");
    // The drive's own unit is the file-system run itself (the table's first).
    let table =
        |r: &Value, name: &str| r["tables"].as_array().unwrap().iter().find(|t| t["name"] == name).cloned();
    let run_waf = table(&report, "advise").unwrap()["rows"][0][1].as_f64().unwrap();
    let unit_waf = table(&report, "mapping_units").unwrap()["rows"][0][2].as_f64().unwrap();
    assert_eq!(run_waf, unit_waf);
    // On a drive of 64 KiB units the file system runs on the unit itself (its 4 KiB blocks
    // carried by the drive's tags per page), and the comparison comes unasked.
    let qlc = advise(&[config, "--as-is", "--set", "ftl.mapping_unit=64KiB"], &dir.join("qlc"));
    let rows = unit_rows(&qlc).expect("a drive with a unit gets the comparison unasked");
    let at_64: Vec<_> = rows.iter().filter(|r| r.0 == "64KiB").collect();
    assert_eq!(at_64.len(), 4, "{rows:?}");
    let qlc_waf = table(&qlc, "advise").unwrap()["rows"][0][1].as_f64().unwrap();
    let rows_64 = &table(&qlc, "mapping_units").unwrap()["rows"];
    let own = rows_64.as_array().unwrap().iter().find(|r| r[0] == "64KiB").unwrap();
    assert_eq!(own[2].as_f64().unwrap(), qlc_waf, "the drive's own unit is its run");
    let unit_64 = table(&report, "mapping_units").unwrap()["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r[0] == "64KiB")
        .unwrap()
        .clone();
    assert_eq!(own[2], unit_64[2], "the same run asked from either side");
    assert!(
        param(&qlc, "reason").contains("At this drive's 64KiB mapping unit"),
        "{}",
        param(&qlc, "reason")
    );
}
