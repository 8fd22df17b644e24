//! `trimlab sweep GRID.toml --out DIR [--jobs N] [--shard K/N]`: a grid of runs on local workers
//! into one results.csv (docs/sweeps.md).

use crate::progress::Bar;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use trimlab_jobs::report::PageKind;
use trimlab_jobs::sweep::{run_in_dir, Grid, ScenarioRunner, Shard, Status, SweepOptions};

#[derive(Args)]
pub struct SweepArgs {
    /// The grid: a base config (`base = "config.toml"` or an inline [base]), `seeds = [...]`
    /// and a [grid] table of dotted config keys with lists of values.
    grid: PathBuf,
    /// Output directory: results.csv, results.json and the journal rows.jsonl (resumed from).
    #[arg(long, default_value = "out/sweep")]
    out: PathBuf,
    /// Worker threads (default: the machine's cores).
    #[arg(long)]
    jobs: Option<usize>,
    /// Run only the K-th of N deterministic slices (run r is in slice r mod N + 1).
    #[arg(long, value_name = "K/N", default_value = "1/1")]
    shard: Shard,
    /// Also write DIR/index.html: per swept key, a table and a plot of the measures' means
    /// (bars over the seeds), and an interaction plot and a heatmap of two keys.
    #[arg(long)]
    html: bool,
    /// The two keys of the page's interaction plot (the measure against A, one line per value
    /// of B) and heatmap; default: the grid's first two.
    #[arg(long, value_name = "A,B", value_parser = parse_pair)]
    interaction: Option<(String, String)>,
}

fn parse_pair(text: &str) -> Result<(String, String), String> {
    match text.split_once(',') {
        Some((a, b)) if !a.trim().is_empty() && !b.trim().is_empty() && !b.contains(',') => {
            Ok((a.trim().to_string(), b.trim().to_string()))
        }
        _ => Err(format!("{text:?}: give two swept keys as A,B (e.g. workload.trim_fraction,trim.engine)")),
    }
}

/// Points of the grid the terminal lists after a sweep; the page and results.csv have all.
const TERMINAL_POINTS_MAX: usize = 20;

pub fn run(args: &SweepArgs) -> Result<()> {
    let grid = Grid::load(&args.grid)?;
    let keys: Vec<String> = grid.axes.iter().map(|a| a.key.clone()).collect();
    // Checked before any run: a misspelt key should not cost the whole sweep.
    let pair = trimlab_jobs::sweep_report::interaction_pair(
        &keys,
        args.interaction.as_ref().map(|(a, b)| (a.as_str(), b.as_str())),
    )
    .map_err(anyhow::Error::msg)?;
    let jobs = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let in_shard = (0..grid.run_count()).filter(|&r| args.shard.contains(r)).count();
    eprintln!(
        "trimlab sweep: {} runs ({} axes x {} seeds), {in_shard} in shard {}, {jobs} workers, {}",
        grid.run_count(),
        grid.axes.len(),
        grid.seeds.len(),
        args.shard,
        args.grid.display()
    );
    let bar = Bar::new("sweep");
    let outcome = run_in_dir(
        &grid,
        &ScenarioRunner,
        SweepOptions { jobs, shard: args.shard },
        &args.out,
        |row, done, total| {
            if row.status == Status::Failed {
                eprintln!("run {} failed: {}", row.run, row.error.as_deref().unwrap_or(""));
            }
            bar.set(done as u64 * 1000 / total.max(1) as u64);
        },
    )?;
    bar.finish();
    println!(
        "{} rows ({} run now, {} from the journal), {} failed; wrote {}",
        outcome.table.data.len(),
        outcome.ran,
        outcome.skipped,
        outcome.failed,
        args.out.join("results.csv").display()
    );
    print!("{}", trimlab_jobs::sweep_report::terminal_table(&outcome.table, &keys, TERMINAL_POINTS_MAX));
    if args.html {
        let title = format!("trimlab sweep: {}", args.grid.display());
        let (report, warning) = trimlab_jobs::sweep_report::sweep_report(&title, &outcome.table, &keys, pair);
        let warnings: Vec<String> = warning.into_iter().collect();
        let index = trimlab_jobs::run_report::write_job_page(&args.out, PageKind::Sweep, &report, &warnings)?;
        println!("wrote {}", index.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_grid_runs_into_a_table_and_shards_cover_it() {
        let dir = std::env::temp_dir().join(format!("trimlab-sweep-cmd-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // The example's base, shrunk so that the test suite (with the device's verify checks on)
        // stays fast: single-value axes override base keys.
        let base = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/sweeps/base-64mib.toml");
        let grid = dir.join("grid.toml");
        let text = format!(
            "base = {:?}\nseeds = [1, 2]\n[grid]\n\"device.spare_factor\" = [0.15, 0.3]\n\"trim.engine\" = [\"immediate\", \"none\"]\n\
             \"device.logical_bytes\" = [\"8MiB\"]\n\"device.pages_per_block\" = [16]\n\"workload.writes\" = [\"1x\"]\n",
            base.display().to_string()
        );
        std::fs::write(&grid, text).unwrap();
        let args = |out: &str, shard: &str| SweepArgs {
            grid: grid.clone(),
            out: dir.join(out),
            jobs: Some(2),
            shard: shard.parse().unwrap(),
            html: false,
            interaction: None,
        };
        run(&args("whole", "1/1")).unwrap();
        let whole = std::fs::read_to_string(dir.join("whole/results.csv")).unwrap();
        let lines: Vec<&str> = whole.lines().collect();
        assert_eq!(lines.len(), 9);
        assert!(
            lines[0].starts_with(
                "run,device.logical_bytes,device.pages_per_block,device.spare_factor,trim.engine,\
                 workload.writes,seed,config_hash,status,error,"
            ),
            "{}",
            lines[0]
        );
        assert!(lines[1].starts_with("0,8MiB,16,0.15,immediate,1x,1,"), "{}", lines[1]);
        assert!(lines[1..].iter().all(|l| l.contains(",ok,,")), "{whole}");
        let mut from_shards: Vec<String> = Vec::new();
        for k in 1..=2 {
            run(&args(&format!("shard{k}"), &format!("{k}/2"))).unwrap();
            let part = std::fs::read_to_string(dir.join(format!("shard{k}/results.csv"))).unwrap();
            assert_eq!(part.lines().next(), Some(lines[0]));
            from_shards.extend(part.lines().skip(1).map(str::to_string));
        }
        from_shards.sort_by_key(|l| l.split(',').next().unwrap().parse::<usize>().unwrap());
        assert_eq!(from_shards, lines[1..]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
