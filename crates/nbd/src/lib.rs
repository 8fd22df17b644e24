//! The NBD protocol and a server whose storage is the simulated SSD: real clients (the Linux
//! kernel through nbdfuse, qemu, libnbd tools) send READ / WRITE / TRIM / FLUSH / WRITE_ZEROES,
//! real bytes live in a [`store`], and every command also reaches the device model
//! (`trimlab_device::Ssd`) so its FTL, GC and TRIM engine account for it.
//!
//! Layers, bottom up: [`wire`] (constants of doc/proto.md), [`handshake`] and [`request`] (pure
//! parsers and encoders: bytes in, decisions out, no I/O), [`reply`] (encoders), [`payload`] (WRITE data in page-sized pieces), [`store`]
//! (sparse in-memory or file-backed bytes), [`drive`] (store + device model, in simulated
//! time), [`budget`] (bytes held for clients), [`watch`] (each connection's deadlines),
//! [`server`] (sockets, threads, wall clock, limits, logs) with its reply [`sink`],
//! [`stats_http`] and [`command`] (`--run`'s process group).
// The NBD server is the network edge: sockets, threads and the wall clock (ARCHITECTURE.md, "Serving real clients").
#![allow(clippy::disallowed_methods)]

pub mod budget;
pub mod command;
pub mod drive;
pub mod handshake;
pub mod payload;
pub mod reply;
pub mod request;
pub mod server;
mod sink;
pub mod stats_http;
pub mod store;
pub mod watch;
pub mod wire;

pub use drive::{Drive, DriveStats, OpCounters};
pub use handshake::{ExportInfo, Negotiation, OptionOutcome};
pub use payload::{PagePool, Payload};
pub use request::{Refusal, Request, RequestHeader};
pub use server::{Finished, Pace, Server, ServerConfig, ServerHandle};
pub use store::{FileStore, SparseStore, Store};
