//! The rule `advise` applies to a file-level workload: given each host TRIM policy's run of
//! the same workload on the same device and seed, which policy to use and why, in one sentence.
//! It follows the block rule (`trimlab_trace::advice::recommend`, docs/traces.md): a WAF
//! difference under 2 % is not worth trimming for, a host-side saving over 10 % is worth
//! giving up part of the WAF gain for, and among equals the one that sends fewer TRIMs wins.
//!
//! The host-side cost is the program time per file-system call: the simulated time the workload
//! took from mount to its last operation, divided by the calls it made. Every fsync wait,
//! synchronous discard at commit and wait for blocks a policy still holds is inside it, so it
//! is what the user's program feels; per call, it also ranks a workload that runs for a fixed
//! time (Filebench's `run 60`), where a slower policy makes fewer calls in the same time. The
//! fsync and write percentiles (`host.calls`) are shown beside it, not ruled on: a policy can
//! keep a low p99 fsync while the program makes a third fewer calls (Lazy TRIM on varmail).

/// Assumption: WAFs within 2 % of the lowest are the same device-side cost (the block rule's
/// "trimming gains < 2 % WAF": the spread seeds and GC victim ties give).
pub const WAF_SAME: f64 = 0.02;
/// Assumption: program times within 1 % of the fastest are equally fast (a policy's TRIMs
/// cost more than this when they cost anything the user notices).
pub const TIME_SAME: f64 = 0.01;
/// Assumption: a policy faster by more than 10 % wins over one with a lower WAF if it keeps at
/// least half of that one's WAF gain over no discard (the block rule's latency threshold).
pub const TIME_WORTH: f64 = 0.10;

/// What the rule reads of one policy's run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Costs {
    pub waf: f64,
    /// Simulated time from the end of mkfs to the end of the workload's last phase.
    pub program_ns: u64,
    /// The file-system calls the workload made in that time (mkfs's and umount's included).
    pub calls: u64,
    /// TRIM commands the policy itself sent (online, Lazy, SeT workers; not FITRIM or mkfs).
    pub policy_trim_commands: u64,
    /// Every TRIM command the file system sent (policy, FITRIM, mkfs, lazy inode-table init).
    pub trim_commands: u64,
}

/// The recommendation: the index of the chosen policy (`None`: the workload frees nothing, so
/// no policy has anything to do) and the reason.
#[derive(Clone, Debug, PartialEq)]
pub struct FileAdvice {
    pub choice: Option<usize>,
    pub reason: String,
}

fn pct(x: f64) -> String {
    format!("{:.1} %", x * 100.0)
}

/// The host cost: program time per file-system call.
fn per_call(c: &Costs) -> u64 {
    c.program_ns / c.calls.max(1)
}

fn show(ns: u64) -> String {
    format!("{:.3} ms per call", ns as f64 / 1e6)
}

