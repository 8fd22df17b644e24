//! The simulated SSD as a host sees it: READ, WRITE, TRIM and FLUSH commands, a queue depth,
//! queued (NVMe) or non-queued (SATA) TRIM, the controller's firmware time, the write buffer,
//! the FTL and a TRIM engine; the thin-provisioned volume; the [`BlockDevice`] interface both
//! implement, the host queue that splits requests at a device's limits and the [`Metered`]
//! layer that counts what reaches a device; and the measures a run reports.

pub mod block_device;
pub mod command;
pub mod config;
pub mod ftl_choice;
pub mod ftl_kind;
pub mod host_page_tags;
pub mod host_queue;
pub mod lifetime;
pub mod metered;
pub mod metrics;
// Public only for its test in tests/device/ (the lib has no test harness); no API.
#[doc(hidden)]
pub mod outstanding;
pub mod recording;
pub mod ssd;
pub mod thin_volume;
pub mod timeseries;

pub use block_device::{BlockDevice, Limits, Served};
pub use command::{ByteRange, Command, CommandError, CommandKind, OneRangeTrim};
pub use config::{
    BackwardMap, ConfigError, DeviceKind, DeviceSection, DeviceSpec, FtlSection, FtlSpec, SsdConfig,
    TrimSection,
};
pub use ftl_kind::{FtlChoice, FtlKind, FtlKindSpec, StripingChoice, FTL_KINDS};
pub use host_queue::{transfer_chunks, TrimSplitter};
pub use lifetime::{Lifetime, Rating, Wear};
pub use metered::{Metered, Traffic};
pub use metrics::{DeviceReport, LatencyHistogram, LatencyHistograms, LatencyReport, LatencySummary};
pub use recording::Recording;
pub use ssd::{Completion, PowerCut, Ssd};
pub use thin_volume::{ThinConfig, ThinStats, ThinVolume};
/// The full consistency check's switch, for drivers above the FTL (tests, the binary).
pub use trimlab_ftl::verify;
