//! Sweeps on the real runner (trimlab-scenario) with a tiny drive: real metrics in the table,
//! the simulator's own messages for an unknown key and for a bad value in one point.

use trimlab_sweep::{run_in_memory, Grid, ScenarioRunner, SweepOptions};

const BASE: &str = r#"
[base.device]
preset = "nvme-tlc"
channels = 1
chips_per_channel = 1
dies_per_chip = 1
planes_per_die = 2
logical_bytes = "8MiB"
pages_per_block = 32
spare_factor = 0.2
[base.workload]
trim_fraction = 0.1
writes = "1x"
"#;

fn sweep(grid: &str) -> Result<trimlab_sweep::Table, trimlab_sweep::SweepError> {
    let grid = Grid::parse(&format!("seeds = [1, 2]\n{BASE}\n{grid}"), "g.toml", |_| unreachable!()).unwrap();
    run_in_memory(
        &grid,
        &ScenarioRunner,
        SweepOptions { jobs: 2, shard: trimlab_sweep::Shard::WHOLE },
        |_, _, _| {},
    )
}

#[test]
fn real_runs_fill_the_table_and_match_a_single_run() {
    let t =
        sweep("[grid]\n\"device.spare_factor\" = [0.15, 0.3]\n\"trim.engine\" = [\"immediate\", \"none\"]\n")
            .unwrap();
    assert_eq!(t.data.len(), 8);
    let waf = t.column("report.waf").expect("a report.waf column");
    let status = t.column("status").unwrap();
    assert!(t.data.iter().all(|r| r[status] == "ok" && r[waf].as_f64().unwrap() >= 1.0));
    // More spare, less write amplification (same engine, same seed).
    assert!(
        t.data[0][waf].as_f64() > t.data[4][waf].as_f64(),
        "{:?} vs {:?}",
        t.data[0][waf],
        t.data[4][waf]
    );
    // Row 3 is spare 0.15, engine none, seed 2: the same as running that config alone.
    let base = BASE.replace("[base.", "[");
    let set = ["device.spare_factor=0.15".to_string(), "trim.engine=\"none\"".to_string()];
    let alone = trimlab_scenario::run_text(&base, "alone", Some(2), &set).unwrap();
    assert_eq!(t.data[3][waf], alone["report"]["waf"]);
    assert_eq!(t.data[3][t.column("run_config_hash").unwrap()], alone["config_hash"]);
}

#[test]
fn an_unknown_key_stops_the_sweep_and_a_bad_value_fails_only_its_rows() {
    let e = sweep("[grid]\n\"device.spare_factr\" = [0.1]\n").unwrap_err().to_string();
    assert!(
        e.starts_with("g.toml:17: grid key `device.spare_factr`: no point of the grid is a valid config"),
        "{e}"
    );
    assert!(e.contains("unknown field `spare_factr`"), "{e}");

    let t = sweep("[grid]\n\"device.spare_factor\" = [0.2, \"lots\"]\n").unwrap();
    let (status, error) = (t.column("status").unwrap(), t.column("error").unwrap());
    let statuses: Vec<&str> = t.data.iter().map(|r| r[status].as_str().unwrap()).collect();
    assert_eq!(statuses, ["ok", "ok", "failed", "failed"]);
    let message = t.data[2][error].as_str().unwrap();
    assert!(message.starts_with("g.toml (run 2) with --set device.spare_factor=\"lots\":"), "{message}");
    assert!(message.contains("spare_factor"), "{message}");
}
