//! Filebench's "IO Summary" line of a `run --filebench` (filebench's stats.c stats_snap): the
//! I/O flowops' count and rate, reads and writes per second, MB/s and ms per read or write,
//! from the run's simulated time and the figures its workload phase reported.

use serde_json::Value;

/// Flowops Filebench does not count as I/O (not FLOW_TYPE_IO): they pace or end a thread.
const NOT_IO: &[&str] = &["delay", "eventlimit", "opslimit", "finishoncount", "finishonbytes"];
/// Flowops that read (FLOW_ATTR_READ) and write (FLOW_ATTR_WRITE), each counted once a run.
const READS: &[&str] = &["read", "readwholefile"];
const WRITES: &[&str] = &["write", "writewholefile", "appendfile", "appendfilerand"];

/// One line per Filebench phase of `metrics` (a phase whose figures have `flowops`):
/// `60.009: IO Summary: 1113258 ops 18551.262 ops/s 1686/5058 rd/wr 434.0mb/s 0.054ms/op`,
/// the prefix being the phase's end in simulated seconds (Filebench prefixes its log lines
/// with the seconds since it started).
pub fn io_summary(metrics: &Value) -> Vec<String> {
    let phases = metrics["phases"].as_array().into_iter().flatten();
    phases.filter(|p| p["figures"].get("flowops").is_some()).map(line).collect()
}

fn line(phase: &Value) -> String {
    let f = phase["figures"].as_object().cloned().unwrap_or_default();
    let n = |k: &str| f.get(k).and_then(Value::as_u64).unwrap_or(0);
    let sum = |names: &[&str]| names.iter().map(|k| n(k)).sum::<u64>();
    let flowop_counts = f.keys().filter(|k| is_flowop(k));
    let ops: u64 = flowop_counts.filter(|k| !NOT_IO.contains(&k.as_str())).map(|k| n(k)).sum();
    let (reads, writes) = (sum(READS), sum(WRITES));
    let secs = n("run_ns") as f64 / 1e9;
    let per_s = |x: f64| if secs > 0.0 { x / secs } else { 0.0 };
    let mb = (n("bytes_read") + n("bytes_written")) as f64 / (1024.0 * 1024.0);
    // Filebench divides all I/O flowops' latency by the reads and writes alone.
    let ms_per_op = match reads + writes {
        0 => 0.0,
        rw => n("io_latency_ns") as f64 / (rw as f64 * 1e6),
    };
    format!(
        "{:.3}: IO Summary: {ops:5} ops {:5.3} ops/s {:.0}/{:.0} rd/wr {:5.1}mb/s {ms_per_op:5.3}ms/op",
        phase["end_ns"].as_u64().unwrap_or(0) as f64 / 1e9,
        per_s(ops as f64),
        per_s(reads as f64),
        per_s(writes as f64),
        per_s(mb),
    )
}

/// A flowop's count among a Filebench phase's figures (the other figures are bytes, times
/// and how the run ended).
fn is_flowop(key: &str) -> bool {
    !matches!(
        key,
        "flowops"
            | "bytes_read"
            | "bytes_written"
            | "prealloc_files"
            | "prealloc_bytes"
            | "run_ns"
            | "io_latency_ns"
            | "deletes_skipped"
            | "stopped_early_line"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_reads_as_filebenchs() {
        let metrics = serde_json::json!({"phases": [{"name": "mkfs"}, {"name": "workload", "end_ns": 60_500_000_000u64, "figures": {
            "createfile": 100, "readwholefile": 300, "appendfilerand": 100, "delay": 50, "flowops": 550,
            "bytes_read": 600u64 << 20, "bytes_written": 60u64 << 20, "run_ns": 60_000_000_000u64,
            "io_latency_ns": 2_000_000_000u64, "prealloc_files": 9, "deletes_skipped": 0}}]});
        assert_eq!(
            io_summary(&metrics),
            ["60.500: IO Summary:   500 ops 8.333 ops/s 5/2 rd/wr  11.0mb/s 5.000ms/op"],
            "500 I/O flowops (the delays left out) in 60 s; 2 s of their latency over 400 reads and writes"
        );
    }
}
