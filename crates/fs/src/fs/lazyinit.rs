//! ext4lazyinit's clock: when the thread that zeroes the unused inode tables after mount
//! starts, and how long it sleeps between groups (Linux 6.18 fs/ext4/super.c).
//!
//! * Start: `ext4_register_li_request` -> `ext4_li_request_new` sets `lr_next_sched` to
//!   `jiffies + get_random_u32_below(EXT4_DEF_LI_MAX_START_DELAY * HZ)`: uniform over whole
//!   jiffies below 5 s, a new draw at every mount that finds tables to zero. The recordings'
//!   first zeroing came 1.0, 2.5 and 4.6 s after mount (ext4-nodiscard-large-rm). The model
//!   draws it from the mkfs hash seed (`set_hash_seed`, the run's seeded `mkfs.hash_seed`
//!   stream), so `--seed` samples mounts as the kernel's runs do.
//! * Pace: `ext4_run_li_request` zeroes one group (`ext4_init_inode_table`), and while
//!   `lr_timeout` is 0 it measures that zeroing and sets `lr_timeout =
//!   nsecs_to_jiffies(elapsed * EXT4_DEF_LI_WAIT_MULT)` (10): whole jiffies, rounded down, kept
//!   once non-zero; the next group is due `lr_timeout` after the zeroing. A zeroing under 0.4
//!   ms (1/10 of a 4 ms jiffy) leaves it 0, and the groups go back to back (the recordings
//!   show both: 8 ms apart in two runs, 0.3 ms in one).

use super::*;

/// EXT4_DEF_LI_MAX_START_DELAY (5 s), in jiffies of HZ = 250 (Debian's CONFIG_HZ, as
/// btrfs_async::TICK): 1250 draws of 4 ms.
const START_DELAY_JIFFIES: u64 = 5 * HZ;
const HZ: u64 = 250;
const JIFFY_NS: u64 = 1_000_000_000 / HZ;
/// EXT4_DEF_LI_WAIT_MULT: the sleep between groups is this many times the last zeroing.
const WAIT_MULT: u64 = 10;

/// ext4lazyinit's request (`struct ext4_li_request`): its timeout and how many start delays
/// it has drawn.
#[derive(Default)]
pub(super) struct LazyInitClock {
    /// `lr_timeout`: 0 until a zeroing took long enough to give a whole jiffy.
    timeout_ns: u64,
    /// The mounts that registered a request so far (each draws a new start delay).
    draws: u64,
    /// A registration whose start delay is drawn when the event comes (after `set_hash_seed`).
    registering: bool,
}

/// splitmix64: one well-mixed draw from a seed and a counter.
fn mix(seed: u64, n: u64) -> u64 {
    let mut z = seed.wrapping_add(n.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The start delay of the `draw`-th registration under `seed`: whole jiffies below 5 s.
fn start_delay_ns(seed: u64, draw: u64) -> u64 {
    mix(seed, draw) % START_DELAY_JIFFIES * JIFFY_NS
}

impl<D: BlockDevice> FileSystem<D> {
    /// A mount registers the lazyinit request (mkfs' first mount, or a mount that finds
    /// tables left to zero): the start delay is drawn when the event runs, at the same time,
    /// so that the run's hash seed, set just after mkfs, decides it.
    pub(super) fn lazy_init_register(&mut self, now: SimTime) {
        if let Some(ext4) = self.layout_fs.ext4_mut() {
            ext4.lazy_init.registering = true;
            ext4.lazy_init.timeout_ns = 0;
            self.events.push(now, Ev::LazyInit);
        }
    }

    /// ext4lazyinit (ext4_init_inode_table): zero the unused part of one group's inode table
    /// with sb_issue_zeroout (a hole punch, i.e. a TRIM, on a loop or NBD device), then sleep
    /// `lr_timeout` before the next group.
    pub(super) fn lazy_init_step(&mut self, t: SimTime) {
        let seed = self.inode_groups.hash_seed;
        let Some(ext4) = self.layout_fs.ext4_mut() else { return };
        let Some(g) = ext4.lazy_init_group else { return };
        if std::mem::take(&mut ext4.lazy_init.registering) {
            let delay = start_delay_ns(seed, ext4.lazy_init.draws);
            ext4.lazy_init.draws += 1;
            self.events.push(t.after(delay), Ev::LazyInit);
            return;
        }
        let bs = self.config.block_bytes;
        let used = self.layout.itable_used_blocks(g, bs, self.config.inode_bytes);
        let run = Run::new(self.layout.itable_start(g) + used, self.layout.itable_blocks - used);
        let mut done = t;
        if run.len > 0 {
            self.zeroing = Zeroing::ItableInit;
            for req in self.trim_requests(run) {
                done = done.max(self.dev_submit(t, &req, None));
                self.stats.itable_init_commands += 1;
            }
            self.zeroing = Zeroing::No;
        }
        let done = done.after(self.config.host.complete_ns);
        let next = Some(g + 1).filter(|n| *n < self.layout.groups);
        let Some(ext4) = self.layout_fs.ext4_mut() else { return };
        ext4.lazy_init_group = next;
        let clock = &mut ext4.lazy_init;
        if clock.timeout_ns == 0 {
            clock.timeout_ns = WAIT_MULT * done.since(t) / JIFFY_NS * JIFFY_NS;
        }
        if next.is_some() {
            self.events.push(done.after(clock.timeout_ns), Ev::LazyInit);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_delays_are_whole_jiffies_spread_below_five_seconds() {
        let d: Vec<u64> = (0..200).map(|seed| start_delay_ns(seed * 7919, 0)).collect();
        assert!(d.iter().all(|&x| x < 5_000_000_000 && x % JIFFY_NS == 0), "{d:?}");
        let (lo, hi) = (*d.iter().min().unwrap(), *d.iter().max().unwrap());
        assert!(lo < 500_000_000 && hi > 4_500_000_000, "not spread over [0, 5 s): {lo}..{hi}");
        assert_ne!(start_delay_ns(1, 0), start_delay_ns(1, 1), "a remount draws again");
    }
}
