//! `waf`: steady-state write amplification of greedy GC under uniform random 4 KiB writes,
//! with and without TRIM, beside the published analytic models.
//!
//! Each point is one plane (one GC pool) of 2^18 x scale physical pages, so the mean-field
//! assumption of many blocks holds (1024 to 8192 blocks). The drive is filled sequentially,
//! warmed with `WARM_WRITES` of the measured mix (so the trimmed share reaches steady state
//! too), then measured over `MEASURED_WRITES`. The model is evaluated at the spare factor GC
//! actually sees: the nominal one minus the pages that are erased but hold nothing (the free-
//! block reserve and the unwritten part of the two open blocks); see
//! `trimlab_analytic::spare_factor_seen_by_gc`.

use super::bands;
use super::prose::Prose;
use super::table::table;
use super::{try_parallel_map, Options};
use anyhow::{Context, Result};
use trimlab_device::config::GcThreshold;
use trimlab_device::{DeviceSection, FtlSection, SsdConfig, TrimSection};
use trimlab_report::{Cell, ExperimentReport, Plot, PlotKind, Series, SeriesStyle, Table, Verdict};
use trimlab_scenario::RunConfig;
use trimlab_sim::ByteSize;
use trimlab_workload::{AccessPattern, Precondition, Volume, WorkloadConfig};

const SPARE_FACTORS: [f64; 7] = [0.07, 0.10, 0.15, 0.20, 0.30, 0.40, 0.50];
const PAGES_PER_BLOCK: [u32; 4] = [32, 64, 128, 256];
const TRIM_FRACTIONS: [f64; 2] = [0.0, 0.1];
/// Warm-up and measurement, in multiples of the logical capacity of host writes.
const WARM_WRITES: f64 = 3.0;
const MEASURED_WRITES: f64 = 2.0;
const GC_FREE_BLOCKS: u32 = 2;
/// Allowed gap between simulation and the mean-field model where the model applies.
const TOLERANCE: f64 = 0.02;

struct Point {
    spare_factor: f64,
    pages_per_block: u32,
    trim_fraction: f64,
}

impl Point {
    fn name(&self) -> String {
        format!("sf{}-ppb{}-trim{}", self.spare_factor, self.pages_per_block, self.trim_fraction)
    }
}

struct Measured {
    waf: f64,
    spare_factor_resolved: f64,
    spare_factor_gc: f64,
    mean_field: f64,
    desnoyers: f64,
    applies: Result<(), &'static str>,
    blocks: u32,
}

/// Physical pages of each point's one-plane device: 2^18 at scale 1.
fn physical_pages_per_point(options: &Options) -> u64 {
    ((1u64 << 18) as f64 * options.scale).round() as u64
}