/// The rule, in order (docs/traces.md, "Advise on a file workload"):
/// 1. the online-discard run sent no TRIM of its own: the workload frees nothing, nothing to
///    decide;
/// 2. among the policies whose WAF is within `WAF_SAME` of the lowest, the fastest; among
///    those within `TIME_SAME` of it, the lowest WAF, then the fewest TRIM commands;
/// 3. the fastest policy that is faster than that by more than `TIME_WORTH` and keeps at least
///    half of its WAF gain over no discard wins instead.
///
/// `labels[i]` names run `i`; `online` and `none` are the online-discard and no-discard runs.
pub fn recommend(labels: &[String], costs: &[Costs], online: usize, none: usize) -> FileAdvice {
    if costs[online].policy_trim_commands == 0 {
        return FileAdvice {
            choice: None,
            reason: format!("The workload frees no blocks while it runs ({} sent no TRIM), so every policy behaves the same here; the choice does not matter for this workload.", labels[online]),
        };
    }
    let best_waf = costs.iter().map(|c| c.waf).fold(f64::INFINITY, f64::min);
    let same_waf: Vec<usize> =
        (0..costs.len()).filter(|&i| costs[i].waf <= best_waf * (1.0 + WAF_SAME)).collect();
    let fastest = same_waf.iter().map(|&i| per_call(&costs[i])).min().unwrap_or(0);
    let pick = same_waf
        .iter()
        .copied()
        .filter(|&i| per_call(&costs[i]) as f64 <= fastest as f64 * (1.0 + TIME_SAME))
        .min_by(|&a, &b| {
            // Inside the WAF band the device cost is the same: the fewest TRIMs, then the WAF.
            let key = |i: usize| (costs[i].trim_commands as f64, costs[i].waf, i);
            key(a).partial_cmp(&key(b)).unwrap_or(std::cmp::Ordering::Equal)
        })
        .unwrap_or(none);
    let gain = |i: usize| costs[none].waf / costs[i].waf - 1.0;
    let saving = |i: usize| 1.0 - per_call(&costs[i]) as f64 / per_call(&costs[pick]).max(1) as f64;
    let quick = (0..costs.len()).min_by_key(|&i| (per_call(&costs[i]), i)).unwrap_or(pick);
    let worth = (0..costs.len())
        .filter(|&i| saving(i) > TIME_WORTH && gain(i) >= gain(pick) * 0.5)
        .min_by_key(|&i| (per_call(&costs[i]), i));
    if let Some(faster) = worth {
        return FileAdvice {
            choice: Some(faster),
            reason: format!(
                "{} takes {} less program time per call than {} ({} vs {}) and keeps {} of its {} WAF gain over no discard, so its host-side saving wins.",
                labels[faster],
                pct(saving(faster)),
                labels[pick],
                show(per_call(&costs[faster])),
                show(per_call(&costs[pick])),
                pct(gain(faster)),
                pct(gain(pick))
            ),
        };
    }
    FileAdvice { choice: Some(pick), reason: reason_for(labels, costs, pick, none, quick, same_waf.len()) }
}

