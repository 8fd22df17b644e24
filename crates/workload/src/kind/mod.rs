//! The workload kinds `[workload] kind` names: the registry ([`KINDS`]) and what each kind
//! declares ([`KindSpec`]: name, help, what it drives, the keys it reads). Each kind lives in
//! its own file here; a file-level kind's file also holds how it runs on the file system.
//!
//! Adding a kind: one file that defines its `WorkloadKind` constant and its `SPEC` (and, for a
//! file-level kind, `run`), and one line in the `workload_kinds!` list below.

use crate::config::WorkloadConfig;
use crate::file::{Figures, FileState};
use trimlab_device::BlockDevice;
use trimlab_fs::{FileSystem, FsError};

/// A workload kind's identity: its name in `[workload] kind`. Values come from a kind's file
/// (`WorkloadKind::Postmark`) or from [`WorkloadKind::parse`], so each is registered.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct WorkloadKind(&'static str);

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
    /// The file-workload keys this kind reads (docs/config.md gives their defaults); the block
    /// generator's keys are not listed: every block config has them.
    pub keys: &'static [&'static str],
}

/// Lists every kind once: `module => level`, in the order help and docs list them. It declares
/// the modules, builds [`KINDS`] and the dispatch of the file-level kinds to their `run`
/// (generic over the device, so a plain table of function pointers cannot hold it).
macro_rules! workload_kinds {
    ($($module:ident => $level:ident),* $(,)?) => {
        $(mod $module;)*

        /// Every kind, in the order help and docs list them.
        pub const KINDS: &[&KindSpec] = &[$(&$module::SPEC),*];

        /// Runs the file-level kind `w.kind` on `fs`.
        pub(crate) fn run_file<D: BlockDevice>(
            fs: &mut FileSystem<D>,
            w: &WorkloadConfig,
            state: &mut FileState,
            capacity_bytes: u64,
        ) -> Result<Figures, FsError> {
            $(workload_kinds!(@run $level, $module, fs, w, state, capacity_bytes);)*
            Err(FsError::Layout(format!("workload kind \"{}\" is not a file-level workload", w.kind.name())))
        }
    };
    (@run File, $module:ident, $fs:ident, $w:ident, $state:ident, $capacity:ident) => {
        if $w.kind == $module::SPEC.kind {
            return $module::run($fs, $w, $state, $capacity);
        }
    };
    (@run $other:ident, $module:ident, $fs:ident, $w:ident, $state:ident, $capacity:ident) => {};
}

workload_kinds! {
    block => Block,
    append_holes => File,
    aging => File,
    postmark => File,
    bulk_rm => File,
    file_churn => File,
    remove_when_full => File,
    script => File,
    filebench => File,
    strace => File,
    os_install => ClusterHost,
    iozone => ClusterHost,
}

pub use filebench::parse as filebench_parse;
pub use script::parse as script_parse;
pub use strace::options as strace_options;

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

    /// The file-workload keys this kind reads (docs/config.md gives their defaults).
    pub fn file_keys(self) -> &'static [&'static str] {
        self.spec().keys
    }
}

impl Default for WorkloadKind {
    fn default() -> Self {
        WorkloadKind::Block
    }
}

trimlab_sim::registry_handle!(WorkloadKind, KindSpec, KINDS, "workload kind");

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[test]
    fn every_kind_is_unique_helped_and_round_trips() {
        for (i, s) in KINDS.iter().enumerate() {
            let name = s.kind.name();
            assert!(KINDS[..i].iter().all(|o| o.kind != s.kind), "{name} registered twice");
            assert!(!s.help.trim().is_empty(), "{name} has no help");
            assert_eq!(WorkloadKind::parse(name), Ok(s.kind));
            assert_eq!(WorkloadKind::NAMES[i], name);
            assert_eq!(s.kind.spec().kind, s.kind);
            let text = serde::de::value::StrDeserializer::<serde::de::value::Error>::new(name);
            assert_eq!(WorkloadKind::deserialize(text), Ok(s.kind), "the config's spelling");
            assert_eq!(
                s.level == Level::Block,
                s.keys.is_empty(),
                "{name}: only block kinds read no file keys"
            );
        }
    }

    #[test]
    fn a_bad_name_lists_the_kinds_and_the_closest() {
        let e = WorkloadKind::parse("post-mark").unwrap_err();
        assert!(e.contains("did you mean \"postmark\"?"), "{e}");
        assert!(e.contains("append-holes") && e.contains("iozone"), "{e}");
        assert_eq!(format!("{:?}", WorkloadKind::OsInstall), "OsInstall", "Debug as the old enum variant");
    }
}
