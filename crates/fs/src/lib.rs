//! The host half of the stack: an ext4-like journaling file system (block groups, bitmaps,
//! extent files, page cache, ordered JBD2-like journal) that talks to a
//! [`trimlab_device::BlockDevice`] (an SSD or the thin volume) with `trimlab_device::Command`s,
//! and the host TRIM policies behind one [`TrimPolicy`] interface. The file-level workloads
//! that drive it live in `trimlab-workload`.
//!
//! Time is simulated: the application is driven call by call ([`FileSystem`] methods return
//! the simulated completion time), and the journal thread, discard workers and fstrim run as
//! actors on a `trimlab_sim::EventQueue` that is advanced before every device submission, so
//! every command reaches the device in non-decreasing arrival order.

pub mod bitmap;
pub mod config;
pub mod extent;
pub mod free_space;
pub mod fs;
/// The host TRIM policies live in their own crate below this one; `trimlab_fs::policy` keeps
/// naming them for the crates above.
pub use trimlab_discard as policy;

pub use config::{FsConfig, HostCosts, InodeGc, Kernel, Layout, PolicyKind};
pub use extent::{ExtentMap, FreedRun, Run};
pub use fs::{CallLatencies, FileSystem, FsError, FsStats, Ino};
pub use policy::{PolicyStats, TrimPolicy};
