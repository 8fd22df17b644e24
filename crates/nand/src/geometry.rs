//! Flash geometry: channels, chips, dies, planes, blocks, flash pages and the pages (mapping
//! units) they hold, and the address arithmetic.
//!
//! Two page sizes meet here. A *page* (`page_bytes`, 4 KiB on every modern preset) is the unit
//! the FTL maps: a logical page number names one, a `Ppa` is the slot that holds one, valid
//! counts, GC and TRIM count them. A *flash page* (`flash_page_bytes`, 16 KiB on 3D TLC) is the
//! unit of a NAND operation: one tR senses it, one tPROG programs it, and it holds
//! `flash_page_bytes / page_bytes` pages. Slots are numbered so that a flash page's slots are
//! consecutive: flash page `f` holds slots `f * units .. (f + 1) * units`.

use crate::address::{BlockId, Ppa};
use serde::{Deserialize, Serialize};

/// Why a geometry cannot be built. Each names the field and the accepted range.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum GeometryError {
    #[error("{field} = {value} (must be {accepted})")]
    OutOfRange { field: &'static str, value: u64, accepted: &'static str },
    #[error("device has {pages} physical pages; at most {max} are addressable (32-bit page addresses)")]
    TooLarge { pages: u64, max: u64 },
    #[error("device.flash_page_bytes = {flash_page_bytes} (must be a power of two, at most 1048576, and a multiple of device.page_bytes = {page_bytes}: a flash page holds whole mapping pages)")]
    FlashPage { flash_page_bytes: u32, page_bytes: u32 },
    #[error("device.pages_per_block = {pages_per_block} (must be a multiple of the {pages_per_flash_page} pages a flash page holds: a block is whole flash pages)")]
    BlockNotWholeFlashPages { pages_per_block: u32, pages_per_flash_page: u32 },
}

/// The shape of the flash array. All counts are per parent unit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Geometry {
    pub channels: u32,
    pub chips_per_channel: u32,
    pub dies_per_chip: u32,
    pub planes_per_die: u32,
    pub blocks_per_plane: u32,
    /// Pages (mapping units) per erase block; a multiple of the pages per flash page.
    pub pages_per_block: u32,
    /// The mapping unit: what a logical page number and a `Ppa` slot hold.
    pub page_bytes: u32,
    /// The NAND page: what one tR reads and one tPROG programs (per plane); a multiple of
    /// `page_bytes`.
    pub flash_page_bytes: u32,
}

/// The largest page count we address: page addresses are `u32` and `u32::MAX` marks "none".
pub const MAX_PHYSICAL_PAGES: u64 = u32::MAX as u64 - 1;

impl Geometry {
    /// Checks every relation once, where the geometry is built; later code relies on them.
    pub fn validate(&self) -> Result<(), GeometryError> {
        let check = |field: &'static str, value: u32, max: u32, accepted: &'static str| {
            if value == 0 || value > max {
                Err(GeometryError::OutOfRange { field, value: value as u64, accepted })
            } else {
                Ok(())
            }
        };
        check("device.channels", self.channels, 1024, "1..=1024")?;
        check("device.chips_per_channel", self.chips_per_channel, 256, "1..=256")?;
        check("device.dies_per_chip", self.dies_per_chip, 64, "1..=64")?;
        check("device.planes_per_die", self.planes_per_die, 64, "1..=64")?;
        check("device.blocks_per_plane", self.blocks_per_plane, 1 << 24, "1..=16777216")?;
        check("device.pages_per_block", self.pages_per_block, 65536, "1..=65536")?;
        if !(512..=1 << 20).contains(&self.page_bytes) || !self.page_bytes.is_power_of_two() {
            return Err(GeometryError::OutOfRange {
                field: "device.page_bytes",
                value: self.page_bytes as u64,
                accepted: "a power of two in 512..=1048576",
            });
        }
        if self.flash_page_bytes < self.page_bytes
            || !self.flash_page_bytes.is_power_of_two()
            || self.flash_page_bytes > 1 << 20
        {
            return Err(GeometryError::FlashPage {
                flash_page_bytes: self.flash_page_bytes,
                page_bytes: self.page_bytes,
            });
        }
        let units = self.pages_per_flash_page();
        if !self.pages_per_block.is_multiple_of(units) {
            return Err(GeometryError::BlockNotWholeFlashPages {
                pages_per_block: self.pages_per_block,
                pages_per_flash_page: units,
            });
        }
        let pages = self.physical_pages_u64();
        if pages > MAX_PHYSICAL_PAGES {
            return Err(GeometryError::TooLarge { pages, max: MAX_PHYSICAL_PAGES });
        }
        Ok(())
    }

