//! ext4 `-o discard` as of Linux 4.4 (the Lazy TRIM paper's baseline): at commit, one TRIM per
//! freed extent, each waiting for the previous one.

use super::{no_args, online::Online, PolicyKind, PolicySpec, TrimMode};

impl PolicyKind {
    /// ext4 `-o discard` (kernel 4.4, the Lazy TRIM paper's baseline): at commit, one TRIM per
    /// freed extent, each waiting for the previous one.
    #[allow(non_upper_case_globals)]
    pub const Discard: PolicyKind = PolicyKind::plain("discard");
}

pub(super) const SPEC: PolicySpec = PolicySpec {
    name: PolicyKind::Discard.name(),
    arg_names: &[],
    args: None,
    help: "ext4 -o discard (4.4): one synchronous TRIM per freed extent at commit",
    keys: &[],
    example: PolicyKind::Discard,
    parse: |args| no_args(args, PolicyKind::Discard),
    label: None,
    build: |kind, _, _| Box::new(Online::new(kind, Some(TrimMode::Serial))),
};
