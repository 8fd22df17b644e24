//! Power loss on the device model: the write buffer's dirty pages are lost, flushed data is
//! not, and a TRIM flushed into a Delayed TRIM engine's pending set never lets the trimmed data
//! come back, however the cut falls.

use trimlab_device::{Command, FtlSection, PowerCut, Ssd, SsdConfig, TrimSection};
use trimlab_sim::SimTime;
use trimlab_trim::{DelayedConfig, EngineKind};

use crate::common::{trim, two_plane_device, write, PAGE};

fn device(engine: EngineKind, buffer_pages: u64) -> Ssd {
    let device = two_plane_device(buffer_pages);
    let ftl = FtlSection { track_data: Some(true), ..Default::default() };
    let delayed = (engine == EngineKind::Delayed).then(DelayedConfig::default);
    let trim = TrimSection {
        engine: Some(engine),
        cost: None,
        engines: TrimSection::keys_of(EngineKind::Delayed, delayed.as_ref()),
    };
    Ssd::new(SsdConfig::resolve(&device, &ftl, &trim).expect("test device resolves"))
}

/// A host FLUSH as the NBD drive sends it: the command, then the persist hook.
fn flush(ssd: &mut Ssd, t: SimTime) -> SimTime {
    let done = ssd.submit(t, &Command::Flush, None).unwrap().done;
    ssd.flush_completed();
    done
}

fn read(ssd: &mut Ssd, t: SimTime, lpn: u64, count: u64) -> Vec<u64> {
    let mut out = Vec::new();
    ssd.submit(t, &Command::Read { offset: lpn * PAGE, bytes: count * PAGE }, Some(&mut out)).unwrap();
    out
}

#[test]
fn unflushed_buffered_writes_are_lost_and_flushed_ones_survive() {
    trimlab_device::verify::enable();
    for engine in [EngineKind::Immediate, EngineKind::Delayed] {
        let mut ssd = device(engine, 16);
        let mut t = write(&mut ssd, SimTime::ZERO, 10, 4, 100);
        t = flush(&mut ssd, t);
        t = write(&mut ssd, t, 12, 4, 200);
        assert!(ssd.is_buffered(12) && ssd.is_buffered(15) && !ssd.is_buffered(10));
        let cut = ssd.power_cut();
        assert_eq!(cut, PowerCut { lost_writes: vec![12, 13, 14, 15], retrimmed: vec![] }, "{engine:?}");
        // 10, 11 as flushed; 12, 13 back to their flushed version; 14, 15 never written.
        assert_eq!(read(&mut ssd, t, 10, 6), vec![100, 101, 102, 103, 0, 0], "{engine:?}");
        ssd.check().unwrap();
        // The drive goes on working after the cut.
        t = write(&mut ssd, t, 14, 1, 300);
        flush(&mut ssd, t);
        assert_eq!(ssd.power_cut(), PowerCut::default());
        assert_eq!(read(&mut ssd, t, 14, 1), vec![300]);
    }
}

#[test]
fn a_flushed_delayed_trim_never_brings_its_data_back() {
    trimlab_device::verify::enable();
    let mut ssd = device(EngineKind::Delayed, 0);
    let mut t = write(&mut ssd, SimTime::ZERO, 100, 4, 10);
    t = flush(&mut ssd, t);
    // TRIM, FLUSH, and the cut before any idle time lets the engine apply it: only the pending
    // set (trim buffer + bitmap) says the pages are gone, so it must have been persisted.
    t = trim(&mut ssd, t, 100, 4);
    t = flush(&mut ssd, t);
    assert_eq!(ssd.engine().figure("pages_pending").unwrap_or(0), 4);
    ssd.power_cut();
    assert_eq!(read(&mut ssd, t, 100, 4), vec![0; 4], "trimmed data came back after the cut");
    assert_eq!(ssd.engine().figure("pages_pending").unwrap_or(0), 4, "still pending, so it will be applied");
    ssd.idle_until(t.after(1_000_000_000));
    assert_eq!(ssd.engine().figure("pages_pending").unwrap_or(0), 0);
    assert_eq!(read(&mut ssd, t.after(2_000_000_000), 100, 4), vec![0; 4]);
    assert!(!ssd.ftl().is_mapped(trimlab_ftl::Lpn(100)), "the drain unmapped it");
    ssd.check().unwrap();
}

#[test]
fn an_unflushed_trim_may_be_lost_and_an_unflushed_rewrite_after_a_flushed_trim_is() {
    trimlab_device::verify::enable();
    let mut ssd = device(EngineKind::Delayed, 0);
    let mut t = write(&mut ssd, SimTime::ZERO, 100, 4, 10);
    t = flush(&mut ssd, t);
    // TRIM without FLUSH: the host was never promised it, and the old data reads back.
    t = trim(&mut ssd, t, 100, 2);
    assert_eq!(ssd.power_cut(), PowerCut::default());
    assert_eq!(read(&mut ssd, t, 100, 4), vec![10, 11, 12, 13]);
    // TRIM + FLUSH, then a rewrite of one page without FLUSH: the rewrite is lost and the page
    // is trimmed again (the drive reports it so the host-side bytes can follow).
    t = trim(&mut ssd, t, 102, 2);
    t = flush(&mut ssd, t);
    t = write(&mut ssd, t, 103, 1, 500);
    assert_eq!(read(&mut ssd, t, 102, 2), vec![0, 500]);
    let cut = ssd.power_cut();
    assert_eq!(cut.retrimmed, vec![103]);
    assert_eq!(read(&mut ssd, t, 100, 4), vec![10, 11, 0, 0]);
    ssd.idle_until(t.after(1_000_000_000));
    assert_eq!(read(&mut ssd, t.after(2_000_000_000), 100, 4), vec![10, 11, 0, 0]);
    ssd.check().unwrap();
}