    fn physical_pages_u64(&self) -> u64 {
        self.plane_count_u64() * self.blocks_per_plane as u64 * self.pages_per_block as u64
    }

    fn plane_count_u64(&self) -> u64 {
        self.channels as u64
            * self.chips_per_channel as u64
            * self.dies_per_chip as u64
            * self.planes_per_die as u64
    }

    pub fn die_count(&self) -> usize {
        (self.channels * self.chips_per_channel * self.dies_per_chip) as usize
    }

    pub fn plane_count(&self) -> usize {
        self.plane_count_u64() as usize
    }

    pub fn block_count(&self) -> usize {
        self.plane_count() * self.blocks_per_plane as usize
    }

    pub fn physical_pages(&self) -> usize {
        self.physical_pages_u64() as usize
    }

    pub fn physical_bytes(&self) -> u64 {
        self.physical_pages_u64() * self.page_bytes as u64
    }

    /// Pages (mapping units) one flash page holds.
    #[inline]
    pub fn pages_per_flash_page(&self) -> u32 {
        self.flash_page_bytes / self.page_bytes
    }

    /// Flash pages per erase block.
    pub fn flash_pages_per_block(&self) -> u32 {
        self.pages_per_block / self.pages_per_flash_page()
    }

    /// The flash page holding slot `ppa`, numbered across the device.
    #[inline]
    pub fn flash_page_of(&self, ppa: Ppa) -> u32 {
        // Both sizes are powers of two, so the ratio is one too.
        ppa.0 >> self.pages_per_flash_page().trailing_zeros()
    }

    #[inline]
    pub fn block_of(&self, ppa: Ppa) -> BlockId {
        // Pages per block is nearly always a power of two; a shift is far cheaper than a divide.
        if self.pages_per_block.is_power_of_two() {
            BlockId(ppa.0 >> self.pages_per_block.trailing_zeros())
        } else {
            BlockId(ppa.0 / self.pages_per_block)
        }
    }

    #[inline]
    pub fn page_in_block(&self, ppa: Ppa) -> u32 {
        if self.pages_per_block.is_power_of_two() {
            ppa.0 & (self.pages_per_block - 1)
        } else {
            ppa.0 % self.pages_per_block
        }
    }

    #[inline]
    pub fn first_page(&self, block: BlockId) -> Ppa {
        Ppa(block.0 * self.pages_per_block)
    }

    #[inline]
    pub fn plane_of(&self, block: BlockId) -> usize {
        (block.0 / self.blocks_per_plane) as usize
    }

    #[inline]
    pub fn first_block_of_plane(&self, plane_index: usize) -> BlockId {
        BlockId(plane_index as u32 * self.blocks_per_plane)
    }

    /// Planes are numbered channel-major: ((channel * chips + chip) * dies + die) * planes + plane.
    #[inline]
    pub fn die_of_plane(&self, plane_index: usize) -> usize {
        plane_index / self.planes_per_die as usize
    }

    #[inline]
    pub fn channel_of_die(&self, die_index: usize) -> usize {
        die_index / (self.chips_per_channel * self.dies_per_chip) as usize
    }

