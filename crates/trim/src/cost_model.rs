//! Controller time charged for each TRIM step.
//!
//! 002 measures on the Cosmos+/DaisyPlus OpenSSD firmware that steps 2 and 3 take 80 % of the
//! time of a TRIM; the defaults reproduce that split for a 1 MiB TRIM of 4 KiB pages
//! (step 1: 5 us + 0.2 us/range; step 2: 256 x 20 ns; step 3: 256 x 25 ns + 256 x 50 ns when every
//! page is mapped -> steps 2+3 = 24.3 us of 29.5 us, 82 %). Per-page terms make TRIM overhead grow
//! with the range size, as Saxena and Swift observed (002 ref. [1]).

trimlab_sim::config_section! {
    /// What one TRIM costs the controller, step by step. A drive's values are its preset's
    /// `[trim.cost]` data (crates/device/presets/); `Default` is 002's OpenSSD split. A new
    /// cost is one field here plus its value in each preset file.
    #[derive(Eq)]
    pub struct TrimCostModel;
    /// `[trim.cost]` as written: each key given replaces that cost of the preset's model; keys
    /// left out keep the preset's value (`apply`).
    #[derive(Eq)]
    pub struct TrimCostOverrides {
        /// Step 1, once per command: parse the command, set up the DMA of the range list.
        pub command_ns: u64,
        /// Step 1, per range descriptor: DMA and decode one (start, length) entry.
        pub range_ns: u64,
        /// Step 2, per trimmed page: look the page up in the write buffer (and drop it if there).
        pub buffer_lookup_ns: u64,
        /// Step 3, per trimmed page: read its L2P entry.
        pub map_lookup_ns: u64,
        /// Step 3, per trimmed page that was mapped: clear L2P and P2L, decrement the valid count.
        pub map_invalidate_ns: u64,
        /// Delayed TRIM's step 1, per range: append (start, length) to the trim buffer.
        pub trim_buffer_append_ns: u64,
        /// Delayed TRIM's step 1, per 64-bit word of the trim-validity bitmap it sets.
        pub bitmap_word_ns: u64,
        /// Delayed TRIM's drain, per page: test and clear its bit before steps 2 and 3.
        pub bitmap_check_ns: u64,
    }
}

impl Default for TrimCostModel {
    fn default() -> Self {
        TrimCostModel {
            command_ns: 5_000,
            range_ns: 200,
            buffer_lookup_ns: 20,
            map_lookup_ns: 25,
            map_invalidate_ns: 50,
            // The bitmap and trim buffer live in controller DRAM like the maps: an append is a
            // couple of stores, a word update a read-modify-write, a check one load.
            trim_buffer_append_ns: 100,
            bitmap_word_ns: 10,
            bitmap_check_ns: 5,
        }
    }
}

impl TrimCostModel {
    /// 002's OpenSSD split (the defaults): 5 us per command, 95 ns per mapped page.
    pub fn openssd_002() -> Self {
        TrimCostModel::default()
    }

    /// A U.2 NVMe drive as public fio threads measured it. axboe/fio#764: a 4 KiB TRIM with the
    /// sync engine completes in 63 us (min) to 71 us (avg), host path included; axboe/fio#396:
    /// 74 GiB trimmed in 512 KiB TRIMs in 27 s, 178 us per command when the drive serves them one
    /// at a time. A line through both: ~60 us per command (the remaining ~8 us of the 4 KiB case
    /// is the host's, an assumption) and (178 - 61) us / 127 pages = ~0.9 us per further 4 KiB
    /// page, put in the per-page invalidation (the 002 lookups kept).
    pub fn nvme_fio() -> Self {
        TrimCostModel { command_ns: 60_000, map_invalidate_ns: 875, ..TrimCostModel::default() }
    }

    /// A 2011-era SATA MLC drive: non-queued TRIM costing milliseconds. Assumption: no public
    /// per-command measurement was found; 1 ms per command plus 1 us per mapped 4 KiB page is
    /// the order of magnitude the pre-NCQ-TRIM era is described with (each TRIM drains the NCQ
    /// queue). Experiments sweep this cost rather than trust it.
    pub fn sata_2011() -> Self {
        TrimCostModel { command_ns: 1_000_000, map_invalidate_ns: 1_000, ..TrimCostModel::default() }
    }

    /// A 2017-2018 mobile UFS 2.1 device (000's Galaxy S8): long UNMAP latency. Assumption, as
    /// for [`TrimCostModel::sata_2011`]: 1 ms per command plus 1 us per mapped page.
    pub fn ufs_2018() -> Self {
        TrimCostModel::sata_2011()
    }

    /// The same model with the per-command cost replaced: the knob of the TRIM-cost sweeps.
    pub fn with_command_ns(self, command_ns: u64) -> Self {
        TrimCostModel { command_ns, ..self }
    }

    /// Controller time of one TRIM of one range of `pages` mapped, unbuffered pages.
    pub fn single_range_ns(&self, pages: u64) -> u64 {
        self.step1_ns(1) + pages * (self.map_lookup_ns + self.map_invalidate_ns)
    }

    pub fn step1_ns(&self, ranges: usize) -> u64 {
        self.command_ns + self.range_ns * ranges as u64
    }

    /// Steps 2 and 3 for one page: the write-buffer lookup (when there is a buffer) and the map
    /// lookup, plus the invalidation when the page was mapped.
    #[inline]
    pub fn steps23_ns(&self, buffered: bool, mapped: bool) -> (u64, u64) {
        let step2 = if buffered { self.buffer_lookup_ns } else { 0 };
        (step2, self.map_lookup_ns + if mapped { self.map_invalidate_ns } else { 0 })
    }
}
