//! NAND operation timing, from datasheets, and the presets' values.

use serde::{Deserialize, Serialize};

/// Latencies of one NAND die and its channel. Durations in nanoseconds; the bus rate in
/// picoseconds per byte so that slow and fast buses both stay integer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timing {
    /// Array-to-register read (tR).
    pub read_ns: u64,
    /// Register-to-array program (tPROG).
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

    /// A representative 2020s 3D TLC die behind an ONFI 4.x / Toggle 4.0 bus (1200 MT/s, 8 bit),
    /// expressed per 4 KiB mapping unit. Such a die senses a page in tR ~ 50 us, but programs four
    /// planes of 16 KiB pages in one ~700 us tPROG and erases blocks of tens of MiB in ~3-5 ms.
    /// The model maps and programs 4 KiB units one at a time, so program time is the die's
    /// per-4 KiB share (700 us / 16 = 44 us) and erase is scaled the same way (3.5 ms over a
    /// 1 MiB block of 256 units instead of a 16 MiB one: ~220 us); reads keep the full tR
    /// because a random 4 KiB read pays it whole. These are typical datasheet ranges, not one
    /// part's datasheet.
    pub fn tlc_nvme() -> Timing {
        Timing {
            read_ns: 50_000,
            program_ns: 44_000,
            erase_ns: 220_000,
            transfer_ps_per_byte: 833,
            command_ns: 100,
        }
    }

    /// A 2011-era 2x-nm MLC die behind an ONFI 2.x bus (166 MT/s, 8 bit: 6 ns per byte), per
    /// 4 KiB mapping unit: such a die senses an 8 KiB page in tR ~ 50 us and programs two planes
    /// of 8 KiB pages in one ~1.3 ms tPROG (4 units: 325 us each), erasing 2 MiB blocks in ~3 ms
    /// (scaled to the model's 1 MiB blocks over two planes: 750 us). Typical datasheet ranges of
    /// the era, not one part's datasheet: an assumption.
    pub fn mlc_sata_2011() -> Timing {
        Timing {
            read_ns: 50_000,
            program_ns: 325_000,
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
    fn mlc_2011_unit_program_is_a_quarter_of_a_two_plane_8k_program() {
        assert_eq!(Timing::mlc_sata_2011().program_ns * 4, 1_300_000);
    }
}
