//! Sequential bandwidth of every preset against its datasheet arithmetic (issue 12, item 4):
//! the simulator's sequential write and read rates must be within 5 % of what the flash
//! geometry, the NAND timing, the channel bus and the host link allow.
//!
//! The arithmetic, per preset, from its resolved config:
//! - write: a die programs `planes` flash pages per tPROG with multi-plane programs (one flash
//!   page otherwise), after they crossed the channel: `planes x flash_page / (planes x
//!   transfer(flash_page) + tPROG)`; a channel carries at most `flash_page / transfer(flash_page)`
//!   whatever its dies could do; the drive is `channels x min(ways x die, bus)`, capped by the
//!   host link and the firmware's time per command.
//! - read: a die senses one flash page (tR) and holds it until its pages crossed the channel,
//!   one transfer per page read: `flash_page / (tR + units x transfer(page))`; the same caps.
//!
//! A fresh drive is written sequentially (less than half its capacity, so no GC runs) with
//! 128 KiB commands at the preset's queue depth, then FLUSHed; the same range is then read.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use trimlab_device::config::preset_infos;
use trimlab_device::{Command, DeviceSection, FtlSection, Ssd, SsdConfig, TrimSection};
use trimlab_sim::{ByteSize, SimTime};

const COMMAND_BYTES: u64 = 128 << 10;

struct Datasheet {
    write_bytes_per_s: f64,
    read_bytes_per_s: f64,
}

fn datasheet(c: &SsdConfig) -> Datasheet {
    let g = &c.geometry;
    let t = &c.timing;
    let ns = |bytes: u32| t.transfer_ns(bytes) as f64;
    let flash_page = g.flash_page_bytes as f64;
    let units = g.pages_per_flash_page() as f64;
    let ways = (g.chips_per_channel * g.dies_per_chip) as f64;
    let channels = g.channels as f64;
    let host = 1e12 / c.host_transfer_ps_per_byte as f64;
    let firmware = COMMAND_BYTES as f64 * 1e9 / c.firmware_ns.max(1) as f64;
    let bus = flash_page * 1e9 / ns(g.flash_page_bytes);
    let per_program = if c.multi_plane { g.planes_per_die as f64 } else { 1.0 };
    let die_write =
        per_program * flash_page * 1e9 / (per_program * ns(g.flash_page_bytes) + t.program_ns as f64);
    let die_read = flash_page * 1e9 / (t.read_ns as f64 + units * ns(g.page_bytes));
    let read_bus = g.page_bytes as f64 * 1e9 / ns(g.page_bytes);
    Datasheet {
        write_bytes_per_s: (channels * (ways * die_write).min(bus)).min(host).min(firmware),
        read_bytes_per_s: (channels * (ways * die_read).min(read_bus)).min(host).min(firmware),
    }
}

/// Submits `commands` at `queue_depth` outstanding (a closed loop: each finished command frees
/// a slot for the next) from `start`; returns when the last one completes.
fn closed_loop(ssd: &mut Ssd, start: SimTime, commands: impl Iterator<Item = Command>) -> SimTime {
    let depth = ssd.config().queue_depth as usize;
    let mut slots: BinaryHeap<Reverse<SimTime>> = (0..depth).map(|_| Reverse(start)).collect();
    let mut end = start;
    for command in commands {
        let Some(Reverse(arrival)) = slots.pop() else { unreachable!("a queue of depth {depth}") };
        let c = ssd.submit(arrival, &command, None).unwrap_or_else(|e| panic!("{command:?}: {e}"));
        end = end.max(c.done);
        slots.push(Reverse(c.done));
    }
    end
}

fn config(preset: &str) -> SsdConfig {
    // A capacity at which the preset keeps its own shape, twice the bytes written or more.
    let logical_bytes = (preset != "k9lag08u0m-4ch").then_some(ByteSize(8 << 30));
    let device = DeviceSection { preset: Some(preset.into()), logical_bytes, ..Default::default() };
    let c = SsdConfig::resolve(&device, &FtlSection::default(), &TrimSection::default()).unwrap();
    assert!(c.geometry_note.is_empty(), "{preset}: the preset's shape was changed: {}", c.geometry_note);
    c
}

#[test]
fn sequential_bandwidth_matches_the_datasheet_arithmetic() {
    let mut report = Vec::new();
    for info in preset_infos() {
        let c = config(info.name);
        let expected = datasheet(&c);
        let bytes: u64 = if info.name == "k9lag08u0m-4ch" { 64 << 20 } else { 256 << 20 };
        assert!(bytes * 2 <= c.logical_bytes(), "{}: no GC may run", info.name);
        let mut ssd = Ssd::new(c);
        let writes = (0..bytes / COMMAND_BYTES).map(|i| Command::Write {
            offset: i * COMMAND_BYTES,
            bytes: COMMAND_BYTES,
            tag: i + 1,
        });
        let written = closed_loop(&mut ssd, SimTime::ZERO, writes);
        let flushed = closed_loop(&mut ssd, written, std::iter::once(Command::Flush));
        let reads = (0..bytes / COMMAND_BYTES)
            .map(|i| Command::Read { offset: i * COMMAND_BYTES, bytes: COMMAND_BYTES });
        let read = closed_loop(&mut ssd, flushed, reads);
        let report_now = ssd.report(read);
        assert_eq!(report_now.gc.victims, 0, "{}: GC ran", info.name);
        let write_rate = bytes as f64 * 1e9 / flushed.ns() as f64;
        let read_rate = bytes as f64 * 1e9 / read.since(flushed) as f64;
        report.push(format!(
            "{:<16} write {:>7.1} MB/s (datasheet {:>7.1})  read {:>7.1} MB/s (datasheet {:>7.1})",
            info.name,
            write_rate / 1e6,
            expected.write_bytes_per_s / 1e6,
            read_rate / 1e6,
            expected.read_bytes_per_s / 1e6
        ));
        for (what, got, want) in [
            ("write", write_rate, expected.write_bytes_per_s),
            ("read", read_rate, expected.read_bytes_per_s),
        ] {
            assert!(
                (got / want - 1.0).abs() <= 0.05,
                "{}: sequential {what} {:.1} MB/s, datasheet arithmetic {:.1} MB/s (more than 5 % apart)\n{}",
                info.name,
                got / 1e6,
                want / 1e6,
                report.join("\n")
            );
        }
    }
    println!("{}", report.join("\n"));
}

#[test]
fn the_arithmetic_follows_the_geometry() {
    // Multi-plane programs raise the write rate of a die by up to its plane count; a single
    // plane at a time does not.
    let mut c = config("nvme-tlc");
    let multi = datasheet(&c).write_bytes_per_s;
    c.multi_plane = false;
    let single = datasheet(&c).write_bytes_per_s;
    assert!(multi > 1.5 * single, "{multi} vs {single}");
    // A SATA II link caps a 2011 drive's reads.
    let sata = config("sata-mlc-2011");
    assert_eq!(datasheet(&sata).read_bytes_per_s, 1e12 / sata.host_transfer_ps_per_byte as f64);
}
