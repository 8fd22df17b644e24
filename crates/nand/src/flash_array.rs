//! The flash array as resources in time: each die and each channel is busy until some instant,
//! and an operation starts when everything it needs is free (first come, first served).
//!
//! Reserving resources when an operation is issued, instead of scheduling one event per NAND
//! step, keeps the simulator O(1) per page while still showing striping, die collisions and GC
//! interference in latency. Operations are issued in non-decreasing simulated time by the
//! layers above, so reservation order equals arrival order.

use crate::address::{BlockId, Ppa};
use crate::geometry::Geometry;
use crate::timing::Timing;
use serde::Serialize;
use trimlab_sim::SimTime;

/// What the array has done since it was built.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FlashCounters {
    pub pages_read: u64,
    pub pages_programmed: u64,
    pub blocks_erased: u64,
    /// Sum over dies of the time each spent reading, programming or erasing (incl. transfers).
    pub die_busy_ns: u64,
}

pub struct FlashArray {
    geometry: Geometry,
    timing: Timing,
    page_transfer_ns: u64,
    die_free: Vec<SimTime>,
    channel_free: Vec<SimTime>,
    /// Next programmable page of each block: NAND pages are programmed in order, once per erase.
    next_page: Vec<u32>,
    erase_count: Vec<u32>,
    /// Die and channel of every block, precomputed: the address arithmetic's divisions were the
    /// hottest instructions of GC-heavy runs.
    die_of_block: Vec<u32>,
    channel_of_die: Vec<u32>,
    counters: FlashCounters,
}

impl FlashArray {
    /// `geometry` must have been validated.
    pub fn new(geometry: Geometry, timing: Timing) -> Self {
        let page_transfer_ns = timing.transfer_ns(geometry.page_bytes);
        let die_of_block = (0..geometry.block_count())
            .map(|b| geometry.die_of_plane(geometry.plane_of(BlockId(b as u32))) as u32)
            .collect();
        let channel_of_die = (0..geometry.die_count()).map(|d| geometry.channel_of_die(d) as u32).collect();
        FlashArray {
            die_of_block,
            channel_of_die,
            die_free: vec![SimTime::ZERO; geometry.die_count()],
            channel_free: vec![SimTime::ZERO; geometry.channels as usize],
            next_page: vec![0; geometry.block_count()],
            erase_count: vec![0; geometry.block_count()],
            counters: FlashCounters::default(),
            page_transfer_ns,
            geometry,
            timing,
        }
    }

    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    pub fn timing(&self) -> &Timing {
        &self.timing
    }

    pub fn counters(&self) -> &FlashCounters {
        &self.counters
    }

    pub fn erase_counts(&self) -> &[u32] {
        &self.erase_count
    }

    /// Pages programmed in `block` since its last erase.
    pub fn programmed_pages(&self, block: BlockId) -> u32 {
        self.next_page[block.index()]
    }

    #[inline]
    fn die_and_channel(&self, block: BlockId) -> (usize, usize) {
        let die = self.die_of_block[block.index()] as usize;
        (die, self.channel_of_die[die] as usize)
    }

    /// The instant the die holding `block` finishes everything queued on it.
    pub fn die_free_at(&self, block: BlockId) -> SimTime {
        self.die_free[self.die_and_channel(block).0]
    }

    /// The latest instant any die or channel is busy until.
    pub fn all_idle_at(&self) -> SimTime {
        let dies = self.die_free.iter().copied().max().unwrap_or(SimTime::ZERO);
        let channels = self.channel_free.iter().copied().max().unwrap_or(SimTime::ZERO);
        dies.max(channels)
    }

    /// Reads a page to the controller: tR on the die, then the data crosses the channel.
    /// Returns when the data is in controller memory.
    pub fn read(&mut self, now: SimTime, ppa: Ppa) -> SimTime {
        let block = self.geometry.block_of(ppa);
        debug_assert!(
            self.geometry.page_in_block(ppa) < self.next_page[block.index()],
            "flash_array: read of unprogrammed page {ppa:?}"
        );
        let (die, channel) = self.die_and_channel(block);
        let sensed = now.max(self.die_free[die]).after(self.timing.read_ns);
        let start = sensed.max(self.channel_free[channel]);
        let done = start.after(self.page_transfer_ns);
        self.channel_free[channel] = done;
        // The die's page register holds the data until it has crossed the channel.
        self.counters.die_busy_ns += done.since(now.max(self.die_free[die]));
        self.die_free[die] = done;
        self.counters.pages_read += 1;
        done
    }

