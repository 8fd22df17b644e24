//! The tunables of the host TRIM policies that have any (`[host]`'s policy keys): lazy TRIM's
//! workers, btrfs async discard's delay, rate and size filters, and periodic fstrim.

use serde::Serialize;

/// Parameters of the policies that have any.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PolicyParams {
    /// Lazy TRIM: most discard workers (the Galaxy S8 of 000 has 4 big cores).
    pub lazy_workers_max: usize,
    /// Lazy TRIM: queued TRIMs per worker before another worker is woken.
    pub lazy_trims_per_worker: usize,
    /// btrfs: BTRFS_DISCARD_DELAY, time a freed extent waits before it is discarded (120 s).
    pub async_delay_ns: u64,
    /// btrfs: discard iops_limit (1000 since Linux 6.2, i.e. one discard per ms).
    pub async_iops_limit: u64,
    /// btrfs: BTRFS_ASYNC_DISCARD_DEFAULT_MAX_SIZE (64 MiB).
    pub async_max_bytes: u64,
    /// btrfs: BTRFS_ASYNC_DISCARD_MAX_FILTER (1 MiB) and MIN_FILTER (32 KiB): the two lists;
    /// smaller extents are left to fstrim.
    pub async_large_bytes: u64,
    pub async_min_bytes: u64,
    /// btrfs: the free-space cache lets an untrimmed (freed) extent merge with the free space
    /// on both sides ("we opt to let untrimmed regions merge with everything", discard.c), so
    /// the worker trims the whole free run around a freed extent; the size filters then apply
    /// to that run. Off by default (the experiments' async trims exactly the freed extents).
    pub async_merge_free: bool,
    /// btrfs: the worker's delay goes through nsecs_to_jiffies, which rounds down to a
    /// scheduler tick: 1 ms (iops_limit 1000) is 0 ticks at CONFIG_HZ = 250 (4 ms), so the
    /// discards go back to back. 0 = no rounding (the default).
    pub async_tick_ns: u64,
    /// fstrim: period of the periodic FITRIM (util-linux fstrim.timer: weekly).
    pub fstrim_period_ns: u64,
    /// fstrim: FITRIM minlen in bytes.
    pub fstrim_minlen_bytes: u64,
}

impl Default for PolicyParams {
    fn default() -> Self {
        PolicyParams {
            lazy_workers_max: 4,
            lazy_trims_per_worker: 64,
            async_delay_ns: 120_000_000_000,
            async_iops_limit: 1000,
            async_max_bytes: 64 << 20,
            async_large_bytes: 1 << 20,
            async_min_bytes: 32 << 10,
            async_merge_free: false,
            async_tick_ns: 0,
            fstrim_period_ns: 7 * 24 * 3600 * 1_000_000_000,
            fstrim_minlen_bytes: 0,
        }
    }
}
