//! Host commands, the one vocabulary of request kinds ([`CommandKind`]: what the workload
//! generator draws, what a trace records, what an NBD client sends), and why the device
//! refuses one.

use serde::Serialize;

/// A byte range of the logical address space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ByteRange {
    pub offset: u64,
    pub bytes: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    Read {
        offset: u64,
        bytes: u64,
    },
    /// `tag` identifies the data: page i of the write carries `tag + i` (used to check reads).
    Write {
        offset: u64,
        bytes: u64,
        tag: u64,
    },
    /// A dataset-management / deallocate command with one or more ranges.
    Trim {
        ranges: Vec<ByteRange>,
    },
    Flush,
}

/// A one-range TRIM command kept for reuse: a caller sending a TRIM per request (a workload's
/// draws, a trace's records) rewrites its range instead of allocating a command each time.
/// `Default` holds no allocation, so it can stand in while the command is lent out.
#[derive(Clone, Debug, Default)]
pub struct OneRangeTrim {
    ranges: Vec<ByteRange>,
}

impl OneRangeTrim {
    /// The TRIM of `bytes` at `offset`.
    #[inline]
    pub fn of(&mut self, offset: u64, bytes: u64) -> Command {
        let mut ranges = std::mem::take(&mut self.ranges);
        ranges.clear();
        ranges.push(ByteRange { offset, bytes });
        Command::Trim { ranges }
    }

    /// Takes back a command made by [`OneRangeTrim::of`], to reuse its vector.
    #[inline]
    pub fn put_back(&mut self, command: Command) {
        if let Command::Trim { ranges } = command {
            self.ranges = ranges;
        }
    }
}

/// Eight bytes wide, so a struct of a kind and two `u64`s (the workload generator's `Op`) has no
/// padding: moving an `Option` of one between inlined calls copied the padding bytes with two
/// overlapping 4-byte loads, which the CPU cannot forward from the stores that wrote them, and
/// each such load waited for every store ahead of it to reach the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
#[repr(u64)]
pub enum CommandKind {
    Read,
    Write,
    Trim,
    Flush,
}

impl CommandKind {
    pub const ALL: [CommandKind; 4] =
        [CommandKind::Read, CommandKind::Write, CommandKind::Trim, CommandKind::Flush];

    pub fn name(self) -> &'static str {
        match self {
            CommandKind::Read => "read",
            CommandKind::Write => "write",
            CommandKind::Trim => "trim",
            CommandKind::Flush => "flush",
        }
    }
}

impl Command {
    pub fn kind(&self) -> CommandKind {
        match self {
            Command::Read { .. } => CommandKind::Read,
            Command::Write { .. } => CommandKind::Write,
            Command::Trim { .. } => CommandKind::Trim,
            Command::Flush => CommandKind::Flush,
        }
    }

    /// The bytes the command carries (a TRIM: all its ranges; a FLUSH: none).
    #[inline]
    pub fn bytes(&self) -> u64 {
        match self {
            Command::Read { bytes, .. } | Command::Write { bytes, .. } => *bytes,
            Command::Trim { ranges } => ranges.iter().map(|r| r.bytes).sum(),
            Command::Flush => 0,
        }
    }
}

/// A command the device refuses (the host interface's "invalid field" status).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    #[error("{kind} at offset {offset} of {bytes} bytes is not aligned to {sector_bytes}-byte sectors")]
    Misaligned { kind: &'static str, offset: u64, bytes: u64, sector_bytes: u64 },
    #[error("{kind} of zero bytes at offset {offset}")]
    Empty { kind: &'static str, offset: u64 },
    #[error("{kind} at offset {offset} of {bytes} bytes ends past the device's {capacity_bytes} bytes")]
    OutOfRange { kind: &'static str, offset: u64, bytes: u64, capacity_bytes: u64 },
    #[error("{kind} of {bytes} bytes exceeds the largest transfer of {max_bytes} bytes")]
    TooLarge { kind: &'static str, bytes: u64, max_bytes: u64 },
    #[error("trim with {ranges} ranges exceeds the limit of {max_ranges} ranges per command")]
    TooManyRanges { ranges: usize, max_ranges: usize },
    /// A device that requires non-decreasing arrivals (the thin volume) got an earlier one.
    #[error("command arriving at {arrival_ns} ns before the previous arrival at {previous_ns} ns")]
    OutOfOrder { arrival_ns: u64, previous_ns: u64 },
}
