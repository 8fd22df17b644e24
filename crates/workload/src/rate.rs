//! fio's rate limits (`rate`, `rate_iops`, `rate_process`): a stream may issue a command of a
//! direction only once the bytes it has already issued in that direction fit the rate, so a
//! deep queue no longer runs the drive flat out and the drive sees the idle gaps a paced
//! application leaves (what Delayed TRIM and background GC run in).
//!
//! The rules are fio's (io_u.c usec_for_io, rate_ddir): each direction on its own; linear: the
//! k-th command of a direction may start when the bytes of the ones before it, at the rate,
//! have taken their time since the stream began; poisson: each gap is the mean gap times an
//! exponential draw, added to the previous start. `rate_iops` is a byte rate of IOPS times the
//! smallest block, as fio converts it (`rate_bps = rate_iops * min_bs`).

use crate::config::{RateProcess, WorkloadConfig};
use crate::op::{direction, Op};
use rand::Rng;
use trimlab_sim::{SimRng, SimTime};

const NS_PER_S: u128 = 1_000_000_000;

/// When each direction of one stream may issue next.
pub struct Pacer {
    /// Bytes per second for read, write, TRIM (0: that direction is not limited).
    bytes_per_s: [u64; 3],
    /// The smallest block: a poisson gap is the mean gap of one such command.
    min_block: u64,
    poisson: bool,
    start: Option<SimTime>,
    /// Linear: bytes issued per direction so far.
    issued: [u64; 3],
    /// Poisson: when each direction last issued.
    last: [u64; 3],
    rng: SimRng,
}

impl Pacer {
    /// The stream's pacer, or None when it has no rate. `rng` draws poisson gaps only.
    pub fn new(config: &WorkloadConfig, min_block: u64, rng: SimRng) -> Option<Pacer> {
        let by_iops = config.rate_iops.as_ref().map(|r| spread(r, |iops| (iops * min_block as f64) as u64));
        let by_bytes = config.rate_bytes.as_ref().map(|r| spread(r, |b: trimlab_sim::ByteSize| b.0));
        let bytes_per_s = by_bytes.or(by_iops)?;
        (bytes_per_s != [0; 3]).then(|| Pacer {
            bytes_per_s,
            min_block: min_block.max(1),
            poisson: config.rate_process == Some(RateProcess::Poisson),
            start: None,
            issued: [0; 3],
            last: [0; 3],
            rng,
        })
    }

    /// When `op`, drawn at `now`, may go to the drive; it counts as issued from then on.
    pub fn issue_at(&mut self, now: SimTime, op: &Op) -> SimTime {
        let start = *self.start.get_or_insert(now);
        let Some(d) = direction(op.kind) else { return now };
        let rate = u128::from(self.bytes_per_s[d]);
        if rate == 0 {
            return now;
        }
        let allowed = if self.poisson {
            let mean_gap = (NS_PER_S * u128::from(self.min_block) / rate) as f64;
            let u: f64 = self.rng.gen_range(f64::EPSILON..1.0);
            let due = self.last[d].max(start.0);
            self.last[d] = due + (mean_gap * -u.ln()) as u64;
            due
        } else {
            let due = start.0 + (u128::from(self.issued[d]) * NS_PER_S / rate) as u64;
            self.issued[d] += op.bytes;
            due
        };
        SimTime(allowed.max(now.0))
    }
}

/// One value for every direction, or fio's per-direction list `read, write, trim` (a missing
/// entry takes the last one given, as fio's option lists do).
fn spread<T: Copy>(values: &[T], to_bytes: impl Fn(T) -> u64) -> [u64; 3] {
    let at = |i: usize| values.get(i).or(values.last()).map_or(0, |v| to_bytes(*v));
    [at(0), at(1), at(2)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use trimlab_device::CommandKind;

    fn pacer(iops: f64, poisson: bool) -> Pacer {
        let config = WorkloadConfig {
            rate_iops: Some(vec![iops]),
            rate_process: poisson.then_some(RateProcess::Poisson),
            ..Default::default()
        };
        Pacer::new(&config, 4096, SimRng::seed_from_u64(7)).unwrap()
    }

    fn write() -> Op {
        Op { kind: CommandKind::Write, offset: 0, bytes: 4096 }
    }

    #[test]
    fn linear_spaces_commands_by_the_rate_from_the_first() {
        let mut p = pacer(1000.0, false);
        // A deep queue asks at once: the commands are spaced 1 ms apart.
        let times: Vec<_> = (0..4).map(|_| p.issue_at(SimTime(5), &write()).0).collect();
        assert_eq!(times, [5, 1_000_005, 2_000_005, 3_000_005]);
        // A stream that falls behind issues at once (fio catches up).
        assert_eq!(p.issue_at(SimTime(9_000_000), &write()).0, 9_000_000);
        let read = Op { kind: CommandKind::Read, ..write() };
        assert_eq!(p.issue_at(SimTime(10), &read).0, 10, "each direction has its own budget");
    }

    #[test]
    fn poisson_gaps_average_the_rate() {
        let mut p = pacer(50.0, true);
        let n = 20_000;
        let last = (0..n).map(|_| p.issue_at(SimTime::ZERO, &write()).0).last().unwrap();
        let mean_gap_ms = last as f64 / f64::from(n - 1) / 1e6;
        assert!((mean_gap_ms - 20.0).abs() < 0.5, "{mean_gap_ms}");
    }

    #[test]
    fn no_rate_is_no_pacer_and_lists_fill_from_the_last() {
        assert!(Pacer::new(&WorkloadConfig::default(), 4096, SimRng::seed_from_u64(1)).is_none());
        assert_eq!(spread(&[5u64, 7], |v| v), [5, 7, 7]);
    }
}
