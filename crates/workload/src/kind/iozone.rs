//! 004's IOZone write / re-write / random-write tests on the cluster host, after `image` of
//! installed files: a file of `volume` per record size in `record_bytes`, `pause` between tests
//! (crates/workload/src/cluster_host.rs runs it).

use super::{KindSpec, Level, WorkloadKind};

impl WorkloadKind {
    #[allow(non_upper_case_globals)]
    pub const Iozone: WorkloadKind = WorkloadKind("iozone");
}

pub(super) const SPEC: KindSpec = KindSpec {
    kind: WorkloadKind::Iozone,
    help: "004's IOZone write / re-write / random-write tests on the cluster host",
    level: Level::ClusterHost,
    keys: &["volume", "image", "record_bytes", "pause", "host_discard", "first_fit", "stream"],
};
