//! 004's Windows 7 installation, synthesized on 004's NTFS-like cluster host (block level,
//! `host.fs = "none"`): `volume` of files with their metadata writes, a third of them temporary
//! (crates/workload/src/cluster_host.rs runs it).

use super::keys::{KeysSpec, OwnKeys};
use super::{KindSpec, Level, WorkloadKind};
use serde::{Deserialize, Serialize};
use crate::config::Volume;

impl WorkloadKind {
    #[allow(non_upper_case_globals)]
    pub const OsInstall: WorkloadKind = WorkloadKind("os-install");
}

pub(super) const SPEC: KindSpec = KindSpec {
    kind: WorkloadKind::OsInstall,
    help: "004's Windows 7 installation on 004's NTFS-like cluster host (block level)",
    level: Level::ClusterHost,
    keys: KeysSpec::of::<Keys>(),
};

/// Its keys (docs/config.md gives the defaults).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Keys {
    pub volume: Option<Volume>,
    pub host_discard: Option<bool>,
    pub first_fit: Option<bool>,
    pub stream: Option<String>,
}

impl OwnKeys for Keys {}
