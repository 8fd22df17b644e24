//! `[workload] until = "steady"` (with `repeat` and `[workload.steady]`) in a run without
//! `[[phase]]`: the loop's round keys given on the plain workload, made into the same phases
//! a config would write: on a file system the one `workload` phase with the keys; on a bare
//! SSD the precondition as a `fill` (or `age`, for `precondition = "steady"`) phase, a
//! `measure` phase, and the workload as a `workload` phase with the keys (its rounds
//! reported as `phases` entries, where a run without them reports the workload at the top
//! level). A config without the keys resolves as before.

use crate::phase::{Phase, PhaseKind, PhaseSection};
use crate::steady_state::SteadyKeys;
use trimlab_device::ConfigError;
use trimlab_workload::{Precondition, WorkloadConfig, WorkloadKind};

/// The round keys `[workload]` may carry in a run without `[[phase]]`.
pub const KEYS: [&str; 3] = ["until", "repeat", "steady"];

/// The round keys as given.
#[derive(Default)]
pub struct Rounds {
    until: Option<String>,
    repeat: Option<u32>,
    steady: Option<SteadyKeys>,
}

/// Takes the round keys out of `w` (`None`: it has none).
pub fn take(w: &mut WorkloadConfig) -> Result<Option<Rounds>, ConfigError> {
    let (until, repeat, steady) = (w.keys.take("until"), w.keys.take("repeat"), w.keys.take("steady"));
    if until.is_none() && repeat.is_none() && steady.is_none() {
        return Ok(None);
    }
    let mut r = Rounds::default();
    if let Some(v) = until {
        r.until = Some(
            v.as_str()
                .map(str::to_string)
                .ok_or_else(|| ConfigError::new("workload.until", &v, "must be text: \"steady\""))?,
        );
    }
    if let Some(v) = repeat {
        r.repeat =
            Some(v.as_integer().and_then(|n| u32::try_from(n).ok()).ok_or_else(|| {
                ConfigError::new("workload.repeat", &v, "must be a whole number of rounds")
            })?);
    }
    if let Some(v) = steady {
        r.steady = Some(v.clone().try_into().map_err(|e: toml::de::Error| {
            ConfigError::new("workload.steady", &v, e.message().to_string())
        })?);
    }
    Ok(Some(r))
}

/// The phases of a run without `[[phase]]`: `phases::implicit`'s, or with round keys the
/// written form they stand for.
pub fn phases(w: &WorkloadConfig, on_fs: bool, rounds: Option<Rounds>) -> Result<Vec<Phase>, ConfigError> {
    let (section, workload) = crate::phases::implicit(w, on_fs);
    let Some(r) = rounds else { return Ok(vec![Phase { section, workload, written: false }]) };
    if w.kind == WorkloadKind::Script || w.kind.is_cluster_host() {
        return Err(ConfigError::new(
            "workload.until",
            format!("kind = {:?}", w.kind.name()),
            "rounds need a workload measured as one entry per round; give a script's or 004's host's rounds as [[phase]]",
        ));
    }
    let looped = PhaseSection {
        until: r.until,
        repeat: r.repeat,
        steady: r.steady,
        ..PhaseSection::new(PhaseKind::Workload)
    };
    let mut out = Vec::new();
    if !on_fs {
        let pre = match w.precondition {
            Precondition::Fill => Some(PhaseKind::Fill),
            Precondition::Steady => Some(PhaseKind::Age),
            Precondition::None => None,
        };
        out.extend(pre.map(|kind| Phase {
            section: PhaseSection::new(kind),
            workload: None,
            written: false,
        }));
        out.push(Phase { section: PhaseSection::new(PhaseKind::Measure), workload: None, written: false });
    }
    let index = out.len();
    let until = format!("{:?}", looped.until.as_deref().unwrap_or(""));
    looped.validate(index, on_fs).map_err(|e| ConfigError::new("workload.until", until, e.to_string()))?;
    out.push(Phase { section: looped, workload: Some(w.clone()), written: false });
    Ok(out)
}
