//! Physical addresses: a page (`Ppa`) and an erase block (`BlockId`), both dense indices.
//!
//! Blocks are numbered plane-major (`plane_index * blocks_per_plane + block_in_plane`) and pages
//! block-major (`block * pages_per_block + page`), so a block's pages are contiguous in every
//! per-page array and a plane's blocks are contiguous in every per-block array.

use serde::{Deserialize, Serialize};

/// A physical page address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Ppa(pub u32);

/// An erase block, numbered across the whole device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct BlockId(pub u32);

impl Ppa {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl BlockId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}
