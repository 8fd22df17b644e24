//! A layer that counts what reaches the device below it: commands and bytes per kind
//! ([`Traffic`]), in the manner of nbdkit's stats filter. It forwards everything; only commands
//! the device accepts are counted. Per-phase figures are differences of two snapshots.

use crate::block_device::{BlockDevice, Limits, Served};
use crate::command::{Command, CommandKind};
use crate::recording::Recording;
use serde::Serialize;
use trimlab_sim::SimTime;

/// Commands and bytes by kind (indexed by [`CommandKind`]; a FLUSH carries no bytes). It
/// serializes as `read_commands`, `read_bytes`, ..., `flush_commands`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Traffic {
    commands: [u64; 4],
    bytes: [u64; 4],
}

impl Traffic {
    /// Adds `commands` commands of `kind` carrying `bytes` in all.
    #[inline]
    pub fn add(&mut self, kind: CommandKind, commands: u64, bytes: u64) {
        self.commands[kind as usize] += commands;
        self.bytes[kind as usize] += bytes;
    }

    /// Counts one command.
    #[inline]
    pub fn count(&mut self, command: &Command) {
        self.add(command.kind(), 1, command.bytes());
    }

    pub fn commands_of(&self, kind: CommandKind) -> u64 {
        self.commands[kind as usize]
    }

    pub fn bytes_of(&self, kind: CommandKind) -> u64 {
        self.bytes[kind as usize]
    }

    /// Every command counted, whatever its kind.
    pub fn commands(&self) -> u64 {
        self.commands.iter().sum()
    }

    /// What was counted since `earlier`.
    pub fn since(&self, earlier: &Traffic) -> Traffic {
        Traffic {
            commands: std::array::from_fn(|k| self.commands[k] - earlier.commands[k]),
            bytes: std::array::from_fn(|k| self.bytes[k] - earlier.bytes[k]),
        }
    }
}

impl Serialize for Traffic {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        const NAMES: [(&str, &str); 4] = [
            ("read_commands", "read_bytes"),
            ("write_commands", "write_bytes"),
            ("trim_commands", "trim_bytes"),
            ("flush_commands", ""),
        ];
        let mut s = serializer.serialize_struct("Traffic", 7)?;
        for kind in CommandKind::ALL {
            let (commands, bytes) = NAMES[kind as usize];
            s.serialize_field(commands, &self.commands_of(kind))?;
            if kind != CommandKind::Flush {
                s.serialize_field(bytes, &self.bytes_of(kind))?;
            }
        }
        s.end()
    }
}

/// `device` with the commands it accepted counted in `traffic`.
pub struct Metered<D> {
    pub device: D,
    pub traffic: Traffic,
    /// `run --record`: every accepted command, with phase markers.
    pub recording: Option<Recording>,
}

impl<D: BlockDevice> Metered<D> {
    pub fn new(device: D) -> Self {
        Metered { device, traffic: Traffic::default(), recording: None }
    }

    /// Marks the start of phase `name` in the recording (if one is kept).
    pub fn mark_phase(&mut self, at: SimTime, name: &str) {
        if let Some(r) = self.recording.as_mut() {
            r.phase(at, name);
        }
    }
}

impl<D: BlockDevice> BlockDevice for Metered<D> {
    fn limits(&self) -> Limits {
        self.device.limits()
    }

    fn submit(&mut self, at: SimTime, command: &Command, read_out: Option<&mut Vec<u64>>) -> Served {
        let done = self.device.submit(at, command, read_out)?;
        self.traffic.count(command);
        if let Some(r) = self.recording.as_mut() {
            r.command(at, command);
        }
        Ok(done)
    }

    fn commands_done_at(&self) -> SimTime {
        self.device.commands_done_at()
    }

    fn check(&self) -> Result<(), String> {
        self.device.check()
    }

    fn use_tag_bytes(&mut self, tag_bytes: u64) -> Result<(), String> {
        self.device.use_tag_bytes(tag_bytes)
    }
}