    /// The order in which writes are striped over planes: consecutive pages go to different
    /// channels first, then different chips/dies on a channel, then different planes of a die,
    /// so that a burst of writes uses every channel before it queues on any one.
    pub fn striping_order(&self) -> Vec<usize> {
        let ways = (self.chips_per_channel * self.dies_per_chip) as usize;
        let planes = self.planes_per_die as usize;
        let channels = self.channels as usize;
        let mut order = Vec::with_capacity(self.plane_count());
        for plane in 0..planes {
            for way in 0..ways {
                for channel in 0..channels {
                    let die = channel * ways + way;
                    order.push(die * planes + plane);
                }
            }
        }
        order
    }

    /// The order of host writes when a die programs its planes together (multi-plane
    /// programs): the planes of one die are consecutive, so one flash page per plane of a die
    /// is filled before the next die's, and consecutive dies are on different channels.
    pub fn multi_plane_striping_order(&self) -> Vec<usize> {
        let ways = (self.chips_per_channel * self.dies_per_chip) as usize;
        let planes = self.planes_per_die as usize;
        let channels = self.channels as usize;
        let mut order = Vec::with_capacity(self.plane_count());
        for way in 0..ways {
            for channel in 0..channels {
                let die = channel * ways + way;
                order.extend((0..planes).map(|plane| die * planes + plane));
            }
        }
        order
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Geometry {
        Geometry {
            channels: 2,
            chips_per_channel: 2,
            dies_per_chip: 1,
            planes_per_die: 2,
            blocks_per_plane: 4,
            pages_per_block: 8,
            page_bytes: 4096,
            flash_page_bytes: 4096,
        }
    }

    #[test]
    fn counts_and_addresses() {
        let g = small();
        g.validate().unwrap();
        assert_eq!(g.plane_count(), 8);
        assert_eq!(g.die_count(), 4);
        assert_eq!(g.block_count(), 32);
        assert_eq!(g.physical_pages(), 256);
        let b = BlockId(13);
        assert_eq!(g.block_of(Ppa(13 * 8 + 5)), b);
        assert_eq!(g.page_in_block(Ppa(13 * 8 + 5)), 5);
        assert_eq!(g.plane_of(b), 3);
        assert_eq!(g.die_of_plane(3), 1);
        assert_eq!(g.channel_of_die(1), 0);
        assert_eq!(g.channel_of_die(2), 1);
    }

    #[test]
    fn striping_alternates_channels_and_covers_all_planes() {
        let g = small();
        let order = g.striping_order();
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(sorted, (0..8).collect::<Vec<_>>());
        let channels: Vec<_> = order.iter().map(|&p| g.channel_of_die(g.die_of_plane(p))).collect();
        for pair in channels.windows(2) {
            assert_ne!(pair[0], pair[1]);
        }
    }

    #[test]
    fn rejects_zero_pages_per_block() {
        let g = Geometry { pages_per_block: 0, ..small() };
        let err = g.validate().unwrap_err();
        assert_eq!(err.to_string(), "device.pages_per_block = 0 (must be 1..=65536)");
    }

    #[test]
    fn flash_pages_hold_whole_mapping_pages() {
        let g = Geometry { flash_page_bytes: 16384, ..small() };
        g.validate().unwrap();
        assert_eq!(g.pages_per_flash_page(), 4);
        assert_eq!(g.flash_pages_per_block(), 2);
        assert_eq!(g.flash_page_of(Ppa(13)), 3);
        let e = Geometry { flash_page_bytes: 2048, ..small() }.validate().unwrap_err();
        assert!(e.to_string().starts_with("device.flash_page_bytes = 2048"), "{e}");
        let e = Geometry { flash_page_bytes: 65536, ..small() }.validate().unwrap_err();
        assert_eq!(
            e.to_string(),
            "device.pages_per_block = 8 (must be a multiple of the 16 pages a flash page holds: a block is whole flash pages)"
        );
    }

    #[test]
    fn rejects_odd_page_size_and_huge_devices() {
        assert!(Geometry { page_bytes: 3000, ..small() }.validate().is_err());
        let huge = Geometry { blocks_per_plane: 1 << 24, pages_per_block: 65536, ..small() };
        assert!(matches!(huge.validate(), Err(GeometryError::TooLarge { .. })));
    }
}
