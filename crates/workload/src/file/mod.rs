//! The file-level workloads on a mounted `trimlab_fs::FileSystem`: the routines the kinds and
//! the scenario's phases share (routines.rs), and [`run_file_workload`], which runs the one
//! `[workload] kind` names through its kind's file (crates/workload/src/kind/). The routines sit
//! in a file of their own so that the kinds, which use them, and this entry, which dispatches
//! to the kinds, do not import each other.

mod routines;

pub use routines::{
    age, bulk_rm, delete_down_to, file_churn, fill, lazy_micro, parallel_direct_writes, remove_when_full,
    set_utilization, write_file, Figures, FileShape, FileState, MicroResult, Postmark,
};

use crate::config::WorkloadConfig;
use trimlab_device::BlockDevice;
use trimlab_fs::{FileSystem, FsError};

/// Runs the file-level workload `w` (its kind's defaults fill unset keys; docs/config.md) on
/// `fs`, whose device holds `capacity_bytes`: the kind's own file (crates/workload/src/kind/)
/// runs it.
pub fn run_file_workload<D: BlockDevice>(
    fs: &mut FileSystem<D>,
    w: &WorkloadConfig,
    state: &mut FileState,
    capacity_bytes: u64,
) -> Result<Figures, FsError> {
    crate::kind::run_file(fs, w, state, capacity_bytes)
}
