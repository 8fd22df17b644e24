//! ext4 `-o discard` since Linux 4.x: all of a commit's TRIMs issued together, one wait.

use super::{no_args, online::Online, PolicyKind, PolicySpec, TrimMode};

impl PolicyKind {
    /// ext4 `-o discard` since Linux 4.x: all of a commit's TRIMs issued together, one wait.
    #[allow(non_upper_case_globals)]
    pub const DiscardBatch: PolicyKind = PolicyKind::plain("discard-batch");
}

pub(super) const SPEC: PolicySpec = PolicySpec {
    name: PolicyKind::DiscardBatch.name(),
    arg_names: &[],
    args: None,
    help: "ext4 -o discard (4.x+): a commit's TRIMs issued together, one wait",
    keys: &[],
    example: PolicyKind::DiscardBatch,
    parse: |args| no_args(args, PolicyKind::DiscardBatch),
    label: None,
    build: |kind, _, _| Box::new(Online::new(kind, Some(TrimMode::Batch))),
};
