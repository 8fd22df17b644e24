//! 003's operator question, "online discard, periodic fstrim or none?", as a rule over trace
//! replays: the scenarios `trimlab advise` replays and the recommendation with its reason. The
//! binary replays and prints; the Python module and tests call the same rule.

use crate::replay::{ReplayStats, TrimHandling};
use trimlab_device::DeviceReport;
use trimlab_trim::{BeforeGcCap, EngineKind};

pub const DAY_NS: u64 = 86_400 * 1_000_000_000;

/// A way the host can handle its discards: what `advise` recommends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Mount with `-o discard`: every freed extent trimmed at commit.
    OnlineDiscard,
    /// No online discard; `fstrim` every `period_ns` of trace time.
    Fstrim { period_ns: u64 },
    /// Never trim.
    NoDiscard,
    /// The trace sends no discards: it cannot show what trimming would free (recorded on a
    /// file system mounted without discard, the usual setup), so it cannot tell.
    NotNeeded,
}

impl std::fmt::Display for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Policy::OnlineDiscard => f.write_str("online discard (mount -o discard)"),
            Policy::Fstrim { period_ns } => write!(f, "periodic fstrim, {}", period_label(*period_ns)),
            Policy::NoDiscard => f.write_str("no discard at all"),
            Policy::NotNeeded => f.write_str("cannot tell from this trace (it has no discards)"),
        }
    }
}

/// The recommendation and the reason for it, in one sentence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Advice {
    pub policy: Policy,
    pub reason: String,
}

fn advice(policy: Policy, reason: String) -> Advice {
    Advice { policy, reason }
}

/// The host policy scenario `i` stands for (online discard, fstrim and none all have one).
fn pick(list: &[Scenario], i: usize) -> Policy {
    list[i].policy.clone().unwrap_or_else(|| unreachable!("advice: scenario {i} names no host policy"))
}

/// One scenario's replay, as the rule reads it.
pub struct Replayed<'a> {
    pub stats: &'a ReplayStats,
    pub report: &'a DeviceReport,
}

/// "daily", "weekly", "every 3 d", "every 10s".
pub fn period_label(ns: u64) -> String {
    match ns {
        DAY_NS => "daily".into(),
        n if n == 7 * DAY_NS => "weekly".into(),
        n if n % DAY_NS == 0 => format!("every {} d", n / DAY_NS),
        n => format!("every {}", trimlab_sim::DurationNs(n)),
    }
}

/// One way of handling the trace's discards.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    pub label: String,
    /// The host policy this row stands for (the recommendation picks among these).
    pub policy: Option<Policy>,
    pub trims: TrimHandling,
    /// A drive with another TRIM engine than the configured one (`None`: as configured).
    pub engine: Option<(EngineKind, BeforeGcCap)>,
}

/// The scenarios `advise` replays: online discard on the configured drive, each fstrim period,
/// no discard, and online discard on each other TRIM engine.
pub fn scenarios(configured: EngineKind, fstrim_periods_ns: &[u64]) -> Vec<Scenario> {
    let name = |e: EngineKind| format!("{e:?}").to_lowercase();
    let mut list = vec![Scenario {
        label: format!("online discard ({} drive)", name(configured)),
        policy: Some(Policy::OnlineDiscard),
        trims: TrimHandling::AsRecorded,
        engine: None,
    }];
    for &period_ns in fstrim_periods_ns {
        let when = period_label(period_ns);
        list.push(Scenario {
            label: format!("fstrim {when}"),
            policy: Some(Policy::Fstrim { period_ns }),
            trims: TrimHandling::Periodic { period_ns },
            engine: None,
        });
    }
    list.push(Scenario {
        label: "no discard".into(),
        policy: Some(Policy::NoDiscard),
        trims: TrimHandling::Drop,
        engine: None,
    });
    for (engine, cap) in [
        (EngineKind::Immediate, BeforeGcCap::All),
        (EngineKind::Delayed, BeforeGcCap::All),
        (EngineKind::Delayed, BeforeGcCap::Bytes(512 << 20)),
        (EngineKind::None, BeforeGcCap::All),
    ] {
        if engine == configured && cap == BeforeGcCap::All {
            continue;
        }
        let label = match engine {
            EngineKind::Delayed => format!("online discard, {} drive", cap.label()),
            EngineKind::None => "online discard, drive ignores TRIM".into(),
            EngineKind::Immediate => "online discard, immediate-TRIM drive".into(),
            // EngineKind is an open registry (trimlab_trim::ENGINES), not a closed enum.
            other => format!("online discard, {}-TRIM drive", other.name()),
        };
        list.push(Scenario {
            label,
            policy: None,
            trims: TrimHandling::AsRecorded,
            engine: Some((engine, cap)),
        });
    }
    list
}

