//! fio's normal output: a block per group (stat.c show_thread_status_normal with
//! group_reporting) and its "Run status group" lines (show_group_stats), number for number.

use super::number::{latency_buckets, num2str, percentile_values, Moments, Unit};
use super::{Direction, FioReport, GroupReport, DIRECTION_NAMES};
use std::fmt::Write;

/// The whole report in fio's normal format.
pub fn normal(report: &FioReport) -> String {
    let mut out = String::new();
    for g in &report.groups {
        group_block(g, &mut out);
    }
    for g in &report.groups {
        run_status(g, &mut out);
    }
    out
}

fn group_block(g: &GroupReport, out: &mut String) {
    if g.dirs.iter().all(|d| d.total_ios == 0) && g.sync.total_ios == 0 {
        return;
    }
    // fio prints its pid and the wall-clock time here; a simulation has neither.
    let _ =
        writeln!(out, "{}: (groupid={}, jobs={}): err= 0: pid=0: simulated time", g.name, g.groupid, g.jobs);
    for (i, d) in g.dirs.iter().enumerate().filter(|(_, d)| d.io_bytes > 0 || d.total_ios > 0) {
        direction_status(g, DIRECTION_NAMES[i], d, out);
    }
    let (n, u, m) = latency_buckets(g.dirs.iter().map(|d| &d.latency));
    let labels_ms = ["2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000"];
    lat_distribution("nsec", &n, &labels_ms[..10], out);
    lat_distribution("usec", &u, &labels_ms[..10], out);
    lat_distribution("msec", &m, &labels_ms, out);
    if g.sync.total_ios > 0 {
        out.push_str("  fsync/fdatasync/sync_file_range:\n");
        latency_lines(g, "sync", &g.sync, out);
    }
    let [r, w, t] = &g.dirs;
    let _ = writeln!(
        out,
        "     issued rwts: total={},{},{},{} short=0,0,0,0 dropped=0,0,0,0",
        r.total_ios, w.total_ios, t.total_ios, g.sync.total_ios
    );
}

/// `  read: IOPS=..., BW=... (...)(.../...msec)` and its latency lines (show_ddir_status).
fn direction_status(g: &GroupReport, name: &str, d: &Direction, out: &mut String) {
    let runtime = g.runtime_ms.max(1);
    let bw = d.bw_bytes(runtime);
    let iops = (1000u128 * u128::from(d.total_ios) / u128::from(runtime)) as u64;
    let zone_resets = if name == "write" { "; 0 zone resets" } else { "" };
    let _ = writeln!(
        out,
        "  {name}: IOPS={}, BW={} ({})({}/{runtime}msec){zone_resets}",
        num2str(iops, 4, false, Unit::None),
        num2str(bw, 4, true, Unit::BytePerSec),
        num2str(bw, 4, false, Unit::BytePerSec),
        num2str(d.io_bytes, 4, true, Unit::Byte),
    );
    latency_lines(g, "clat", d, out);
}

/// clat and lat (equal: the model has no submission cost, so fio's slat line is absent as it
/// is for a synchronous engine) and the percentiles the job asks for.
fn latency_lines(g: &GroupReport, clat: &str, d: &Direction, out: &mut String) {
    let m = Moments::of(&d.latency);
    display_lat(clat, &m, out);
    if clat == "clat" {
        display_lat(" lat", &m, out);
    }
    let r = &g.report;
    let asked: &[&str] = match clat {
        "sync" => &["sync"],
        _ if r.clat_percentiles && r.lat_percentiles => &["clat", "lat"],
        _ if r.lat_percentiles => &["lat"],
        _ if r.clat_percentiles => &["clat"],
        _ => &[],
    };
    for pre in asked {
        percentiles(d, r, pre, out);
    }
}

/// A cost the model charges every command alike: every percentile is one value, which a list
/// would show as a distribution, so it is said in a word.
fn constant_cost(d: &Direction, values: &[u64], pre: &str, out: &mut String) -> bool {
    let (first, n) = (values.first().copied().unwrap_or(0), d.latency.len());
    if n < 2 || values.iter().any(|v| *v != first) {
        return false;
    }
    let same =
        d.latency.count_between(d.latency.lowest_equivalent(first), d.latency.highest_equivalent(first));
    let (value, unit) = match first {
        0..=99_999 => (first.to_string(), "nsec"),
        100_000..=99_999_999 => (format!("{:.1}", first as f64 / 1e3), "usec"),
        _ => (format!("{:.1}", first as f64 / 1e6), "msec"),
    };
    let _ = writeln!(
        out,
        "    {pre} percentiles ({unit}): all [{value}]: a constant cost ({same} of {n} commands took this same time in the model), not a distribution"
    );
    true
}

