//! The workload kinds `[workload] kind` names: the registry ([`KINDS`]) and what each kind
//! declares ([`KindSpec`]: name, help, what it drives, the keys it reads). Each kind lives in
//! its own file here; a file-level kind's file also holds how it runs on the file system.
//!
//! Adding a kind: one file that defines its `WorkloadKind` constant, its keys (a serde struct,
//! keys.rs) and its `SPEC` (and, for a file-level kind, `run`), and one line in the
//! `workload_kinds!` list below.

pub mod keys;
pub mod spec;

pub use keys::{KeyError, KeysSpec, KindKeys, OwnKeys};
pub use spec::{KindSpec, Level, WorkloadKind};

use crate::config::WorkloadConfig;
use crate::file::{Figures, FileState};
use trimlab_device::BlockDevice;
use trimlab_fs::{FileSystem, FsError};

/// Lists every kind once: `module => level`, in the order help and docs list them. It declares
/// the modules, builds [`KINDS`] and the dispatch of the file-level kinds to their `run`
/// (generic over the device, so a plain table of function pointers cannot hold it).
macro_rules! workload_kinds {
    ($($module:ident => $level:ident),* $(,)?) => {
        $(pub mod $module;)*

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

/// The keys of `w`'s kind, as its file declares them (resolution has checked them; a config
/// built in code meets the same check here).
pub(crate) fn own<T: OwnKeys>(w: &WorkloadConfig) -> Result<T, FsError> {
    w.keys.read().map_err(|(key, value, why)| FsError::Layout(format!("workload.{key} = {value}: {why}")))
}

/// Checks the keys of `w`'s kind and puts them in their canonical form; the error names the
/// key within `[workload]`.
pub fn check_keys(w: &mut WorkloadConfig) -> Result<(), KeyError> {
    let spec = w.kind.spec();
    let names = (spec.keys.names)();
    if let Some(key) = w.keys.names().find(|k| !names.contains(k)) {
        let reader = format!("kind = {:?}", w.kind.name());
        return Err(keys::unknown_key(key, &reader, names, WorkloadConfig::GENERATOR_KEYS));
    }
    w.keys = (spec.keys.check)(&w.keys)?;
    Ok(())
}

/// The first of `names` (keys of a `[workload]` table) that neither the generator nor any
/// kind reads: a typo whatever the kind (which `[[phase]]` tables may still change).
pub fn unknown_anywhere<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<(), KeyError> {
    let kinds: Vec<&str> = KINDS.iter().flat_map(|s| (s.keys.names)().iter().copied()).collect();
    let known = |k: &str| k == "kind" || kinds.contains(&k) || WorkloadConfig::GENERATOR_KEYS.contains(&k);
    let Some(key) = names.into_iter().find(|k| !known(k)) else { return Ok(()) };
    let hint =
        trimlab_sim::names::did_you_mean(key, kinds.iter().chain(WorkloadConfig::GENERATOR_KEYS).copied())
            .map(|m| format!("did you mean \"{m}\"? "))
            .unwrap_or_default();
    Err((
        key.to_string(),
        "set".into(),
        format!("is read neither by the block generator nor by any workload kind; {hint}docs/config.md lists the keys of each"),
    ))
}

/// Runs the file-level workload `w` (its kind's defaults fill unset keys; docs/config.md) on
/// `fs`, whose device holds `capacity_bytes`: the kind's own file (crates/workload/src/kind/)
/// runs it.
pub fn run_file_workload<D: BlockDevice>(
    fs: &mut FileSystem<D>,
    w: &WorkloadConfig,
    state: &mut FileState,
    capacity_bytes: u64,
) -> Result<Figures, FsError> {
    run_file(fs, w, state, capacity_bytes)
}

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
                (s.keys.names)().is_empty(),
                "{name}: only block kinds read no keys of their own"
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
