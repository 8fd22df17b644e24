//! The block interface every host layer sees: READ, WRITE (one data tag per unit), TRIM and
//! FLUSH submitted at a simulated instant and answered with a [`Completion`]. The SSD and the
//! thin-provisioned volume implement it; the file system, the workload runner, trace replay,
//! the NBD drive and the scenario layer are written against it, so one command type and one
//! completion type serve the stack. Layers between a host and a device (`Metered`, a test's
//! recorder) implement it too, forwarding what they do not handle, as nbdkit's filters do: a
//! layer forwards [`BlockDevice::limits`] and [`BlockDevice::check`] and wraps `submit`.

use crate::command::{Command, CommandError};
use crate::ssd::{Completion, Ssd};
use trimlab_sim::SimTime;

/// What a device accepts, read once by the host (nbdkit's size and block-size negotiation):
/// the host queue ([`crate::host_queue`]) splits requests so that every command fits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub capacity_bytes: u64,
    /// The addressing unit: every offset and length is a multiple of it.
    pub sector_bytes: u64,
    /// The unit that carries one data tag (a read returns one tag per unit, 0 = no data).
    pub tag_bytes: u64,
    /// Largest READ/WRITE one command may carry.
    pub max_transfer_bytes: u64,
    /// Largest TRIM one command may carry (all its ranges together).
    pub trim_max_bytes: u64,
    /// Most ranges one TRIM may carry.
    pub trim_max_ranges: usize,
}

/// What [`BlockDevice::submit`] returns: the command's completion, or why the device refused it.
pub type Served = Result<Completion, CommandError>;

pub trait BlockDevice {
    fn limits(&self) -> Limits;
    /// Serves `command` arriving at `at` (callers submit in non-decreasing `at`). A read fills
    /// `read_out` with one tag per `tag_bytes` unit when it is given.
    fn submit(&mut self, at: SimTime, command: &Command, read_out: Option<&mut Vec<u64>>) -> Served;
    /// The latest completion of any command submitted so far (when the device goes idle).
    fn commands_done_at(&self) -> SimTime;
    /// Full consistency check of the device model.
    fn check(&self) -> Result<(), String>;
    /// Asks the device to carry one data tag per `tag_bytes` from now on (a host that checks
    /// its data in blocks smaller than the device's data unit: the file system's 4 KiB blocks
    /// on a drive of 16 KiB mapping units). The error says what the device accepts. Layers
    /// forward it.
    fn use_tag_bytes(&mut self, tag_bytes: u64) -> Result<(), String> {
        let have = self.tag_bytes();
        match tag_bytes == have {
            true => Ok(()),
            false => Err(format!("the device carries one data tag per {have} bytes")),
        }
    }

    fn capacity_bytes(&self) -> u64 {
        self.limits().capacity_bytes
    }
    fn tag_bytes(&self) -> u64 {
        self.limits().tag_bytes
    }
    fn trim_max_bytes(&self) -> u64 {
        self.limits().trim_max_bytes
    }
    fn max_transfer_bytes(&self) -> u64 {
        self.limits().max_transfer_bytes
    }
}

impl BlockDevice for Ssd {
    fn limits(&self) -> Limits {
        let c = self.config();
        Limits {
            capacity_bytes: Ssd::capacity_bytes(self),
            sector_bytes: c.sector_bytes,
            tag_bytes: self.data_tag_bytes(),
            max_transfer_bytes: c.max_transfer_bytes,
            trim_max_bytes: c.trim_max_bytes,
            trim_max_ranges: c.trim_max_ranges as usize,
        }
    }
    fn submit(&mut self, at: SimTime, command: &Command, read_out: Option<&mut Vec<u64>>) -> Served {
        Ssd::submit(self, at, command, read_out)
    }
    fn commands_done_at(&self) -> SimTime {
        Ssd::commands_done_at(self)
    }
    fn check(&self) -> Result<(), String> {
        Ssd::check(self)
    }
    fn use_tag_bytes(&mut self, tag_bytes: u64) -> Result<(), String> {
        Ssd::use_tag_bytes(self, tag_bytes)
    }
}
