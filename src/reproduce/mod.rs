//! `trimlab reproduce`: the registry of experiments and the files they write.

mod bands;
mod delayed_trim;
mod discard_vs_fstrim;
mod ftl_trim;
mod host;
mod lazy_trim;
mod selective_trim;
mod waf;

use anyhow::{bail, Context, Result};
use std::path::Path;
use trimlab_report::ExperimentReport;

/// What every experiment receives.
pub struct Options {
    pub seed: u64,
    pub scale: f64,
}

struct Experiment {
    name: &'static str,
    about: &'static str,
    run: fn(&Options) -> Result<ExperimentReport>,
}

const EXPERIMENTS: &[Experiment] = &[
    Experiment {
        name: "waf",
        about: "steady-state WAF of greedy GC vs the analytic models, with and without TRIM",
        run: waf::run,
    },
    Experiment {
        name: "delayed-trim",
        about: "Delayed TRIM (002 Figs. 2-4): WAF, GC time, foreground TRIM overhead by step",
        run: delayed_trim::run,
    },
    Experiment {
        name: "ftl-trim",
        about: "004: hybrid FAST FTL with a trimmed-range list vs page mapping, with and without TRIM",
        run: ftl_trim::run,
    },
    Experiment {
        name: "lazy-trim",
        about: "000: fsync latency and TRIM issue time, discard vs Lazy TRIM vs Lazy + Reuse; Table II",
        run: lazy_trim::run,
    },
    Experiment {
        name: "selective-trim",
        about: "001: Postmark time vs utilization with TRIM on/off; SeT watermarks on 60/40/70/60",
        run: selective_trim::run,
    },
    Experiment {
        name: "discard-vs-fstrim",
        about: "003: mkfs/rm/fstrim on a thin volume with and without discard; WAF/wear of nodiscard",
        run: discard_vs_fstrim::run,
    },
];

/// `--strict` and a claim did not hold: the run itself succeeded, so main exits with 1, not 2.
#[derive(Debug)]
pub struct ClaimsFailed(pub usize);

impl std::fmt::Display for ClaimsFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "--strict: {} claim(s) do not hold (listed above)", self.0)
    }
}

impl std::error::Error for ClaimsFailed {}

pub fn run(names: &[String], out: &Path, seed: u64, scale: f64, strict: bool) -> Result<()> {
    if !(scale > 0.0 && scale <= 16.0) {
        bail!("--scale {scale} (must be > 0 and <= 16)");
    }
    let selected: Vec<&Experiment> = if names.is_empty() {
        EXPERIMENTS.iter().collect()
    } else {
        names
            .iter()
            .map(|n| {
                EXPERIMENTS.iter().find(|e| e.name == n).with_context(|| {
                    let known: Vec<_> =
                        EXPERIMENTS.iter().map(|e| format!("{} ({})", e.name, e.about)).collect();
                    format!("unknown experiment \"{n}\"; known: {}", known.join(", "))
                })
            })
            .collect::<Result<_>>()?
    };
    let options = Options { seed, scale };
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut reports = Vec::new();
    for experiment in selected {
        eprintln!("trimlab reproduce {}: seed {seed}, scale {scale}", experiment.name);
        let report = (experiment.run)(&options)?;
        trimlab_report::write_experiment(out, &report)?;
        println!("{}", trimlab_report::render_text(&report));
        println!("{} (seed {seed}): {}", experiment.name, bands::summary(&report.verdicts));
        reports.push(report);
    }
    let index = trimlab_report::write_index(out, &reports)?;
    println!("wrote {}", index.display());
    let failed: Vec<_> = reports
        .iter()
        .flat_map(|r| r.verdicts.iter().filter(|v| !v.holds).map(move |v| format!("{}: {}", r.name, v.claim)))
        .collect();
    if !failed.is_empty() {
        eprintln!("trimlab reproduce: {} claim(s) not reproduced:\n  {}", failed.len(), failed.join("\n  "));
        if strict {
            return Err(ClaimsFailed(failed.len()).into());
        }
    }
    Ok(())
}

/// Runs `f` over `items` on every core, results in input order: each item is an independent,
/// deterministic simulation, so the order of execution cannot change any result.
pub fn parallel_map<T: Sync, R: Send>(items: &[T], label: &str, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(items.len().max(1));
    let bar = crate::progress::Bar::new(label);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= items.len() {
                    break;
                }
                let r = f(&items[i]);
                results.lock().expect("no thread panics while holding the lock")[i] = Some(r);
                let finished = done.fetch_add(1, Ordering::Relaxed) + 1;
                bar.set(1000 * finished as u64 / items.len() as u64);
            });
        }
    });
    bar.finish();
    results.into_inner().expect("workers finished").into_iter().map(|r| r.expect("every item ran")).collect()
}
