//! One request of the block workload (an `Op`) and its data direction: what the generator
//! draws, the rate limiter paces and the runner turns into a `Command`.

use trimlab_device::{ByteRange, Command, CommandKind};

/// A data direction's index (read 0, write 1, TRIM 2): fio keeps its counts and rates per
/// direction in this order. None for a FLUSH.
pub(crate) fn direction(kind: CommandKind) -> Option<usize> {
    match kind {
        CommandKind::Read => Some(0),
        CommandKind::Write => Some(1),
        CommandKind::Trim => Some(2),
        CommandKind::Flush => None,
    }
}

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
