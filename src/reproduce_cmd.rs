//! `trimlab reproduce`: runs experiments from `trimlab-experiments` and writes their files.
// The binary is the edge: it reports wall-clock time per experiment.
#![allow(clippy::disallowed_methods)]

use crate::progress::Bars;
use anyhow::{Context, Result};
use std::path::Path;
use std::sync::Arc;

use trimlab_jobs::{expected_claims, reproduce};

/// `--strict` and a claim did not hold, or `--expect` and a verdict differs from the list: the
/// run itself succeeded, so main exits with 1, not 2.
#[derive(Debug)]
pub struct ClaimsFailed(pub String);

impl std::fmt::Display for ClaimsFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ClaimsFailed {}

pub fn run(
    names: &[String],
    out: &Path,
    seed: u64,
    scale: f64,
    strict: bool,
    expect: Option<&Path>,
) -> Result<()> {
    let selected = reproduce::select(names, scale)?;
    // The list is read before the experiments run: a bad file should not cost a whole run.
    let expected = match expect {
        Some(path) => {
            let text =
                std::fs::read_to_string(path).with_context(|| format!("--expect {}", path.display()))?;
            Some(expected_claims::parse(&text, &path.display().to_string()).map_err(anyhow::Error::msg)?)
        }
        None => None,
    };
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut reports = Vec::new();
    // Wall time per experiment goes to stderr only: the report files stay byte-identical.
    let mut walls = Vec::new();
    let all = std::time::Instant::now();
    for experiment in selected {
        eprintln!("trimlab reproduce {}: seed {seed}, scale {scale}", experiment.name);
        let wall = std::time::Instant::now();
        let report = reproduce::run(experiment, seed, scale, Arc::new(Bars))?;
        walls.push((experiment.name, wall.elapsed().as_secs_f64()));
        trimlab_jobs::report::write_experiment(out, &report)?;
        println!("{}", trimlab_jobs::report::render_text(&report));
        println!("{} (seed {seed}): {}", experiment.name, reproduce::verdict_summary(&report.verdicts));
        reports.push(report);
    }
    let index = trimlab_jobs::report::write_index_with_references(out, &reports, &reproduce::references())?;
    println!("wrote {}", index.display());
    eprintln!("trimlab reproduce: wall time per experiment");
    for (name, seconds) in &walls {
        eprintln!("  {name:<22} {seconds:>7.1} s");
    }
    eprintln!("  {:<22} {:>7.1} s", "total", all.elapsed().as_secs_f64());
    if let Some(expected) = &expected {
        let problems = expected_claims::disagreements(&reports, expected);
        if !problems.is_empty() {
            eprintln!("trimlab reproduce: the verdicts differ from --expect:\n  {}", problems.join("\n  "));
            return Err(ClaimsFailed(format!(
                "--expect: {} verdict(s) differ (listed above)",
                problems.len()
            ))
            .into());
        }
        eprintln!("trimlab reproduce: every verdict is the expected one ({} known failures)", expected.len());
        return Ok(());
    }
    let failed = reproduce::failed_claims(&reports);
    if !failed.is_empty() {
        eprintln!("trimlab reproduce: {} claim(s) not reproduced:\n  {}", failed.len(), failed.join("\n  "));
        if strict {
            return Err(ClaimsFailed(format!(
                "--strict: {} claim(s) do not hold (listed above)",
                failed.len()
            ))
            .into());
        }
    }
    Ok(())
}

/// Writes every point of the selected experiments as a config file; an experiment whose points
/// are not configs yet is named in the error rather than skipped.
pub fn emit_configs(names: &[String], dir: &Path, seed: u64, scale: f64) -> Result<()> {
    for emitted in reproduce::emit_configs(names, seed, scale)? {
        let folder = dir.join(emitted.experiment);
        std::fs::create_dir_all(&folder).with_context(|| format!("cannot create {}", folder.display()))?;
        for (file, text) in &emitted.files {
            let path = folder.join(file);
            std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
        }
        println!("wrote {} configs to {}", emitted.files.len(), folder.display());
    }
    Ok(())
}
