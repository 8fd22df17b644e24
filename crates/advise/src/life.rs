//! advise's default for a file workload: the question is months of use on a full, aged drive,
//! not one run on an empty one. So each policy's run first ages the file system (the `age`
//! phase: filled, then random files deleted down to the utilization, all under that policy),
//! starts measuring there (device report and the application's call latencies), and repeats
//! the workload in rounds, one round being one run of the program with what it left removed
//! before the next (`between = "remove"`), until its per-round WAF is steady by SNIA PTS's rule
//! or the round cap. `--as-is` keeps the single run on a fresh file system.

use anyhow::{bail, Result};
use serde_json::Value;
use trimlab_scenario::phase::{PhaseKind, PhaseSection};
use trimlab_scenario::steady_state::{SteadyKeys, UNTIL_STEADY};
use trimlab_scenario::RunConfig;

/// How the runs reach the state they are compared in.
#[derive(Clone, Debug, PartialEq)]
pub struct Life {
    /// The aged file system's fullness before the rounds (default 0.70).
    pub utilization: f64,
    /// At most this many rounds (default PTS's 25).
    pub rounds: u32,
    /// Capacities written by the aging's turnover after its fill (default 2, SNIA PTS's
    /// preconditioning: a drive is measured after writing twice its capacity).
    pub churn: f64,
}

pub const DEFAULT_UTILIZATION: f64 = 0.70;
pub const DEFAULT_CHURN: f64 = 2.0;

impl Default for Life {
    fn default() -> Life {
        Life {
            utilization: DEFAULT_UTILIZATION,
            rounds: trimlab_scenario::steady_state::DEFAULT_MAX_ROUNDS,
            churn: DEFAULT_CHURN,
        }
    }
}

/// `config` as the aged, repeated run: aging and a `measure` first, then the config's own
/// phases with its one `workload` phase repeated in rounds (a config without phases: its
/// workload alone). A config with several workload phases, or one that repeats its own, is
/// refused: its phases are a plan of their own (run it with `--as-is`).
pub fn aged(config: &RunConfig, life: &Life, name: &str) -> Result<RunConfig> {
    if !(0.0..1.0).contains(&life.utilization) {
        bail!(
            "--utilization {}: the aged file system's fullness must be in 0.0..1.0 (0.70 is 70 %)",
            life.utilization
        );
    }
    if !(life.churn.is_finite() && (0.0..=100.0).contains(&life.churn)) {
        bail!("--churn {}: capacities of turnover must be in 0..=100", life.churn);
    }
    if life.rounds < 5 {
        bail!(
            "--rounds {}: steady state needs at least 5 rounds (PTS's window); give 5 or more",
            life.rounds
        );
    }
    let mut phases = config.phases.clone();
    if phases.is_empty() {
        phases.push(PhaseSection { name: Some("workload".into()), ..PhaseSection::new(PhaseKind::Workload) });
    }
    let workloads: Vec<usize> =
        (0..phases.len()).filter(|&i| phases[i].kind == PhaseKind::Workload).collect();
    let own_plan = |why: &str| {
        anyhow::anyhow!(
            "{name}: its [[phase]] list {why}; advise ages the file system and repeats the one workload phase itself, so run this config with --as-is"
        )
    };
    let [w] = workloads.as_slice() else {
        return Err(own_plan(&format!("has {} workload phases", workloads.len())));
    };
    let phase = &mut phases[*w];
    if phase.repeat.is_some() || phase.until.is_some() || phase.between.is_some() {
        return Err(own_plan("repeats its workload phase itself"));
    }
    if phases.iter().any(|p| matches!(p.kind, PhaseKind::Mkfs | PhaseKind::Measure)) {
        return Err(own_plan("makes a file system or starts measuring itself"));
    }
    let phase = &mut phases[*w];
    phase.until = Some(UNTIL_STEADY.into());
    phase.repeat = Some(life.rounds);
    phase.between = Some("remove".into());
    phase.steady = Some(SteadyKeys { track: Some(vec!["waf".into()]), ..SteadyKeys::default() });
    let age = PhaseSection {
        name: Some("aging".into()),
        utilization: Some(life.utilization),
        churn: Some(life.churn),
        ..PhaseSection::new(PhaseKind::Age)
    };
    let measure = PhaseSection { calls: Some(true), ..PhaseSection::new(PhaseKind::Measure) };
    let mut c = config.clone();
    c.phases = [age, measure].into_iter().chain(phases).collect();
    Ok(c)
}

/// The rounds' program time: the sum of their spans (the aging before them is not the
/// program's).
pub fn rounds_ns(m: &Value) -> Option<u64> {
    let rounds = m["steady_state"].get(0)?["rounds"].as_array()?;
    Some(
        rounds
            .iter()
            .map(|r| r["end_ns"].as_u64().unwrap_or(0).saturating_sub(r["start_ns"].as_u64().unwrap_or(0)))
            .sum(),
    )
}

