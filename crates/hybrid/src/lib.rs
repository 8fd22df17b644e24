//! 004's FTL designs for TRIM: the hybrid FAST FTL with a trimmed-range list (HBL), and a small
//! command driver that serves host commands with timing on either it or the page-mapping FTL.

pub mod driver;
pub mod fast;
pub mod hbl;

pub use driver::{Completion, DriveError, Driver, FtlMeasures, FtlModel, HostCommand, PageFtlModel};
pub use fast::{HybridConfig, HybridFtl, HybridStats, Striping};
pub use hbl::{HblStats, TrimmedRangeList};
