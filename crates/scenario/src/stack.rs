//! The built stack a run's phases drive: the device (the SSD or the thin volume behind one
//! [`BlockDevice`]) and, when `[host]` names one, the file system mounted on it, each with the
//! state its drivers carry from phase to phase (the block generators' streams and tag, the
//! file workloads' live files and random streams). Every phase kind gets this one value.

use serde_json::{json, Value};
use trimlab_device::metrics::HostCounters;
use trimlab_device::{BlockDevice, Command, CommandKind, Limits, Metered, Served, Ssd, ThinVolume, Traffic};
use trimlab_fs::{FileSystem, FsConfig, FsError};
use trimlab_sim::{SeedTree, SimTime};
use trimlab_workload::file::FileState;
use trimlab_workload::{Generator, WorkloadConfig};

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

/// The file system a host run mounts, on the metered device.
pub type Fs = FileSystem<Metered<Device>>;

/// What the phases drive: a bare SSD, or a file system on the selected device.
// One per run: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
pub enum Stack {
    Block(BlockStack),
    File(FileStack),
}

/// The block workload phases' generators by stream name: phases naming one stream continue one
/// generator (its random draws and its sequential cursor), so repeating a phase repeats the
/// workload, not its addresses. The value keeps the workload the stream began with and the
/// phase that began it, to refuse a stream continued with another workload.
pub type Streams = std::collections::BTreeMap<String, (WorkloadConfig, usize, Generator)>;

/// A bare SSD and what its block drivers carry between phases.
pub struct BlockStack {
    pub ssd: Ssd,
    /// Where the last phase ended: the SSD has no clock of its own.
    pub now: SimTime,
    pub seeds: SeedTree,
    /// The next data tag a write carries.
    pub tag: u64,
    pub streams: Streams,
    /// Set when a phase restarted the SSD's counters (`measure`): that phase's own traffic is
    /// then reported as none, since the counters it would be measured by began again.
    pub counters_restarted: bool,
}

/// A mounted file system and what its file workloads carry between phases.
pub struct FileStack {
    /// `None` only while a phase swaps the file system (`mkfs` takes it by value).
    fs: Option<Fs>,
    pub state: FileState,
    /// The file system `[host]` configured (a `mkfs` phase starts from it again).
    pub config: FsConfig,
    /// The capacity the file workloads see: the volume's or the SSD's logical bytes.
    pub capacity: u64,
    /// When the first mkfs ended (metrics.json's `host.mkfs_ns`).
    pub mkfs_end: SimTime,
}

impl FileStack {
    pub fn new(fs: Fs, state: FileState, config: FsConfig, capacity: u64) -> FileStack {
        FileStack { mkfs_end: fs.now(), fs: Some(fs), state, config, capacity }
    }

    pub fn fs(&self) -> &Fs {
        self.fs.as_ref().unwrap_or_else(|| unreachable!("the file system is back after every swap"))
    }

    pub fn fs_mut(&mut self) -> &mut Fs {
        self.fs.as_mut().unwrap_or_else(|| unreachable!("the file system is back after every swap"))
    }

    /// The file system and the file state at once (a workload drives one and updates the other).
    pub fn parts(&mut self) -> (&mut Fs, &mut FileState) {
        let fs = self.fs.as_mut().unwrap_or_else(|| unreachable!("the file system is back after every swap"));
        (fs, &mut self.state)
    }

    /// Replaces the file system by what `f` makes of it (umount, mkfs on the same device).
    pub fn swap(&mut self, f: impl FnOnce(Fs, &mut FileState) -> Result<Fs, FsError>) -> Result<(), FsError> {
        let fs = self.fs.take().unwrap_or_else(|| unreachable!("the file system is back after every swap"));
        self.fs = Some(f(fs, &mut self.state)?);
        Ok(())
    }

    pub fn into_fs(self) -> Fs {
        self.fs.unwrap_or_else(|| unreachable!("the file system is back after every swap"))
    }
}

/// ext4's directory hash seed, which mke2fs draws at random for each file system: here from
/// the run's seed (stream `mkfs.hash_seed`, a new draw per mkfs), so that runs with other
/// seeds see what other mkfs runs would (the order `rm -r` unlinks in, Orlov's spread).
pub fn mkfs_hash_seed(state: &mut FileState) -> u64 {
    use rand::RngCore;
    state.with_stream("mkfs.hash_seed", |rng, _| rng.next_u64())
}

