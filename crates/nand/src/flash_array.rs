//! The flash array as resources in time: each die and each channel is busy until some instant,
//! and an operation starts when everything it needs is free (first come, first served).
//!
//! Reserving resources when an operation is issued, instead of scheduling one event per NAND
//! step, keeps the simulator O(1) per page while still showing striping, die collisions and GC
//! interference in latency. Operations are issued in non-decreasing simulated time by the
//! layers above, so reservation order equals arrival order.
//!
//! NAND operations work on flash pages (`Geometry::flash_page_bytes`): one tR senses a flash
//! page into the die's page register, from which any of its pages (mapping units) cross the
//! channel; one tPROG programs a whole flash page, or one flash page on each of several planes
//! of a die (a multi-plane program). Write pointers count pages (slots), so a flash page
//! program moves its block's pointer by `pages_per_flash_page`.

use crate::address::{BlockId, Ppa};
use crate::geometry::Geometry;
use crate::timing::Timing;
use serde::Serialize;
use trimlab_sim::SimTime;

/// What the array has done since it was built.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FlashCounters {
    /// Pages (mapping units) moved from a die to the controller.
    pub pages_read: u64,
    /// Page slots programmed, including slots a partly filled flash page was padded with.
    pub pages_programmed: u64,
    pub blocks_erased: u64,
    /// Sum over dies of the time each spent reading, programming or erasing (incl. transfers).
    pub die_busy_ns: u64,
    /// Flash pages sensed (tR): one per flash page however many of its pages were read.
    pub flash_pages_read: u64,
    /// Flash pages programmed; a multi-plane program counts one per plane.
    pub flash_pages_programmed: u64,
    /// tPROGs: programs of one flash page or of a multi-plane group.
    pub program_operations: u64,
}

pub struct FlashArray {
    geometry: Geometry,
    timing: Timing,
    unit_transfer_ns: u64,
    flash_page_transfer_ns: u64,
    /// tPROG's share for one page (mapping unit), for FTLs that program unit by unit.
    unit_program_ns: u64,
    /// tPROG's share for one plane of a multi-plane program over all planes of a die.
    plane_share_program_ns: u64,
    /// log2 of the pages per flash page (a power of two): shifts and masks, not divisions, on
    /// the hot paths.
    units_shift: u32,
    die_free: Vec<SimTime>,
    channel_free: Vec<SimTime>,
    /// The flash page each die's page register holds, with the instant the read that sensed it
    /// was issued: pages of that flash page read at the same instant (one command, one GC copy)
    /// cross the channel without a second tR. Any other operation on the die clears it.
    register: Vec<(u32, SimTime)>,
    /// Next programmable page of each block: NAND pages are programmed in order, once per erase.
    next_page: Vec<u32>,
    erase_count: Vec<u32>,
    /// Die and channel of every block, precomputed: the address arithmetic's divisions were the
    /// hottest instructions of GC-heavy runs.
    die_of_block: Vec<u32>,
    channel_of_die: Vec<u32>,
    counters: FlashCounters,
}

const NO_PAGE: (u32, SimTime) = (u32::MAX, SimTime::ZERO);

