//! ext4 `-o discard` as of Linux 4.4 (the Lazy TRIM paper's baseline): at commit, one TRIM per
//! freed extent, each waiting for the previous one.

use super::{no_args, online::Online, PolicySpec, TrimMode};
use crate::config::PolicyKind;

pub(super) const SPEC: PolicySpec = PolicySpec {
    name: "discard",
    args: None,
    help: "ext4 -o discard (4.4): one synchronous TRIM per freed extent at commit",
    keys: &[],
    example: PolicyKind::Discard,
    parse: |args| no_args("discard", args, PolicyKind::Discard),
    args_of: |_| None,
    label: None,
    build: |kind, _, _| Box::new(Online::new(kind, Some(TrimMode::Serial))),
};