/// A trace that gives the rule nothing to weigh: no discards (it cannot tell), or no writes
/// (WAF has no value). `online` is the online-discard replay.
fn nothing_to_weigh(online: &Replayed<'_>) -> Option<Advice> {
    let trims = online.stats.trims;
    if trims == 0 {
        return Some(advice(
            Policy::NotNeeded,
            "The trace has no TRIM (discard) commands, so every policy replays it alike. That does not mean trimming would not help: a trace recorded on a file system mounted without `discard` (the usual setup) never shows what the file system freed. Record it again with the file system mounted `-o discard` (its frees then appear as TRIMs that advise can send at once, batch or drop), or give the program itself (`trimlab advise --strace FILE --root DIR`), whose file system the model runs under each policy. Only if the application never frees space does the choice not matter.".into(),
        ));
    }
    if online.report.host.pages_written == 0 {
        // WAF is NAND programs over host writes: with no host write it has no value, and every
        // ratio of it below would be NaN.
        return Some(advice(
            Policy::NoDiscard,
            format!(
                "The trace writes nothing (its {trims} TRIM commands are all it sends), so there is no write amplification for trimming to lower: online discard would only add the TRIMs' own time. Send none."
            ),
        ));
    }
    None
}

/// The recommendation among the host policies, and the reason in one sentence.
pub fn recommend(list: &[Scenario], results: &[Replayed<'_>]) -> Advice {
    let d = 0;
    let n = list.iter().position(|s| s.label == "no discard").expect("the no-discard scenario exists");
    let r = |i: usize| &results[i].report;
    if let Some(a) = nothing_to_weigh(&results[d]) {
        return a;
    }
    // The fstrim period with the lowest WAF; among equals the longest (fewest runs).
    let mut f = n;
    for i in (1..n).rev() {
        if r(i).waf < r(f).waf * 0.995 {
            f = i;
        }
    }
    let waf_gain = r(n).waf / r(d).waf - 1.0;
    let fstrim_gain = r(n).waf / r(f).waf - 1.0;
    let p99 = |i: usize| r(i).latency.write.p99_ns.max(r(i).latency.read.p99_ns).max(1) as f64;
    let latency_cost = p99(d) / p99(f).min(p99(n)) - 1.0;
    let fg_share = r(d).trim.foreground_total_ns as f64 / r(d).sim_time_ns.max(1) as f64;
    let pct = |x: f64| format!("{:.1} %", x * 100.0);
    if f != n && waf_gain < 0.02 && fstrim_gain < 0.02 {
        return advice(
            pick(list, f),
            format!(
                "Trimming lowers WAF by only {} online and {} with {} on this workload, so a periodic fstrim keeps the drive informed at the lowest cost ({} TRIM commands online vs {}).",
                pct(waf_gain),
                pct(fstrim_gain),
                list[f].label,
                r(d).trim.commands,
                r(f).trim.commands
            ),
        );
    }
    if f == n {
        // No fstrim period did better than sending nothing.
        if waf_gain < 0.02 {
            return advice(
                Policy::NoDiscard,
                format!("Trimming lowers WAF by only {} on this workload (online discard against none) and no fstrim period does better, so discards are not worth sending.", pct(waf_gain)),
            );
        }
    }
    if latency_cost > 0.10 {
        if f != n && fstrim_gain >= waf_gain * 0.5 {
            return advice(
                pick(list, f),
                format!(
                    "Online discard raises the p99 latency by {} over {}, which keeps {} of its {} WAF gain, so batch the discards.",
                    pct(latency_cost),
                    list[f].label,
                    pct(fstrim_gain),
                    pct(waf_gain)
                ),
            );
        }
        return advice(
            pick(list, d),
            format!(
                "Online discard costs {} in p99 latency but only it captures the WAF gain ({} vs {} with {}): the free space is reused before a periodic fstrim would see it.",
                pct(latency_cost),
                pct(waf_gain),
                pct(fstrim_gain),
                list[f].label
            ),
        );
    }
    if waf_gain > fstrim_gain + 0.01 {
        let latency = if latency_cost <= 0.0 {
            format!("p99 latency {} lower", pct(-latency_cost))
        } else {
            format!("p99 latency only {} higher", pct(latency_cost))
        };
        return advice(
            pick(list, d),
            format!(
                "Online discard lowers WAF by {} against {} for {}, with {} and TRIM work {} of device time.",
                pct(waf_gain),
                pct(fstrim_gain),
                list[f].label,
                latency,
                pct(fg_share)
            ),
        );
    }
    advice(
        pick(list, f),
        format!(
            "{} gets the same WAF gain as online discard ({} vs {}) with {} TRIM commands instead of {}, so batch the discards.",
            list[f].label,
            pct(fstrim_gain),
            pct(waf_gain),
            r(f).trim.commands,
            r(d).trim.commands
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Replays of [online discard, fstrim 10 s, no discard] with these WAFs, write p99s and
    /// TRIM command counts.
    fn outcome(rows: [(f64, u64, u64); 3], trims: u64) -> (Vec<Scenario>, Vec<(ReplayStats, DeviceReport)>) {
        let list = scenarios(EngineKind::Immediate, &[10_000_000_000]);
        let results = rows
            .iter()
            .map(|&(waf, p99_ns, trim_commands)| {
                let mut report = DeviceReport { waf, sim_time_ns: 1_000_000_000, ..Default::default() };
                report.latency.write.p99_ns = p99_ns;
                report.trim.commands = trim_commands;
                // A WAF of 0 stands for a trace that writes nothing.
                report.host.pages_written = if waf > 0.0 { 1000 } else { 0 };
                (ReplayStats { trims, ..Default::default() }, report)
            })
            .collect();
        (list, results)
    }

    fn advise(rows: [(f64, u64, u64); 3], trims: u64) -> Advice {
        let (list, results) = outcome(rows, trims);
        let replays: Vec<_> = results.iter().map(|(s, r)| Replayed { stats: s, report: r }).collect();
        recommend(&list, &replays)
    }

    #[test]
    fn the_rule_names_a_typed_policy() {
        let list = scenarios(EngineKind::Immediate, &[DAY_NS]);
        assert_eq!(list[0].policy, Some(Policy::OnlineDiscard));
        assert_eq!(list[1].policy, Some(Policy::Fstrim { period_ns: DAY_NS }));
        assert_eq!(list[1].label, "fstrim daily");
        assert_eq!(list[2].policy, Some(Policy::NoDiscard));
        assert!(list[3..].iter().all(|s| s.policy.is_none() && s.engine.is_some()));
        // No discards in the trace: nothing to choose.
        assert_eq!(advise([(1.5, 100, 0), (1.5, 100, 0), (1.5, 100, 0)], 0).policy, Policy::NotNeeded);
        // TRIMs only, no writes: WAF has no value; the reason carries no NaN.
        let a = advise([(0.0, 100, 50), (0.0, 100, 0), (0.0, 100, 0)], 50);
        assert!(a.policy == Policy::NoDiscard && !a.reason.contains("NaN"), "{a:?}");
        // fstrim keeps the WAF gain with far fewer commands, latency equal: batch.
        let a = advise([(1.10, 100, 9000), (1.10, 100, 100), (1.40, 100, 0)], 9000);
        assert_eq!(a.policy, Policy::Fstrim { period_ns: 10_000_000_000 }, "{}", a.reason);
        assert_eq!(a.policy.to_string(), "periodic fstrim, every 10s");
        // Only online discard captures the gain and latency does not suffer: online.
        let a = advise([(1.10, 100, 9000), (1.40, 100, 100), (1.40, 100, 0)], 9000);
        assert_eq!(a.policy, Policy::OnlineDiscard, "{}", a.reason);
        // Trimming gains nothing: none.
        let a = advise([(1.10, 100, 9000), (1.10, 100, 100), (1.10, 100, 0)], 9000);
        assert_eq!(a.policy, Policy::NoDiscard, "{}", a.reason);
    }
}
