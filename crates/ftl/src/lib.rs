//! The flash translation layer: a page-mapping FTL with forward and backward maps, a block pool
//! with a victim index, greedy / cost-benefit / FIFO garbage collection and a DRAM write buffer.

pub mod block_pool;
pub mod detail;
pub mod interface;
pub mod lpn;
pub mod map_agreement;
mod map_array;
pub mod page_ftl;
pub mod page_map;
pub mod variant;
pub mod verify;
pub mod victim;
pub mod wear_levelling;
pub mod write_buffer;

pub use detail::{FtlDetail, HblStats, HybridStats, TrimmedListDetail};
pub use interface::{Ftl, FtlMeasures};
pub use lpn::Lpn;
pub use page_ftl::{FtlConfig, FtlStats, GcOutcome, PageData, PageFtl};
pub use variant::{BackwardUpdate, StripeUnit, VariantStats};
pub use victim::VictimPolicy;
pub use wear_levelling::{WearLevellingStats, STATIC_WL_THRESHOLD_DEFAULT};
pub use write_buffer::WriteBuffer;
