//! Seeded random streams: one `--seed` forked into an independent stream per purpose.
//!
//! Forking by name (not by order of creation) means adding a new random purpose never shifts
//! the numbers an existing purpose draws, so old seeds keep replaying the same runs.

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

/// The generator every simulation component uses: fast, small state, good statistical quality.
pub type SimRng = Xoshiro256PlusPlus;

/// The root of a run's randomness.
#[derive(Clone, Copy, Debug)]
pub struct SeedTree {
    seed: u64,
}

impl SeedTree {
    pub fn new(seed: u64) -> Self {
        SeedTree { seed }
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// An independent stream for `purpose` (e.g. "workload.address", "workload.mix").
    pub fn fork(&self, purpose: &str) -> SimRng {
        SimRng::seed_from_u64(splitmix64(self.seed ^ fnv1a(purpose.as_bytes())))
    }

    /// A child tree, for a component that forks streams of its own (e.g. one per experiment point).
    pub fn child(&self, purpose: &str) -> SeedTree {
        SeedTree { seed: splitmix64(self.seed.wrapping_add(fnv1a(purpose.as_bytes()))) }
    }
}

/// FNV-1a: a fixed, platform-independent string hash (std's hasher is randomly keyed).
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    for &b in bytes {
        hash ^= b as u64;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// SplitMix64 finaliser: spreads nearby seeds far apart.
fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn same_seed_and_purpose_same_stream() {
        let a: Vec<u64> = (0..4)
            .map({
                let mut r = SeedTree::new(7).fork("x");
                move |_| r.gen()
            })
            .collect();
        let b: Vec<u64> = (0..4)
            .map({
                let mut r = SeedTree::new(7).fork("x");
                move |_| r.gen()
            })
            .collect();
        assert_eq!(a, b);
    }

    #[test]
    fn purposes_and_seeds_differ() {
        let x: u64 = SeedTree::new(7).fork("x").gen();
        let y: u64 = SeedTree::new(7).fork("y").gen();
        let z: u64 = SeedTree::new(8).fork("x").gen();
        assert_ne!(x, y);
        assert_ne!(x, z);
    }
}