/// Why rule 2 chose `pick`: its WAF against the best and no discard, its program time, and
/// what a faster policy outside the WAF band would have cost.
fn reason_for(
    labels: &[String],
    costs: &[Costs],
    pick: usize,
    none: usize,
    quick: usize,
    band: usize,
) -> String {
    let best_waf = costs.iter().map(|c| c.waf).fold(f64::INFINITY, f64::min);
    let max_gain = costs[none].waf / best_waf - 1.0;
    let c = &costs[pick];
    let in_band = |i: &usize| costs[*i].waf <= best_waf * (1.0 + WAF_SAME);
    let fastest = (0..costs.len()).filter(in_band).map(|i| per_call(&costs[i])).min().unwrap_or(per_call(c));
    let mut reason = if costs[none].waf <= best_waf * (1.0 + WAF_SAME) {
        format!(
            "Trimming lowers WAF by at most {} on this workload, so the WAF is the same for every policy and the host side decides: {} takes {}",
            pct(max_gain),
            labels[pick],
            show(per_call(c))
        )
    } else {
        format!(
            "{} keeps WAF at {:.3} ({} below no discard's {:.3}; the best is {:.3}) and takes {}, {} within {} of the best WAF",
            labels[pick],
            c.waf,
            // "x % below" is of the figure it is below.
            pct(1.0 - c.waf / costs[none].waf),
            costs[none].waf,
            best_waf,
            show(per_call(c)),
            match band {
                1 => "the only policy".to_string(),
                _ if per_call(c) == fastest => format!("the least of the {band} policies"),
                _ => format!("within {} of the least ({}) of the {band} policies", pct(TIME_SAME), show(fastest)),
            },
            pct(WAF_SAME)
        )
    };
    // A faster policy inside the WAF band lost only on ties; one outside it is worth naming.
    if per_call(&costs[quick]) < per_call(c) && costs[quick].waf > best_waf * (1.0 + WAF_SAME) {
        reason += &format!(
            "; {} takes {} less but its WAF is {} higher",
            labels[quick],
            pct(1.0 - per_call(&costs[quick]) as f64 / per_call(c).max(1) as f64),
            pct(costs[quick].waf / c.waf - 1.0)
        );
    }
    reason += &format!(", with {} TRIM commands.", c.trim_commands);
    reason
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs of [no discard, online discard, fstrim, lazy] with these WAFs, program times (ms)
    /// and TRIM commands; online's policy TRIMs are its TRIM commands.
    fn advise(rows: [(f64, u64, u64); 4]) -> FileAdvice {
        let labels: Vec<String> =
            ["no discard", "online discard", "fstrim", "lazy"].map(String::from).to_vec();
        let costs: Vec<Costs> = rows
            .iter()
            .enumerate()
            .map(|(i, &(waf, ms, trims))| Costs {
                waf,
                program_ns: ms * 1_000_000,
                calls: 1000,
                policy_trim_commands: if i == 1 || i == 3 { trims } else { 0 },
                trim_commands: trims,
            })
            .collect();
        recommend(&labels, &costs, 1, 0)
    }

    #[test]
    fn the_rule_weighs_waf_against_program_time() {
        // Nothing freed: nothing to decide.
        let a = advise([(1.5, 100, 0), (1.5, 100, 0), (1.5, 100, 3), (1.5, 100, 0)]);
        assert_eq!(a.choice, None, "{}", a.reason);
        // Trimming halves GC and makes the program faster: the fastest of the low-WAF ones,
        // and among equally fast (lazy within 1 %) the fewest TRIMs, then the lowest WAF.
        let a = advise([(2.0, 3000, 0), (1.30, 2000, 900), (1.32, 2100, 40), (1.31, 2010, 900)]);
        assert_eq!(a.choice, Some(1), "{}", a.reason);
        assert!(
            a.reason.contains("takes 2.000 ms per call, the least of the 3 policies within 2.0 %"),
            "{}",
            a.reason
        );
        let a = advise([(2.0, 3000, 0), (1.31, 2000, 900), (1.32, 2100, 40), (1.30, 2010, 900)]);
        assert_eq!(a.choice, Some(3), "{}", a.reason);
        assert!(
            a.reason.contains("within 1.0 % of the least (2.000 ms per call) of the 3 policies"),
            "{}",
            a.reason
        );
        let a = advise([(2.0, 3000, 0), (1.31, 2000, 900), (1.32, 2010, 40), (1.30, 2010, 900)]);
        assert_eq!(a.choice, Some(2), "equally fast, within the band: the fewest TRIMs: {}", a.reason);
        // Same WAF everywhere: the host side decides; among equals the fewest TRIMs.
        let a = advise([(1.10, 1000, 0), (1.10, 1300, 900), (1.10, 1000, 40), (1.10, 1005, 900)]);
        assert_eq!(a.choice, Some(0), "{}", a.reason);
        assert!(a.reason.starts_with("Trimming lowers WAF by at most 0.0 %"), "{}", a.reason);
        // Online discard has the best WAF but stalls the program by 50 %; fstrim keeps most of
        // the gain: fstrim.
        let a = advise([(2.0, 1000, 0), (1.30, 1500, 900), (1.40, 1000, 40), (1.45, 1400, 900)]);
        assert_eq!(a.choice, Some(2), "{}", a.reason);
        assert!(
            a.reason.contains("takes 33.3 % less program time per call than online discard"),
            "{}",
            a.reason
        );
        // ... but when fstrim keeps less than half of the gain, online discard stays.
        let a = advise([(2.0, 1000, 0), (1.30, 1500, 900), (1.85, 1000, 40), (1.9, 1400, 900)]);
        assert_eq!(a.choice, Some(1), "{}", a.reason);
        assert!(
            a.reason.contains("no discard takes 33.3 % less but its WAF is 53.8 % higher"),
            "{}",
            a.reason
        );
    }
}
