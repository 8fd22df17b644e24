//! Focused scenarios of the Delayed TRIM engine on a whole device: 002's t1-t3 hazard, idle
//! drains paused by host commands, the pre-GC cap, a full trim buffer, and a workload with no
//! idle time at all.

use trimlab_device::{Command, DeviceSection, FtlSection, Ssd, SsdConfig, TrimSection};
use trimlab_sim::SimTime;
use trimlab_trim::{BeforeGcCap, DelayedConfig, EngineKind};

use crate::common::{trim, two_plane_device, write, PAGE};

fn device(delayed: DelayedConfig, buffer_pages: u64) -> Ssd {
    let device = DeviceSection { queue_depth: Some(1), ..two_plane_device(buffer_pages) };
    let ftl = FtlSection { track_data: Some(true), ..Default::default() };
    // 002's cost model (the Delayed TRIM paper's OpenSSD): the chunk bound below is in its terms.
    let cost = Some(trimlab_trim::TrimCostOverrides::all(&trimlab_trim::TrimCostModel::openssd_002()));
    let trim = TrimSection {
        engine: Some(EngineKind::Delayed),
        cost,
        engines: TrimSection::keys_of(EngineKind::Delayed, Some(&delayed)),
    };
    Ssd::new(SsdConfig::resolve(&device, &ftl, &trim).expect("test device resolves"))
}

fn read(ssd: &mut Ssd, t: SimTime, lpn: u64, count: u64) -> Vec<u64> {
    let (mut all, mut out) = (Vec::new(), Vec::new());
    for p in lpn..lpn + count {
        ssd.submit(t, &Command::Read { offset: p * PAGE, bytes: PAGE }, Some(&mut out)).unwrap();
        all.extend_from_slice(&out);
    }
    all
}

#[test]
fn a_write_after_a_pending_trim_survives_the_drain() {
    trimlab_device::verify::enable();
    // 002 Fig. 1: TRIM LBA 100-101 at t1, write them at t2 and t3, drain at t4.
    for buffer_pages in [0, 8] {
        let mut ssd = device(DelayedConfig::default(), buffer_pages);
        let mut t = write(&mut ssd, SimTime::ZERO, 100, 4, 10);
        t = trim(&mut ssd, t, 100, 4);
        assert_eq!(ssd.engine().figure("pages_pending").unwrap_or(0), 4);
        assert_eq!(read(&mut ssd, t, 100, 4), vec![0, 0, 0, 0], "pending TRIM reads as zeros");
        t = write(&mut ssd, t, 100, 1, 500);
        t = write(&mut ssd, t, 101, 1, 600);
        assert_eq!(ssd.engine().figure("pages_rewritten").unwrap_or(0), 2);
        ssd.idle_until(t.after(10_000_000_000));
        let end = t.after(10_000_000_000);
        assert_eq!(read(&mut ssd, end, 100, 4), vec![500, 600, 0, 0]);
        let trim_stats = &ssd.report(end).trim;
        assert_eq!(trim_stats.figure("pages_pending"), 0);
        assert_eq!(trim_stats.figure("pages_applied"), 2);
        assert!(trim_stats.figure("idle_total_ns") > 0);
        ssd.check().unwrap();
    }
}

#[test]
fn a_host_command_pauses_the_idle_drain_after_one_chunk() {
    trimlab_device::verify::enable();
    let config = DelayedConfig { idle_chunk_pages: 16, ..DelayedConfig::default() };
    let mut ssd = device(config, 0);
    let mut t = SimTime::ZERO;
    for lpn in 0..600 {
        t = write(&mut ssd, t, lpn, 1, 1 + lpn);
    }
    t = trim(&mut ssd, t, 0, 600);
    // Idle starts 1 ms after the TRIM; the read arrives 2 us into it, mid-drain.
    let arrival = t.after(1_000_000 + 2_000);
    let done = ssd.submit(arrival, &Command::Read { offset: 700 * PAGE, bytes: PAGE }, None).unwrap();
    let report = ssd.report(done.done);
    assert_eq!(report.trim.figure("idle_preemptions"), 1);
    assert!(report.trim.figure("pages_pending") > 0 && report.trim.figure("pages_pending") < 600);
    let chunk_ns_max = 16 * 200;
    assert!(
        done.start.since(arrival) <= chunk_ns_max,
        "the read waited {} ns, more than one chunk",
        done.start.since(arrival)
    );
    // The drain resumes in the next idle period and finishes.
    ssd.idle_until(done.done.after(1_000_000_000));
    assert_eq!(ssd.engine().figure("pages_pending").unwrap_or(0), 0);
    assert_eq!(read(&mut ssd, done.done.after(1_000_000_000), 0, 3), vec![0, 0, 0]);
    ssd.check().unwrap();
}

