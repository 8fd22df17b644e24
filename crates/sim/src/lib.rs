//! Simulation kernel: integer-nanosecond time, a (time, sequence)-ordered event queue and
//! one seeded random stream per purpose. Nothing here reads a wall clock.

mod config_section;
pub mod event_queue;
pub mod field_names;
pub mod min_heap;
pub mod names;
mod registry;
pub mod rng;
pub mod run_queue;
pub mod steady_state;
pub mod time;
pub mod units;

pub use config_section::key_name;
pub use event_queue::EventQueue;
pub use field_names::field_names;
pub use min_heap::MinHeap;
pub use rng::{SeedTree, SimRng};
pub use run_queue::RunQueue;
pub use time::SimTime;
pub use units::{ByteSize, ByteUnit, DurationNs};
