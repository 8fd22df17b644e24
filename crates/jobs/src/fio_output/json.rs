//! fio's JSON and JSON+ output (stat.c show_thread_status_json, add_ddir_status_json,
//! add_ddir_lat_json, json_array_add_disk_util), keys in fio's order and printed as fio's
//! json.c prints them (two-space indent, `"key" : value`, floats with six decimals), so a
//! tool that reads fio's JSON reads this.

use super::number::{latency_buckets, percentile_values, Moments};
use super::{Direction, FioReport, GroupReport, DIRECTION_NAMES, FIO_VERSION};
use std::fmt::Write;

/// A JSON value whose objects keep their keys' order.
enum J {
    Int(u64),
    Float(f64),
    Str(String),
    Obj(Vec<(String, J)>),
    Arr(Vec<J>),
}

fn obj(pairs: Vec<(&str, J)>) -> J {
    J::Obj(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

fn strings(pairs: &[(String, String)]) -> J {
    J::Obj(pairs.iter().map(|(k, v)| (k.clone(), J::Str(v.clone()))).collect())
}

impl J {
    fn write(&self, indent: usize, out: &mut String) {
        let pad = |n: usize| "  ".repeat(n);
        match self {
            J::Int(n) => {
                let _ = write!(out, "{n}");
            }
            J::Float(f) => {
                let _ = write!(out, "{f:.6}");
            }
            J::Str(s) => out.push_str(&serde_json::to_string(s).unwrap_or_default()),
            J::Obj(pairs) => {
                out.push_str("{\n");
                for (i, (k, v)) in pairs.iter().enumerate() {
                    let _ =
                        write!(out, "{}{} : ", pad(indent + 1), serde_json::to_string(k).unwrap_or_default());
                    v.write(indent + 1, out);
                    out.push_str(if i + 1 < pairs.len() { ",\n" } else { "\n" });
                }
                let _ = write!(out, "{}}}", pad(indent));
            }
            J::Arr(items) => {
                out.push_str("[\n");
                for (i, v) in items.iter().enumerate() {
                    out.push_str(&pad(indent + 1));
                    v.write(indent + 1, out);
                    out.push_str(if i + 1 < items.len() { ",\n" } else { "\n" });
                }
                let _ = write!(out, "{}]", pad(indent));
            }
        }
    }
}

/// The report as fio's `--output-format=json` (`plus`: json+, with each latency's bins).
pub fn json(report: &FioReport, plus: bool) -> String {
    let jobs = report.groups.iter().map(|g| job(g, plus)).collect();
    let root = obj(vec![
        ("fio version", J::Str(FIO_VERSION.into())),
        // Wall-clock fields: a simulation has no date; the epoch keeps runs byte-identical.
        ("timestamp", J::Int(0)),
        ("timestamp_ms", J::Int(0)),
        ("time", J::Str("Thu Jan  1 00:00:00 1970".into())),
        ("trimlab_version", J::Str(crate::VERSION.into())),
        ("global options", strings(&report.global_options)),
        ("jobs", J::Arr(jobs)),
        ("disk_util", J::Arr(vec![disk_util(report)])),
    ]);
    let mut out = String::new();
    root.write(0, &mut out);
    out.push('\n');
    out
}

fn job(g: &GroupReport, plus: bool) -> J {
    let mut pairs = vec![
        ("jobname", J::Str(g.name.clone())),
        ("groupid", J::Int(g.groupid as u64)),
        ("error", J::Int(0)),
        ("eta", J::Int(0)),
        ("elapsed", J::Int(g.runtime_ms.div_ceil(1000))),
        ("job options", strings(&g.options)),
    ];
    for (d, name) in g.dirs.iter().zip(DIRECTION_NAMES) {
        pairs.push((name, direction(g, d, plus)));
    }
    let sync_lat = latency(&g.sync, g, g.report.clat_percentiles || g.report.lat_percentiles, plus);
    pairs.push(("sync", obj(vec![("total_ios", J::Int(g.sync.total_ios)), ("lat_ns", sync_lat)])));
    pairs.extend([
        ("job_runtime", J::Int(g.runtime_ms)),
        ("usr_cpu", J::Float(0.0)),
        ("sys_cpu", J::Float(0.0)),
        ("ctx", J::Int(0)),
        ("majf", J::Int(0)),
        ("minf", J::Int(0)),
    ]);
    let depths = |names: [&str; 7]| obj(names.iter().map(|n| (*n, J::Float(0.0))).collect());
    pairs.push(("iodepth_level", depths(["1", "2", "4", "8", "16", "32", ">=64"])));
    pairs.push(("iodepth_submit", depths(["0", "4", "8", "16", "32", "64", ">=64"])));
    pairs.push(("iodepth_complete", depths(["0", "4", "8", "16", "32", "64", ">=64"])));
    let (n, u, m) = latency_buckets(g.dirs.iter().map(|d| &d.latency));
    let labels = ["2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000"];
    let shares = |s: &[f64]| obj(s.iter().zip(labels).map(|(v, l)| (l, J::Float(*v))).collect());
    pairs.extend([("latency_ns", shares(&n)), ("latency_us", shares(&u)), ("latency_ms", shares(&m))]);
    pairs.extend([
        ("latency_depth", J::Int(0)),
        ("latency_target", J::Int(0)),
        ("latency_percentile", J::Float(100.0)),
        ("latency_window", J::Int(0)),
    ]);
    obj(pairs)
}

fn direction(g: &GroupReport, d: &Direction, plus: bool) -> J {
    let runtime = if d.total_ios > 0 { g.runtime_ms.max(1) } else { 0 };
    let bw_bytes = d.bw_bytes(runtime);
    let iops = if runtime == 0 { 0.0 } else { 1000.0 * d.total_ios as f64 / runtime as f64 };
    let r = &g.report;
    let empty =
        Direction { io_bytes: 0, total_ios: 0, latency: trimlab_device::metrics::latency_histogram() };
    obj(vec![
        ("io_bytes", J::Int(d.io_bytes)),
        ("io_kbytes", J::Int(d.io_bytes >> 10)),
        ("bw_bytes", J::Int(bw_bytes)),
        ("bw", J::Int(bw_bytes / 1024)),
        ("iops", J::Float(iops)),
        ("runtime", J::Int(runtime)),
        ("total_ios", J::Int(d.total_ios)),
        ("short_ios", J::Int(0)),
        ("drop_ios", J::Int(0)),
        // No submission cost in the model: fio's slat is empty, as for a synchronous engine.
        ("slat_ns", latency(&empty, g, r.slat_percentiles, plus)),
        ("clat_ns", latency(d, g, r.clat_percentiles, plus)),
        ("lat_ns", latency(d, g, r.lat_percentiles, plus)),
        ("bw_min", J::Int(0)),
        ("bw_max", J::Int(0)),
        ("bw_agg", J::Float(0.0)),
        ("bw_mean", J::Float(0.0)),
        ("bw_dev", J::Float(0.0)),
        ("bw_samples", J::Int(0)),
        ("iops_min", J::Int(0)),
        ("iops_max", J::Int(0)),
        ("iops_mean", J::Float(0.0)),
        ("iops_stddev", J::Float(0.0)),
        ("iops_samples", J::Int(0)),
    ])
}

/// add_ddir_lat_json: min, max, mean, stddev, N, the percentiles when asked for (keys as
/// fio's "%f"), and with json+ the bins (each bucket's value and count).
fn latency(d: &Direction, g: &GroupReport, percentiles: bool, plus: bool) -> J {
    let m = Moments::of(&d.latency);
    let mut pairs = vec![
        ("min", J::Int(m.min)),
        ("max", J::Int(m.max)),
        ("mean", J::Float(m.mean)),
        ("stddev", J::Float(m.stddev)),
        ("N", J::Int(m.n)),
    ];
    if percentiles && m.n > 0 {
        let list = &g.report.percentiles;
        let values = percentile_values(&d.latency, list);
        let entries = list.iter().zip(values).map(|(p, v)| (format!("{p:.6}"), J::Int(v))).collect();
        pairs.push(("percentile", J::Obj(entries)));
        if plus {
            let bins = d
                .latency
                .iter_recorded()
                .map(|v| (v.value_iterated_to().to_string(), J::Int(v.count_at_value())));
            pairs.push(("bins", J::Obj(bins.collect())));
        }
    }
    obj(pairs)
}

/// The simulated drive as fio's disk_util entry: its reads and writes, their sectors and
/// their summed latencies in ms (the kernel's ticks); merges are 0 and `util` (the share of
/// time the drive was busy) is not modelled and left 0.
fn disk_util(report: &FioReport) -> J {
    let sum =
        |i: usize, f: &dyn Fn(&Direction) -> u64| report.groups.iter().map(|g| f(&g.dirs[i])).sum::<u64>();
    let ticks = |d: &Direction| (d.latency.mean() * d.latency.len() as f64 / 1e6) as u64;
    let (read_ticks, write_ticks) = (sum(0, &ticks), sum(1, &ticks));
    obj(vec![
        ("name", J::Str("trimlab".into())),
        ("read_ios", J::Int(sum(0, &|d| d.total_ios))),
        ("write_ios", J::Int(sum(1, &|d| d.total_ios))),
        ("read_sectors", J::Int(sum(0, &|d| d.io_bytes / 512))),
        ("write_sectors", J::Int(sum(1, &|d| d.io_bytes / 512))),
        ("read_merges", J::Int(0)),
        ("write_merges", J::Int(0)),
        ("read_ticks", J::Int(read_ticks)),
        ("write_ticks", J::Int(write_ticks)),
        ("in_queue", J::Int(read_ticks + write_ticks)),
        ("util", J::Float(0.0)),
    ])
}
