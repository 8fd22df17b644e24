//! A workload kind's identity and declaration: the name `[workload] kind` holds
//! ([`WorkloadKind`]), what it drives ([`Level`]) and what the registry knows of it
//! ([`KindSpec`]). The config names kinds through this file alone, not through the registry's
//! list, which dispatches to the kinds and so reads the config.

use super::keys::KeysSpec;
use super::KINDS;

/// A workload kind's identity: its name in `[workload] kind`. Values come from a kind's file
/// (`WorkloadKind::Postmark`) or from [`WorkloadKind::parse`], so each is registered.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct WorkloadKind(pub(super) &'static str);

/// What a kind drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// The block device, through the fio-like generator (`host.fs = "none"`).
    Block,
    /// 004's NTFS-like cluster host on an SSD (crates/workload/src/cluster_host.rs).
    ClusterHost,
    /// A mounted file system (`host.fs = "ext4"`); the kind's file has `run`.
    File,
}

/// A kind as the registry knows it.
pub struct KindSpec {
    pub kind: WorkloadKind,
    /// One line for `--help` and docs/config.md.
    pub help: &'static str,
    pub level: Level,
    /// The keys of its own this kind reads, declared in its file (docs/config.md gives their
    /// defaults); the block generator's keys are not among them: every config has those.
    pub keys: KeysSpec,
}

const COUNT: usize = KINDS.len();

impl WorkloadKind {
    /// Every kind's name, in [`KINDS`] order.
    pub const NAMES: &'static [&'static str] = &{
        let mut names = [""; COUNT];
        let mut i = 0;
        while i < COUNT {
            names[i] = KINDS[i].kind.0;
            i += 1;
        }
        names
    };

    /// True for the kinds that drive a file system rather than the block device.
    pub fn is_file_level(self) -> bool {
        self.spec().level == Level::File
    }

    /// True for 004's kinds, which bring their own cluster host and SSD (scenario runs them
    /// through `cluster_host::run`).
    pub fn is_cluster_host(self) -> bool {
        self.spec().level == Level::ClusterHost
    }

    /// The keys of its own this kind reads (docs/config.md gives their defaults).
    pub fn file_keys(self) -> &'static [&'static str] {
        (self.spec().keys.names)()
    }
}

impl Default for WorkloadKind {
    fn default() -> Self {
        WorkloadKind::Block
    }
}

trimlab_sim::registry_handle!(WorkloadKind, KindSpec, KINDS, "workload kind");
