//! What the file system's integration tests share: the small SSD they run on, and a window on
//! the commands the file system sends it.

use trimlab_device::{
    BlockDevice, Command, DeviceSection, FtlSection, Limits, Served, Ssd, SsdConfig, TrimSection,
};
use trimlab_sim::{ByteSize, SimTime};

/// 48 MiB over 2 channels of 64-page blocks, 15 % spare, a 256 KiB write buffer, data tracked
/// (so that reads check what was written).
pub fn small_ssd() -> Ssd {
    small_ssd_of_unit(None)
}

/// [`small_ssd`] mapping `unit` bytes per map entry (`[ftl] mapping_unit`, a QLC drive's
/// indirection unit; `None`: its 4 KiB page). The file system asks it for tags per 4 KiB page.
pub fn small_ssd_of_unit(unit: Option<u64>) -> Ssd {
    let device = DeviceSection {
        channels: Some(2),
        chips_per_channel: Some(1),
        dies_per_chip: Some(1),
        planes_per_die: Some(1),
        pages_per_block: Some(64),
        logical_bytes: Some(ByteSize(48 << 20)),
        spare_factor: Some(0.15),
        write_buffer_bytes: Some(ByteSize(256 << 10)),
        ..Default::default()
    };
    let ftl = FtlSection { track_data: Some(true), mapping_unit: unit.map(ByteSize), ..Default::default() };
    Ssd::new(SsdConfig::resolve(&device, &ftl, &TrimSection::default()).expect("valid test device"))
}

/// What a [`Noting`] drive shows each command to, with its arrival time.
pub type Note = Box<dyn FnMut(SimTime, &Command)>;

/// An SSD behind a window: every command the file system sends is shown to `note` (with its
/// arrival time) before the SSD serves it.
pub struct Noting {
    ssd: Ssd,
    note: Note,
}

impl Noting {
    pub fn new(ssd: Ssd, note: impl FnMut(SimTime, &Command) + 'static) -> Noting {
        Noting { ssd, note: Box::new(note) }
    }
}

impl BlockDevice for Noting {
    fn limits(&self) -> Limits {
        self.ssd.limits()
    }
    fn commands_done_at(&self) -> SimTime {
        self.ssd.commands_done_at()
    }
    fn submit(&mut self, at: SimTime, c: &Command, out: Option<&mut Vec<u64>>) -> Served {
        (self.note)(at, c);
        self.ssd.submit(at, c, out)
    }
    fn check(&self) -> Result<(), String> {
        self.ssd.check()
    }
    fn use_tag_bytes(&mut self, bytes: u64) -> Result<(), String> {
        self.ssd.use_tag_bytes(bytes)
    }
}
