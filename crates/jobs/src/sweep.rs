//! `sweep`: grids of configs x seeds, from a grid file or (Python) a base config and a JSON
//! object of value lists, run on local workers or planned for another executor.

pub use trimlab_sweep::{run_in_dir, run_in_memory};
pub use trimlab_sweep::{
    runner::run_point, sweep::check_grid, Axis, DirOutcome, Grid, Plan, Point, Row, ScenarioRunner, Shard,
    Status, SweepOptions, Table,
};

use anyhow::{anyhow, bail, Result};

/// A grid from a base config's TOML text and `{key: [values]}` as JSON, with `seeds`.
pub fn grid_from_json(base: &str, origin: &str, grid_json: &str, seeds: Vec<u64>) -> Result<Grid> {
    let base: toml::Table =
        toml::from_str(base).map_err(|e| anyhow!("{origin}: {}", e.to_string().trim_end()))?;
    let map: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(grid_json).map_err(|e| anyhow!("grid: {e}"))?;
    let mut axes = Vec::new();
    for (key, values) in map {
        let serde_json::Value::Array(values) = values else {
            bail!("grid key `{key}` = {values} is not a list of values (write [{values}])");
        };
        let values = values
            .into_iter()
            .map(|v| match v {
                serde_json::Value::Null => Err(anyhow!("grid key `{key}`: None is not a config value")),
                v => serde_json::from_value::<toml::Value>(v.clone())
                    .map_err(|e| anyhow!("grid key `{key}`: {v} is not a config value ({e})")),
            })
            .collect::<Result<Vec<_>>>()?;
        axes.push(Axis { key, values, line: None });
    }
    Ok(Grid::new(base, origin, axes, seeds)?)
}

/// Expands and checks a grid for another executor (Ray): each point runs with `run_point`.
pub fn plan(grid: &Grid) -> Result<Plan> {
    let plan = Plan::new(grid);
    check_grid(grid, &plan, &ScenarioRunner)?;
    Ok(plan)
}