impl Stack {
    /// Where the run's clock stands.
    pub fn now(&self) -> SimTime {
        match self {
            Stack::Block(b) => b.now,
            Stack::File(f) => f.fs().now(),
        }
    }

    /// What has reached the device so far.
    pub fn traffic(&self) -> Traffic {
        match self {
            Stack::Block(b) => ssd_traffic(&b.ssd.report(b.now).host, b.ssd.page_bytes()),
            Stack::File(f) => f.fs().device().traffic,
        }
    }

    /// Marks where a phase starts in `run --record`'s recording.
    pub fn mark_phase(&mut self, start: SimTime, name: &str) {
        match self {
            Stack::File(f) => f.fs_mut().device_mut().mark_phase(start, name),
            Stack::Block(b) => {
                if let Some(r) = b.ssd.recording.as_mut() {
                    r.phase(start, name);
                }
            }
        }
    }

    /// One entry of metrics.json's `phases`: the span and what reached the device, and what
    /// the stack adds (a file system's utilization, a thin volume's allocation, a deferring
    /// TRIM engine's pending pages).
    pub fn entry(&mut self, name: &str, kind: &str, start: SimTime, traffic0: Traffic) -> Value {
        let now = self.now();
        let traffic = self.traffic();
        match self {
            Stack::Block(b) => {
                // A `measure` phase restarts the SSD's counters: its own traffic is what came before.
                let delta = if std::mem::take(&mut b.counters_restarted) {
                    Traffic::default()
                } else {
                    traffic.since(&traffic0)
                };
                json!({
                    "name": name,
                    "kind": kind,
                    "start_ns": start.ns(),
                    "end_ns": now.ns(),
                    "elapsed_ns": now.since(start),
                    "device": delta,
                    // What a deferring TRIM engine still holds when the phase ends (0 for the others).
                    "trim_pending_pages": b.ssd.engine().figure("pages_pending").unwrap_or(0),
                    "latency": b.ssd.end_phase_latency(is_workload_kind(kind)),
                })
            }
            Stack::File(f) => file_entry(f.fs_mut(), name, kind, start, traffic0),
        }
    }
}

/// One file-system entry of metrics.json's `phases`: the span, what reached the device,
/// utilization (and a thin volume's allocation).
pub fn file_entry(fs: &mut Fs, name: &str, kind: &str, start: SimTime, traffic0: Traffic) -> Value {
    let mut e = json!({
        "name": name,
        "kind": kind,
        "start_ns": start.ns(),
        "end_ns": fs.now().ns(),
        "elapsed_ns": fs.now().since(start),
        "device": fs.device().traffic.since(&traffic0),
        "utilization": fs.utilization(),
    });
    match &mut fs.device_mut().device {
        Device::Thin(t) => e["allocated_bytes"] = json!(t.allocated_bytes()),
        Device::Ssd(ssd) => e["latency"] = json!(ssd.end_phase_latency(is_workload_kind(kind))),
    }
    e
}

/// The kinds that prepare the drive or the file system for the workload (mkfs, aging, a
/// precondition's fill): their latencies are in the whole run's figures but not in its
/// headline, which is the workload's (issue 43: `run --strace` headlined mkfs's 2 MiB writes).
pub const SETUP_KINDS: [&str; 3] = ["mkfs", "age", "fill"];

/// Whether a phase of `kind` counts in the workload's latencies (every kind but
/// [`SETUP_KINDS`]).
pub fn is_workload_kind(kind: &str) -> bool {
    !SETUP_KINDS.contains(&kind)
}

/// The SSD's host counters as traffic (bytes from pages: the SSD counts pages).
fn ssd_traffic(c: &HostCounters, page_bytes: u64) -> Traffic {
    let mut t = Traffic::default();
    t.add(CommandKind::Read, c.read_commands, c.pages_read * page_bytes);
    t.add(CommandKind::Write, c.write_commands, c.pages_written * page_bytes);
    t.add(CommandKind::Trim, c.trim_commands, c.pages_trim_requested * page_bytes);
    t.add(CommandKind::Flush, c.flush_commands, 0);
    t
}
