//! 004's FTL design for TRIM: the hybrid FAST FTL with a trimmed-range list (HBL), behind the
//! same `trimlab_ftl::Ftl` seam as the page-mapping FTL, so the device drives either.

pub mod fast;
pub mod hbl;

pub use fast::{HybridConfig, HybridFtl, HybridStats, Striping};
pub use hbl::{HblStats, TrimmedRangeList};
