//! Shared set-up of the host-side experiments: the SSD under the file system.

use anyhow::Result;
use trimlab_device::{DeviceSection, FtlSection, Ssd, SsdConfig, TrimSection};
use trimlab_sim::ByteSize;
use trimlab_trim::TrimCostModel;

/// An `nvme-tlc`-timed drive of `logical_bytes` (2-4 channels, 64-page blocks, 7 % spare); `sata` makes TRIM non-queued (a 2011-era SATA SSD:
/// each TRIM drains the queue and blocks the commands behind it) with a SATA II link.
pub fn ssd(logical_bytes: u64, sata: bool) -> Result<Ssd> {
    ssd_with_trim_command_ns(logical_bytes, sata, None)
}

/// As [`ssd`], with the controller time of TRIM step 1 per command replaced (a sensitivity
/// knob: drives differ widely in what one TRIM costs).
pub fn ssd_with_trim_command_ns(logical_bytes: u64, sata: bool, trim_command_ns: Option<u64>) -> Result<Ssd> {
    let mut device = DeviceSection {
        preset: Some("nvme-tlc".into()),
        logical_bytes: Some(ByteSize(logical_bytes)),
        // Fewer channels than the preset (4, or 2 below 1 GiB) and 64-page blocks, so a drive
        // of a few hundred MiB still has many blocks per plane at the preset's 7 % spare.
        channels: Some(if logical_bytes < 1 << 30 { 2 } else { 4 }),
        pages_per_block: Some(64),
        ..Default::default()
    };
    if sata {
        device.trim_queued = Some(false);
        device.queue_depth = Some(32);
        device.host_transfer_ps_per_byte = Some(3_333);
    }
    let ftl = FtlSection { track_data: Some(true), ..Default::default() };
    let trim = TrimSection {
        cost: trim_command_ns.map(|command_ns| TrimCostModel { command_ns, ..TrimCostModel::default() }),
        ..TrimSection::default()
    };
    Ok(Ssd::new(SsdConfig::resolve(&device, &ftl, &trim)?))
}

pub fn mib(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{} KiB", bytes >> 10)
    }
}

pub fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}
