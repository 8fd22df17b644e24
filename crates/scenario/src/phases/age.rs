//! `age`: on a bare SSD, fill then `writes` of uniform random writes; on a file system, fill
//! to 100 % then delete random files down to `utilization` (default 0.9, 001's aging), then,
//! with `churn`, files created up to 5 points above the utilization and random ones deleted
//! back to it, over and over, until `churn` capacities more were written: the steady turnover
//! Geriatrix (Kadekodi et al., ATC 2018) ages a file system with, and what SNIA PTS's
//! preconditioning (2x the capacity) asks of a drive before it is measured. With
//! `profile = "impressions"` the file system is aged as real ones look after years
//! (aging_profile.rs) and its fragmentation is measured into metrics.json's `aging`.

use super::{aging_profile, shared};
use crate::phase::{Outcome, PhaseKind, PhaseRun, PhaseSpec, Report};
use crate::stack::Stack;
use trimlab_workload::file::{age, set_utilization, FileShape};
use trimlab_workload::Precondition;

impl PhaseKind {
    #[allow(non_upper_case_globals)]
    pub const Age: PhaseKind = PhaseKind("age");
}

pub const SPEC: PhaseSpec = PhaseSpec {
    kind: PhaseKind::Age,
    help: "block: fill, then writes of uniform random writes; file system: fill to 100 %, then delete random files down to utilization (001's aging)",
    block_keys: Some(&["writes"]),
    fs_keys: Some(AGE_FS_KEYS),
    required: None,
    implicit: false,
    report: Report::Entry,
    run,
};

/// The file-system keys: `fill`'s and `churn`.
const AGE_FS_KEYS: &[&str] = &[
    "utilization",
    "file_bytes_min",
    "file_bytes_max",
    "append_bytes",
    "hole_bytes",
    "prefix",
    "stream",
    "churn",
    "profile",
    "free_layout_score",
];

/// How far above the utilization a churn cycle fills before it deletes back (assumption: small
/// enough to keep the file system near its target, large enough that a cycle is many files).
const CHURN_SWING: f64 = 0.05;

fn run(stack: &mut Stack, p: &mut PhaseRun) -> Result<Outcome, String> {
    match stack {
        Stack::Block(b) => shared::precondition(b, p, Precondition::Steady)?,
        Stack::File(f) if p.section.profile.is_some() => return profiled(f, p),
        Stack::File(f) => {
            let (s, target) = (shared::shape(p.section, p.index), p.section.utilization.unwrap_or(0.9));
            let churn_bytes = (p.section.churn.unwrap_or(0.0) * f.capacity as f64) as u64;
            let (fs, state) = f.parts();
            let written = |fs: &crate::stack::Fs| fs.device().traffic.bytes_of(trimlab_device::CommandKind::Write);
            state
                .with_stream(&shared::stream(p.section), |rng, live| {
                    age(fs, rng, live, &s, target)?;
                    let until = written(fs).saturating_add(churn_bytes);
                    let high = (target + CHURN_SWING).min(0.99);
                    let mut cycle = 0u64;
                    while written(fs) < until {
                        let before = written(fs);
                        // Each cycle's files are named apart from the fill's and the others'.
                        cycle += 1;
                        let s = FileShape { prefix: format!("{}c{cycle}_", s.prefix), ..s.clone() };
                        set_utilization(fs, rng, live, &s, high)?;
                        set_utilization(fs, rng, live, &s, target)?;
                        fs.sync();
                        if written(fs) == before {
                            break;
                        }
                    }
                    Ok::<(), trimlab_fs::FsError>(())
                })
                .map_err(|e| e.to_string())?;
        }
    }
    Ok(Outcome::default())
}

/// The profile's aging (aging_profile.rs), its report as metrics.json's `aging`.
fn profiled(f: &mut crate::stack::FileStack, p: &mut PhaseRun) -> Result<Outcome, String> {
    let section = p.section;
    let utilization = section.utilization.unwrap_or(0.8);
    let target = aging_profile::Target {
        utilization,
        high: (utilization + CHURN_SWING).min(0.99),
        churn: section.churn,
        free_layout_score: section.free_layout_score,
    };
    let shape = shared::shape(section, p.index);
    let (fs, state) = f.parts();
    let progress = &mut *p.progress;
    let report = state
        .with_stream(&shared::stream(section), |rng, live| {
            aging_profile::age(fs, rng, live, &shape, &target, section.file_bytes_max.map(|b| b.0), progress)
        })
        .map_err(|e| e.to_string())?;
    let mut outcome = Outcome::default();
    outcome.metrics.insert("aging".into(), report);
    Ok(outcome)
}
