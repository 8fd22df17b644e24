//! 004's FTL design for TRIM: the hybrid FAST FTL with a trimmed-range list (HBL), behind the
//! same `trimlab_ftl::Ftl` seam as the page-mapping FTL, so the device drives either.

pub mod fast;
pub mod hbl;

pub use fast::{HybridConfig, HybridFtl, Striping};
pub use hbl::TrimmedRangeList;
/// The counters live on the `Ftl` seam (`trimlab_ftl::detail`); this crate fills them in.
pub use trimlab_ftl::{HblStats, HybridStats};
