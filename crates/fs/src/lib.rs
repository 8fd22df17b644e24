//! The host half of the stack: an ext4-like journaling file system (block groups, bitmaps,
//! extent files, page cache, ordered JBD2-like journal) that talks to a [`BlockDevice`], the
//! host TRIM policies behind one [`TrimPolicy`] interface, a thin-provisioned volume, and the
//! host workloads of the source documents (Lazy TRIM micro-benchmark, aging, Postmark, bulk rm).
//!
//! Time is simulated: the application is driven call by call ([`FileSystem`] methods return
//! the simulated completion time), and the journal thread, discard workers and fstrim run as
//! actors on a `trimlab_sim::EventQueue` that is advanced before every device submission, so
//! every command reaches the device in non-decreasing arrival order.

pub mod bitmap;
pub mod block_device;
pub mod config;
pub mod extent;
pub mod fs;
pub mod policy;
pub mod thin_volume;
pub mod workloads;

pub use block_device::{BlockDevice, DevRequest};
pub use config::{FsConfig, HostCosts, PolicyKind};
pub use extent::{ExtentMap, FreedRun, Run};
pub use fs::{FileSystem, FsError, FsStats, Ino};
pub use policy::{PolicyStats, TrimPolicy};
pub use thin_volume::{ThinConfig, ThinVolume};