/// The fstrim periods of the aged, repeated runs: one round's span and three rounds' (at one
/// run of the program a day, daily and every three days), from the no-discard run's rounds, to
/// two significant digits. A fraction of a round would trim in the middle of the program, at a
/// pace no cron'd fstrim keeps; every round is at least 5 (PTS's window), so both fire.
pub fn round_periods(m: &Value) -> Option<Vec<u64>> {
    let rounds = m["steady_state"].get(0)?["rounds_run"].as_u64().filter(|&r| r > 0)?;
    let round_ns = rounds_ns(m)? / rounds;
    let mut periods: Vec<u64> = [1, 3].iter().map(|&n| two_significant_ms(round_ns * n)).collect();
    periods.dedup();
    Some(periods)
}

/// `ns` rounded to two significant digits, in whole milliseconds (at least 1 ms), so a period
/// prints as `[host] discard` takes it ("fstrim:2400ms", "fstrim:19s").
fn two_significant_ms(ns: u64) -> u64 {
    let ms = (ns / 1_000_000).max(1);
    let scale = 10u64.pow((ms.ilog10()).saturating_sub(1));
    (ms + scale / 2) / scale * scale * 1_000_000
}

/// What the runs did, in one sentence ("aged to 70 %, 14 rounds, steady from round 9 …"),
/// from the first (no discard) run's metrics.
pub fn sentence(life: &Life, m: &Value) -> String {
    let s = &m["steady_state"][0];
    let ran = s["rounds_run"].as_u64().unwrap_or(0);
    let steady = match s["steady_round"].as_u64() {
        Some(r) => format!("WAF steady from round {} (SNIA PTS: 5 rounds within 20 % of their mean, fitted slope within 10 %)", r + 1),
        None => format!("WAF NOT steady within {ran} rounds (the figures compare the last rounds, not a steady state)"),
    };
    let host_mib = s["rounds"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| r["host_write_bytes"].as_u64().unwrap_or(0))
        .sum::<u64>() as f64
        / (1u64 << 20) as f64;
    format!(
        "Each policy's run aged the file system to {:.0} % under that policy (filled, thinned, then {} capacities of file turnover), then ran the workload {ran} times (one round = one run, its leftovers removed before the next; {host_mib:.1} MiB written by the rounds of the no-discard run): {steady}. Device figures and call latencies cover the rounds only; --as-is runs the workload once on a fresh file system.",
        life.utilization * 100.0,
        life.churn
    )
}

/// An error of an aged run, with what to change when the workload did not fit beside the
/// aging's files.
pub fn hint(e: anyhow::Error, life: Option<&Life>) -> anyhow::Error {
    match life {
        Some(l) if format!("{e:#}").contains("no space left") => e.context(format!(
            "the workload does not fit in the {:.0} % the aging leaves free: pass a lower --utilization (the aged fullness), or --as-is for one run on a fresh file system",
            (1.0 - l.utilization) * 100.0
        )),
        _ => e,
    }
}

/// A policy's projected life at one run of the program a day (one round = one day): from its
/// measured span's erases (metrics.json's `report.lifetime`, docs/lifetime.md) over the rounds
/// it ran. `(most-worn block, average block)` in years; `None` without a rating or erases.
pub fn years_at_one_run_a_day(m: &Value) -> Option<(Option<f64>, Option<f64>)> {
    let l = &m["report"]["lifetime"];
    let pe = l["rated_pe_cycles"].as_f64()?;
    let rounds = m["steady_state"][0]["rounds_run"].as_f64().filter(|&r| r > 0.0)?;
    let per_block = l["span_erases_per_block"].as_f64()?;
    let worst = (l["span_erase_count_max_rise"].as_f64().unwrap_or(0.0)).max(per_block);
    let years = |erases: f64| (erases > 0.0).then(|| pe / (erases / rounds * 365.0));
    Some((years(worst), years(per_block)))
}

fn years_text(y: Option<f64>) -> String {
    match y {
        None => "no wear".into(),
        Some(y) if y >= 1000.0 => "over 1000 years".into(),
        Some(y) => format!("{y:.1} years"),
    }
}

