//! nodiscard: no online TRIM; freed blocks return to the allocator at commit.

use super::{no_args, online::Online, PolicyKind, PolicySpec};

impl PolicyKind {
    /// No online TRIM: freed blocks return to the allocator at commit.
    #[allow(non_upper_case_globals)]
    pub const NoDiscard: PolicyKind = PolicyKind::plain("nodiscard");
}

pub(super) const SPEC: PolicySpec = PolicySpec {
    name: PolicyKind::NoDiscard.name(),
    arg_names: &[],
    args: None,
    help: "no online TRIM; freed blocks reusable at commit",
    keys: &[],
    example: PolicyKind::NoDiscard,
    parse: |args| no_args(args, PolicyKind::NoDiscard),
    label: None,
    build: |kind, _, _| Box::new(Online::new(kind, None)),
};
