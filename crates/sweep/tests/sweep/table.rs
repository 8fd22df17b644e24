//! Tests of src/table.rs (moved out of the lib so the crate compiles once).

use serde_json::json;
use serde_json::Value;
use trimlab_sweep::row::{Row, Status};
use trimlab_sweep::table::*;

fn row(run: usize, metrics: Vec<(&str, Value)>, error: Option<&str>) -> Row {
    Row {
        run,
        values: vec![
            ("device.spare_factor".into(), json!(0.1 * run as f64)),
            ("trim.engine".into(), json!("none")),
        ],
        seed: 1,
        config_hash: format!("h{run}"),
        status: if error.is_some() { Status::Failed } else { Status::Ok },
        error: error.map(str::to_string),
        metrics: metrics.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
    }
}

#[test]
fn columns_are_fixed_then_the_sorted_union_and_rows_sort_by_run() {
    let keys = vec!["device.spare_factor".to_string(), "trim.engine".to_string()];
    let rows = vec![
        row(2, vec![("report.waf", json!(1.5)), ("report.z", json!(true))], None),
        row(0, vec![("ops", json!(10)), ("report.waf", json!(2.0))], None),
        row(1, vec![], Some("bad \"value\", at key x")),
    ];
    let t = Table::from_rows(&keys, &rows);
    assert_eq!(
        t.columns,
        [
            "run",
            "device.spare_factor",
            "trim.engine",
            "seed",
            "config_hash",
            "status",
            "error",
            "ops",
            "report.waf",
            "report.z"
        ]
    );
    assert_eq!(
        t.to_csv(),
        "run,device.spare_factor,trim.engine,seed,config_hash,status,error,ops,report.waf,report.z\n\
         0,0.0,none,1,h0,ok,,10,2.0,\n\
         1,0.1,none,1,h1,failed,\"bad \"\"value\"\", at key x\",,,\n\
         2,0.2,none,1,h2,ok,,,1.5,true\n"
    );
    let back: Table = serde_json::from_str(&t.to_json()).unwrap();
    // A metric named like a swept key (metrics.json's host.discard) gets a column of its own.
    let clash = row(3, vec![("trim.engine", json!("none-resolved"))], None);
    let t2 = Table::from_rows(&keys, &[clash]);
    assert_eq!(t2.columns.iter().filter(|c| *c == "trim.engine").count(), 1, "{:?}", t2.columns);
    assert_eq!(t2.columns.last().unwrap(), "metrics.trim.engine");
    assert_eq!(back, t);
    assert_eq!(t.column("report.waf"), Some(8));
}