/// stat.c display_lat with stat.h nsec_to_usec / nsec_to_msec's thresholds.
fn display_lat(name: &str, m: &Moments, out: &mut String) {
    let (mut min, mut max, mut mean, mut dev) = (m.min, m.max, m.mean, m.stddev);
    let mut base = "(nsec)";
    if min > 2_000_000 && max > 99_999_999 && dev > 1_000_000.0 {
        (min, max, mean, dev, base) = (min / 1_000_000, max / 1_000_000, mean / 1e6, dev / 1e6, "(msec)");
    } else if min > 2_000 && max > 99_999 && dev > 1_000.0 {
        (min, max, mean, dev, base) = (min / 1_000, max / 1_000, mean / 1e3, dev / 1e3, "(usec)");
    }
    let _ = writeln!(
        out,
        "    {name} {base}: min={}, max={}, avg={mean:5.2}, stdev={dev:5.2}",
        num2str(min, 6, false, Unit::None),
        num2str(max, 6, false, Unit::None)
    );
}

/// stat.c show_clat_percentiles: the unit from the values' range, columns as wide as the
/// largest, as many per line as fit in 80 characters.
fn percentiles(d: &Direction, r: &trimlab_scenario::fio::ReportOptions, pre: &str, out: &mut String) {
    if d.latency.is_empty() {
        return;
    }
    let mut values = percentile_values(&d.latency, &r.percentiles);
    if constant_cost(d, &values, pre, out) {
        return;
    }
    let (min, max) = (values.iter().copied().min().unwrap_or(0), values.iter().copied().max().unwrap_or(0));
    let (scale_down, divisor, unit) = if min > 2_000_000 && max > 99_999_999 {
        (2, 1_000_000, "msec")
    } else if min > 2_000 && max > 99_999 {
        (1, 1_000, "usec")
    } else {
        (0, 1, "nsec")
    };
    let _ = write!(out, "    {pre} percentiles ({unit}):\n     |");
    let width = (max / divisor).to_string().len().max(5);
    let precision = r.precision;
    let per_line = (80 - 7) / (precision + 10 + width);
    let len = values.len();
    for (j, (p, v)) in r.percentiles.iter().zip(values.iter_mut()).enumerate() {
        if j != 0 && j % per_line == 0 {
            out.push_str("     |");
        }
        for _ in 0..scale_down {
            *v = v.div_ceil(1000);
        }
        let last = j == len - 1;
        let _ = write!(
            out,
            " {p:>w$.precision$}th=[{v:>width$}]{}",
            if last { '\n' } else { ',' },
            w = precision + 3
        );
        if !last && j % per_line == per_line - 1 {
            out.push('\n');
        }
    }
}

/// stat.c show_lat: `  lat (usec)   : 250=0.13%, 500=85.36%` with five buckets a line,
/// empty buckets left out.
fn lat_distribution(unit: &str, shares: &[f64], labels: &[&str], out: &mut String) {
    let shown: Vec<String> =
        shares.iter().zip(labels).filter(|(s, _)| **s > 0.0).map(|(s, l)| format!("{l}={s:3.2}%")).collect();
    for line in shown.chunks(5) {
        let _ = writeln!(out, "  lat ({unit})   : {}", line.join(", "));
    }
}

/// `Run status group N (all jobs):` and a line per direction (show_group_stats). fio's
/// min-max bandwidth is per job; the model keeps the group's sum, so both are the group's.
fn run_status(g: &GroupReport, out: &mut String) {
    let _ = write!(out, "\nRun status group {} (all jobs):\n", g.groupid);
    let names = ["   READ", "  WRITE", "   TRIM"];
    for (d, name) in g.dirs.iter().zip(names).filter(|(d, _)| d.io_bytes > 0) {
        let agg = d.bw_bytes(g.runtime_ms.max(1));
        let (bw, bw_alt) =
            (num2str(agg, 4, true, Unit::BytePerSec), num2str(agg, 4, false, Unit::BytePerSec));
        let (io, io_alt) =
            (num2str(d.io_bytes, 4, true, Unit::Byte), num2str(d.io_bytes, 4, false, Unit::Byte));
        let run = g.runtime_ms;
        let _ = writeln!(
            out,
            "{name}: bw={bw} ({bw_alt}), {bw}-{bw} ({bw_alt}-{bw_alt}), io={io} ({io_alt}), run={run}-{run}msec"
        );
    }
}