/// The run configuration of one point: what `trimlab reproduce waf --emit-configs` writes and
/// `trimlab run` runs to the same WAF.
fn config(point: &Point, options: &Options) -> RunConfig {
    let physical_pages = physical_pages_per_point(options);
    let blocks = (physical_pages / point.pages_per_block as u64).max(64) as u32;
    let device = DeviceSection {
        preset: Some("nvme-tlc".into()),
        channels: Some(1),
        chips_per_channel: Some(1),
        dies_per_chip: Some(1),
        planes_per_die: Some(1),
        blocks_per_plane: Some(blocks),
        pages_per_block: Some(point.pages_per_block),
        page_bytes: Some(4096),
        spare_factor: Some(point.spare_factor),
        write_buffer_bytes: Some(ByteSize(0)),
        ..Default::default()
    };
    let ftl = FtlSection { gc_free_blocks: Some(GcThreshold::Blocks(GC_FREE_BLOCKS)), ..Default::default() };
    RunConfig {
        seed: Some(options.seed),
        device,
        ftl,
        trim: TrimSection::default(),
        workload: WorkloadConfig {
            pattern: AccessPattern::UniformRandom,
            trim_fraction: point.trim_fraction,
            queue_depth: 1,
            // Fill sequentially, then WARM_WRITES of the measured mix (so the trimmed share
            // reaches steady state too), then measure.
            precondition: Precondition::Steady,
            precondition_writes: Volume::Capacity(WARM_WRITES),
            writes: Volume::Capacity(MEASURED_WRITES),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Every point of the experiment as a named configuration.
pub fn configs(options: &Options) -> Vec<(String, RunConfig)> {
    points().iter().map(|p| (p.name(), config(p, options))).collect()
}

fn measure(point: &Point, options: &Options) -> Result<Measured> {
    let config = config(point, options);
    let device = SsdConfig::resolve(&config.device, &config.ftl, &config.trim)?;
    let blocks = device.geometry.blocks_per_plane;
    let logical = device.logical_pages as u64;
    let physical = device.geometry.physical_pages() as u64;
    let run = super::point::run(options, &config).context("the waf point's run")?;
    let report = run.report;
    let b = point.pages_per_block as u64;
    // Free-block reserve: GC restores GC_FREE_BLOCKS and restarts when one is taken (m - 1/2);
    // two open blocks (host, GC) that start empty are half unwritten on average.
    let idle_pages = ((GC_FREE_BLOCKS as f64 - 0.5 + 1.0) * b as f64).round() as u64;
    let sf_gc = trimlab_analytic::spare_factor_seen_by_gc(logical, physical, idle_pages)?;
    let mean_field =
        trimlab_analytic::greedy_waf_with_trim(sf_gc, point.pages_per_block, point.trim_fraction)?;
    let sf_eff = trimlab_analytic::trim_effective_spare_factor(sf_gc, point.trim_fraction)?;
    let desnoyers = trimlab_analytic::greedy_waf_desnoyers(sf_eff, point.pages_per_block)?;
    let applies = trimlab_analytic::applicability_for_pool(sf_eff, point.pages_per_block, blocks);
    Ok(Measured {
        waf: report.waf,
        spare_factor_resolved: device.spare_factor,
        spare_factor_gc: sf_gc,
        mean_field,
        desnoyers,
        applies,
        blocks,
    })
}

fn points() -> Vec<Point> {
    let mut points = Vec::new();
    for &trim_fraction in &TRIM_FRACTIONS {
        for &pages_per_block in &PAGES_PER_BLOCK {
            for &spare_factor in &SPARE_FACTORS {
                points.push(Point { spare_factor, pages_per_block, trim_fraction });
            }
        }
    }
    points
}

const PROSE: Prose = Prose(include_str!("waf.md"));

pub fn run(options: &Options) -> Result<ExperimentReport> {
    let points = points();
    let results = try_parallel_map(options, &points, "waf", |p| measure(p, options))?;
    let plots = TRIM_FRACTIONS.iter().map(|&q| plot(q, &points, &results)).collect();
    let mut notes = PROSE.items("notes");
    let excluded: Vec<String> = points
        .iter()
        .zip(&results)
        .filter_map(|(p, m)| m.applies.err().map(|why| format!("{}: {why}", label(p))))
        .collect();
    if !excluded.is_empty() {
        notes.push(format!(
            "Points where the model does not apply (shown, not judged): {}",
            excluded.join("; ")
        ));
    }
    Ok(ExperimentReport {
        name: "waf".into(),
        title: "WAF validation: greedy GC against analytic models".into(),
        summary: PROSE.item(
            "summary",
            &[
                ("physical_pages", &physical_pages_per_point(options)),
                ("scale", &options.scale),
                ("gc_free_blocks", &GC_FREE_BLOCKS),
                ("warm_writes", &WARM_WRITES),
                ("measured_writes", &MEASURED_WRITES),
            ],
        ),
        paper: PROSE.items("paper"),
        verdicts: verdicts(&points, &results),
        notes,
        tables: vec![waf_table(&points, &results)],
        plots,
        params: vec![
            ("seed".into(), options.seed.to_string()),
            ("scale".into(), options.scale.to_string()),
            ("physical_pages_per_point".into(), physical_pages_per_point(options).to_string()),
            ("tolerance".into(), format!("{}%", TOLERANCE * 100.0)),
        ],
    })
}

/// A point as the verdicts and notes name it.
fn label(p: &Point) -> String {
    format!("sf {} b {} q {}", p.spare_factor, p.pages_per_block, p.trim_fraction)
}

/// The simulated WAF's gap to the mean-field model, as a share of the model.
fn gap(m: &Measured) -> f64 {
    (m.waf - m.mean_field) / m.mean_field
}

fn waf_table(points: &[Point], results: &[Measured]) -> Table {
    table(
        "waf",
        "Steady-state WAF: trimlab vs analytic greedy models",
        &[
            "trim_fraction",
            "pages_per_block",
            "blocks",
            "spare_factor",
            "spare_factor_resolved",
            "spare_factor_gc",
            "waf_trimlab",
            "waf_mean_field",
            "waf_desnoyers",
            "diff_vs_mean_field_pct",
            "model_applies",
        ],
        points.iter().zip(results).map(|(p, m)| {
            [
                Cell::Num(p.trim_fraction),
                Cell::Int(p.pages_per_block as i64),
                Cell::Int(m.blocks as i64),
                Cell::Num(p.spare_factor),
                Cell::Num(m.spare_factor_resolved),
                Cell::Num(m.spare_factor_gc),
                Cell::Num(m.waf),
                Cell::Num(m.mean_field),
                Cell::Num(m.desnoyers),
                Cell::Num(gap(m) * 100.0),
                Cell::Text(match m.applies {
                    Ok(()) => "yes".into(),
                    Err(why) => format!("no: {why}"),
                }),
            ]
        }),
    )
}

/// WAF against the spare factor at TRIM share `q`: trimlab's points and the mean-field curve
/// for each block size.
fn plot(q: f64, points: &[Point], results: &[Measured]) -> Plot {
    let mut series = Vec::new();
    for &b in &PAGES_PER_BLOCK {
        let pick = |f: &dyn Fn(&Measured) -> f64| -> Vec<(f64, f64)> {
            points
                .iter()
                .zip(results)
                .filter(|(p, _)| p.pages_per_block == b && p.trim_fraction == q)
                .map(|(p, m)| (p.spare_factor, f(m)))
                .collect()
        };
        series.push(Series {
            label: format!("trimlab b={b}"),
            points: pick(&|m| m.waf),
            style: SeriesStyle::Points,
        });
        series.push(Series {
            label: format!("mean-field b={b}"),
            points: pick(&|m| m.mean_field),
            style: SeriesStyle::Dashed,
        });
    }
    Plot {
        name: if q == 0.0 { "waf_no_trim".into() } else { "waf_trim".into() },
        title: if q == 0.0 {
            "Greedy GC, uniform random writes: WAF vs spare factor".into()
        } else {
            format!("Greedy GC with {}% single-page TRIMs: WAF vs spare factor", q * 100.0)
        },
        x_label: "spare factor (physical - logical) / physical".into(),
        y_label: "write amplification".into(),
        log_y: false,
        log_x: false,
        symlog_y: false,
        kind: PlotKind::Lines { series },
    }
}

fn verdicts(points: &[Point], results: &[Measured]) -> Vec<Verdict> {
    let pairs = || points.iter().zip(results);
    let applicable = || pairs().filter(|(_, m)| m.applies.is_ok());
    // The first of the largest gaps, in point order.
    let worst = applicable().fold(None, |worst: Option<(f64, &Point)>, (p, m)| {
        if worst.is_none_or(|(w, _)| gap(m).abs() > w.abs()) {
            Some((gap(m), p))
        } else {
            worst
        }
    });
    let (worst_diff, worst_at) =
        worst.map_or((f64::NAN, "no applicable point".into()), |(d, p)| (d, label(p)));
    let applicable_count = applicable().count();
    let within = applicable().filter(|(_, m)| gap(m).abs() <= TOLERANCE).count();
    let trim_lowers_waf = pairs().filter(|(p, _)| p.trim_fraction > 0.0).all(|(p, m)| {
        let no_trim = pairs().find(|(o, _)| {
            o.trim_fraction == 0.0
                && o.pages_per_block == p.pages_per_block
                && o.spare_factor == p.spare_factor
        });
        no_trim.is_some_and(|(_, n)| m.waf < n.waf)
    });
    vec![
        bands::band(
            "trimlab's greedy WAF agrees with the mean-field model at every point where it applies (no TRIM and TRIM)",
            &format!("within {} % of the model", TOLERANCE * 100.0),
            applicable_count > 0,
            within == applicable_count,
            format!(
                "{within} of {applicable_count} applicable points within; largest gap {:+.2}% at {worst_at}",
                worst_diff * 100.0
            ),
        ),
        bands::shape(
            "TRIM lowers WAF as Frankie et al.'s effective over-provisioning predicts",
            trim_lowers_waf,
            "every TRIM point has lower WAF than the same geometry without TRIM".into(),
        ),
    ]
}
