//! 004's IOZone write / re-write / random-write tests on the cluster host, after `image` of
//! installed files: a file of `volume` per record size in `record_bytes`, `pause` between tests
//! (crates/workload/src/cluster_host.rs runs it).

use super::keys::{KeysSpec, OwnKeys};
use super::{KindSpec, Level, WorkloadKind};
use serde::{Deserialize, Serialize};
use trimlab_sim::{ByteSize, DurationNs};
use crate::config::Volume;

impl WorkloadKind {
    #[allow(non_upper_case_globals)]
    pub const Iozone: WorkloadKind = WorkloadKind("iozone");
}

pub(super) const SPEC: KindSpec = KindSpec {
    kind: WorkloadKind::Iozone,
    help: "004's IOZone write / re-write / random-write tests on the cluster host",
    level: Level::ClusterHost,
    keys: KeysSpec::of::<Keys>(),
};

/// Its keys (docs/config.md gives the defaults).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Keys {
    pub volume: Option<Volume>,
    pub image: Option<Volume>,
    pub record_bytes: Option<Vec<ByteSize>>,
    pub pause: Option<DurationNs>,
    pub host_discard: Option<bool>,
    pub first_fit: Option<bool>,
    pub stream: Option<String>,
}

impl OwnKeys for Keys {}
