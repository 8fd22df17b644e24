//! Lazy + Reuse TRIM (000): Lazy TRIM whose allocator takes blocks from the TRIM queue and
//! cancels their TRIMs (the policy itself is lazy.rs's, with reuse on).

use super::{lazy::Lazy, no_args, PolicySpec};
use crate::config::PolicyKind;

pub(super) const SPEC: PolicySpec = PolicySpec {
    name: "lazy-reuse",
    args: None,
    help: "Lazy + Reuse TRIM (000): allocator reuses queued blocks, cancels TRIM",
    keys: &["lazy_workers_max", "lazy_trims_per_worker"],
    example: PolicyKind::LazyReuse,
    parse: |args| no_args("lazy-reuse", args, PolicyKind::LazyReuse),
    args_of: |_| None,
    label: None,
    build: |kind, params, _| Box::new(Lazy::new(kind, params)),
};
