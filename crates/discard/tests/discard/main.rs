//! The discard crate's tests: one binary, a module per source module it tests.

mod ext4_free_data;
mod policies;