/// The life table: per policy, its rounds, what a round wrote and erased, and the projected
/// life at one run a day.
pub fn life_table(labels: &[String], metrics: &[&Value]) -> trimlab_report::Table {
    use trimlab_report::Cell;
    let mut t = trimlab_report::Table::new(
        "advise_life",
        "Wear and projected life at one run of the workload a day (rounds after aging)",
        &[
            "policy",
            "rounds",
            "steady_from_round",
            "host_mib_per_round",
            "nand_mib_per_round",
            "erases_per_block_per_round",
            "life_most_worn_block",
            "life_average_block",
        ],
    );
    for (label, m) in labels.iter().zip(metrics) {
        let s = &m["steady_state"][0];
        let rounds = s["rounds"].as_array().map(Vec::as_slice).unwrap_or_default();
        let n = rounds.len().max(1) as f64;
        let mib = |key: &str| {
            rounds.iter().map(|r| r[key].as_u64().unwrap_or(0)).sum::<u64>() as f64 / n / (1u64 << 20) as f64
        };
        let epb = m["report"]["lifetime"]["span_erases_per_block"].as_f64().map(|e| e / n);
        let (worst, mean) = years_at_one_run_a_day(m).unwrap_or((None, None));
        let rated = m["report"]["lifetime"].is_object();
        t.push_row([
            Cell::Text(label.clone()),
            Cell::Int(rounds.len() as i64),
            s["steady_round"].as_u64().map_or(Cell::Text("not steady".into()), |r| Cell::Int(r as i64 + 1)),
            Cell::Num(mib("host_write_bytes")),
            Cell::Num(mib("nand_write_bytes")),
            epb.map_or(Cell::Text("n/a".into()), Cell::Num),
            Cell::Text(if rated { years_text(worst) } else { "no rating".into() }),
            Cell::Text(if rated { years_text(mean) } else { "no rating".into() }),
        ]);
    }
    t
}

/// The page's two life plots: each policy's WAF per round (its convergence toward steady
/// state), and each policy's erase-count distribution at the end (blocks per erase-count bin,
/// drawn at the bin's middle), one line per policy.
pub fn life_plots(labels: &[String], metrics: &[&Value]) -> Vec<trimlab_report::Plot> {
    use trimlab_report::{Plot, PlotKind, Series, SeriesStyle};
    let lines = |name: &str, title: &str, x: &str, y: &str, series: Vec<Series>| Plot {
        name: name.into(),
        title: title.into(),
        x_label: x.into(),
        y_label: y.into(),
        log_y: false,
        log_x: false,
        symlog_y: false,
        kind: PlotKind::Lines { series },
    };
    let series = |label: &String, points: Vec<(f64, f64)>| Series {
        label: label.clone(),
        points,
        style: SeriesStyle::Line,
    };
    let convergence = labels
        .iter()
        .zip(metrics)
        .map(|(label, m)| {
            let rounds = m["steady_state"][0]["rounds"].as_array().map(Vec::as_slice).unwrap_or_default();
            let points = rounds
                .iter()
                .enumerate()
                .map(|(i, r)| (i as f64 + 1.0, r["waf"].as_f64().unwrap_or(f64::NAN)))
                .collect();
            series(label, points)
        })
        .collect();
    let erases = labels
        .iter()
        .zip(metrics)
        .map(|(label, m)| {
            let h = &m["report"]["erase_count"]["histogram"];
            let (min, bin) =
                (h["erase_count_min"].as_f64().unwrap_or(0.0), h["bin_erases"].as_f64().unwrap_or(1.0));
            let blocks = h["blocks"].as_array().map(Vec::as_slice).unwrap_or_default();
            let points = blocks
                .iter()
                .enumerate()
                .map(|(i, b)| (min + (i as f64 + 0.5) * bin, b.as_f64().unwrap_or(0.0)))
                .collect();
            series(label, points)
        })
        .collect();
    vec![
        lines(
            "life_convergence",
            "WAF per round toward steady state",
            "round",
            "WAF of the round",
            convergence,
        ),
        lines(
            "life_erase_counts",
            "Erase counts at the end of the rounds (blocks per bin)",
            "erase count",
            "blocks",
            erases,
        ),
    ]
}

/// What the chosen policy does to the drive's life against no discard, in one sentence.
pub fn life_sentence(chosen: &str, chosen_m: &Value, none_m: &Value) -> Option<String> {
    let (c, _) = years_at_one_run_a_day(chosen_m)?;
    let (n, _) = years_at_one_run_a_day(none_m)?;
    Some(format!(
        "At one run a day, the most-worn block lasts {} under {chosen} and {} without discard (rated P/E cycles; docs/lifetime.md, which says what the projection leaves out).",
        years_text(c),
        years_text(n)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_are_one_and_three_rounds_to_two_digits() {
        assert_eq!(two_significant_ms(2_418_409_854), 2_400_000_000);
        assert_eq!(two_significant_ms(19_003_000_000), 19_000_000_000);
        assert_eq!(two_significant_ms(7_260_000), 7_000_000, "whole milliseconds");
        assert_eq!(two_significant_ms(300_000), 1_000_000);
        let rounds = |spans: &[(u64, u64)]| {
            let r: Vec<Value> =
                spans.iter().map(|&(s, e)| serde_json::json!({ "start_ns": s, "end_ns": e })).collect();
            serde_json::json!({ "steady_state": [{ "rounds_run": spans.len(), "rounds": r }] })
        };
        // Eight rounds of about 2.4 s after 100 s of aging.
        let m = rounds(&[(100_000_000_000, 102_400_000_000); 8]);
        assert_eq!(round_periods(&m), Some(vec![2_400_000_000, 7_200_000_000]));
        assert_eq!(round_periods(&serde_json::json!({})), None);
    }
}
