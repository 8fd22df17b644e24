//! The host's TRIM splitter and transfer chunks: ranges packed up to the device's limits.

use trimlab_device::host_queue::*;
use trimlab_device::Command;

fn commands(splitter: &mut TrimSplitter, ranges: &[(u64, u64)]) -> Vec<Vec<(u64, u64)>> {
    let mut out = Vec::new();
    let sent = splitter
        .split(ranges.iter().copied(), |c| {
            let Command::Trim { ranges } = c else { unreachable!("only TRIMs: {c:?}") };
            out.push(ranges.iter().map(|r| (r.offset, r.bytes)).collect());
            Ok::<(), ()>(())
        })
        .unwrap();
    assert_eq!(sent, out.len() as u64);
    out
}

#[test]
fn ranges_are_packed_up_to_both_limits_in_order() {
    let mut s = TrimSplitter::new(10, 2);
    let got = commands(&mut s, &[(0, 4), (10, 4), (20, 4), (30, 25)]);
    assert_eq!(got, vec![vec![(0, 4), (10, 4)], vec![(20, 4), (30, 6)], vec![(36, 10)], vec![(46, 9)]]);
    assert!(commands(&mut s, &[]).is_empty());
    assert!(commands(&mut s, &[(7, 0)]).is_empty());
}

#[test]
fn an_aligned_host_cuts_on_granules_only() {
    // 10 bytes per command rounds down to 8 at a granule of 4; a range starting mid-granule
    // ends its first piece on a granule boundary.
    let mut s = TrimSplitter::new(10, 8).aligned_to(4).ranges_per_command(1);
    assert_eq!(commands(&mut s, &[(2, 20)]), vec![vec![(2, 6)], vec![(8, 8)], vec![(16, 6)]]);
    // Several ranges per command: a piece that would end mid-granule waits for the next one.
    let mut s = TrimSplitter::new(8, 8).aligned_to(4);
    assert_eq!(commands(&mut s, &[(0, 6), (12, 8)]), vec![vec![(0, 6)], vec![(12, 8)]]);
    // A granule larger than the device's limit: one granule per command, at least.
    let mut s = TrimSplitter::new(3, 8).aligned_to(4);
    assert_eq!(commands(&mut s, &[(0, 8)]), vec![vec![(0, 4)], vec![(4, 4)]]);
}

#[test]
fn a_refused_command_stops_the_split() {
    let mut s = TrimSplitter::new(4, 1);
    let mut seen = 0;
    let r = s.split([(0, 16)], |_| {
        seen += 1;
        if seen == 2 {
            Err("refused")
        } else {
            Ok(())
        }
    });
    assert_eq!((r, seen), (Err("refused"), 2));
}

#[test]
fn transfers_split_at_the_limit() {
    assert_eq!(transfer_chunks(5, 10, 4).collect::<Vec<_>>(), vec![(5, 4), (9, 4), (13, 2)]);
    assert_eq!(transfer_chunks(5, 0, 4).count(), 0);
}