    /// Programs the next page of its block: data crosses the channel, then tPROG on the die.
    /// Returns when the page is durable.
    pub fn program(&mut self, now: SimTime, ppa: Ppa) -> SimTime {
        let block = self.geometry.block_of(ppa);
        let page = self.geometry.page_in_block(ppa);
        let expected = &mut self.next_page[block.index()];
        assert!(
            page == *expected,
            "flash_array: out-of-order program of page {page} in {block:?}, next is {expected}"
        );
        *expected += 1;
        let (die, channel) = self.die_and_channel(block);
        let start = now.max(self.die_free[die]).max(self.channel_free[channel]);
        let transferred = start.after(self.page_transfer_ns);
        self.channel_free[channel] = transferred;
        let done = transferred.after(self.timing.program_ns);
        self.counters.die_busy_ns += done.since(start);
        self.die_free[die] = done;
        self.counters.pages_programmed += 1;
        done
    }

    /// Programs `ppa`, which may lie beyond its block's next page: the pages skipped stay erased
    /// and can no longer be programmed before the next erase. MLC NAND forbids programming a
    /// block out of ascending order, not leaving gaps; a block-mapped FTL keeps page i of a
    /// logical block at page i of its data block and skips offsets that hold no data.
    pub fn program_skipping(&mut self, now: SimTime, ppa: Ppa) -> SimTime {
        let block = self.geometry.block_of(ppa);
        let page = self.geometry.page_in_block(ppa);
        let expected = self.next_page[block.index()];
        assert!(
            page >= expected,
            "flash_array: out-of-order program of page {page} in {block:?}, next is {expected}"
        );
        self.next_page[block.index()] = page;
        self.program(now, ppa)
    }

    /// Moves a valid page during garbage collection: read to the controller (where ECC checks
    /// it) and program it into `dst` on the same die.
    pub fn copy(&mut self, now: SimTime, src: Ppa, dst: Ppa) -> SimTime {
        let read_done = self.read(now, src);
        self.program(read_done, dst)
    }

    /// Erases a block. Returns when the die is done.
    pub fn erase(&mut self, now: SimTime, block: BlockId) -> SimTime {
        let (die, channel) = self.die_and_channel(block);
        let start = now.max(self.die_free[die]).max(self.channel_free[channel]);
        self.channel_free[channel] = start.after(self.timing.command_ns);
        let done = start.after(self.timing.command_ns + self.timing.erase_ns);
        self.counters.die_busy_ns += done.since(start);
        self.die_free[die] = done;
        self.next_page[block.index()] = 0;
        self.erase_count[block.index()] += 1;
        self.counters.blocks_erased += 1;
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn array(channels: u32) -> FlashArray {
        let g = Geometry {
            channels,
            chips_per_channel: 1,
            dies_per_chip: 1,
            planes_per_die: 1,
            blocks_per_plane: 4,
            pages_per_block: 4,
            page_bytes: 2048,
        };
        g.validate().unwrap();
        FlashArray::new(g, Timing::k9lag08u0m())
    }

    #[test]
    fn program_costs_transfer_plus_tprog() {
        let mut a = array(1);
        let t = Timing::k9lag08u0m();
        let done = a.program(SimTime::ZERO, Ppa(0));
        assert_eq!(done.ns(), t.transfer_ns(2048) + t.program_ns);
    }

    #[test]
    fn same_die_serialises_different_channels_overlap() {
        let mut one = array(2);
        let first = one.program(SimTime::ZERO, Ppa(0));
        let second = one.program(SimTime::ZERO, Ppa(1));
        assert!(second > first, "same die must queue");
        // Block 4 is on plane 1 = die 1 = channel 1: runs in parallel with die 0.
        let other = one.program(SimTime::ZERO, Ppa(16));
        assert_eq!(other, first);
    }

    #[test]
    fn program_skipping_leaves_gaps_but_keeps_order() {
        let mut a = array(1);
        a.program_skipping(SimTime::ZERO, Ppa(2));
        assert_eq!(a.programmed_pages(BlockId(0)), 3);
        a.program(SimTime::ZERO, Ppa(3));
        assert_eq!(a.counters().pages_programmed, 2);
    }

    #[test]
    #[should_panic(expected = "out-of-order program")]
    fn program_skipping_refuses_going_back() {
        let mut a = array(1);
        a.program(SimTime::ZERO, Ppa(0));
        a.program(SimTime::ZERO, Ppa(1));
        a.program_skipping(SimTime::ZERO, Ppa(1));
    }

    #[test]
    #[should_panic(expected = "out-of-order program")]
    fn program_order_is_enforced() {
        let mut a = array(1);
        a.program(SimTime::ZERO, Ppa(1));
    }

    #[test]
    fn erase_resets_block_and_counts_wear() {
        let mut a = array(1);
        let t = a.program(SimTime::ZERO, Ppa(0));
        a.erase(t, BlockId(0));
        assert_eq!(a.programmed_pages(BlockId(0)), 0);
        assert_eq!(a.erase_counts()[0], 1);
        a.program(t, Ppa(0));
        assert_eq!(a.counters().pages_programmed, 2);
    }
}
