//! ext4 `-o discard` since Linux 4.x: all of a commit's TRIMs issued together, one wait.

use super::{no_args, online::Online, PolicySpec, TrimMode};
use crate::config::PolicyKind;

pub(super) const SPEC: PolicySpec = PolicySpec {
    name: "discard-batch",
    args: None,
    help: "ext4 -o discard (4.x+): a commit's TRIMs issued together, one wait",
    keys: &[],
    example: PolicyKind::DiscardBatch,
    parse: |args| no_args("discard-batch", args, PolicyKind::DiscardBatch),
    args_of: |_| None,
    label: None,
    build: |kind, _, _| Box::new(Online::new(kind, Some(TrimMode::Batch))),
};
