//! What the device's model tests share.

use trimlab_device::DeviceSection;
use trimlab_sim::ByteSize;

/// The small drive the mapping-unit tests run on: two channels of one 48-block plane of 64
/// pages of 4 KiB (one device page per flash page), 30 % spare, so that GC runs within a few
/// thousand random commands.
pub fn small_device(write_buffer_bytes: u64) -> DeviceSection {
    DeviceSection {
        channels: Some(2),
        chips_per_channel: Some(1),
        dies_per_chip: Some(1),
        planes_per_die: Some(1),
        blocks_per_plane: Some(48),
        pages_per_block: Some(64),
        page_bytes: Some(4096),
        flash_page_bytes: Some(4096),
        multi_plane: Some(false),
        spare_factor: Some(0.3),
        write_buffer_bytes: Some(ByteSize(write_buffer_bytes)),
        ..Default::default()
    }
}
