//! NAND operation timing, from datasheets, and the presets' values.

use serde::{Deserialize, Serialize};

/// Latencies of one NAND die and its channel. Durations in nanoseconds; the bus rate in
/// picoseconds per byte so that slow and fast buses both stay integer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timing {
    /// Array-to-register read of one flash page (tR).
    pub read_ns: u64,
    /// Register-to-array program of one flash page, or of one flash page on each plane of a
    /// die in a multi-plane program (tPROG).
    pub program_ns: u64,
    /// Block erase (tBERS).
    pub erase_ns: u64,
    /// Channel transfer time per byte moved between controller and die register.
    pub transfer_ps_per_byte: u64,
    /// Command and address cycles on the channel for every operation.
    pub command_ns: u64,
}

impl Timing {
    /// Samsung K9LAG08U0M MLC, as used in 004 (Kim et al., "FTL Design for TRIM Command", Table 1):
    /// read 60 us, program 800 us, erase 1.5 ms, and a 2 KB page transferred in 7680 ns
    /// (3.75 ns per byte).
    pub fn k9lag08u0m() -> Timing {
        Timing {
            read_ns: 60_000,
            program_ns: 800_000,
            erase_ns: 1_500_000,
            transfer_ps_per_byte: 3_750,
            command_ns: 200,
        }
    }

    /// A representative 2020s 3D TLC die behind an ONFI 4.x / Toggle 4.0 bus (1200 MT/s, 8 bit:
    /// 0.833 ns per byte), with 16 KiB flash pages and two planes per die. tR = 50 us senses one
    /// 16 KiB page; tPROG = 500 us programs one 16 KiB page on each plane of the die at once (a
    /// multi-plane program). Typical datasheet ranges of 64-96 layer 3D TLC are tR 45-70 us and
    /// tPROG 450-700 us; these are values inside them, not one part's datasheet: an assumption.
    /// tBERS of such a part is ~3.5 ms for a block of tens of MiB; the model's blocks are 1 MiB
    /// (64 flash pages), so the erase is scaled by the block size to keep the erase time per
    /// byte reclaimed: 220 us (an assumption too).
    pub fn tlc_nvme() -> Timing {
        Timing {
            read_ns: 50_000,
            program_ns: 500_000,
            erase_ns: 220_000,
            transfer_ps_per_byte: 833,
            command_ns: 100,
        }
    }

    /// A 2011-era 25 nm MLC die (IMFT's 64 Gb parts of the Intel 320 generation) behind an
    /// ONFI 2.x bus (166 MT/s, 8 bit: 6 ns per byte), with 8 KiB flash pages and two planes per
    /// die: tR ~ 50 us senses one 8 KiB page and one ~1.3 ms tPROG programs an 8 KiB page on
    /// both planes (a two-plane program); a 2 MiB block erases in ~3 ms, scaled to the model's
    /// 1 MiB blocks (128 flash pages) over two planes: 750 us. Typical datasheet ranges of the
    /// era, not one part's datasheet: an assumption.
    pub fn mlc_sata_2011() -> Timing {
        Timing {
            read_ns: 50_000,
            program_ns: 1_300_000,
            erase_ns: 750_000,
            transfer_ps_per_byte: 6_000,
            command_ns: 200,
        }
    }

    /// Channel time to move `bytes` plus the command cycles.
    #[inline]
    pub fn transfer_ns(&self, bytes: u32) -> u64 {
        self.command_ns + (bytes as u64 * self.transfer_ps_per_byte).div_ceil(1000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k9lag_page_transfer_matches_datasheet() {
        let t = Timing::k9lag08u0m();
        assert_eq!(t.transfer_ns(2048) - t.command_ns, 7_680);
    }

    #[test]
    fn tlc_transfer_of_a_16k_page_on_a_1200_mts_bus() {
        let t = Timing::tlc_nvme();
        assert_eq!(t.transfer_ns(16384) - t.command_ns, 13_648);
    }
}
