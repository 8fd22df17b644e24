//! The papers' experiments as a library: the registry `trimlab reproduce` and the Python module
//! read, what every experiment receives, and running a set of them into reports.

pub mod bands;
// Public only for their tests in tests/experiments/ (the lib has no test harness); no API.
#[doc(hidden)]
pub mod delayed_trim;
mod discard_vs_fstrim;
mod ftl_trim;
#[doc(hidden)]
pub mod host;
mod lazy_trim;
pub mod point;
#[doc(hidden)]
pub mod prose;
mod references;
#[doc(hidden)]
pub mod selective_trim;
mod table;
mod waf;

use anyhow::{bail, Context, Result};
use std::sync::Arc;
use trimlab_report::ExperimentReport;

/// Where an experiment reports how far its points have got; the binary draws a bar, a library
/// caller may ignore it. Called from several worker threads.
pub trait Progress: Send + Sync {
    /// A phase of `label` starts; `set(permille)` follows, then `finish()`.
    fn start(&self, label: &str) -> Box<dyn PhaseProgress + '_>;
}

pub trait PhaseProgress: Sync {
    fn set(&self, permille: u64);
    fn finish(&self);
}

/// Progress that goes nowhere.
pub struct Silent;

impl Progress for Silent {
    fn start(&self, _label: &str) -> Box<dyn PhaseProgress + '_> {
        Box::new(Silent)
    }
}

impl PhaseProgress for Silent {
    fn set(&self, _permille: u64) {}
    fn finish(&self) {}
}

/// What every experiment receives.
#[derive(Clone)]
pub struct Options {
    pub seed: u64,
    pub scale: f64,
    pub progress: Arc<dyn Progress>,
    /// Where every point run is logged with its metrics (`None`: nowhere; tests set it).
    pub point_log: Option<Arc<point::PointLog>>,
}

impl Progress for Options {
    fn start(&self, label: &str) -> Box<dyn PhaseProgress + '_> {
        self.progress.start(label)
    }
}

impl Options {
    pub fn new(seed: u64, scale: f64) -> Options {
        Options { seed, scale, progress: Arc::new(Silent), point_log: None }
    }
}

/// Every point of an experiment as a named configuration.
pub type PointConfigs = fn(&Options) -> Vec<(String, trimlab_scenario::RunConfig)>;

/// One experiment of the registry.
pub struct Experiment {
    pub name: &'static str,
    pub about: &'static str,
    /// Runs every point of `configs` through [`point::run`] and reports on them.
    pub run: fn(&Options) -> Result<ExperimentReport>,
    /// Every point the experiment runs, as the configuration a user could write
    /// (`trimlab reproduce NAME --emit-configs DIR`; tests/experiments/point_configs.rs checks that these
    /// are the points `run` runs and that each gives the same metrics read back from its TOML).
    pub configs: PointConfigs,
}

/// Every experiment `trimlab reproduce` knows, in the order it runs them.
pub const EXPERIMENTS: &[Experiment] = &[
    Experiment {
        name: "waf",
        about: "steady-state WAF of greedy GC vs the analytic models, with and without TRIM",
        run: waf::run,
        configs: waf::configs,
    },
    Experiment {
        name: "delayed-trim",
        about: "Delayed TRIM (002 Figs. 2-4): WAF, GC time, foreground TRIM overhead by step",
        run: delayed_trim::run,
        configs: delayed_trim::configs,
    },
    Experiment {
        name: "ftl-trim",
        about: "004: hybrid FAST FTL with a trimmed-range list vs page mapping, with and without TRIM",
        run: ftl_trim::run,
        configs: ftl_trim::configs,
    },
    Experiment {
        name: "lazy-trim",
        about: "000: fsync latency and TRIM issue time, discard vs Lazy TRIM vs Lazy + Reuse; Table II",
        run: lazy_trim::run,
        configs: lazy_trim::configs,
    },
    Experiment {
        name: "selective-trim",
        about: "001: Postmark time vs utilization with TRIM on/off; SeT watermarks on 60/40/70/60",
        run: selective_trim::run,
        configs: selective_trim::configs,
    },
    Experiment {
        name: "discard-vs-fstrim",
        about: "003: mkfs/rm/fstrim on a thin volume with and without discard; WAF/wear of nodiscard",
        run: discard_vs_fstrim::run,
        configs: discard_vs_fstrim::configs,
    },
];

impl Experiment {
    /// The TOML of every point the experiment runs, as (`<point>.toml`, text), for
    /// `--emit-configs`.
    pub fn config_files(&self, o: &Options) -> Result<Vec<(String, String)>> {
        host::emit((self.configs)(o))
    }
}

/// [`Experiment::config_files`] of the experiment called `name`; `None` for an unknown one.
pub fn point_configs(name: &str, o: &Options) -> Option<Result<Vec<(String, String)>>> {
    Some(EXPERIMENTS.iter().find(|e| e.name == name)?.config_files(o))
}

/// The experiments named in `names` (all when empty), or an error naming the unknown one and
/// listing the known ones.
pub fn select(names: &[String]) -> Result<Vec<&'static Experiment>> {
    if names.is_empty() {
        return Ok(EXPERIMENTS.iter().collect());
    }
    names
        .iter()
        .map(|n| {
            EXPERIMENTS.iter().find(|e| e.name == n).with_context(|| {
                let known: Vec<_> = EXPERIMENTS.iter().map(|e| format!("{} ({})", e.name, e.about)).collect();
                let hint = did_you_mean(n).map(|m| format!("did you mean \"{m}\"? ")).unwrap_or_default();
                format!("unknown experiment \"{n}\"; {hint}known: {}", known.join(", "))
            })
        })
        .collect()
}

/// The experiment name closest to a mistyped one (`delayed_trim`, `lazytrim`, `WAF`), if any is close.
pub fn did_you_mean(name: &str) -> Option<&'static str> {
    let typed = name.to_ascii_lowercase().replace('_', "-");
    EXPERIMENTS
        .iter()
        .map(|e| (strsim::normalized_damerau_levenshtein(&typed, e.name), e.name))
        .filter(|(score, _)| *score >= 0.6)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, n)| n)
}

/// The five source documents, cited in full at the end of `index.html`.
pub fn references() -> Vec<trimlab_report::Reference> {
    references::references()
}

/// Checks `--scale`: experiments size their devices and workloads by it.
pub fn check_scale(scale: f64) -> Result<()> {
    if !(scale > 0.0 && scale <= 16.0) {
        bail!("--scale {scale} (must be > 0 and <= 16)");
    }
    Ok(())
}

/// Runs `f` over `items` on every core, results in input order: each item is an independent,
/// deterministic simulation, so the order of execution cannot change any result.
// Points are independent simulations collected in input order: threads change the wall time only.
#[allow(clippy::disallowed_methods)]
pub fn parallel_map<T: Sync, R: Send>(
    progress: &dyn Progress,
    items: &[T],
    label: &str,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(items.len().max(1));
    let bar = progress.start(label);
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

/// [`parallel_map`] of a fallible `f`: every item runs; the first error in input order is returned.
pub fn try_parallel_map<T: Sync, R: Send>(
    progress: &dyn Progress,
    items: &[T],
    label: &str,
    f: impl Fn(&T) -> Result<R> + Sync,
) -> Result<Vec<R>> {
    parallel_map(progress, items, label, f).into_iter().collect()
}
