//! `--shard K/N`: a deterministic 1/N slice of a sweep, so a batch scheduler can split it.
//!
//! Run `r` belongs to shard `r mod N + 1`. Dealing runs round-robin (rather than in N contiguous
//! blocks) spreads the expensive corner of a grid, say the smallest spare factor, over every
//! shard. The N shards are disjoint and together hold every run exactly once.

use crate::SweepError;
use std::fmt;
use std::str::FromStr;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// K, 1-based.
    pub index: usize,
    /// N.
    pub count: usize,
}

impl Shard {
    pub const WHOLE: Shard = Shard { index: 1, count: 1 };

    pub fn contains(&self, run: usize) -> bool {
        run % self.count == self.index - 1
    }
}

impl FromStr for Shard {
    type Err = SweepError;

    fn from_str(text: &str) -> Result<Shard, SweepError> {
        let bad = || SweepError::Shard(format!("--shard {text}: expected K/N with 1 <= K <= N, like 2/8"));
        let (k, n) = text.split_once('/').ok_or_else(bad)?;
        let index: usize = k.trim().parse().map_err(|_| bad())?;
        let count: usize = n.trim().parse().map_err(|_| bad())?;
        if index == 0 || count == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}
