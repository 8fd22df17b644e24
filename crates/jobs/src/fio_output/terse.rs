//! fio's terse output, version 3 (fio's default `--terse-version`): one `;`-separated line
//! per group (stat.c show_thread_status_terse_all, show_ddir_status_terse), 121 fields:
//! read and write (version 3 has no TRIM fields), CPU, IO depths and the latency
//! distribution. Times are in µs, as fio's terse fields are.

use super::number::{latency_buckets, percentile_values, Moments};
use super::{Direction, FioReport, GroupReport, FIO_VERSION};
use crate::fio_output::number::LAT_BOUNDS;
use std::fmt::Write;

/// fio's FIO_IO_U_LIST_MAX_LEN: the terse line always has this many percentile fields.
const PERCENTILE_FIELDS: usize = 20;

pub fn terse(report: &FioReport) -> String {
    let mut out = String::new();
    for g in &report.groups {
        let _ = write!(out, "3;{FIO_VERSION};{};{};0", g.name, g.groupid);
        direction(g, &g.dirs[0], &mut out);
        direction(g, &g.dirs[1], &mut out);
        out.push_str(";0.000000%;0.000000%;0;0;0");
        out.push_str(&";0.0%".repeat(7));
        let (n, u, m) = latency_buckets(g.dirs.iter().map(|d| &d.latency));
        // stat_calc_lat_nu: the nsec buckets are added to the first usec one.
        let mut u = u;
        u[0] += n.iter().sum::<f64>();
        for share in u.iter().take(LAT_BOUNDS.len()).chain(&m) {
            let _ = write!(out, ";{share:3.2}%");
        }
        out.push('\n');
    }
    out
}

fn direction(g: &GroupReport, d: &Direction, out: &mut String) {
    let runtime = if d.total_ios > 0 { g.runtime_ms.max(1) } else { 0 };
    let (bw, iops) = match runtime {
        0 => (0, 0),
        r => (d.bw_bytes(r) / 1024, (1000u128 * u128::from(d.total_ios) / u128::from(r)) as u64),
    };
    let _ = write!(out, ";{};{bw};{iops};{runtime}", d.io_bytes >> 10);
    let m = Moments::of(&d.latency);
    let usec =
        |m: &Moments| format!(";{};{};{:.6};{:.6}", m.min / 1000, m.max / 1000, m.mean / 1e3, m.stddev / 1e3);
    // slat: no submission cost in the model.
    out.push_str(";0;0;0.000000;0.000000");
    out.push_str(&usec(&m));
    let r = &g.report;
    let listed = if (r.lat_percentiles || r.clat_percentiles) && m.n > 0 { r.percentiles.len() } else { 0 };
    let values = percentile_values(&d.latency, &r.percentiles[..listed]);
    for i in 0..PERCENTILE_FIELDS {
        match values.get(i) {
            Some(v) => {
                let _ = write!(out, ";{:.6}%={}", r.percentiles[i], v / 1000);
            }
            None => out.push_str(";0%=0"),
        }
    }
    out.push_str(&usec(&m));
    out.push_str(";0;0;0.000000%;0.000000;0.000000");
}
