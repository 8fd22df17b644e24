//! nodiscard: no online TRIM; freed blocks return to the allocator at commit.

use super::{no_args, online::Online, PolicySpec};
use crate::config::PolicyKind;

pub(super) const SPEC: PolicySpec = PolicySpec {
    name: "nodiscard",
    args: None,
    help: "no online TRIM; freed blocks reusable at commit",
    keys: &[],
    example: PolicyKind::NoDiscard,
    parse: |args| no_args("nodiscard", args, PolicyKind::NoDiscard),
    args_of: |_| None,
    label: None,
    build: |kind, _, _| Box::new(Online::new(kind, None)),
};
