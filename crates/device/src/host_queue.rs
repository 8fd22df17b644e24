//! The host side of the block interface: how a request larger than the device takes becomes
//! commands that fit its [`Limits`]. READ/WRITE split at `max_transfer_bytes`
//! ([`transfer_chunks`]); TRIM ranges are packed into commands of at most `trim_max_ranges`
//! ranges and `trim_max_bytes` bytes ([`TrimSplitter`]), in order. Every driver (trace replay,
//! the NBD drive, 004's cluster host, the file system's discards, scenario's TRIM bursts) splits
//! here; a driver whose host sends fewer ranges or smaller pieces than the device takes says so
//! with [`TrimSplitter::ranges_per_command`] or [`TrimSplitter::aligned_to`]. When the pieces
//! are submitted (all at once, or each when the previous one completes) is the driver's
//! modelled behaviour, so the splitter hands each command to the driver's `send`.

use crate::block_device::Limits;
use crate::command::{ByteRange, Command};

/// `(offset, bytes)` pieces of at most `max_bytes`, in order, covering `offset..offset + bytes`:
/// how a host splits a READ or WRITE larger than the device's transfer limit.
pub fn transfer_chunks(offset: u64, bytes: u64, max_bytes: u64) -> impl Iterator<Item = (u64, u64)> {
    assert!(max_bytes > 0, "transfer_chunks: a zero transfer limit");
    let end = offset + bytes;
    (offset..end).step_by(max_bytes as usize).map(move |at| (at, max_bytes.min(end - at)))
}

/// Packs byte ranges into TRIM commands that fit a device. Keeps its range vector between
/// calls, so a replay sending one TRIM in ten requests does not allocate for each.
#[derive(Clone, Debug)]
pub struct TrimSplitter {
    max_bytes: u64,
    max_ranges: usize,
    /// Where a range is cut when a command's bytes run out (1: anywhere).
    align: u64,
    batch: Vec<ByteRange>,
}

impl TrimSplitter {
    /// Commands of at most `max_bytes` bytes (at least 1) in at most `max_ranges` ranges.
    pub fn new(max_bytes: u64, max_ranges: usize) -> Self {
        TrimSplitter {
            max_bytes: max_bytes.max(1),
            max_ranges: max_ranges.max(1),
            align: 1,
            batch: Vec::new(),
        }
    }

    /// Commands as large as the device takes.
    pub fn for_device(limits: &Limits) -> Self {
        Self::new(limits.trim_max_bytes, limits.trim_max_ranges)
    }

    /// A host that sends at most `n` ranges per command (Linux: one range per discard bio;
    /// Windows: the 64 entries of one ATA DATA SET MANAGEMENT block).
    pub fn ranges_per_command(mut self, n: usize) -> Self {
        self.max_ranges = self.max_ranges.min(n).max(1);
        self
    }

    /// A host that cuts ranges only on multiples of `granule` (the discard granularity, a file
    /// system block), so that splitting never leaves a granule half-trimmed in two commands; a
    /// command then carries at most the largest multiple of `granule` the device takes (and at
    /// least one granule).
    pub fn aligned_to(mut self, granule: u64) -> Self {
        let granule = granule.max(1);
        self.align = granule;
        self.max_bytes = (self.max_bytes / granule * granule).max(granule);
        self
    }

    /// Sends `ranges` (`(offset, bytes)`, in order) as few commands as the limits allow, each
    /// handed to `send` as soon as it is full; returns how many were sent.
    pub fn split<E>(
        &mut self,
        ranges: impl IntoIterator<Item = (u64, u64)>,
        mut send: impl FnMut(&Command) -> Result<(), E>,
    ) -> Result<u64, E> {
        let mut batch = std::mem::take(&mut self.batch);
        batch.clear();
        let (mut total, mut commands) = (0u64, 0u64);
        let mut result = Ok(());
        'ranges: for (start, len) in ranges {
            let (mut offset, end) = (start, start + len);
            while offset < end {
                let room = self.max_bytes - total;
                // The piece ends where the command's bytes run out, on an aligned boundary.
                let cut = offset.saturating_add(room) / self.align * self.align;
                if room == 0 || batch.len() == self.max_ranges || cut <= offset {
                    result = Self::flush(&mut batch, &mut send);
                    commands += 1;
                    total = 0;
                    if result.is_err() {
                        break 'ranges;
                    }
                    continue;
                }
                let piece = cut.min(end) - offset;
                batch.push(ByteRange { offset, bytes: piece });
                total += piece;
                offset += piece;
            }
        }
        if result.is_ok() && !batch.is_empty() {
            result = Self::flush(&mut batch, &mut send);
            commands += 1;
        }
        batch.clear();
        self.batch = batch;
        result.map(|()| commands)
    }

    /// Sends the ranges gathered so far as one command and takes the vector back, empty.
    fn flush<E>(
        batch: &mut Vec<ByteRange>,
        send: &mut impl FnMut(&Command) -> Result<(), E>,
    ) -> Result<(), E> {
        let command = Command::Trim { ranges: std::mem::take(batch) };
        let result = send(&command);
        if let Command::Trim { ranges } = command {
            *batch = ranges;
            batch.clear();
        }
        result
    }
}
