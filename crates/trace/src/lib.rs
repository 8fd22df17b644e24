//! Real workloads: streaming readers for block traces (blkparse, the ftrace blk tracer, fio
//! iolog v2/v3, MSR Cambridge, MQSim/DiskSim ASCII) and their replay on a simulated device.
//! Readers take any `BufRead` (the binary opens files); memory stays constant whatever the
//! trace's length.

pub mod advice;
pub mod format;
pub mod interval_set;
mod line;
pub mod reader;
pub mod record;
pub mod replay;

pub use advice::{Advice, Policy};
pub use format::TraceFormat;
pub use line::{BlkAction, FioTimeUnit};
pub use reader::{ReaderOptions, TraceError, TraceReader};
pub use record::{CommandKind, TraceRecord};
pub use replay::{
    replay, replay_from, replay_on, LbaMode, Pacing, ReplayError, ReplayOptions, ReplayOutcome, ReplayStats,
    TrimHandling,
};
