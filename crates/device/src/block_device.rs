//! The block interface every host layer sees: READ, WRITE (one data tag per unit), TRIM and
//! FLUSH submitted at a simulated instant and answered with a [`Completion`]. The SSD and the
//! thin-provisioned volume implement it; the file system, the workload runner and the scenario
//! layer are written against it, so one command type and one completion type serve the stack.

use crate::command::{Command, CommandError};
use crate::ssd::{Completion, Ssd};
use trimlab_sim::SimTime;

pub trait BlockDevice {
    fn capacity_bytes(&self) -> u64;
    /// The unit that carries one data tag (a read returns one tag per unit, 0 = no data).
    fn tag_bytes(&self) -> u64;
    /// Largest TRIM one command may carry; the host splits larger ranges.
    fn max_trim_bytes(&self) -> u64;
    /// Largest READ/WRITE one command may carry.
    fn max_transfer_bytes(&self) -> u64;
    /// Serves `command` arriving at `at` (callers submit in non-decreasing `at`). A read fills
    /// `read_out` with one tag per `tag_bytes` unit when it is given.
    fn submit(
        &mut self,
        at: SimTime,
        command: &Command,
        read_out: Option<&mut Vec<u64>>,
    ) -> Result<Completion, CommandError>;
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
        command: &Command,
        read_out: Option<&mut Vec<u64>>,
    ) -> Result<Completion, CommandError> {
        Ssd::submit(self, at, command, read_out)
    }
    fn check(&self) -> Result<(), String> {
        Ssd::check(self)
    }
}
