//! trimlab-replay's tests, one module per source module, in one test binary (the lib sets
//! `test = false`, so the crate compiles once in the test command).

mod parsed_trace;
mod trace_options;
