//! A metered device: accepted commands counted by kind, snapshots differenced.

use trimlab_device::command::ByteRange;
use trimlab_device::metered::*;
use trimlab_device::thin_volume::{ThinConfig, ThinVolume};
use trimlab_device::{BlockDevice, Command, CommandKind};
use trimlab_sim::SimTime;

#[test]
fn counts_accepted_commands_by_kind_and_differences_snapshots() {
    let mut m = Metered::new(ThinVolume::new(ThinConfig::xtremio_like(1 << 20)).unwrap());
    let write = Command::Write { offset: 0, bytes: 8192, tag: 1 };
    m.submit(SimTime(0), &write, None).unwrap();
    let before = m.traffic;
    let trim = Command::Trim {
        ranges: vec![ByteRange { offset: 0, bytes: 4096 }, ByteRange { offset: 8192, bytes: 4096 }],
    };
    m.submit(SimTime(1), &trim, None).unwrap();
    m.submit(SimTime(2), &Command::Read { offset: 0, bytes: 4096 }, None).unwrap();
    m.submit(SimTime(3), &Command::Flush, None).unwrap();
    // Refused (misaligned): not counted.
    assert!(m.submit(SimTime(4), &Command::Read { offset: 1, bytes: 4096 }, None).is_err());
    let d = m.traffic.since(&before);
    let mut expected = Traffic::default();
    expected.add(CommandKind::Read, 1, 4096);
    expected.add(CommandKind::Trim, 1, 8192);
    expected.add(CommandKind::Flush, 1, 0);
    assert_eq!(d, expected);
    assert_eq!(
        (m.traffic.commands_of(CommandKind::Write), m.traffic.bytes_of(CommandKind::Write)),
        (1, 8192)
    );
    assert_eq!(m.traffic.commands(), 4);
    let json = serde_json::to_string(&d).unwrap();
    assert_eq!(
        json,
        r#"{"read_commands":1,"read_bytes":4096,"write_commands":0,"write_bytes":0,"trim_commands":1,"trim_bytes":8192,"flush_commands":1}"#
    );
    assert_eq!(m.limits(), m.device.limits());
    assert_eq!(m.commands_done_at(), m.device.commands_done_at());
}
