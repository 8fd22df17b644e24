//! Workloads that drive the simulated device: a fio-like synthetic generator (sequential,
//! uniform random, hot/cold and Zipf access; read / write / TRIM mixes; idle gaps), the
//! preconditioning that brings a drive to steady state, and the closed-loop runner that issues
//! commands from `queue_depth` simulated submitters through the event queue.

pub mod cluster_host;
pub mod config;
pub mod file;
pub mod fio;
pub mod generator;
pub mod kind;
pub mod op;
pub mod random_map;
pub mod rate;
pub mod runner;
pub mod scenario;
pub mod script;

// The translators moved to trimlab-importers; their old paths keep working.
pub use trimlab_importers::{filebench, input, strace};

pub use config::{AccessPattern, BlockShare, Precondition, Volume, WorkloadConfig, WorkloadKind};
pub use fio::{parse_fio_job, FioError, FioJob};
pub use generator::{Generator, Op};
pub use kind::run_file_workload;
pub use runner::{run_phase, Drive, PhaseResult, Progress, Target};
pub use scenario::{measured_drive, precondition, precondition_from, run_workload, RunOutcome};
