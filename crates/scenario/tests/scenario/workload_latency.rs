//! The program-phase latency report: which phases it covers and how it names them.

use serde_json::json;
use trimlab_device::LatencyReport;
use trimlab_scenario::WorkloadLatency;

#[test]
fn setup_phases_and_those_before_a_measure_are_left_out() {
    let l = json!({});
    let phases = [
        json!({"name": "mkfs", "kind": "mkfs", "latency": l}),
        json!({"name": "w", "kind": "workload", "latency": l}),
        json!({"name": "w", "kind": "workload", "latency": l}),
        json!({"name": "trim", "kind": "fstrim", "latency": l}),
    ];
    let w = WorkloadLatency::new(&phases, LatencyReport::default());
    assert_eq!(w.phases, [1, 2, 3]);
    assert_eq!(w.names, ["w", "trim"]);
    assert!(w.excludes_phases);
    assert_eq!(w.phases_text(), "program phases: w, trim");
    let w = WorkloadLatency::new(&phases[1..], LatencyReport::default());
    assert!(!w.excludes_phases, "nothing left out");
    let mut measured = phases.to_vec();
    measured.insert(2, json!({"name": "m", "kind": "measure", "latency": l}));
    let w = WorkloadLatency::new(&measured, LatencyReport::default());
    assert_eq!(w.phases, [2, 3, 4]);
    assert!(!w.excludes_phases, "the whole run's report starts at the measure too");
}
