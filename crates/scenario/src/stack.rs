//! The built device under the host: the SSD or the thin volume behind one [`BlockDevice`]
//! (a file-system run wraps it in `trimlab_device::Metered`, whose counts per-phase metrics
//! read).

use trimlab_device::{BlockDevice, Command, Limits, Served, Ssd, ThinVolume};
use trimlab_sim::SimTime;

/// The device `[device] kind` selected.
// One per run, never in a collection: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
pub enum Device {
    Ssd(Ssd),
    Thin(ThinVolume),
}

impl Device {
    /// The selected device as the one interface (a match per call, not a `dyn` hop per layer).
    fn inner(&self) -> &dyn BlockDevice {
        match self {
            Device::Ssd(s) => s,
            Device::Thin(t) => t,
        }
    }
}

impl BlockDevice for Device {
    fn limits(&self) -> Limits {
        self.inner().limits()
    }
    fn submit(&mut self, at: SimTime, command: &Command, read_out: Option<&mut Vec<u64>>) -> Served {
        match self {
            Device::Ssd(s) => s.submit(at, command, read_out),
            Device::Thin(t) => t.submit(at, command, read_out),
        }
    }
    fn commands_done_at(&self) -> SimTime {
        self.inner().commands_done_at()
    }
    fn check(&self) -> Result<(), String> {
        self.inner().check()
    }
    fn use_tag_bytes(&mut self, tag_bytes: u64) -> Result<(), String> {
        match self {
            Device::Ssd(s) => s.use_tag_bytes(tag_bytes),
            Device::Thin(t) => t.use_tag_bytes(tag_bytes),
        }
    }
}
