//! The fio-format report from hand-made figures: fio's layouts, units and the constant-cost word.

use super::*;
use trimlab_scenario::fio::ReportOptions;

fn direction(latencies_ns: &[u64], bytes_each: u64) -> Direction {
    let mut latency = trimlab_device::metrics::latency_histogram();
    for &l in latencies_ns {
        latency.record(l).unwrap();
    }
    Direction {
        io_bytes: bytes_each * latencies_ns.len() as u64,
        total_ios: latencies_ns.len() as u64,
        latency,
    }
}

fn report() -> FioReport {
    let reads: Vec<u64> = (1..=1000).map(|i| 50_000 + i * 100).collect();
    let group = GroupReport {
        name: "randrw".into(),
        groupid: 0,
        jobs: 4,
        options: vec![("rw".into(), "randrw".into())],
        report: ReportOptions::default(),
        dirs: [
            direction(&reads, 4096),
            direction(&[3_000; 10], 4096),
            direction(&[2_398_000; 16_384], 65_536),
        ],
        sync: direction(&[], 0),
        runtime_ms: 2000,
    };
    FioReport { global_options: vec![("ioengine".into(), "libaio".into())], groups: vec![group] }
}

#[test]
fn the_normal_block_reads_as_fios() {
    let text = normal(&report());
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "randrw: (groupid=0, jobs=4): err= 0: pid=0: simulated time");
    assert_eq!(lines[1], "  read: IOPS=500, BW=2000KiB/s (2048kB/s)(4000KiB/2000msec)");
    assert!(lines[2].starts_with("    clat (usec): min=50, max=150, avg=100.05, stdev=28.8"), "{}", lines[2]);
    assert!(lines[3].starts_with("     lat (usec): min=50"), "{}", lines[3]);
    assert_eq!(lines[4], "    clat percentiles (usec):");
    assert!(
        lines[5].starts_with("     |  1.00th=[   51],  5.00th=[   55], 10.00th=[   61], 20.00th=[   70],"),
        "{}",
        lines[5]
    );
    assert!(
        text.contains("  write: IOPS=5, BW=20.0KiB/s (20.5kB/s)(40.0KiB/2000msec); 0 zone resets\n"),
        "{text}"
    );
    // All TRIMs took the same time: said in a word, with no percentile list.
    assert!(text.contains("  trim: IOPS=8192, BW=512MiB/s (537MB/s)(1024MiB/2000msec)\n"), "{text}");
    assert!(
        text.contains("    clat percentiles (usec): all [2397.2]: a constant cost (16384 of 16384 commands took this same time in the model), not a distribution\n"),
        "{text}"
    );
    assert!(text.contains("    clat percentiles (nsec): all [3001]: a constant cost (10 of 10"), "{text}");
    assert_eq!(text.matches("th=[").count(), 17, "one list, the reads': {text}");
    assert!(
        text.contains("  lat (usec)   : 4=0.06%, 100=2.87%, 250=2.88%\n  lat (msec)   : 4=94.19%\n"),
        "{text}"
    );
    assert!(text.contains("     issued rwts: total=1000,10,16384,0 short=0,0,0,0 dropped=0,0,0,0"), "{text}");
    assert!(text.contains("\nRun status group 0 (all jobs):\n   READ: bw=2000KiB/s (2048kB/s), 2000KiB/s-2000KiB/s (2048kB/s-2048kB/s), io=4000KiB (4096kB), run=2000-2000msec\n"), "{text}");
    assert!(text.contains("   TRIM: bw=512MiB/s"), "{text}");
}

#[test]
fn the_terse_line_has_fios_121_fields() {
    let text = terse(&report());
    let fields: Vec<&str> = text.trim_end().split(';').collect();
    assert_eq!(fields.len(), 121, "{text}");
    assert_eq!(&fields[..9], ["3", "fio-3.33", "randrw", "0", "0", "4000", "2000", "500", "2000"]);
    assert_eq!(fields[17], "1.000000%=50", "terse percentiles are in µs, rounded down as fio's");
}

#[test]
fn a_percentile_list_and_lat_percentiles_are_honoured() {
    let mut r = report();
    r.groups[0].report = ReportOptions {
        percentiles: vec![50.0, 99.9],
        precision: 1,
        clat_percentiles: false,
        lat_percentiles: true,
        slat_percentiles: false,
    };
    let text = normal(&r);
    assert!(text.contains("    lat percentiles (usec):\n     | 50.0th=[  100], 99.9th=[  150]\n"), "{text}");
    assert!(!text.contains("clat percentiles"), "{text}");
    let j: serde_json::Value = serde_json::from_str(&json(&r, false)).unwrap();
    let read = &j["jobs"][0]["read"];
    assert!(read["clat_ns"].get("percentile").is_none());
    let p999 = read["lat_ns"]["percentile"]["99.900000"].as_u64().unwrap();
    assert!((149_900..=150_100).contains(&p999), "{p999}");
}
