//! The drive's host interface: firmware time, the host link, the command queue, TRIM's limits,
//! the largest transfer and the write buffer, each checked by its key.

use super::bounds::{operation_ns, ps_per_byte};
use super::device::DeviceSpec;
use super::ConfigError;

/// The host-interface values of an `SsdConfig`.
pub(super) struct HostInterface {
    pub firmware_ns: u64,
    pub host_transfer_ps_per_byte: u64,
    pub queue_depth: u32,
    pub trim_max_ranges: u32,
    pub trim_granularity_bytes: u64,
    pub trim_max_bytes: u64,
    pub max_transfer_bytes: u64,
    pub write_buffer_pages: u32,
    pub idle_threshold_ns: u64,
}

fn in_1_to_65536(key: &str, value: u32) -> Result<u32, ConfigError> {
    if (1..=65_536).contains(&value) {
        Ok(value)
    } else {
        Err(ConfigError::new(key, value, "must be 1..=65536"))
    }
}

impl HostInterface {
    pub(super) fn resolve(spec: &DeviceSpec, page_bytes: u64) -> Result<HostInterface, ConfigError> {
        let firmware_ns = operation_ns("device.firmware_ns", spec.firmware_ns)?;
        let host_transfer_ps_per_byte =
            ps_per_byte("device.host_transfer_ps_per_byte", spec.host_transfer_ps_per_byte)?;
        let queue_depth = in_1_to_65536("device.queue_depth", spec.queue_depth)?;
        let trim_max_ranges = in_1_to_65536("device.trim_max_ranges", spec.trim_max_ranges)?;
        let trim_granularity_bytes = spec.trim_granularity_bytes.map_or(page_bytes, |b| b.0);
        if trim_granularity_bytes == 0 || !trim_granularity_bytes.is_multiple_of(page_bytes) {
            return Err(ConfigError::new(
                "device.trim_granularity_bytes",
                trim_granularity_bytes,
                format!("must be a positive multiple of the {page_bytes}-byte page"),
            ));
        }
        let trim_max_bytes = spec.trim_max_bytes.0;
        if trim_max_bytes < trim_granularity_bytes {
            return Err(ConfigError::new(
                "device.trim_max_bytes",
                trim_max_bytes,
                format!("must be at least the TRIM granularity of {trim_granularity_bytes} bytes"),
            ));
        }
        let max_transfer_bytes = spec.max_transfer_bytes.0;
        if max_transfer_bytes < page_bytes || max_transfer_bytes > 1 << 30 {
            return Err(ConfigError::new(
                "device.max_transfer_bytes",
                max_transfer_bytes,
                format!("must be at least one {page_bytes}-byte page and at most 1 GiB"),
            ));
        }
        let write_buffer_bytes = spec.write_buffer_bytes.0;
        if !write_buffer_bytes.is_multiple_of(page_bytes) || write_buffer_bytes / page_bytes > 1 << 24 {
            return Err(ConfigError::new(
                "device.write_buffer_bytes",
                write_buffer_bytes,
                format!("must be 0 or a multiple of the {page_bytes}-byte page, at most 2^24 pages"),
            ));
        }
        Ok(HostInterface {
            firmware_ns,
            host_transfer_ps_per_byte,
            queue_depth,
            trim_max_ranges,
            trim_granularity_bytes,
            trim_max_bytes,
            max_transfer_bytes,
            write_buffer_pages: (write_buffer_bytes / page_bytes) as u32,
            idle_threshold_ns: spec.idle_threshold.0,
        })
    }
}