impl FlashArray {
    /// `geometry` must have been validated.
    pub fn new(geometry: Geometry, timing: Timing) -> Self {
        let unit_transfer_ns = timing.transfer_ns(geometry.page_bytes);
        let flash_page_transfer_ns = timing.transfer_ns(geometry.flash_page_bytes);
        let unit_program_ns = timing.program_ns / geometry.pages_per_flash_page() as u64;
        let plane_share_program_ns = timing.program_ns / geometry.planes_per_die.max(1) as u64;
        let units_shift = geometry.pages_per_flash_page().trailing_zeros();
        let die_of_block = (0..geometry.block_count())
            .map(|b| geometry.die_of_plane(geometry.plane_of(BlockId(b as u32))) as u32)
            .collect();
        let channel_of_die = (0..geometry.die_count()).map(|d| geometry.channel_of_die(d) as u32).collect();
        FlashArray {
            die_of_block,
            channel_of_die,
            die_free: vec![SimTime::ZERO; geometry.die_count()],
            channel_free: vec![SimTime::ZERO; geometry.channels as usize],
            register: vec![NO_PAGE; geometry.die_count()],
            next_page: vec![0; geometry.block_count()],
            erase_count: vec![0; geometry.block_count()],
            counters: FlashCounters::default(),
            unit_transfer_ns,
            flash_page_transfer_ns,
            unit_program_ns,
            plane_share_program_ns,
            units_shift,
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

    /// Whether the slot `ppa` has been programmed since its block's last erase.
    #[inline]
    pub fn is_programmed(&self, ppa: Ppa) -> bool {
        self.geometry.page_in_block(ppa) < self.next_page[self.geometry.block_of(ppa).index()]
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

    /// Reads one page (mapping unit) to the controller: tR senses its flash page on the die
    /// (unless a read issued at the same instant already holds that flash page in the die's
    /// register), then the page crosses the channel. Returns when the data is in controller
    /// memory.
    #[inline]
    pub fn read(&mut self, now: SimTime, ppa: Ppa) -> SimTime {
        self.read_pages(now, ppa, 1)
    }

    /// Reads `pages` pages of the flash page holding `ppa` with one tR: a GC copy reads each
    /// flash page once for all its valid pages. Only the pages read cross the channel.
    #[inline]
    pub fn read_pages(&mut self, now: SimTime, ppa: Ppa, pages: u32) -> SimTime {
        let block = self.geometry.block_of(ppa);
        debug_assert!(
            self.geometry.page_in_block(ppa) < self.next_page[block.index()],
            "flash_array: read of unprogrammed page {ppa:?}"
        );
        let (die, channel) = self.die_and_channel(block);
        let flash_page = ppa.0 >> self.units_shift;
        let sensed = if self.register[die] == (flash_page, now) {
            now.max(self.die_free[die])
        } else {
            self.register[die] = (flash_page, now);
            self.counters.flash_pages_read += 1;
            now.max(self.die_free[die]).after(self.timing.read_ns)
        };
        let start = sensed.max(self.channel_free[channel]);
        let done = start
            .after(self.timing.command_ns + pages as u64 * (self.unit_transfer_ns - self.timing.command_ns));
        self.channel_free[channel] = done;
        // The die's page register holds the data until it has crossed the channel.
        self.counters.die_busy_ns += done.since(now.max(self.die_free[die]));
        self.die_free[die] = done;
        self.counters.pages_read += pages as u64;
        done
    }

    /// Programs whole flash pages with one tPROG: `firsts` are the first slots of one flash
    /// page on each of one or more planes of the same die, each the next flash page of its
    /// block. The pages cross the channel one after the other, then the die programs them
    /// together (a multi-plane program when there are several). Returns when they are durable.
    pub fn program_flash_pages(&mut self, now: SimTime, firsts: &[Ppa]) -> SimTime {
        self.program_flash_pages_for(now, firsts, self.timing.program_ns)
    }

    /// Programs one flash page as one plane's part of a multi-plane program over `planes`
    /// planes: the die is busy for `program_ns / planes`. For GC, which the model runs plane by
    /// plane where firmware collects whole superblocks and programs their copies multi-plane
    /// (an assumption): a copied page costs what it would in such a program.
    pub fn program_flash_page_share(&mut self, now: SimTime, first: Ppa, planes: u32) -> SimTime {
        let (die, channel) = self.advance_flash_page(first);
        // The share of a die's own planes is computed once (a 64-bit division per GC flash page
        // was a tenth of this function's time).
        let program_ns = match planes == self.geometry.planes_per_die {
            true => self.plane_share_program_ns,
            false => self.timing.program_ns / planes.max(1) as u64,
        };
        self.program_on(now, die, channel, 1, program_ns)
    }

    fn program_flash_pages_for(&mut self, now: SimTime, firsts: &[Ppa], program_ns: u64) -> SimTime {
        let Some((&head, others)) = firsts.split_first() else {
            return now;
        };
        let (die, channel) = self.advance_flash_page(head);
        for &first in others {
            assert!(
                self.advance_flash_page(first) == (die, channel),
                "flash_array: a multi-plane program spans dies ({firsts:?})"
            );
        }
        self.program_on(now, die, channel, firsts.len() as u64, program_ns)
    }

    /// Moves the write pointer of the block holding `first` past that flash page, which must
    /// be the block's next one. Returns the block's die and channel.
    #[inline]
    fn advance_flash_page(&mut self, first: Ppa) -> (usize, usize) {
        let units = 1u32 << self.units_shift;
        let block = self.geometry.block_of(first);
        let page = self.geometry.page_in_block(first);
        let expected = &mut self.next_page[block.index()];
        if page != *expected || page & (units - 1) != 0 {
            out_of_order_program(page, block, *expected);
        }
        *expected += units;
        self.die_and_channel(block)
    }

    /// `flash_pages` flash pages of one die cross its channel one after the other, then the die
    /// programs them with one tPROG of `program_ns`. Returns when they are durable.
    #[inline]
    fn program_on(
        &mut self,
        now: SimTime,
        die: usize,
        channel: usize,
        flash_pages: u64,
        program_ns: u64,
    ) -> SimTime {
        let start = now.max(self.die_free[die]).max(self.channel_free[channel]);
        let transferred = start.after(flash_pages * self.flash_page_transfer_ns);
        self.channel_free[channel] = transferred;
        let done = transferred.after(program_ns);
        self.counters.die_busy_ns += done.since(start);
        self.die_free[die] = done;
        self.register[die] = NO_PAGE;
        self.counters.pages_programmed += flash_pages << self.units_shift;
        self.counters.flash_pages_programmed += flash_pages;
        self.counters.program_operations += 1;
        done
    }

    /// Programs one page (mapping unit) on its own, the next of its block: the page crosses the
    /// channel, then the die is busy for tPROG's share of one page
    /// (`program_ns / pages_per_flash_page`). For FTLs that program unit by unit (the hybrid
    /// FAST FTL, built for 004's drive where a page is a flash page and this is exact). Returns
    /// when the page is durable.
    #[inline]
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
        let transferred = start.after(self.unit_transfer_ns);
        self.channel_free[channel] = transferred;
        let done = transferred.after(self.unit_program_ns);
        self.counters.die_busy_ns += done.since(start);
        self.die_free[die] = done;
        self.register[die] = NO_PAGE;
        self.counters.pages_programmed += 1;
        if (page + 1) & ((1 << self.units_shift) - 1) == 0 {
            self.counters.flash_pages_programmed += 1;
            self.counters.program_operations += 1;
        }
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

    /// Erases a block. Returns when the die is done.
    pub fn erase(&mut self, now: SimTime, block: BlockId) -> SimTime {
        let (die, channel) = self.die_and_channel(block);
        let start = now.max(self.die_free[die]).max(self.channel_free[channel]);
        self.channel_free[channel] = start.after(self.timing.command_ns);
        let done = start.after(self.timing.command_ns + self.timing.erase_ns);
        self.counters.die_busy_ns += done.since(start);
        self.die_free[die] = done;
        self.register[die] = NO_PAGE;
        self.next_page[block.index()] = 0;
        self.erase_count[block.index()] += 1;
        self.counters.blocks_erased += 1;
        done
    }
}

/// The panic of `FlashArray::advance_flash_page`, out of line: its message formatting gave the
/// hot function a stack frame on every program (profiled: a seventh of its samples on the frame
/// set-up).
#[cold]
#[inline(never)]
fn out_of_order_program(page: u32, block: BlockId, expected: u32) -> ! {
    panic!("flash_array: out-of-order program of flash page at slot {page} in {block:?}, next is {expected}")
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
            flash_page_bytes: 2048,
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

    fn tlc(planes: u32) -> FlashArray {
        let g = Geometry {
            channels: 1,
            chips_per_channel: 1,
            dies_per_chip: 1,
            planes_per_die: planes,
            blocks_per_plane: 4,
            pages_per_block: 16,
            page_bytes: 4096,
            flash_page_bytes: 16384,
        };
        g.validate().unwrap();
        FlashArray::new(g, Timing::tlc_nvme())
    }

    #[test]
    fn a_multi_plane_program_costs_one_tprog_for_every_plane() {
        let t = Timing::tlc_nvme();
        let mut one = tlc(2);
        // Block 4 is the first block of plane 1, on the same die.
        let done = one.program_flash_pages(SimTime::ZERO, &[Ppa(0), Ppa(4 * 16)]);
        assert_eq!(done.ns(), 2 * t.transfer_ns(16384) + t.program_ns);
        assert_eq!(one.programmed_pages(BlockId(0)), 4);
        assert_eq!(one.programmed_pages(BlockId(4)), 4);
        let c = one.counters();
        assert_eq!((c.pages_programmed, c.flash_pages_programmed, c.program_operations), (8, 2, 1));
        // Two single-plane programs on one die take two tPROGs.
        let mut two = tlc(2);
        two.program_flash_pages(SimTime::ZERO, &[Ppa(0)]);
        let second = two.program_flash_pages(SimTime::ZERO, &[Ppa(4 * 16)]);
        assert_eq!(second.ns(), 2 * (t.transfer_ns(16384) + t.program_ns));
    }

    #[test]
    fn pages_of_one_flash_page_share_a_tr() {
        let t = Timing::tlc_nvme();
        let mut a = tlc(1);
        a.program_flash_pages(SimTime::ZERO, &[Ppa(0)]);
        let now = a.all_idle_at();
        let first = a.read(now, Ppa(0));
        let second = a.read(now, Ppa(1));
        assert_eq!(first.since(now), t.read_ns + t.transfer_ns(4096));
        assert_eq!(second.since(first), t.transfer_ns(4096), "no second tR");
        // A later command senses the page again.
        let again = a.read(second, Ppa(2));
        assert_eq!(again.since(second), t.read_ns + t.transfer_ns(4096));
        // A GC copy reads three pages of one flash page with one tR.
        let gc = a.read_pages(again, Ppa(1), 3);
        assert_eq!(gc.since(again), t.read_ns + t.command_ns + 3 * (t.transfer_ns(4096) - t.command_ns));
        assert_eq!(a.counters().flash_pages_read, 3);
        assert_eq!(a.counters().pages_read, 6);
    }

    #[test]
    #[should_panic(expected = "out-of-order program of flash page")]
    fn flash_page_programs_start_on_a_flash_page() {
        let mut a = tlc(1);
        a.program(SimTime::ZERO, Ppa(0));
        a.program_flash_pages(SimTime::ZERO, &[Ppa(1)]);
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
