//! Host commands: a one-range TRIM lends its vector to the next.

use trimlab_device::command::*;

/// Each TRIM is the one range asked for, and a command given back lends its vector to the
/// next: no allocation per TRIM.
#[test]
fn one_range_trim_reuses_its_vector() {
    let mut trim = OneRangeTrim::default();
    let first = trim.of(4096, 512);
    assert_eq!(first, Command::Trim { ranges: vec![ByteRange { offset: 4096, bytes: 512 }] });
    let Command::Trim { ranges } = &first else { unreachable!() };
    let vector = ranges.as_ptr();
    trim.put_back(first);
    let second = trim.of(0, 8192);
    assert_eq!(second, Command::Trim { ranges: vec![ByteRange { offset: 0, bytes: 8192 }] });
    let Command::Trim { ranges } = &second else { unreachable!() };
    assert_eq!(ranges.as_ptr(), vector);
}
