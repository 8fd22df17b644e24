//! Parameter sweeps: a grid of config overrides x seeds, expanded in a fixed order, run on local
//! worker threads (or handed point by point to another executor such as Ray), collected into one
//! table with a row per run — the table `trimlab sweep` writes as results.csv and the Python
//! package returns as a DataFrame.
//!
//! The crate never simulates anything itself: a [`Runner`] turns (base config, `--set`
//! assignments, seed) into the content of metrics.json. The binary and the Python module pass
//! the real one (trimlab-scenario); tests pass a fake.

pub mod grid;
pub mod journal;
pub mod plan;
pub mod pool;
pub mod row;
pub mod runner;
pub mod shard;
pub mod sweep;
pub mod table;

pub use grid::{Axis, Grid};
pub use journal::Journal;
pub use plan::{Plan, Point};
pub use row::{Row, Status};
pub use runner::{Runner, ScenarioRunner};
pub use shard::Shard;
pub use sweep::{run_in_dir, run_in_memory, DirOutcome, SweepOptions};
pub use table::Table;

/// What can stop a sweep before or while it runs. A point that fails is not an error of the
/// sweep: it becomes a row with status `failed` and the message.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// The grid file or the grid given through the API is malformed.
    #[error("{0}")]
    Grid(String),
    /// `--shard` was not `K/N` with 1 <= K <= N.
    #[error("{0}")]
    Shard(String),
    /// Reading or writing a file failed. (`error`, not `source`: the message already holds it,
    /// and a `source` would print it twice in an error chain.)
    #[error("{path}: {error}")]
    Io { path: String, error: std::io::Error },
    /// The journal of an earlier run cannot be read back.
    #[error("{0}")]
    Journal(String),
}
