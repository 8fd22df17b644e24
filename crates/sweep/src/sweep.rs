//! Running a sweep: check the grid against the runner, pick this shard's runs, skip what the
//! journal already has, run the rest on local workers, and build the table.

use crate::grid::Grid;
use crate::journal::Journal;
use crate::plan::{Plan, Point};
use crate::pool::run_parallel;
use crate::row::{Row, Status};
use crate::runner::Runner;
use crate::shard::Shard;
use crate::table::Table;
use crate::SweepError;
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Clone, Copy, Debug)]
pub struct SweepOptions {
    /// Worker threads (0 is taken as 1).
    pub jobs: usize,
    pub shard: Shard,
}

/// What a sweep into a directory did.
pub struct DirOutcome {
    /// This shard's whole table, as written to results.csv.
    pub table: Table,
    /// Runs done now, and runs found done in the journal.
    pub ran: usize,
    pub skipped: usize,
    /// Failed rows in the table.
    pub failed: usize,
}

/// Stops before any run when no point of the grid is a valid config (an unknown key, a base
/// that no grid value repairs, a list whose values are all wrong): such a sweep could only give
/// failed rows. Points are checked (parsed and resolved, not run) in order until one passes, so
/// this costs one check in the usual case. A grid with some bad points runs: those rows fail.
pub fn check_grid(grid: &Grid, plan: &Plan, runner: &dyn Runner) -> Result<(), SweepError> {
    let mut first_error = None;
    for point in plan.points.iter().filter(|p| p.seed == grid.seeds[0]) {
        match runner.check(&plan.base_text, &grid.origin, &point.set) {
            Ok(()) => return Ok(()),
            Err(e) => {
                first_error.get_or_insert((point, e));
            }
        }
    }
    let Some((point, error)) = first_error else { return Ok(()) };
    // Name the grid key the message is about, when it names one (serde quotes field names).
    let culprit = grid.axes.iter().find(|axis| {
        let field = axis.key.rsplit('.').next().expect("split yields at least one part");
        error.contains(&format!("`{field}`"))
    });
    let at = match culprit {
        Some(axis) => format!(
            "{}: grid key `{}`",
            axis.line.map_or(grid.origin.clone(), |line| format!("{}:{line}", grid.origin)),
            axis.key
        ),
        None => grid.origin.clone(),
    };
    let set = if point.set.is_empty() { "the base alone".to_string() } else { point.set.join(" ") };
    Err(SweepError::Grid(format!(
        "{at}: no point of the grid is a valid config, so nothing was run (is every key spelled right? see docs/config.md); run {} ({set}): {error}",
        point.run
    )))
}

/// Runs this shard of the grid in memory (the Python API's local backend) and returns its table.
pub fn run_in_memory(
    grid: &Grid,
    runner: &dyn Runner,
    options: SweepOptions,
    mut progress: impl FnMut(&Row, usize, usize),
) -> Result<Table, SweepError> {
    let plan = Plan::new(grid);
    check_grid(grid, &plan, runner)?;
    let points: Vec<&Point> = plan.points.iter().filter(|p| options.shard.contains(p.run)).collect();
    let mut rows = Vec::with_capacity(points.len());
    run_parallel(runner, &plan.base_text, &plan.origin, &points, options.jobs, |row| {
        rows.push(row);
        progress(rows.last().expect("just pushed"), rows.len(), points.len());
        Ok(())
    })?;
    Ok(Table::from_rows(&plan.keys, &rows))
}

/// Runs this shard of the grid into `out`: journal in `out/rows.jsonl`, table in
/// `out/results.csv` and `out/results.json`. Runs whose (config_hash, seed) the journal already
/// has are not run again.
pub fn run_in_dir(
    grid: &Grid,
    runner: &dyn Runner,
    options: SweepOptions,
    out: &Path,
    mut progress: impl FnMut(&Row, usize, usize),
) -> Result<DirOutcome, SweepError> {
    let plan = Plan::new(grid);
    check_grid(grid, &plan, runner)?;
    std::fs::create_dir_all(out)
        .map_err(|error| SweepError::Io { path: out.display().to_string(), error })?;
    let (mut journal, journaled) = Journal::open(&out.join("rows.jsonl"))?;
    let mut done: BTreeMap<(String, u64), Row> =
        journaled.into_iter().map(|row| ((row.config_hash.clone(), row.seed), row)).collect();

    let mut rows = Vec::new();
    let mut pending = Vec::new();
    for point in plan.points.iter().filter(|p| options.shard.contains(p.run)) {
        match done.remove(&(point.config_hash.clone(), point.seed)) {
            // The journal may come from an older grid whose runs were numbered differently.
            Some(row) => rows.push(Row { run: point.run, values: point.values.clone(), ..row }),
            None => pending.push(point),
        }
    }
    let skipped = rows.len();
    let total = pending.len();
    let mut ran = 0;
    run_parallel(runner, &plan.base_text, &plan.origin, &pending, options.jobs, |row| {
        journal.append(&row)?;
        ran += 1;
        progress(&row, ran, total);
        rows.push(row);
        Ok(())
    })?;

    let table = Table::from_rows(&plan.keys, &rows);
    write_atomically(&out.join("results.csv"), &table.to_csv())?;
    write_atomically(&out.join("results.json"), &table.to_json())?;
    let failed = rows.iter().filter(|r| r.status == Status::Failed).count();
    Ok(DirOutcome { table, ran, skipped, failed })
}

/// Writes beside the target and renames, so a reader never sees half a table.
fn write_atomically(path: &Path, text: &str) -> Result<(), SweepError> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|error| SweepError::Io { path: path.display().to_string(), error })
}
