//! The thin volume: chunks allocated on write and released on whole-chunk TRIM, bad commands refused.

use trimlab_device::command::ByteRange;
use trimlab_device::thin_volume::*;
use trimlab_device::{BlockDevice, Command, CommandError};
use trimlab_sim::SimTime;

#[test]
fn allocates_on_write_releases_on_whole_chunk_trim() {
    let mut v = ThinVolume::new(ThinConfig::xtremio_like(1 << 20)).unwrap();
    let t = v.submit(SimTime(0), &Command::Write { offset: 0, bytes: 32768, tag: 10 }, None).unwrap().done;
    assert!(t > SimTime(0));
    assert_eq!(v.allocated_bytes(), 32768);
    let trim = Command::Trim { ranges: vec![ByteRange { offset: 4096, bytes: 16384 }] };
    v.submit(t, &trim, None).unwrap();
    // chunk [8K,16K) fully covered; [0,8K) and [16K,24K) partly
    assert_eq!(v.allocated_bytes(), 32768 - 8192);
    let mut out = Vec::new();
    v.submit(t, &Command::Read { offset: 0, bytes: 32768 }, Some(&mut out)).unwrap();
    assert_eq!(out, vec![10, 0, 0, 0, 0, 15, 16, 17]);
    v.check().unwrap();
}

#[test]
fn refuses_misaligned_oversized_and_out_of_order_commands() {
    let mut v = ThinVolume::new(ThinConfig::xtremio_like(1 << 20)).unwrap();
    let e = v.submit(SimTime(0), &Command::Read { offset: 512, bytes: 4096 }, None).unwrap_err();
    assert!(matches!(e, CommandError::Misaligned { .. }), "{e}");
    let e = v.submit(SimTime(0), &Command::Write { offset: 1 << 20, bytes: 4096, tag: 1 }, None).unwrap_err();
    assert!(matches!(e, CommandError::OutOfRange { .. }), "{e}");
    let big = Command::Trim { ranges: vec![ByteRange { offset: 0, bytes: 1 << 20 }; 40] };
    assert!(matches!(v.submit(SimTime(0), &big, None), Err(CommandError::TooLarge { .. })));
    v.submit(SimTime(10), &Command::Flush, None).unwrap();
    let e = v.submit(SimTime(5), &Command::Flush, None).unwrap_err();
    assert!(matches!(e, CommandError::OutOfOrder { arrival_ns: 5, previous_ns: 10 }), "{e}");
}
