//! What the server really holds against what it charges, measured as the process's resident
//! memory. One test in its own binary, so no other test's allocations blur the figure.
// The tests drive a real server over sockets: threads and wall-clock deadlines are the point.
#![allow(clippy::disallowed_methods)]

mod common;

use common::*;
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};
use trimlab_nbd::server::{Clock, Listener};
use trimlab_nbd::wire::*;
use trimlab_nbd::Pace;

fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    statm.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 4096
}

#[test]
fn a_paced_flood_of_data_less_requests_holds_no_more_than_its_budget() {
    // Issue 26 item 8: under --pace real, a client that sends data-less requests and never
    // reads the replies filled its budget 28 bytes at a time while each queued reply really
    // held ~3.6x that (nine clients: RSS 1.5 GB, never returned). Now every request is
    // charged what holding its reply costs, so the memory held stays within the budget.
    let budget = 32u64 << 20;
    let server = server_with(1 << 20, Clock::wall(), 8, Pace::Real, |mut c| {
        c.inflight_per_connection_bytes = budget;
        c.inflight_total_bytes = budget;
        c
    });
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = Arc::new(server);
    let handle = server.handle();
    let runner = {
        let server = server.clone();
        std::thread::spawn(move || server.run(Listener::Tcp(listener)))
    };
    let mut c =
        Client::start(TcpStream::connect(addr).unwrap(), FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES).unwrap();
    c.go().unwrap();
    let before = resident_bytes();
    // The flood, from another thread: it blocks once the server stops reading.
    let mut sender = c.s.try_clone().unwrap();
    let flood = std::thread::spawn(move || {
        let mut burst = Vec::new();
        for handle in 0..4096u64 {
            burst.extend_from_slice(&request_bytes(CMD_CACHE, 0, handle, 0, 4096));
        }
        while sender.write_all(&burst).is_ok() {}
    });
    // Wait until the budget is full and stays so.
    let end = Instant::now() + Duration::from_secs(60);
    let mut last = 0;
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let held = handle.inflight_bytes();
        if held + (64 << 10) >= budget && held == last {
            break;
        }
        last = held;
        assert!(Instant::now() < end, "the budget did not fill: {held} of {budget} bytes");
    }
    let grown = resident_bytes().saturating_sub(before);
    eprintln!("budget {} MiB, resident memory grew {:.1} MiB", budget >> 20, grown as f64 / (1 << 20) as f64);
    assert!(grown <= budget + budget / 2, "{grown} bytes resident for a {budget}-byte budget");
    drop(c);
    handle.shutdown();
    runner.join().unwrap().unwrap();
    flood.join().unwrap();
    assert_eq!(handle.inflight_bytes(), 0, "every charge given back");
    let after = resident_bytes().saturating_sub(before);
    eprintln!("after the client left: {:.1} MiB above the start", after as f64 / (1 << 20) as f64);
    assert!(after <= budget / 2, "{after} bytes still resident after the queue drained");
    handle.finish().unwrap();
}
