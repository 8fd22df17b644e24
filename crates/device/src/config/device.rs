//! `[device]`: the drive's shape, timing and host interface, declared once for both its
//! as-written form (`DeviceSection`: the keys a user, a preset file or an experiment set) and
//! its complete form (`DeviceSpec`: a preset's data with the user's keys laid over it).

use serde::{Deserialize, Serialize};
use trimlab_sim::{ByteSize, DurationNs};

/// `[device] kind`: the simulated SSD, or the thin-provisioned volume of 003 (its knobs are
/// the scenario's `[thin]` section; of `[device]` it reads only `logical_bytes`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceKind {
    #[default]
    Ssd,
    Thin,
}

trimlab_sim::config_section! {
    /// `[device]` resolved: the preset's values with the user's keys laid over them.
    pub struct DeviceSpec;
    /// `[device]` as written. Unset keys come from the preset (crates/device/presets/).
    pub struct DeviceSection {
        /// Read by the scenario (`"thin"` selects the thin volume); the SSD ignores it.
        pub kind: DeviceKind = optional,
        /// The preset the other keys are laid over (default `nvme-tlc`).
        pub preset: String = optional,
        /// The logical capacity; unset on a preset that gives `blocks_per_plane` instead.
        pub logical_bytes: ByteSize = optional,
        pub spare_factor: f64,
        pub channels: u32,
        pub chips_per_channel: u32,
        pub dies_per_chip: u32,
        pub planes_per_die: u32,
        /// The flash's size; unset (derived from `logical_bytes`) on most presets.
        pub blocks_per_plane: u32 = optional,
        pub pages_per_block: u32,
        /// The mapping unit: what a logical page number addresses (4096 on the modern presets).
        pub page_bytes: u32,
        /// The NAND page: one tR reads it, one tPROG programs it; holds whole pages. Unset by
        /// the user: the preset's, or `page_bytes` when that is larger.
        pub flash_page_bytes: u32,
        /// Program a flash page on every plane of a die with one tPROG.
        pub multi_plane: bool,
        pub read_ns: u64,
        pub program_ns: u64,
        pub erase_ns: u64,
        pub transfer_ps_per_byte: u64,
        pub command_ns: u64,
        pub queue_depth: u32,
        pub trim_queued: bool,
        pub trim_max_ranges: u32,
        pub trim_max_bytes: ByteSize,
        /// Default: `page_bytes`.
        pub trim_granularity_bytes: ByteSize = optional,
        pub max_transfer_bytes: ByteSize,
        pub write_buffer_bytes: ByteSize,
        pub firmware_ns: u64,
        pub host_transfer_ps_per_byte: u64,
        pub idle_threshold: DurationNs,
        /// Rated endurance (docs/lifetime.md, each preset's value with its source): P/E cycles
        /// a block is rated for; unset: no lifetime projection.
        pub rated_pe_cycles: u32 = optional,
        /// Rated host bytes written ("600TB") and the capacity they are rated for ("1TB").
        pub rated_tbw: ByteSize = optional,
        pub rated_capacity: ByteSize = optional,
        /// Rated drive writes per day over `rated_years`.
        pub rated_dwpd: f64 = optional,
        pub rated_years: f64 = optional,
        /// Host bytes a day the lifetime projection assumes; unset: the measured span's rate.
        pub daily_host_bytes: ByteSize = optional,
        /// The drive's own reports to build the device from (docs/config.md, "A device from
        /// the drive"; `config::nvme_id`): `nvme id-ctrl -o json`, `nvme nvm-id-ctrl -o json`,
        /// `nvme id-ns -o json` and `smartctl -a -j` output, each a file path (relative to the
        /// config's folder). The keys they give lie under the user's and over the preset's.
        pub r#from: String = optional,
        pub from_nvm: String = optional,
        pub from_ns: String = optional,
        pub from_smart: String = optional,
    }
}
