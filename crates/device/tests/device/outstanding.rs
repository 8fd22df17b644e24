//! The device's outstanding commands: the same waits and drains as the heap it replaced.

use rand::Rng;
use trimlab_device::outstanding::*;
use trimlab_sim::{MinHeap, SeedTree, SimTime};

/// The heap the device kept before: drop what completed by the arrival, then the earliest
/// when `queue_depth` remain; a drain is the maximum and empties it.
#[derive(Default)]
struct Reference(MinHeap<SimTime>);

impl Reference {
    fn admit(&mut self, arrival: SimTime, queue_depth: usize) -> Option<SimTime> {
        while self.0.peek().is_some_and(|t| t <= arrival) {
            self.0.pop();
        }
        if self.0.len() >= queue_depth {
            self.0.pop()
        } else {
            None
        }
    }

    fn drain(&mut self) -> Option<SimTime> {
        let latest = self.0.iter().copied().max();
        self.0.clear();
        latest
    }
}

/// Arrivals mostly in order with bursts (a queue that fills and empties), service times
/// short and long, now and then an arrival back in time and a drain, queue depths 1 to 64:
/// the same waits and drains as the heap, and the list and the heap both used.
#[test]
fn waits_and_drains_as_the_heap_did() {
    let mut rng = SeedTree::new(5).fork("outstanding");
    let (mut heap_admits, mut list_admits) = (0, 0);
    for case in 0..60u32 {
        let queue_depth = [1usize, 2, 8, 32, 64][case as usize % 5];
        let (mut ours, mut reference) = (Outstanding::default(), Reference::default());
        let mut arrival = 0u64;
        for step in 0..4_000u32 {
            arrival += match rng.gen_range(0..20) {
                0 => 5_000,
                1..=9 => 0,
                _ => rng.gen_range(0..40),
            };
            let at = if rng.gen_range(0..200) == 0 { arrival.saturating_sub(300) } else { arrival };
            let at = SimTime(at);
            let waited = ours.admit(at, queue_depth);
            assert_eq!(waited, reference.admit(at, queue_depth), "case {case} step {step}");
            if ours.is_heap {
                heap_admits += 1;
            } else {
                list_admits += 1;
            }
            let start = waited.map_or(at, |w| w.max(at));
            if rng.gen_range(0..100) == 0 {
                // The device starts the command at the later of the two: what it sees.
                let drained = |d: Option<SimTime>| d.map_or(start, |d| d.max(start));
                assert_eq!(drained(ours.drain()), drained(reference.drain()), "case {case} step {step}");
            }
            let done = start.after(if rng.gen_range(0..10) == 0 { 2_000 } else { rng.gen_range(0..200) });
            ours.push(done);
            reference.0.push(done);
        }
    }
    assert!(heap_admits > 10_000 && list_admits > 10_000, "heap {heap_admits}, list {list_admits}");
}
