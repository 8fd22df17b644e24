//! Lazy + Reuse TRIM (000): Lazy TRIM whose allocator takes blocks from the TRIM queue and
//! cancels their TRIMs (the policy itself is lazy.rs's, with reuse on).

use super::lazy::{self, Lazy};
use super::{no_args, PolicyKind, PolicySpec};

impl PolicyKind {
    /// Lazy + Reuse TRIM (000): the allocator takes blocks from the TRIM queue and cancels them.
    #[allow(non_upper_case_globals)]
    pub const LazyReuse: PolicyKind = PolicyKind::plain("lazy-reuse");
}

pub(super) const SPEC: PolicySpec = PolicySpec {
    name: PolicyKind::LazyReuse.name(),
    arg_names: &[],
    args: None,
    help: "Lazy + Reuse TRIM (000): allocator reuses queued blocks, cancels TRIM",
    keys: lazy::KEYS,
    example: PolicyKind::LazyReuse,
    parse: |args| no_args(args, PolicyKind::LazyReuse),
    label: None,
    build: |kind, params, _| Box::new(Lazy::new(kind, params)),
};
