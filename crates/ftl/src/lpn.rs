//! Logical page numbers: the host's address space in units of one flash page.

use serde::{Deserialize, Serialize};

/// A logical page number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Lpn(pub u32);

impl Lpn {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}