/// Fills the drive, trims half of it, then overwrites random pages of the other half with no
/// idle time until GC has run many times. Returns the device, the time, the logical pages.
fn trim_then_churn(before_gc: BeforeGcCap, trim_buffer_entries: u32) -> (Ssd, SimTime, u64) {
    let config = DelayedConfig { before_gc, trim_buffer_entries, ..DelayedConfig::default() };
    let mut ssd = device(config, 4);
    let pages = ssd.config().logical_pages as u64;
    let mut t = SimTime::ZERO;
    for lpn in 0..pages {
        t = write(&mut ssd, t, lpn, 1, 1000 + lpn);
    }
    for lpn in (0..pages / 2).step_by(4) {
        t = trim(&mut ssd, t, lpn, 4);
    }
    let half = pages / 2;
    let mut x = 12345u64;
    for round in 0..6u64 {
        for _ in 0..half {
            // A fixed LCG: the same page sequence for every configuration compared.
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let lpn = half + (x >> 33) % half;
            t = write(&mut ssd, t, lpn, 1, round * 100_000 + lpn);
        }
        ssd.check().unwrap();
    }
    // Rewrite the second half once in order so its content is known.
    for lpn in half..pages {
        t = write(&mut ssd, t, lpn, 1, 900_000 + lpn);
    }
    (ssd, t, pages)
}

#[test]
fn without_idle_time_gc_applies_pending_trims() {
    trimlab_device::verify::enable();
    let (mut ssd, t, pages) = trim_then_churn(BeforeGcCap::All, 65_536);
    let trim_stats = ssd.report(t).trim;
    assert!(trim_stats.figure("before_gc_drains") >= 1);
    assert_eq!(trim_stats.figure("pages_pending"), 0);
    assert_eq!(trim_stats.figure("idle_total_ns"), 0, "no idle period in this run");
    let data = read(&mut ssd, t, 0, pages);
    for (lpn, tag) in data.iter().enumerate() {
        let want = if (lpn as u64) < pages / 2 { 0 } else { 900_000 + lpn as u64 };
        assert_eq!(*tag, want, "page {lpn}");
    }
}

#[test]
fn a_pre_gc_cap_leaves_trims_pending_and_costs_copies() {
    trimlab_device::verify::enable();
    let (all, t_all, _) = trim_then_churn(BeforeGcCap::All, 65_536);
    let (capped, t_capped, pages) = trim_then_churn(BeforeGcCap::Bytes(16 * PAGE), 65_536);
    let (none, t_none, _) = trim_then_churn(BeforeGcCap::Bytes(0), 65_536);
    let (a, c, n) = (all.report(t_all), capped.report(t_capped), none.report(t_none));
    assert_eq!(c.trim.figure("pages_pending"), pages / 2 - 16, "exactly the cap was applied");
    assert!(c.trim.figure("before_gc_capped") > 0);
    assert_eq!(n.trim.figure("pages_applied"), 0);
    assert!(a.gc.pages_copied < c.gc.pages_copied, "{} vs {}", a.gc.pages_copied, c.gc.pages_copied);
    assert!(c.gc.pages_copied <= n.gc.pages_copied);
    assert!(a.trim.foreground_total_ns > c.trim.foreground_total_ns);
}

#[test]
fn a_full_trim_buffer_drains_in_the_foreground() {
    trimlab_device::verify::enable();
    let (ssd, t, _) = trim_then_churn(BeforeGcCap::Bytes(0), 64);
    let report = ssd.report(t);
    assert!(report.trim.figure("buffer_full_drains") > 0);
    assert!(report.trim.figure("buffer_full_ns") > 0);
    assert!(report.trim.figure("trim_buffer_entries_max") <= 64);
    assert!(report.trim.foreground_total_ns >= report.trim.figure("buffer_full_ns"));
}
