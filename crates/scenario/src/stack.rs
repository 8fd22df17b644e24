//! The built device under the host: the SSD or the thin volume behind one [`BlockDevice`], and
//! a meter that counts the commands and bytes that reach it (per-phase metrics read it).

use serde::Serialize;
use trimlab_device::{BlockDevice, Command, CommandError, Completion, Ssd, ThinVolume};
use trimlab_sim::SimTime;

/// The device `[device] kind` selected.
// One per run, never in a collection: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
pub enum Device {
    Ssd(Ssd),
    Thin(ThinVolume),
}

impl Device {
    fn inner(&self) -> &dyn BlockDevice {
        match self {
            Device::Ssd(s) => s,
            Device::Thin(t) => t,
        }
    }

    fn inner_mut(&mut self) -> &mut dyn BlockDevice {
        match self {
            Device::Ssd(s) => s,
            Device::Thin(t) => t,
        }
    }
}

/// Commands and bytes that reached the device, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Traffic {
    pub read_commands: u64,
    pub read_bytes: u64,
    pub write_commands: u64,
    pub write_bytes: u64,
    pub trim_commands: u64,
    pub trim_bytes: u64,
    pub flush_commands: u64,
}

impl Traffic {
    pub fn count(&mut self, command: &Command) {
        match command {
            Command::Read { bytes, .. } => {
                self.read_commands += 1;
                self.read_bytes += bytes;
            }
            Command::Write { bytes, .. } => {
                self.write_commands += 1;
                self.write_bytes += bytes;
            }
            Command::Trim { ranges } => {
                self.trim_commands += 1;
                self.trim_bytes += ranges.iter().map(|r| r.bytes).sum::<u64>();
            }
            Command::Flush => self.flush_commands += 1,
        }
    }

    /// What was counted since `earlier`.
    pub fn since(&self, earlier: &Traffic) -> Traffic {
        Traffic {
            read_commands: self.read_commands - earlier.read_commands,
            read_bytes: self.read_bytes - earlier.read_bytes,
            write_commands: self.write_commands - earlier.write_commands,
            write_bytes: self.write_bytes - earlier.write_bytes,
            trim_commands: self.trim_commands - earlier.trim_commands,
            trim_bytes: self.trim_bytes - earlier.trim_bytes,
            flush_commands: self.flush_commands - earlier.flush_commands,
        }
    }
}

/// A device whose accepted commands are counted.
pub struct Metered {
    pub device: Device,
    pub traffic: Traffic,
}

impl BlockDevice for Metered {
    fn capacity_bytes(&self) -> u64 {
        self.device.inner().capacity_bytes()
    }
    fn tag_bytes(&self) -> u64 {
        self.device.inner().tag_bytes()
    }
    fn max_trim_bytes(&self) -> u64 {
        self.device.inner().max_trim_bytes()
    }
    fn max_transfer_bytes(&self) -> u64 {
        self.device.inner().max_transfer_bytes()
    }
    fn submit(
        &mut self,
        at: SimTime,
        command: &Command,
        read_out: Option<&mut Vec<u64>>,
    ) -> Result<Completion, CommandError> {
        let done = self.device.inner_mut().submit(at, command, read_out)?;
        self.traffic.count(command);
        Ok(done)
    }
    fn check(&self) -> Result<(), String> {
        self.device.inner().check()
    }
}
