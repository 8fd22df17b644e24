//! `advise`: the operator's question of 003 (online discard, periodic fstrim, or none?)
//! answered for one workload by running it once per way of handling discards on the same
//! device, then a recommendation with its reason. Two inputs: a block trace, which already
//! carries the kernel's discards (`trace`), and a file-level workload of a config, run through
//! the file-system model under each host TRIM policy (`file`, its rule in `file_rule`).

mod advice;
pub mod file;
pub mod file_rule;
pub mod life;
pub mod mapping_units;
pub mod trace;

pub use advice::Advice;
pub use file::advise_file;
pub use trace::advise;
