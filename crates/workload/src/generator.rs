//! The synthetic operation stream: which command comes next and where it goes.

use crate::config::{AccessPattern, WorkloadConfig};
use rand::Rng;
use rand_distr::{Distribution, Zipf};
use trimlab_device::{ByteRange, Command, CommandKind};
use trimlab_sim::SimRng;

/// One request the generator draws: a READ, WRITE or TRIM of `bytes` at `offset` (never a
/// FLUSH: the runner adds those). The runner turns it into a `Command` with its data tags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Op {
    pub kind: CommandKind,
    pub offset: u64,
    pub bytes: u64,
}

impl Op {
    /// The command that carries this request; a WRITE's pages get the tags from `tag` on.
    pub fn command(self, tag: u64) -> Command {
        let (offset, bytes) = (self.offset, self.bytes);
        match self.kind {
            CommandKind::Read => Command::Read { offset, bytes },
            CommandKind::Write => Command::Write { offset, bytes, tag },
            CommandKind::Trim => Command::Trim { ranges: vec![ByteRange { offset, bytes }] },
            CommandKind::Flush => Command::Flush,
        }
    }
}

/// Chooses slots (block-sized pieces of the region) under one access pattern.
struct Addresser {
    pattern: AccessPattern,
    slots: u64,
    hot_slots: u64,
    hot_access: f64,
    zipf: Option<Zipf<f64>>,
    scatter_multiplier: u64,
    cursor: u64,
}

impl Addresser {
    fn new(config: &WorkloadConfig, slots: u64) -> Self {
        let zipf = (config.pattern == AccessPattern::Zipf)
            .then(|| Zipf::new(slots, config.zipf_theta).expect("validated: slots >= 1, theta > 0"));
        Addresser {
            pattern: config.pattern,
            slots,
            hot_slots: ((slots as f64 * config.hot_fraction).round() as u64).clamp(1, slots.max(2) - 1),
            hot_access: config.hot_access,
            zipf,
            scatter_multiplier: coprime_multiplier(slots),
            cursor: 0,
        }
    }

    #[inline]
    fn next(&mut self, rng: &mut SimRng) -> u64 {
        match self.pattern {
            AccessPattern::Sequential => {
                let slot = self.cursor;
                self.cursor = if self.cursor + 1 == self.slots { 0 } else { self.cursor + 1 };
                slot
            }
            AccessPattern::UniformRandom => rng.gen_range(0..self.slots),
            AccessPattern::HotCold => {
                if self.slots < 2 {
                    0
                } else if rng.gen_bool(self.hot_access) {
                    rng.gen_range(0..self.hot_slots)
                } else {
                    rng.gen_range(self.hot_slots..self.slots)
                }
            }
            AccessPattern::Zipf => {
                let rank = self.zipf.as_ref().map_or(1.0, |z| z.sample(rng)) as u64;
                // Scatter ranks over the region so popular pages are not all adjacent.
                ((rank - 1) as u128 * self.scatter_multiplier as u128 % self.slots as u128) as u64
            }
        }
    }
}

/// A multiplier coprime with `n`, so x -> x * m mod n is a permutation.
fn coprime_multiplier(n: u64) -> u64 {
    if n <= 2 {
        return 1;
    }
    let gcd = |mut a: u64, mut b: u64| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    let mut m = (0x9E37_79B9_7F4A_7C15u64 % n).max(2);
    while gcd(m, n) != 1 {
        m += 1;
    }
    m
}

pub struct Generator {
    region_offset: u64,
    block_bytes: u64,
    trim_bytes: u64,
    read_fraction: f64,
    trim_fraction: f64,
    blocks: Addresser,
    trims: Addresser,
    mix_rng: SimRng,
    address_rng: SimRng,
}

