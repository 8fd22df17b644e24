//! fio's random map (`axmap`): which blocks of the region a random stream has touched in this
//! pass, so random offsets cover every block once before any repeats (fio's default; off with
//! `norandommap`). A drawn block already used moves to the next free one after it, wrapping at
//! the end, as fio's `axmap_next_free` does; when every block is used the pass restarts.
//!
//! Levels of 64-bit words: a bit of level k + 1 is set when word of level k it stands for is
//! full, so finding the next free block skips full stretches 64^k blocks at a time.

pub struct RandomMap {
    /// `levels[0]` holds one bit per block; the last level is a single word.
    levels: Vec<Vec<u64>>,
    blocks: u64,
}

impl RandomMap {
    pub fn new(blocks: u64) -> RandomMap {
        let mut map = RandomMap { levels: Vec::new(), blocks };
        map.clear();
        map
    }

    /// Every block free again: the next pass over the region.
    pub fn clear(&mut self) {
        self.levels.clear();
        let mut bits = self.blocks.max(1);
        loop {
            let words = bits.div_ceil(64);
            let mut level = vec![0u64; words as usize];
            // Bits past the end stand for nothing: mark them used so no search finds them.
            if !bits.is_multiple_of(64) {
                level[words as usize - 1] = !0u64 << (bits % 64);
            }
            self.levels.push(level);
            if words == 1 {
                break;
            }
            bits = words;
        }
        // A last word that is all padding at some level is full: say so above it.
        for k in 0..self.levels.len() - 1 {
            let last = self.levels[k].len() - 1;
            if self.levels[k][last] == !0 {
                self.set_at(k + 1, last as u64);
            }
        }
    }

    fn set_at(&mut self, level: usize, index: u64) {
        let word = &mut self.levels[level][(index / 64) as usize];
        *word |= 1 << (index % 64);
        if *word == !0 && level + 1 < self.levels.len() {
            self.set_at(level + 1, index / 64);
        }
    }

    pub fn is_used(&self, block: u64) -> bool {
        self.levels[0][(block / 64) as usize] & (1 << (block % 64)) != 0
    }

    pub fn mark(&mut self, block: u64) {
        if !self.is_used(block) {
            self.set_at(0, block);
        }
    }

    /// The first free index at `level` that is `from` or after it.
    fn free_from(&self, level: usize, from: u64) -> Option<u64> {
        let words = &self.levels[level];
        let w = from / 64;
        if w >= words.len() as u64 {
            return None;
        }
        let below = (1u64 << (from % 64)) - 1;
        let masked = words[w as usize] | below;
        if masked != !0 {
            return Some(w * 64 + u64::from((!masked).trailing_zeros()));
        }
        // The next word of this level that is not full: a free bit of the level above.
        let next = if level + 1 < self.levels.len() {
            self.free_from(level + 1, w + 1)?
        } else {
            (w + 1..words.len() as u64).find(|&i| words[i as usize] != !0)?
        };
        Some(next * 64 + u64::from((!words[next as usize]).trailing_zeros()))
    }

    /// The block a random draw lands on: `drawn` if free, else the next free one after it
    /// (wrapping); a full map starts a new pass first. The block is marked used.
    pub fn claim(&mut self, drawn: u64) -> u64 {
        let found = self.free_from(0, drawn).or_else(|| self.free_from(0, 0));
        let block = match found {
            Some(b) => b,
            None => {
                self.clear();
                drawn
            }
        };
        self.mark(block);
        block
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_block_once_per_pass_then_again() {
        for blocks in [1u64, 63, 64, 65, 4096 + 7, 300_000] {
            let mut map = RandomMap::new(blocks);
            let mut seen = vec![0u8; blocks as usize];
            // Draws that keep hitting used blocks: the map must still hand out each once.
            for i in 0..2 * blocks {
                let b = map.claim((i * 7919) % blocks);
                assert!(b < blocks);
                seen[b as usize] += 1;
                if i + 1 == blocks {
                    assert!(seen.iter().all(|&n| n == 1), "{blocks}: first pass");
                }
            }
            assert!(seen.iter().all(|&n| n == 2), "{blocks}: second pass");
        }
    }

    #[test]
    fn a_used_block_moves_to_the_next_free_one_wrapping() {
        let mut map = RandomMap::new(130);
        assert_eq!(map.claim(129), 129);
        assert_eq!(map.claim(129), 0, "wraps to the start");
        for b in 1..128 {
            map.mark(b);
        }
        assert_eq!(map.claim(5), 128);
    }
}
