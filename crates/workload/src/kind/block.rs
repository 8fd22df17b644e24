//! The fio-like generator on the block device (crates/workload/src/generator.rs): `host.fs = "none"`.

use super::keys::{KeysSpec, NoKeys};
use super::{KindSpec, Level, WorkloadKind};

impl WorkloadKind {
    #[allow(non_upper_case_globals)]
    pub const Block: WorkloadKind = WorkloadKind("block");
}

pub(super) const SPEC: KindSpec = KindSpec {
    kind: WorkloadKind::Block,
    help: "the fio-like generator on the block device (the generator keys of [workload])",
    level: Level::Block,
    keys: KeysSpec::of::<NoKeys>(),
};