impl Generator {
    /// `config` must have been validated against this capacity.
    pub fn new(config: &WorkloadConfig, capacity_bytes: u64, mix_rng: SimRng, address_rng: SimRng) -> Self {
        let (region_offset, region_bytes) = config.region(capacity_bytes);
        let block_bytes = config.block_bytes.0;
        let trim_bytes = config.trim_bytes.unwrap_or(config.block_bytes).0;
        Generator {
            region_offset,
            block_bytes,
            trim_bytes,
            read_fraction: config.read_fraction,
            trim_fraction: config.trim_fraction,
            blocks: Addresser::new(config, region_bytes / block_bytes),
            trims: Addresser::new(config, region_bytes / trim_bytes),
            mix_rng,
            address_rng,
        }
    }

    #[inline]
    pub fn next_op(&mut self) -> Op {
        let kind = if self.read_fraction == 0.0 && self.trim_fraction == 0.0 {
            CommandKind::Write
        } else {
            let x: f64 = self.mix_rng.gen();
            if x < self.trim_fraction {
                CommandKind::Trim
            } else if x < self.trim_fraction + self.read_fraction {
                CommandKind::Read
            } else {
                CommandKind::Write
            }
        };
        match kind {
            CommandKind::Trim => {
                let slot = self.trims.next(&mut self.address_rng);
                Op { kind, offset: self.region_offset + slot * self.trim_bytes, bytes: self.trim_bytes }
            }
            _ => {
                let slot = self.blocks.next(&mut self.address_rng);
                Op { kind, offset: self.region_offset + slot * self.block_bytes, bytes: self.block_bytes }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trimlab_sim::SeedTree;

    fn generator(config: &WorkloadConfig, capacity: u64) -> Generator {
        let seeds = SeedTree::new(1);
        Generator::new(config, capacity, seeds.fork("mix"), seeds.fork("addr"))
    }

    #[test]
    fn sequential_wraps_inside_the_region() {
        let c = WorkloadConfig {
            pattern: AccessPattern::Sequential,
            region_offset: trimlab_sim::ByteSize(8192),
            region_bytes: Some(trimlab_sim::ByteSize(3 * 4096)),
            ..Default::default()
        };
        let mut g = generator(&c, 1 << 20);
        let offsets: Vec<_> = (0..4).map(|_| g.next_op().offset).collect();
        assert_eq!(offsets, vec![8192, 12288, 16384, 8192]);
    }

    #[test]
    fn mix_fractions_are_respected() {
        let c = WorkloadConfig { read_fraction: 0.3, trim_fraction: 0.1, ..Default::default() };
        let mut g = generator(&c, 1 << 30);
        let n = 100_000;
        let (mut reads, mut trims) = (0, 0);
        for _ in 0..n {
            match g.next_op().kind {
                CommandKind::Read => reads += 1,
                CommandKind::Trim => trims += 1,
                CommandKind::Write | CommandKind::Flush => {}
            }
        }
        assert!((reads as f64 / n as f64 - 0.3).abs() < 0.01);
        assert!((trims as f64 / n as f64 - 0.1).abs() < 0.01);
    }

    #[test]
    fn hot_cold_sends_most_operations_to_the_hot_share() {
        let c = WorkloadConfig {
            pattern: AccessPattern::HotCold,
            hot_fraction: 0.2,
            hot_access: 0.8,
            ..Default::default()
        };
        let capacity = 1u64 << 30;
        let mut g = generator(&c, capacity);
        let hot_end = capacity / 5;
        let hot = (0..50_000).filter(|_| g.next_op().offset < hot_end).count();
        assert!((hot as f64 / 50_000.0 - 0.8).abs() < 0.01, "{hot}");
    }

    #[test]
    fn zipf_is_skewed_and_stays_in_range() {
        let c = WorkloadConfig { pattern: AccessPattern::Zipf, zipf_theta: 1.2, ..Default::default() };
        let capacity = 1u64 << 26;
        let mut g = generator(&c, capacity);
        let mut counts = std::collections::BTreeMap::new();
        for _ in 0..20_000 {
            let op = g.next_op();
            assert!(op.offset + op.bytes <= capacity);
            *counts.entry(op.offset).or_insert(0u32) += 1;
        }
        let top = counts.values().copied().max().unwrap();
        assert!(top > 1_000, "most popular page drew only {top} of 20000");
    }
}
