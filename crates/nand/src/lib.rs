//! NAND flash array model: geometry and addressing, datasheet timing, channels and dies as
//! resources that operations queue for, and per-block wear.

pub mod address;
pub mod flash_array;
pub mod geometry;
pub mod timing;

pub use address::{BlockId, Ppa};
pub use flash_array::{FlashArray, FlashCounters};
pub use geometry::{Geometry, GeometryError};
pub use timing::Timing;
