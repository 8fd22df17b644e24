//! What the device's model tests share.

use trimlab_device::{ByteRange, Command, DeviceSection, Ssd};
use trimlab_sim::{ByteSize, DurationNs, SimTime};

/// The device page of the small drives below.
pub const PAGE: u64 = 4096;

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

/// The drive the Delayed TRIM and power-cut tests run on: one channel of two 64-block planes of
/// 16 pages of 4 KiB, 25 % spare, a write buffer of `buffer_pages`, idle after 1 ms, TRIMs of
/// up to 8 ranges.
pub fn two_plane_device(buffer_pages: u64) -> DeviceSection {
    DeviceSection {
        channels: Some(1),
        chips_per_channel: Some(1),
        dies_per_chip: Some(1),
        planes_per_die: Some(2),
        blocks_per_plane: Some(64),
        pages_per_block: Some(16),
        page_bytes: Some(PAGE as u32),
        spare_factor: Some(0.25),
        write_buffer_bytes: Some(ByteSize(buffer_pages * PAGE)),
        idle_threshold: Some(DurationNs(1_000_000)),
        trim_max_ranges: Some(8),
        ..Default::default()
    }
}

/// Writes `count` pages from `lpn`, each tagged `tag`; returns when the command completes.
pub fn write(ssd: &mut Ssd, t: SimTime, lpn: u64, count: u64, tag: u64) -> SimTime {
    ssd.submit(t, &Command::Write { offset: lpn * PAGE, bytes: count * PAGE, tag }, None).unwrap().done
}

/// TRIMs `count` pages from `lpn` in one range; returns when the command completes.
pub fn trim(ssd: &mut Ssd, t: SimTime, lpn: u64, count: u64) -> SimTime {
    let ranges = vec![ByteRange { offset: lpn * PAGE, bytes: count * PAGE }];
    ssd.submit(t, &Command::Trim { ranges }, None).unwrap().done
}
