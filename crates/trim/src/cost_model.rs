//! Controller time charged for each TRIM step.
//!
//! 002 measures on the Cosmos+/DaisyPlus OpenSSD firmware that steps 2 and 3 take 80 % of the
//! time of a TRIM; the defaults reproduce that split for a 1 MiB TRIM of 4 KiB pages
//! (step 1: 5 us + 0.2 us/range; step 2: 256 x 20 ns; step 3: 256 x 25 ns + 256 x 50 ns when every
//! page is mapped -> steps 2+3 = 24.3 us of 29.5 us, 82 %). Per-page terms make TRIM overhead grow
//! with the range size, as Saxena and Swift observed (002 ref. [1]).

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TrimCostModel {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_split_matches_002_for_one_mebibyte() {
        let c = TrimCostModel::default();
        let pages = 256u64;
        let step1 = c.step1_ns(1);
        let step23 = pages * (c.buffer_lookup_ns + c.map_lookup_ns + c.map_invalidate_ns);
        let share = step23 as f64 / (step1 + step23) as f64;
        assert!((0.78..0.85).contains(&share), "steps 2+3 share {share}");
    }
}
