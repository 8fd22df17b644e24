//! fio's reporting options: what its report shows (`percentile_list`, `clat_percentiles`,
//! `lat_percentiles`, `slat_percentiles`) is kept for `run --fio`'s fio-format output; options
//! that only tune fio's own engine, clock or logs are ignored, each with its reason.

use super::options::FioOption;
use super::units::fio_bool;
use super::FioError;

/// fio's default percentile list (stat.c / options.c `percentile_list` default
/// "1:5:10:20:30:40:50:60:70:80:90:95:99:99.5:99.9:99.95:99.99").
pub const DEFAULT_PERCENTILES: [f64; 17] =
    [1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99];

/// The most entries of a `percentile_list` (fio's FIO_IO_U_LIST_MAX_LEN, stat.h).
pub const PERCENTILES_MAX: usize = 20;

/// How a job asks fio to report it.
#[derive(Clone, Debug, PartialEq)]
pub struct ReportOptions {
    /// Sorted ascending, as fio sorts it before printing (calc_clat_percentiles).
    pub percentiles: Vec<f64>,
    /// Decimals each percentile is printed with: the most any entry was written with (fio's
    /// percentile_precision, parse.c FIO_OPT_FLOAT_LIST); 2 for the default list.
    pub precision: usize,
    pub clat_percentiles: bool,
    pub lat_percentiles: bool,
    pub slat_percentiles: bool,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            percentiles: DEFAULT_PERCENTILES.to_vec(),
            precision: 2,
            clat_percentiles: true,
            lat_percentiles: false,
            slat_percentiles: false,
        }
    }
}

/// Options that change only how fio measures, logs or submits on a real host, never which
/// commands reach the drive or when the model completes them: ignored with one line each.
pub const REPORT_ONLY: &[&str] = &[
    "disable_lat",
    "disable_clat",
    "disable_slat",
    "disable_bw_measurement",
    "disable_bw",
    "stats",
    "gtod_reduce",
    "gtod_cpu",
    "unified_rw_reporting",
    "significant_figures",
    "unit_base",
    "bwavgtime",
    "iopsavgtime",
    "log_hist_msec",
    "log_hist_coarseness",
    "write_hist_log",
    "log_max_value",
    "log_compression",
    "log_unix_epoch",
    "log_alternate_epoch",
    // Submission and completion batching, polling and CPU placement: the model submits each
    // command when its submitter is free and has no CPU cost.
    "hipri",
    "iodepth_batch_submit",
    "iodepth_batch_complete_min",
    "iodepth_batch_complete_max",
    "iodepth_low",
    "fixedbufs",
    "registerfiles",
    "sqthread_poll",
    "sqthread_poll_cpu",
    "nice",
    "cpumask",
    "fadvise_hint",
    // A final fsync of the job's file: the model sends no FLUSH at a job's end (the device
    // report shows the pages still in its write buffer instead).
    "end_fsync",
    "fsync_on_close",
];

/// Applies a reporting option to `report`; false when `opt` is none of them.
pub fn apply_report(opt: &FioOption, report: &mut ReportOptions) -> Result<bool, FioError> {
    let flag = || {
        fio_bool(opt.value).ok_or_else(|| {
            opt.err(format!("fio option `{}={}`: expected 0 or 1", opt.key, opt.value.unwrap_or("")))
        })
    };
    match opt.key {
        "clat_percentiles" => report.clat_percentiles = flag()?,
        "lat_percentiles" => report.lat_percentiles = flag()?,
        "slat_percentiles" => report.slat_percentiles = flag()?,
        "percentile_list" => {
            report.percentiles = percentile_list(opt)?;
            let decimals = |p: &str| {
                p.split_once('.').map_or(0, |(_, d)| d.chars().take_while(char::is_ascii_digit).count())
            };
            report.precision = opt.value.unwrap_or("").split(':').map(decimals).max().unwrap_or(0);
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// fio's `percentile_list=99:99.9:99.99`: up to 20 values in (0, 100], reported sorted.
fn percentile_list(opt: &FioOption) -> Result<Vec<f64>, FioError> {
    let v = opt.value.unwrap_or("");
    let bad = || {
        opt.err(format!(
            "fio option `percentile_list={v}`: expected up to {PERCENTILES_MAX} percentiles in (0, 100] separated by ':', like 50:99:99.9"
        ))
    };
    let mut list = v
        .split(':')
        .map(|p| p.trim().parse::<f64>().ok().filter(|p| *p > 0.0 && *p <= 100.0))
        .collect::<Option<Vec<f64>>>()
        .ok_or_else(bad)?;
    if list.is_empty() || list.len() > PERCENTILES_MAX {
        return Err(bad());
    }
    list.sort_by(f64::total_cmp);
    Ok(list)
}
