//! The block interface the file system sees: read, write (with a data tag per block), trim and
//! flush submitted at a simulated instant, answered with a completion instant. The file system
//! never sees a page map; `trimlab_device::Ssd` and [`crate::ThinVolume`] implement this.

use trimlab_device::{ByteRange, Command, Ssd};
use trimlab_sim::SimTime;

/// One request to a block device. Offsets and lengths are bytes, multiples of `tag_bytes`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DevRequest {
    Read {
        offset: u64,
        bytes: u64,
    },
    /// Block i of the write carries `tag + i`.
    Write {
        offset: u64,
        bytes: u64,
        tag: u64,
    },
    Trim {
        offset: u64,
        bytes: u64,
    },
    Flush,
}

pub trait BlockDevice {
    fn capacity_bytes(&self) -> u64;
    /// The unit that carries one data tag (a read returns one tag per unit, 0 = no data).
    fn tag_bytes(&self) -> u64;
    /// Largest TRIM one command may carry; the host splits larger ranges.
    fn max_trim_bytes(&self) -> u64;
    /// Largest READ/WRITE one command may carry.
    fn max_transfer_bytes(&self) -> u64;
    /// Serves `req` arriving at `at` (callers submit in non-decreasing `at`); returns its
    /// completion. A read fills `read_out` with one tag per `tag_bytes` unit.
    fn submit(
        &mut self,
        at: SimTime,
        req: &DevRequest,
        read_out: Option<&mut Vec<u64>>,
    ) -> Result<SimTime, String>;
    /// Full consistency check of the device model.
    fn check(&self) -> Result<(), String>;
}

impl BlockDevice for Ssd {
    fn capacity_bytes(&self) -> u64 {
        Ssd::capacity_bytes(self)
    }
    fn tag_bytes(&self) -> u64 {
        self.page_bytes()
    }
    fn max_trim_bytes(&self) -> u64 {
        self.config().trim_max_bytes
    }
    fn max_transfer_bytes(&self) -> u64 {
        self.config().max_transfer_bytes
    }
    fn submit(
        &mut self,
        at: SimTime,
        req: &DevRequest,
        read_out: Option<&mut Vec<u64>>,
    ) -> Result<SimTime, String> {
        let command = match *req {
            DevRequest::Read { offset, bytes } => Command::Read { offset, bytes },
            DevRequest::Write { offset, bytes, tag } => Command::Write { offset, bytes, tag },
            DevRequest::Trim { offset, bytes } => Command::Trim { ranges: vec![ByteRange { offset, bytes }] },
            DevRequest::Flush => Command::Flush,
        };
        Ssd::submit(self, at, &command, read_out).map(|c| c.done).map_err(|e| e.to_string())
    }
    fn check(&self) -> Result<(), String> {
        Ssd::check(self)
    }
}
