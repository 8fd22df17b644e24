//! Whether the forward and backward maps agree, held in two sequential passes.
//!
//! The full check (`PageFtl::check`, every quarter of a drive's work under `TRIMLAB_VERIFY`)
//! used to follow every forward entry into the backward map and every backward entry into the
//! forward map: two random reads per page, most of them cache misses, which made the check
//! three quarters of a verified run's time. Under an eager backward map the two maps agree
//! exactly when they hold the same set of (logical page, physical page) pairs, each being a
//! function of its own index. So each map's pairs are summed as a multiset fingerprint (a count
//! and a sum of a 64-bit mix of each pair), the forward map in one pass, the backward map block
//! by block as the check walks it. Two different pair sets give the same fingerprint with a
//! probability of about 2^-64 (a bug is not an adversary choosing pairs to collide); when the
//! fingerprints differ, the check walks the maps the exact way to name the first page that
//! disagrees.

use crate::page_map::NONE;

/// A set of (logical page, physical page) pairs, as a multiset fingerprint.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pairs {
    count: u64,
    sum: u64,
}

impl Pairs {
    /// The pairs of a block whose backward entries are `owners`, its first page `first_ppa`.
    /// Branch-free: about one page in five of a GC-steady block is invalid, at random, which a
    /// branch per page would mispredict.
    pub fn of_owners(owners: &[u32], first_ppa: u32) -> Pairs {
        let mut pairs = Pairs::default();
        for (page, &owner) in owners.iter().enumerate() {
            pairs.add_if(owner != NONE, owner, first_ppa + page as u32);
        }
        pairs
    }

    /// Adds the pair when `held`, without a branch (a map entry that is `NONE` adds nothing).
    #[inline]
    fn add_if(&mut self, held: bool, lpn: u32, ppa: u32) {
        self.count += held as u64;
        self.sum = self.sum.wrapping_add(pair_mix(lpn, ppa) & (held as u64).wrapping_neg());
    }

    /// One pair more (a lazy TRIM leaves a stale backward entry).
    #[inline]
    pub fn add(&mut self, lpn: u32, ppa: u32) {
        self.count += 1;
        self.sum = self.sum.wrapping_add(pair_mix(lpn, ppa));
    }

    /// One pair fewer (the stale entry reconciled).
    #[inline]
    pub fn remove(&mut self, lpn: u32, ppa: u32) {
        self.count -= 1;
        self.sum = self.sum.wrapping_sub(pair_mix(lpn, ppa));
    }

    pub fn count(&self) -> u64 {
        self.count
    }
}

impl std::ops::Add for Pairs {
    type Output = Pairs;
    fn add(mut self, other: Pairs) -> Pairs {
        self += other;
        self
    }
}

/// The forward map's pairs, or None when an entry points past the last of `physical_pages`
/// (the exact walk then names it).
pub fn forward_pairs(forward: &[u32], physical_pages: usize) -> Option<Pairs> {
    let mut pairs = Pairs::default();
    for (lpn, &ppa) in forward.iter().enumerate() {
        if ppa != NONE && ppa as usize >= physical_pages {
            return None;
        }
        pairs.add_if(ppa != NONE, lpn as u32, ppa);
    }
    Some(pairs)
}

/// The forward map's pairs per block of `pages_per_block` physical pages, or None when an
/// entry points past the last of `physical_pages`. Slower than [`forward_pairs`] (an add into a
/// random block's entry per page), so only a lazy map, whose blocks hold stale pairs, uses it.
pub fn forward_pairs_by_block(
    forward: &[u32],
    physical_pages: usize,
    pages_per_block: usize,
) -> Option<Vec<Pairs>> {
    let blocks = physical_pages.div_ceil(pages_per_block);
    // One slot past the last block takes the unmapped entries, so the loop has no branch on
    // them; it is dropped at the end.
    let mut pairs = vec![Pairs::default(); blocks + 1];
    let shift = pages_per_block.is_power_of_two().then(|| pages_per_block.trailing_zeros());
    let (mut run_block, mut run) = (blocks, Pairs::default());
    for (lpn, &ppa) in forward.iter().enumerate() {
        if ppa != NONE && ppa as usize >= physical_pages {
            return None;
        }
        let block = match (ppa == NONE, shift) {
            (true, _) => blocks,
            (false, Some(s)) => (ppa as usize) >> s,
            (false, None) => ppa as usize / pages_per_block,
        };
        // Consecutive logical pages often share a block (a sequential fill): summed in a
        // register until the block changes, not through memory, where each add would wait on
        // the store before it.
        if block != run_block {
            pairs[run_block] += run;
            (run_block, run) = (block, Pairs::default());
        }
        run.add(lpn as u32, ppa);
    }
    pairs[run_block] += run;
    pairs.truncate(blocks);
    Some(pairs)
}

/// Adds one block's pairs into a running total.
impl std::ops::AddAssign for Pairs {
    fn add_assign(&mut self, other: Pairs) {
        self.count += other.count;
        self.sum = self.sum.wrapping_add(other.sum);
    }
}

/// One multiply and a fold of the pair: enough to make the sum nonlinear in the pairs (a plain
/// multiply would not tell `(a, x) + (b, y)` from `(a, y) + (b, x)`: the keys add up the same),
/// and cheap, since the check mixes every page twice.
#[inline]
fn pair_mix(lpn: u32, ppa: u32) -> u64 {
    let z = ((lpn as u64) << 32 | ppa as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z ^ (z >> 29)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backward_pairs(backward: &[u32], ppb: usize) -> Pairs {
        let mut total = Pairs::default();
        for (block, owners) in backward.chunks(ppb).enumerate() {
            total += Pairs::of_owners(owners, (block * ppb) as u32);
        }
        total
    }

    #[test]
    fn agreeing_maps_have_equal_fingerprints_and_a_swap_or_a_lost_entry_does_not() {
        // 8 logical pages on 4 blocks of 4 pages.
        let forward = [5, NONE, 0, 9, 14, 2, NONE, 7];
        let mut backward = vec![NONE; 16];
        for (lpn, &ppa) in forward.iter().enumerate() {
            if ppa != NONE {
                backward[ppa as usize] = lpn as u32;
            }
        }
        let agree = forward_pairs(&forward, 16).unwrap();
        assert_eq!(agree, backward_pairs(&backward, 4));
        assert_eq!(agree.count(), 6);
        // Two logical pages swapped in the forward map only (same count).
        let mut swapped = forward;
        swapped.swap(0, 2);
        assert_ne!(forward_pairs(&swapped, 16).unwrap(), backward_pairs(&backward, 4));
        // Two physical pages' owners swapped.
        let mut crossed = backward.clone();
        crossed.swap(0, 2);
        assert_ne!(agree, backward_pairs(&crossed, 4));
        // A backward entry lost, or moved to a free page.
        let mut lost = backward.clone();
        lost[9] = NONE;
        assert_ne!(agree, backward_pairs(&lost, 4));
        lost[10] = 3;
        assert_ne!(agree, backward_pairs(&lost, 4));
        // A forward entry past the drive: no fingerprint, the exact walk reports it.
        let mut past = forward;
        past[1] = 16;
        assert!(forward_pairs(&past, 16).is_none());
        // Blocks of a size that is not a power of two.
        assert_eq!(agree, backward_pairs(&backward, 3));
    }
}
